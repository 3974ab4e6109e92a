"""of.onnx: torch.onnx's names that model code and training scripts touch.
of does not export ONNX: `export` raises NotImplementedError saying so (of
writes its programs as MLIR and plans: of.compile's dump_dir, of-translate);
`is_in_onnx_export()` is False, so models that branch on it take their
training path."""


def is_in_onnx_export():
    return False


def export(model, args=(), f=None, *unused_args, **unused_kwargs):
    raise NotImplementedError(
        "torch.onnx.export is not supported by of: of does not write ONNX (its programs "
        "are MLIR, dumped by of.compile(..., dump_dir=...) and packed into plans by "
        "of-translate); save the weights with of.save(model.state_dict(), ...)")


__all__ = ["export", "is_in_onnx_export"]
