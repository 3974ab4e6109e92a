"""`of.utils.checkpoint`: PyTorch's `torch.utils.checkpoint` (activation
checkpointing). A checkpointed function's activations are not kept for the
backward pass: the backward pass computes them again from the function's
inputs, trading a second forward of the segment for its memory.

Traced (`of.compile`, `nn.Graph`), the function's ops are marked as one
segment and the compiler's `--of-recompute` pass does the recomputation in
the compiled training step (so the plan's arena holds one segment's
activations at a time in the backward pass). Eagerly, the function runs
once and its gradients come from the same recorded program as any other
op's: the values and gradients are the same either way, as in PyTorch.
Random ops draw the same numbers when recomputed (their seed is an operand).
"""

from .._program import tracing

__all__ = ["checkpoint", "checkpoint_sequential"]


def checkpoint(function, *args, use_reentrant=None, context_fn=None,
               determinism_check="default", debug=False, preserve_rng_state=True, **kwargs):
    """Runs `function(*args, **kwargs)` as a recomputed segment. The keyword
    arguments PyTorch takes are accepted; `use_reentrant=True` (PyTorch's
    legacy implementation) requires at least one argument, as there."""
    if use_reentrant and kwargs:
        raise ValueError("Unexpected keyword arguments: " + ",".join(kwargs))
    if context_fn is not None and use_reentrant:
        raise ValueError("Passing `context_fn` or `debug` is only supported when "
                         "use_reentrant=False.")
    if determinism_check not in ("default", "none"):
        raise ValueError("determinism_check should be one of ['default', 'none'], "
                         f"but got {determinism_check}")
    program = tracing()
    if program is None:
        return function(*args, **kwargs)
    outer = program.recompute
    program.recompute = program.segments
    program.segments += 1
    try:
        return function(*args, **kwargs)
    finally:
        program.recompute = outer


def checkpoint_sequential(functions, segments, input, use_reentrant=None, **kwargs):
    """Runs the modules (or functions) of `functions` (an nn.Sequential or a
    list) in order on `input`, as `segments` checkpointed chunks, the last
    chunk not checkpointed, as PyTorch does."""
    preserve = kwargs.pop("preserve_rng_state", True)
    if kwargs:
        raise ValueError("Unexpected keyword arguments: " + ",".join(kwargs))
    if hasattr(functions, "children") and not isinstance(functions, (list, tuple)):
        functions = list(functions.children())
    functions = list(functions)

    def run(start, end):
        def forward(x):
            for j in range(start, end + 1):
                x = functions[j](x)
            return x
        return forward

    size = len(functions) // segments
    end = -1
    for start in range(0, size * (segments - 1), size):
        end = start + size - 1
        input = checkpoint(run(start, end), input, use_reentrant=use_reentrant,
                           preserve_rng_state=preserve)
    return run(end + 1, len(functions) - 1)(input)
