"""The result shapes the frontend infers (python/of/_ops.py, which writes
them into each op's text) agree with the compiler's: for every `of` op the
frontend writes, traced programs of that op on a variety of shapes and
attributes must pass the compiler's parser and verifiers, which check each
result type against the one the op infers. A control shows the check has
teeth: the same op with a result one element longer is refused.

Only the first stage of the pipeline runs (`stop-after=sbp`): nothing is
lowered or executed."""

import re

import pytest

import of
from of import _ops
from of._program import Program, _trace
from of._runtime import _C
from of._tensor import Tensor

F = of.nn.functional
f32, f64, i32, i64, b1 = of.float32, of.float64, of.int32, of.int64, of.bool
P2 = of.placement("cpu", ranks=[0, 1])
S0, B = of.sbp.split(0), of.sbp.broadcast


def t(*shape, dtype=f32):
    return (shape, dtype)


# name -> (function of symbolic tensors, its arguments' (shape, dtype[, placement, sbp]))
CASES = {
    # elementwise, with broadcasting and Python scalars
    "add broadcast": (lambda a, b: a + b, [t(2, 1, 3), t(4, 3)]),
    "sub scalar": (lambda a: 1.5 - a, [t(2, 3)]),
    "mul rank 0": (lambda a, b: a * b, [t(), t(3, 2)]),
    "div": (lambda a, b: a / b, [t(5, 1), t(1, 4)]),
    "pow": (lambda a: a ** 2.0, [t(3)]),
    "maximum": (lambda a, b: of.maximum(a, b), [t(2, 1), t(2, 5)]),
    "minimum": (lambda a, b: of.minimum(a, b), [t(4, 1, 1), t(3, 2)]),
    "int add": (lambda a, b: a + b, [t(2, 3, dtype=i64), t(3, dtype=i64)]),
    **{f"compare {op}": (fn, [t(2, 1, 4), t(3, 1)]) for op, fn in [
        ("eq", lambda a, b: a == b), ("ne", lambda a, b: a != b),
        ("lt", lambda a, b: a < b), ("le", lambda a, b: a <= b),
        ("gt", lambda a, b: a > b), ("ge", lambda a, b: a >= b)]},
    **{f"unary {name}": (getattr(_ops, name), [t(2, 3, 4)]) for name in [
        "neg", "exp", "log", "sqrt", "rsqrt", "tanh", "sigmoid", "erf", "relu", "silu",
        "sin", "cos"]},
    "gelu": (lambda a: _ops.gelu(a), [t(6)]),
    "gelu tanh": (lambda a: _ops.gelu(a, approximate="tanh"), [t(2, 6)]),
    "cast to f64": (lambda a: a.double(), [t(2, 3)]),
    "cast to i32": (lambda a: a.int(), [t(4)]),
    "cast bool": (lambda a: a.bool(), [t(3, 1)]),
    "where": (lambda c, a, b: of.where(c, a, b), [t(2, 1, 3, dtype=b1), t(4, 1), t(3)]),
    "masked_fill": (lambda a, m: a.masked_fill(m, 0.0), [t(2, 3), t(3, dtype=b1)]),
    # matmul: batches broadcast, operands transposed in place
    "matmul": (lambda a, b: a @ b, [t(3, 4), t(4, 5)]),
    "matmul batch": (lambda a, b: a @ b, [t(2, 1, 3, 4), t(5, 4, 6)]),
    "matmul transpose_a": (lambda a, b: _ops.matmul(a, b, transpose_a=True),
                           [t(2, 4, 3), t(4, 5)]),
    "matmul transpose_b": (lambda a, b: _ops.matmul(a, b, transpose_b=True),
                           [t(3, 4), t(2, 5, 4)]),
    "linear": (lambda x, w, b: F.linear(x, w, b), [t(2, 7, 4), t(3, 4), t(3)]),
    # reductions
    "sum dim": (lambda a: a.sum(1), [t(2, 3, 4)]),
    "sum dims keepdim": (lambda a: a.sum((0, 2), keepdim=True), [t(2, 3, 4)]),
    "sum all": (lambda a: a.sum(), [t(2, 3)]),
    "mean last": (lambda a: a.mean(-1), [t(2, 3, 4)]),
    "mean keepdim": (lambda a: a.mean(0, keepdim=True), [t(5, 2)]),
    "amax": (lambda a: a.amax(-1), [t(3, 4)]),
    "amax all keepdim": (lambda a: of.amax(a, keepdim=True), [t(3, 4)]),
    # shapes
    "reshape": (lambda a: a.reshape(6, -1), [t(2, 3, 4)]),
    "reshape to rank 0": (lambda a: a.reshape(()), [t(1, 1)]),
    "flatten": (lambda a: a.flatten(1), [t(2, 3, 4, 5)]),
    "unsqueeze": (lambda a: a.unsqueeze(-1), [t(2, 3)]),
    "permute": (lambda a: a.permute(2, 0, 1), [t(2, 3, 4)]),
    "transpose": (lambda a: a.transpose(0, 2), [t(2, 3, 4, 5)]),
    "T": (lambda a: a.T, [t(3, 5)]),
    "expand": (lambda a: a.expand(2, 3, 4), [t(3, 1)]),
    "expand -1": (lambda a: a.expand(5, -1), [t(1, 4)]),
    "slice": (lambda a: _ops.slice_(a, [1, 0], [3, 4]), [t(4, 5)]),
    "slice strided": (lambda a: _ops.slice_(a, [0, 1], [5, 6], [2, 3]), [t(5, 7)]),
    "getitem": (lambda a: a[1:, ::2], [t(4, 5)]),
    "getitem index": (lambda a: a[0, ..., None], [t(3, 4, 5)]),
    "split": (lambda a: a.split(2, dim=1), [t(3, 5)]),
    "chunk": (lambda a: of.chunk(a, 3, dim=0), [t(7, 2)]),
    "cat": (lambda a, b, c: of.cat([a, b, c], dim=1), [t(2, 1, 3), t(2, 4, 3), t(2, 2, 3)]),
    # normalisations, gathers, losses
    "softmax": (lambda a: a.softmax(1), [t(2, 3, 4)]),
    "log_softmax": (lambda a: F.log_softmax(a, dim=-1), [t(4, 6)]),
    "layer_norm": (lambda x, w, b: _ops.layer_norm(x, (4,), w, b), [t(2, 3, 4), t(4), t(4)]),
    "layer_norm 2-D": (lambda x: _ops.layer_norm(x, (3, 4)), [t(2, 3, 4)]),
    "layer_norm weight": (lambda x, w: _ops.layer_norm(x, 5, w), [t(3, 5), t(5)]),
    "rms_norm": (lambda x, w: _ops.rms_norm(x, 6, w), [t(2, 6), t(6)]),
    "rms_norm plain": (lambda x: _ops.rms_norm(x, (2, 3), eps=1e-6), [t(4, 2, 3)]),
    "embedding": (lambda i, w: _ops.embedding(i, w), [t(2, 3, dtype=i64), t(10, 4)]),
    "embedding_grad into": (lambda w, i, r: _ops.add_rows(w, i, r),
                            [t(10, 4), t(6, dtype=i64), t(6, 4)]),
    "topk": (lambda x: _ops.topk(x, 2).values, [t(3, 5)]),
    "embedding i32": (lambda i, w: _ops.embedding(i, w), [t(5, dtype=i32), t(7, 3)]),
    "cross_entropy": (lambda x, y: _ops.cross_entropy_per_example(x, y),
                      [t(4, 10), t(4, dtype=i64)]),
    "cross_entropy 3-D": (lambda x, y: _ops.cross_entropy_per_example(x, y),
                          [t(2, 3, 10), t(2, 3, dtype=i64)]),
    # convolutions, pools, batch norm
    "conv2d": (lambda x, w: _ops.conv2d(x, w), [t(1, 3, 8, 8), t(5, 3, 3, 3)]),
    "conv2d all": (lambda x, w, b: _ops.conv2d(x, w, b, stride=2, padding=1, dilation=2,
                                               groups=2),
                   [t(2, 4, 10, 11), t(6, 2, 3, 3), t(6)]),
    "conv2d pairs": (lambda x, w: _ops.conv2d(x, w, stride=(1, 2), padding=(2, 0)),
                     [t(1, 1, 5, 7), t(2, 1, 3, 2)]),
    "max_pool2d": (lambda x: _ops.max_pool2d(x, 2), [t(1, 2, 7, 6)]),
    "max_pool2d padded": (lambda x: _ops.max_pool2d(x, 3, stride=2, padding=1),
                          [t(2, 3, 7, 8)]),
    "avg_pool2d": (lambda x: _ops.avg_pool2d(x, (2, 3), stride=(2, 1),
                                             count_include_pad=False), [t(1, 2, 7, 7)]),
    "batch_norm train": (lambda x, m, v, w, b: _ops.batch_norm(x, m, v, w, b, True, 0.1, 1e-5),
                         [t(2, 3, 4, 4), t(3), t(3), t(3), t(3)]),
    "batch_norm eval 2-D": (lambda x, m, v, w, b: _ops.batch_norm(x, m, v, w, b, False, 0.1,
                                                                   1e-5),
                            [t(5, 3), t(3), t(3), t(3), t(3)]),
    "dropout": (lambda x, s: _ops.dropout_with_seed(x, s, 0.25), [t(3, 4), t(dtype=i64)]),
    # global values: the boxing a traced to_global writes
    "to_global": (lambda x: x.to_global(sbp=B), [((4, 6), f32, P2, (S0,))]),
}


