"""torch.nn.parallel: of distributes a model by its global tensors (SBP),
not by wrapping it; the names exist so that scripts importing them load.
DataParallel over this process's one device wraps the module as PyTorch's
does on one device (`.module`, state_dict keys prefixed "module.")."""

from ..modules import Module


class DistributedDataParallel:
    """torch.nn.parallel.DistributedDataParallel: not how of runs data
    parallel; making one raises."""

    def __init__(self, module, device_ids=None, *args, **kwargs):
        raise NotImplementedError(
            "torch.nn.parallel.DistributedDataParallel is not supported: in of, data "
            "parallelism is a placement and an SBP: launch with python -m "
            "of.distributed.launch --nproc N, then module.to_global(placement, "
            "of.sbp.broadcast) and split the batch (to_global(placement, of.sbp.split(0)))")


class DataParallel(Module):
    """torch.nn.DataParallel on one device: calls the module (PyTorch's
    replicas on several GPUs of one process are not how of runs: several
    devices are a NotImplementedError naming of's way)."""

    def __init__(self, module, device_ids=None, output_device=None, dim=0):
        super().__init__()
        if device_ids is not None and len(list(device_ids)) > 1:
            raise NotImplementedError(
                "torch.nn.DataParallel over several GPUs is not supported: of runs one "
                "process per GPU; launch with python -m of.distributed.launch --nproc N and "
                "make the model global (module.to_global(placement, of.sbp.broadcast))")
        self.module = module
        self.device_ids, self.output_device, self.dim = device_ids, output_device, dim

    def forward(self, *inputs, **kwargs):
        return self.module(*inputs, **kwargs)
