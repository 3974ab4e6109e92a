"""Writes random small global programs (matmul, add, mul, relu, exp,
transpose, softmax, row sums) on a 1-D placement, separated by `// -----`,
for --of-test-sbp-search: the exact search must reach the optimum that
enumerating every assignment finds.

    random_sbp_graphs.py SEED COUNT [MAX_OPS]
"""

import random
import sys


def program(rng, index, max_ops):
    grid = rng.choice([2, 2, 3, 4])
    dims = [1, 2, 3, 4, 6, 8, 16, 64, 256]
    values = []  # (name, shape)
    args = []
    lines = []

    def t(shape):
        return "tensor<" + "".join(f"{d}x" for d in shape) + "f32>"

    def new_arg(shape):
        name = f"%a{len(args)}"
        args.append(f'{name}: {t(shape)} {{of.name = "a{len(args)}"}}')
        values.append((name, shape))
        return name, shape

    new_arg((rng.choice(dims), rng.choice(dims)))
    ops = rng.randint(2, max_ops)
    for i in range(ops):
        name = f"%v{i}"
        x, xs = rng.choice(values)
        kind = rng.choice(["matmul", "matmul", "add", "mul", "relu", "exp",
                           "transpose", "softmax", "reduce"])
        if kind == "matmul":
            k = xs[1]
            same = [v for v in values if v[1][0] == k and v[0] != x]
            if same and rng.random() < 0.5:
                w, ws = rng.choice(same)
            else:
                w, ws = new_arg((k, rng.choice(dims)))
            shape = (xs[0], ws[1])
            lines.append(f"  {name} = of.matmul {x}, {w} : ({t(xs)}, {t(ws)}) -> {t(shape)}")
        elif kind in ("add", "mul"):
            same = [v for v in values if v[1] == xs and v[0] != x]
            y, ys = rng.choice(same) if same and rng.random() < 0.6 else new_arg(xs)
            shape = xs
            lines.append(f"  {name} = of.{kind} {x}, {y} : ({t(xs)}, {t(ys)}) -> {t(shape)}")
        elif kind in ("relu", "exp"):
            shape = xs
            lines.append(f"  {name} = of.{kind} {x} : ({t(xs)}) -> {t(shape)}")
        elif kind == "transpose":
            shape = (xs[1], xs[0])
            lines.append(f"  {name} = of.transpose {x}, [1, 0] : ({t(xs)}) -> {t(shape)}")
        elif kind == "softmax":
            shape = xs
            lines.append(f"  {name} = of.softmax {x} : ({t(xs)}) -> {t(shape)}")
        else:
            shape = (xs[0], 1)
            lines.append(f"  {name} = of.reduce_sum {x} {{axes = array<i64: 1>, keepdims = true}} : ({t(xs)}) -> {t(shape)}")
        values.append((name, shape))
    out, shape = values[-1]
    return (f'of.placement @mesh {{device = "cpu", shape = [{grid}]}}\n'
            f'func.func @g{index}({", ".join(args)}) -> {t(shape)} {{\n'
            + "\n".join(lines) + f"\n  return {out} : {t(shape)}\n}}\n")


def main():
    seed, count = int(sys.argv[1]), int(sys.argv[2])
    max_ops = int(sys.argv[3]) if len(sys.argv) > 3 else 12
    rng = random.Random(seed)
    print("\n// -----\n".join(program(rng, i, max_ops) for i in range(count)))


if __name__ == "__main__":
    main()