def trace(fn, specs):
    """A program (as `of.compile` traces one) of `fn` on symbolic
    arguments; its results [(ssa, type)]."""
    program = Program("f", trace=True)
    args = []
    for shape, dtype, *dist in specs:
        plc, sbp = dist or (None, None)
        a = Tensor(shape=shape, dtype=dtype, placement=plc, sbp=sbp, program=program)
        program.add_arg(a)
        args.append(a)
    previous, _trace.program = _trace.program, program
    try:
        out = fn(*args)
    finally:
        _trace.program = previous
    outs = list(out) if isinstance(out, (tuple, list)) else [out]
    refs = [program.values[id(o)] for o in outs]
    return program, [(r, program._types[r]) for r in refs]


def compile_errors(text):
    """The compiler's errors for `text` through the pipeline's first stage."""
    result = _C().compile(text, "shape inference", "cpu,stop-after=sbp", "")
    return [d["message"] for d in result["diagnostics"]
            if not d["message"].startswith("compile: the pipeline stops after")]


def _longer(match):
    dims = match.group(1)
    if not dims:
        return "tensor<1x"
    sizes = dims[:-1].split("x")
    sizes[-1] = str(int(sizes[-1]) + 1)
    return "tensor<" + "x".join(sizes) + "x"


def with_wrong_result(program):
    """`program`'s text with its last op's first result type one element
    longer in its last dimension (rank 1 for a rank-0 result), returning its
    first argument instead, so that only that op can object; and the op's
    name."""
    line = program.lines[-1]
    body, at, loc = line.rpartition(" loc(")
    i = max(body.rfind(" -> "), body.rfind(" to "))
    wrong = body[:i] + re.sub(r"tensor<((?:\d+x)*)", _longer, body[i:], count=1)
    assert wrong != body
    program.lines[-1] = wrong + at + loc
    ssa, ty, _ = program.args[0]
    return program.text([(ssa, ty)]), line.split(" = ", 1)[1].split()[0]


