"""torch.distributed's process-group calls: of starts its ranks with
`python -m of.distributed.launch` and uses them through global tensors;
these raise, naming what to do instead (scripts that only import them load)."""

from .._runtime import world


def _refuse(api):
    raise NotImplementedError(
        f"torch.distributed.{api} is not supported: of's ranks come from python -m "
        "of.distributed.launch --nproc N, and collectives from global tensors "
        "(to_global with an SBP)")


def init_process_group(backend=None, init_method=None, timeout=None, world_size=-1,
                       rank=-1, store=None, group_name="", pg_options=None, device_id=None):
    _refuse("init_process_group")


def destroy_process_group(group=None):
    _refuse("destroy_process_group")


def is_available():
    return True


def is_initialized():
    return False


def get_rank(group=None):
    return world()[0]


def get_world_size(group=None):
    return world()[1]
