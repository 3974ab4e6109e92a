"""The process's place in a distributed job."""

from ._runtime import _C, world


def rank():
    """This process's rank (0 when not started by an MPI launcher)."""
    return world()[0]


def world_size():
    """The number of processes of the job (1 without a launcher)."""
    return world()[1]


def get_rank():
    return rank()


def get_world_size():
    return world_size()


def barrier():
    if world_size() > 1:
        _C().comm_barrier()
