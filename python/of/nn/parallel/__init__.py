"""torch.nn.parallel: of distributes a model by its global tensors (SBP),
not by wrapping it; the names exist so that scripts importing them load."""


class DistributedDataParallel:
    """torch.nn.parallel.DistributedDataParallel: not how of runs data
    parallel; making one raises."""

    def __init__(self, module, device_ids=None, *args, **kwargs):
        raise NotImplementedError(
            "torch.nn.parallel.DistributedDataParallel is not supported: in of, data "
            "parallelism is a placement and an SBP: launch with python -m "
            "of.distributed.launch --nproc N, then module.to_global(placement, "
            "of.sbp.broadcast) and split the batch (to_global(placement, of.sbp.split(0)))")


DataParallel = DistributedDataParallel
