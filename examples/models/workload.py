"""What the training scripts of examples/models share: loading a model file
written against PyTorch under either framework, starting the ranks that
--ranks asks for, data parallelism over global tensors, and the per-step
loss record the tests compare.

A model file imports `torch`, `torch.nn as nn` and `torch.nn.functional as
F` in exactly the three lines of examples/python/nanogpt.py; under of
those lines are changed and nothing else (train_gpt.load_model)."""

import json
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "python"))
from train_gpt import load_model  # noqa: E402,F401  (re-exported)


def framework(name):
    """The module a script trains with: `of` or `torch`."""
    if name == "torch":
        import torch
        return torch
    import of
    return of


def world_size(fw):
    return fw.env.world_size() if fw.__name__ == "of" else 1


def rank(fw):
    return fw.env.rank() if fw.__name__ == "of" else 0


def start_ranks(options, script):
    """With --ranks N in a process that is not part of a job of N ranks,
    runs `script` again under `python -m of.distributed.launch --nproc N`
    and returns its exit status; otherwise None (go on here). A job of
    another size than --ranks is an error."""
    if options.ranks is None:
        return None
    if options.ranks < 1:
        sys.exit(f"--ranks must be at least 1, not {options.ranks}")
    in_job = any(k in os.environ for k in ("OMPI_COMM_WORLD_SIZE", "PMI_SIZE"))
    if in_job:
        size = int(os.environ.get("OMPI_COMM_WORLD_SIZE") or os.environ["PMI_SIZE"])
        if size != options.ranks:
            sys.exit(f"--ranks {options.ranks} in a job of {size} ranks")
        return None
    if options.ranks == 1:
        return None
    if options.framework != "of":
        sys.exit("--ranks N > 1 trains with of (PyTorch's DDP is not wired here)")
    cmd = [sys.executable, "-m", "of.distributed.launch", "--nproc", str(options.ranks),
           script] + sys.argv[1:]
    return subprocess.call(cmd)


def placement(fw, device):
    """All ranks of the job as one placement, or None on one rank."""
    n = world_size(fw)
    return fw.placement(device, ranks=list(range(n))) if n > 1 else None


def data_parallel(fw, tensors, where):
    """The batch's tensors split over the ranks by their first dimension
    (S(0)); each rank holds the logical batch (made from the same seed)
    and keeps its part."""
    if where is None:
        return tensors
    return [t.to_global(where, fw.sbp.split(0)) for t in tensors]


class StepLog:
    """Per-step losses (float) and the time of each step; `save` writes
    them as JSON on rank 0 (the tests read them)."""

    def __init__(self):
        self.losses, self.seconds = [], []
        self._t = None

    def start(self):
        self._t = time.perf_counter()

    def stop(self, loss):
        self.seconds.append(time.perf_counter() - self._t)
        self.losses.append(float(loss))

    def throughput(self, items_per_step, skip=2):
        """Items per second over the steps after the first `skip`
        (compiling and warm-up), DLPerf's way; None if too few steps."""
        timed = self.seconds[skip:]
        return items_per_step * len(timed) / sum(timed) if timed else None

    def save(self, path, fw, **extra):
        if path and rank(fw) == 0:
            with open(path, "w") as f:
                json.dump(dict(losses=self.losses, seconds=self.seconds, **extra), f)


def load_weights(fw, model, path):
    """`model`'s weights from `path`: an .npz of arrays named by state_dict
    keys, or a file of fw.save (a state_dict, or a checkpoint dict whose
    "model" is one)."""
    import numpy as np
    if path.endswith(".npz"):
        state = {k: fw.from_numpy(v) for k, v in np.load(path).items()}
    else:
        state = fw.load(path)
        state = state.get("model", state)
    model.load_state_dict(state)
