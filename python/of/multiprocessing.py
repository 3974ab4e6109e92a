"""of.multiprocessing: torch.multiprocessing's names, which training scripts
import (`import torch.multiprocessing as mp`): Python's multiprocessing, and
`spawn(fn, args, nprocs)`, which starts `nprocs` processes by the "spawn"
method (a fresh interpreter: libofrt's CUDA state is never forked), calls
`fn(i, *args)` in process i, and with `join` waits for all, raising an
error that names the process when one fails. of tensors cross processes as
pickles of their values (no shared memory: set_sharing_strategy is not
provided)."""

import multiprocessing as _mp
import multiprocessing.connection as _connection
import traceback as _traceback
from multiprocessing import *  # noqa: F401,F403 (Python's names, as torch's module re-exports)


class ProcessRaisedException(Exception):
    """A process spawned by spawn() raised; the message holds its traceback."""

    def __init__(self, msg, error_index, error_pid):
        super().__init__(msg)
        self.error_index, self.pid = error_index, error_pid


class ProcessExitedException(Exception):
    """A process spawned by spawn() exited with a non-zero code."""

    def __init__(self, msg, error_index, error_pid, exit_code):
        super().__init__(msg)
        self.error_index, self.pid, self.exit_code = error_index, error_pid, exit_code


def _wrap(fn, i, args, errors):
    try:
        fn(i, *args)
    except KeyboardInterrupt:
        pass
    except Exception:  # noqa: BLE001 - reported to the parent, then exit 1
        errors.put((i, _traceback.format_exc()))
        raise SystemExit(1)


class ProcessContext:
    """The processes spawn() started: join() waits for them."""

    def __init__(self, processes, errors):
        self.processes, self.errors = processes, errors

    def pids(self):
        return [p.pid for p in self.processes]

    def join(self, timeout=None):
        """True when every process has ended well, False when `timeout`
        passed first; as soon as one fails, stops the others and raises."""
        running = {p.sentinel: i for i, p in enumerate(self.processes) if p.exitcode is None}
        while running:
            ready = _connection.wait(list(running), timeout)
            if not ready:
                return False
            for sentinel in ready:
                index = running.pop(sentinel)
                process = self.processes[index]
                process.join()
                if process.exitcode != 0:
                    self._fail(index, process)
        for index, process in enumerate(self.processes):
            if process.exitcode != 0:
                self._fail(index, process)
        return True

    def _fail(self, index, process):
        for p in self.processes:
            if p.is_alive():
                p.terminate()
                p.join()
        if not self.errors.empty():
            error_index, text = self.errors.get()
            raise ProcessRaisedException(
                f"\n\n-- Process {error_index} terminated with the following error:\n{text}",
                error_index, self.processes[error_index].pid)
        raise ProcessExitedException(
            f"process {index} terminated with exit code {process.exitcode}", index,
            process.pid, process.exitcode)


def start_processes(fn, args=(), nprocs=1, join=True, daemon=False, start_method="spawn"):
    context = _mp.get_context(start_method)
    errors = context.SimpleQueue()
    processes = []
    for i in range(nprocs):
        process = context.Process(target=_wrap, args=(fn, i, args, errors), daemon=daemon)
        process.start()
        processes.append(process)
    spawned = ProcessContext(processes, errors)
    if not join:
        return spawned
    while not spawned.join():
        pass
    return None


def spawn(fn, args=(), nprocs=1, join=True, daemon=False, start_method="spawn"):
    """torch.multiprocessing.spawn: `fn(i, *args)` in `nprocs` new processes."""
    return start_processes(fn, args, nprocs, join, daemon, start_method)
