#!/usr/bin/env python3
"""Trains DLRM (dlrm.py, a PyTorch model file) with of on deterministic
synthetic click data: SGD as facebookresearch/dlrm does, the embedding
tables split over --ranks by rows, the dense part data parallel:

    PYTHONPATH=build/python python3 examples/models/train_dlrm.py \\
        --tables 100000 100000 1000 --embedding-dim 16 --steps 20
    PYTHONPATH=build/python python3 examples/models/train_dlrm.py --ranks 2 \\
        --tables 4000000 1000 --table-budget-mb 200
    PYTHONPATH=build/python python3 examples/models/train_dlrm.py --framework torch

Layout on N ranks: each table's weight split by rows (S(0), rows/N rows
per rank); the ids and offsets of the whole batch on every rank (B), so
each rank pools the ids that fall in its rows, a partial sum (P) of every
bag (OneFlow's and TorchRec's row-wise sharding); the dense features and
labels split by the batch (S(0)) and the MLPs' parameters broadcast; the
compiler reduces the pooled partial sums for the interaction. --dump-dir
keeps the compiled step's IR after each pass and its plan.

--table-budget-mb is the memory one rank may give one table: the script
stops before training when a rank's part of a table is larger. Each
step's SGD update touches only the rows of a rank's part that the batch
names, in place (see dlrm.py): no gradient of a table is materialised.

Each batch (NumPy's generator seeded (seed, step), the same on every rank)
has --pooling x batch ids per table, cut into bags of random sizes (empty
ones too) at sorted random offsets, ids drawn from a power law (a few hot
rows, as real click logs), and labels 1 where a fixed random linear
function of the dense features and the first ids is positive.
"""

import argparse
import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import workload  # noqa: E402


def parse(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tables", type=int, nargs="+", default=[10000, 10000, 1000, 100],
                        help="rows of each embedding table")
    parser.add_argument("--embedding-dim", type=int, default=16)
    parser.add_argument("--dense-features", type=int, default=13)
    parser.add_argument("--bottom", type=int, nargs="+", default=[64],
                        help="the bottom MLP's hidden sizes (then --embedding-dim)")
    parser.add_argument("--top", type=int, nargs="+", default=[64, 32],
                        help="the top MLP's hidden sizes (then one logit)")
    parser.add_argument("--batch-size", type=int, default=64, help="global batch")
    parser.add_argument("--pooling", type=int, default=4, help="ids per bag on average")
    parser.add_argument("--table-budget-mb", type=float,
                        help="memory per rank for one table's rows (MiB)")
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--lr", type=float, default=0.1)
    parser.add_argument("--ranks", type=int, help="ranks (default: the job's)")
    parser.add_argument("--eager", action="store_true",
                        help="run the loop eagerly instead of under of.compile(model)")
    parser.add_argument("--framework", choices=["of", "torch"], default="of")
    parser.add_argument("--device", choices=["cpu", "cuda"], default="cpu")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--init", help="initial weights: a state_dict file (of.save, or a "
                                       ".npz of arrays named by state_dict keys)")
    parser.add_argument("--dump-dir", help="of.compile's dump_dir: the IR after each pass "
                                           "and the plan")
    parser.add_argument("--out", default="dlrm-out", help="folder for the checkpoint")
    parser.add_argument("--no-checkpoint", action="store_true")
    parser.add_argument("--log", help="write the per-step losses and times as JSON")
    return parser.parse_args(argv)


def build(ns, options):
    return ns["DLRM"](options.dense_features, tuple(options.tables), options.embedding_dim,
                      tuple(options.bottom) + (options.embedding_dim,), tuple(options.top))


def click_batch(options, step):
    """dense [B, dense_features] float32, ids [tables, pooling x B],
    offsets [tables, B] (int64) and labels [B] (float32 0/1)."""
    B, n = options.batch_size, options.pooling * options.batch_size
    rng = np.random.default_rng((options.seed, step))
    dense = rng.standard_normal((B, options.dense_features), dtype=np.float32)
    ids = np.stack([np.minimum(rng.zipf(1.2, n) - 1, rows - 1) for rows in options.tables])
    offsets = np.stack([np.concatenate([[0], np.sort(rng.integers(0, n + 1, B - 1))])
                        for _ in options.tables]).astype(np.int64)
    truth = np.random.default_rng(options.seed + 12345)  # the same rule every step
    w = truth.standard_normal(options.dense_features)
    first = ids[0][np.minimum(offsets[0], n - 1)]
    labels = (dense @ w + 0.5 * np.sign((first % 2) - 0.5) > 0).astype(np.float32)
    return dense, ids.astype(np.int64), offsets, labels


