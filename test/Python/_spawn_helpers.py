"""Functions test_public_programs_examples2's spawn test runs in new
processes (a spawned process imports them by module name)."""

import os


def write_rank(i, folder, value):
    import of
    t = of.tensor([float(i), value]) * 2
    with open(os.path.join(folder, f"rank{i}.txt"), "w") as f:
        f.write(" ".join(str(v) for v in t.tolist()))


def fail_on_one(i):
    if i == 1:
        raise ValueError("rank one fails")
