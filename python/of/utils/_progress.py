"""Progress for training loops: a bar with per-step loss and throughput.

    progress = of.utils.Progress(steps, items_per_step=batch * block, unit="tok")
    for step in progress:
        loss = train_step(x, y)
        progress.update(loss=loss.item())

On a terminal it draws a bar (tqdm's when installed); otherwise it prints
one line every `every` steps (and the last), so logs stay readable. Only
rank 0 prints.
"""

import sys
import time

from .._runtime import world


class Progress:
    def __init__(self, total, items_per_step=None, unit="item", every=None, file=None,
                 desc="train"):
        self.total = int(total)
        self.items_per_step = items_per_step
        self.unit = unit
        self.file = file or sys.stderr
        self.every = every or max(1, self.total // 20)
        self.desc = desc
        self.step = 0
        self.start = None
        self.values = {}
        self.enabled = world()[0] == 0
        self.tty = self.enabled and hasattr(self.file, "isatty") and self.file.isatty()
        self._bar = None
        if self.tty:
            try:
                from tqdm import tqdm
                self._bar = tqdm(total=self.total, desc=desc, file=self.file)
            except ImportError:
                pass

    def __iter__(self):
        self.start = time.perf_counter()
        for i in range(self.total):
            yield i
        self.close()

    def rate(self):
        """Steps per second since the first step ended (the first step
        includes compiling, which would understate the steady rate)."""
        if self.step < 2:
            return 0.0
        elapsed = time.perf_counter() - self.first_done
        return (self.step - 1) / elapsed if elapsed > 0 else 0.0

    def update(self, **values):
        """Records one finished step and its values (loss=...)."""
        if self.start is None:
            self.start = time.perf_counter()
        self.step += 1
        if self.step == 1:
            self.first_done = time.perf_counter()
        self.values = values
        if not self.enabled:
            return
        rate = self.rate()
        parts = [f"{k} {v:.4f}" if isinstance(v, float) else f"{k} {v}"
                 for k, v in values.items()]
        if rate == 0.0:
            pass
        elif self.items_per_step:
            parts.append(f"{rate * self.items_per_step:,.0f} {self.unit}/s")
        else:
            parts.append(f"{rate:.2f} step/s")
        if self._bar is not None:
            self._bar.set_postfix_str(" | ".join(parts), refresh=False)
            self._bar.update(1)
            return
        if self.tty:
            width = 24
            done = int(width * self.step / self.total)
            bar = "#" * done + "." * (width - done)
            end = "\n" if self.step == self.total else ""
            print(f"\r{self.desc} [{bar}] {self.step}/{self.total} | " + " | ".join(parts),
                  end=end, file=self.file, flush=True)
        elif self.step % self.every == 0 or self.step == self.total:
            left = (self.total - self.step) / rate if rate > 0 else 0.0
            print(f"{self.desc} step {self.step}/{self.total} | " + " | ".join(parts) +
                  f" | {time.perf_counter() - self.start:.1f} s, ~{left:.0f} s left",
                  file=self.file, flush=True)

    def close(self):
        if self._bar is not None:
            self._bar.close()
            self._bar = None