def layout(name, tensor):
    """Tables split by rows; the MLPs' parameters broadcast."""
    import of
    return [of.sbp.split(0)] if name.startswith("tables.") else [of.sbp.broadcast]


def table_bytes_per_rank(model):
    """(shape, bytes) of this rank's part of each table."""
    parts = []
    for table in model.tables:
        w = table.weight
        part = w.to_local() if getattr(w, "is_global", False) else w
        parts.append((tuple(part.shape), part.numel() * part.element_size()))
    return parts


def main(argv=None):
    options = parse(argv)
    started = workload.start_ranks(options, os.path.abspath(__file__))
    if started is not None:
        return started
    fw = workload.framework(options.framework)
    ns = workload.load_model(options.framework, os.path.join(HERE, "dlrm.py"))
    ranks = workload.world_size(fw)
    if options.batch_size % ranks:
        sys.exit(f"--batch-size {options.batch_size} is not a multiple of the {ranks} ranks")

    fw.manual_seed(options.seed)
    model = build(ns, options)
    if options.init:
        workload.load_weights(fw, model, options.init)
    where = workload.placement(fw, options.device) if options.framework == "of" else None
    if where is not None:
        model.to_global(where, layout)
    else:
        model.to(options.device)
    parts = table_bytes_per_rank(model)
    if workload.rank(fw) == 0:
        print("tables per rank: " + ", ".join(f"{list(s)} {b / 2 ** 20:.2f} MiB"
                                              for s, b in parts), flush=True)
    largest = max(b for _, b in parts)
    if options.table_budget_mb is not None and largest > options.table_budget_mb * 2 ** 20:
        sys.exit(f"a table's part on each of {ranks} rank(s) is {largest / 2 ** 20:.2f} MiB, "
                 f"over --table-budget-mb {options.table_budget_mb}: train on more ranks")
    opt = fw.optim.SGD(model.parameters(), lr=options.lr)
    net = model
    if not options.eager and options.framework == "of":
        model = fw.compile(model, dump_dir=options.dump_dir)
    model.train()

    import of  # the progress line (rank 0 only)
    log = workload.StepLog()
    progress = of.utils.Progress(options.steps, items_per_step=options.batch_size,
                                 unit="sample")
    for step in progress:
        dense, ids, offsets, labels = (fw.tensor(a, device=options.device)
                                       for a in click_batch(options, step))
        if where is not None:
            S0, B = fw.sbp.split(0), fw.sbp.broadcast
            dense, labels = dense.to_global(where, S0), labels.to_global(where, S0)
            ids, offsets = ids.to_global(where, B), offsets.to_global(where, B)
        log.start()
        loss = model(dense, ids, offsets, labels)
        opt.zero_grad()
        loss.backward()
        opt.step()
        log.stop(loss.item())
        progress.update(loss=log.losses[-1])

    rate = log.throughput(options.batch_size)
    if workload.rank(fw) == 0 and rate:
        print(f"dlrm {options.framework} ranks={ranks} tables={options.tables} "
              f"dim={options.embedding_dim} batch={options.batch_size}: {rate:.1f} samples/s "
              f"(steps 3-{options.steps})", flush=True)
    log.save(options.log, fw, samples_per_s=rate, table_parts=[list(s) for s, _ in parts],
             table_bytes=[b for _, b in parts])
    if not options.no_checkpoint:
        os.makedirs(options.out, exist_ok=True)
        path = os.path.join(options.out, "checkpoint.pt")
        fw.save({"model": net.state_dict(), "optimizer": opt.state_dict(),
                 "step": options.steps}, path)
        if workload.rank(fw) == 0:
            print(f"checkpoint in {path}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