@pytest.mark.parametrize("name", list(CASES))
def test_the_compiler_accepts_the_inferred_shapes(name):
    fn, specs = CASES[name]
    program, results = trace(fn, specs)
    assert program.lines, f"{name}: no op was written"
    text = program.text(results)
    assert compile_errors(text) == [], text


# Cases whose longer result is still a valid one: reshape and broadcast_to
# take their result type as what they compute.
STILL_VALID_WHEN_LONGER = {
    "reshape to rank 0": "a [1] tensor has as many elements as a [1, 1] one",
    "expand": "a size-1 dimension broadcasts to any size",
}


@pytest.mark.parametrize("name", [n for n in CASES if n not in STILL_VALID_WHEN_LONGER])
def test_a_wrong_result_shape_is_refused(name):
    fn, specs = CASES[name]
    text, op = with_wrong_result(trace(fn, specs)[0])
    errors = compile_errors(text)
    assert any(f"'{op}' op" in e for e in errors), (errors, text)


def test_every_op_the_frontend_writes_has_a_case():
    """The ops in _ops.py's OpSpecs (literal, or named through _binary,
    _unary, _reduce and _pool) all appear in the cases' programs."""
    with open(_ops.__file__) as f:
        source = f.read()
    written = set(re.findall(r'"of\.([a-z_0-9]+) \{', source))
    written |= set(re.findall(r"\b_(?:binary|unary|reduce|pool)\(\"([a-z_0-9]+)\"", source))
    assert {"matmul", "add", "reduce_sum", "max_pool2d", "compare", "boxing"} <= written
    covered = set()
    for fn, specs in CASES.values():
        program, _ = trace(fn, specs)
        covered |= {line.split(" = ", 1)[1].split()[0][len("of."):] for line in program.lines}
    assert written - covered == set()
