#!/usr/bin/env python3
"""DLPerf's method on the seed's workloads (examples/models), CPU: the
training throughput of ResNet-50 v1.5, BERT pretraining, the partial-FC
face classifier and DLRM on 1, 2 and 4 ranks, under of (the training
scripts, compiled, data parallel; face and DLRM with the classification
weight / the tables split over the ranks) and under PyTorch (eager; on
several ranks DistributedDataParallel over gloo, every rank holding the
whole model, the global batch split between them), at reduced sizes.

DLPerf's method (NVIDIA/DeepLearningExamples' and OneFlow's DLPerf): the
first --warmup steps are not timed (compiling, caches); the timed steps
form --rounds rounds of --round-steps steps; a round's throughput is its
items over its time, and the figure is the median over the rounds. The
table gives items/s, the speedup over the same framework's 1 rank, the
scaling efficiency (speedup / ranks) and of's throughput over PyTorch's.

    python3 bench/dlperf.py [--models resnet50 bert face dlrm] [--ranks 1 2 4]
                            [--warmup 3] [--rounds 5] [--round-steps 4]
    python3 bench/dlperf.py --quick     # tiny sizes, 1 and 2 ranks: checks it runs

Each measurement is a fresh process (of: the training script with --log;
PyTorch: torch.multiprocessing here). This machine is shared: run it
alone, and read figures within one run only.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MODELS = os.path.join(ROOT, "examples", "models")
sys.path.insert(0, MODELS)

# Reduced sizes (the scripts' flags), and tiny ones for --quick.
SIZES = {
    "resnet50": (["--batch-size", "32", "--image-size", "64", "--width", "16",
                  "--classes", "1000"],
                 ["--batch-size", "4", "--image-size", "32", "--width", "4", "--classes", "10"]),
    "bert": (["--hidden", "128", "--layers", "2", "--heads", "4", "--vocab", "1024",
              "--seq-len", "64", "--batch-size", "16", "--dropout", "0"],
             ["--hidden", "32", "--layers", "1", "--heads", "2", "--vocab", "128",
              "--seq-len", "16", "--batch-size", "4", "--dropout", "0"]),
    "face": (["--num-classes", "100000", "--embedding", "128", "--width", "8",
              "--image-size", "32", "--batch-size", "32", "--sample-rate", "0.1"],
             ["--num-classes", "256", "--embedding", "16", "--width", "4", "--image-size",
              "16", "--batch-size", "4", "--sample-rate", "0.5"]),
    "dlrm": (["--tables", "200000", "200000", "10000", "1000", "--embedding-dim", "32",
              "--bottom", "128", "64", "--top", "128", "64", "--batch-size", "256"],
             ["--tables", "1000", "100", "--embedding-dim", "8", "--bottom", "16",
              "--top", "16", "--batch-size", "8"]),
}
AMP_MODELS = ("resnet50", "bert")  # the scripts that take --amp
UNITS = {"resnet50": "img/s", "bert": "seq/s", "face": "img/s", "dlrm": "samples/s"}


def script_of(name):
    import importlib
    return importlib.import_module({"resnet50": "train_resnet50", "bert": "train_bert",
                                    "face": "train_face", "dlrm": "train_dlrm"}[name])


def rounds_throughput(seconds, batch, options):
    """Median over rounds of items/s, the warm-up steps left out."""
    timed = seconds[options.warmup:]
    k = options.round_steps
    rates = [batch * k / sum(timed[i:i + k]) for i in range(0, len(timed) - k + 1, k)]
    return statistics.median(rates) if rates else float("nan")


def total_steps(options):
    return options.warmup + options.rounds * options.round_steps


def run_of(name, args, ranks, options):
    """Throughput of the training script under of on `ranks` ranks."""
    script = script_of(name)
    with tempfile.TemporaryDirectory() as tmp:
        log = os.path.join(tmp, "log.json")
        cmd = [sys.executable, script.__file__, "--ranks", str(ranks), "--steps",
               str(total_steps(options)), "--no-checkpoint", "--log", log] + args
        proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                              text=True, timeout=options.timeout)
        if proc.returncode:
            raise RuntimeError(f"{' '.join(cmd)} failed:\n{proc.stdout[-3000:]}")
        seconds = json.load(open(log))["seconds"]
    return rounds_throughput(seconds, script.parse(args).batch_size, options)


# -- PyTorch: the same model and batches, eager, DDP over gloo on several ranks ------------

def torch_workload(name, args):
    """(model, batch(step, rank, ranks) -> inputs, loss(model, inputs)) for
    PyTorch; a rank's inputs are its part of the global batch."""
    import torch
    import workload
    script = script_of(name)
    options = script.parse(args)
    ns = workload.load_model("torch", os.path.join(MODELS, f"{name}.py"))
    torch.manual_seed(options.seed)

    def part(a, rank, ranks):
        n = len(a) // ranks
        return torch.tensor(a[rank * n:(rank + 1) * n])

    if name == "resnet50":
        model = ns["TrainingModel"](ns["resnet50"](num_classes=options.classes,
                                                   width=options.width),
                                    options.label_smoothing, options.amp)
        data = script.Images(options)
        return (model, lambda s, r, n: [part(a, r, n) for a in data.batch(s)],
                lambda m, xs: m(*xs)[1])
    if name == "bert":
        model = ns["BertForPreTraining"](script.config(ns, options))

        def bert_loss(m, xs):  # as train_bert.py: the forward under autocast
            with torch.autocast("cpu", dtype=torch.bfloat16, enabled=options.amp):
                return m(*xs)[-1]
        return (model, lambda s, r, n: [part(a, r, n)
                                        for a in script.pretraining_batch(options, s)],
                bert_loss)
    if name == "face":
        model = script.build(ns, options)

        def face_batch(s, r, n):
            images, labels, mask = script.batch(options, s, ns["sample_mask"])
            extra = [] if mask is None else [torch.tensor(mask)]
            return [part(images, r, n), part(labels, r, n)] + extra
        return model, face_batch, lambda m, xs: m(*xs)
    model = script.build(ns, options)

    def dlrm_batch(s, r, n):
        dense, ids, offsets, labels = script.click_batch(options, s)
        b = len(labels) // n
        lo, hi = r * b, (r + 1) * b
        bag_ids, bag_offsets = [], []
        for t in range(len(ids)):
            start = offsets[t][lo]
            end = offsets[t][hi] if hi < len(labels) else len(ids[t])
            bag_ids.append(torch.tensor(ids[t][start:end]))
            bag_offsets.append(torch.tensor(offsets[t][lo:hi] - start))
        return [part(dense, r, n), bag_ids, bag_offsets, part(labels, r, n)]
    return model, dlrm_batch, lambda m, xs: m(*xs)


def _torch_rank(rank, ranks, name, args, options, port, out):
    import time

    import torch
    import torch.distributed as dist
    torch.set_num_threads(max(1, (os.cpu_count() or 1) // ranks))
    if ranks > 1:
        os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
        dist.init_process_group("gloo", rank=rank, world_size=ranks)
    model, batch, loss_of = torch_workload(name, args)
    if ranks > 1:
        model = torch.nn.parallel.DistributedDataParallel(model)
    opt = torch.optim.SGD(model.parameters(), lr=1e-3)  # the throughput's, not the recipe's
    seconds = []
    for step in range(total_steps(options)):
        inputs = batch(step, rank, ranks)
        start = time.perf_counter()
        loss = loss_of(model, inputs)
        opt.zero_grad()
        loss.backward()
        opt.step()
        float(loss.detach())
        if ranks > 1:
            dist.barrier()
        seconds.append(time.perf_counter() - start)
    if rank == 0:
        json.dump(seconds, open(out, "w"))
    if ranks > 1:
        dist.destroy_process_group()


def run_torch(name, args, ranks, options):
    import torch.multiprocessing as mp
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "seconds.json")
        port = 29500 + (os.getpid() % 1000)
        mp.spawn(_torch_rank, args=(ranks, name, args, options, port, out), nprocs=ranks,
                 join=True)
        seconds = json.load(open(out))
    return rounds_throughput(seconds, script_of(name).parse(args).batch_size, options)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--models", nargs="+", choices=list(SIZES), default=list(SIZES))
    parser.add_argument("--ranks", type=int, nargs="+", default=[1, 2, 4])
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--round-steps", type=int, default=4)
    parser.add_argument("--frameworks", nargs="+", choices=["of", "torch"],
                        default=["of", "torch"])
    parser.add_argument("--timeout", type=int, default=1800)
    parser.add_argument("--quick", action="store_true",
                        help="tiny sizes, ranks 1 and 2, 2 warm-up steps, 2 rounds of 1 step")
    parser.add_argument("--json", help="write the results as JSON")
    parser.add_argument("--amp", action="store_true",
                        help="also bf16 autocast rows for the models whose scripts take --amp "
                             "(ResNet-50, BERT), PyTorch under torch.autocast('cpu', bf16)")
    options = parser.parse_args(argv)
    if options.quick:
        options.ranks = [r for r in options.ranks if r <= 2]
        options.warmup, options.rounds, options.round_steps = 2, 2, 1

    results = {}
    rows = [(name, name, SIZES[name][1 if options.quick else 0]) for name in options.models]
    if options.amp:
        rows += [(name + "+amp", name, SIZES[name][1 if options.quick else 0] + ["--amp"])
                 for name in options.models if name in AMP_MODELS]
    for label, name, args in rows:
        for ranks in options.ranks:
            for fw in options.frameworks:
                rate = (run_of if fw == "of" else run_torch)(name, args, ranks, options)
                results[(label, fw, ranks)] = rate
                print(f"{label:12s} {fw:5s} ranks={ranks}: {rate:10.1f} {UNITS[name]}",
                      flush=True)

    print()
    header = (f"{'model':12s} {'ranks':>5s} {'of':>11s} {'speedup':>8s} {'eff':>5s} "
              f"{'torch':>11s} {'speedup':>8s} {'eff':>5s} {'of/torch':>9s}  unit")
    print(header)
    print("-" * len(header))
    table = []
    for label, name, _ in rows:
        for ranks in options.ranks:
            row = {"model": label, "ranks": ranks, "unit": UNITS[name]}
            cells = []
            for fw in ("of", "torch"):
                rate = results.get((label, fw, ranks), float("nan"))
                base = results.get((label, fw, options.ranks[0]), float("nan"))
                speedup = rate / base * options.ranks[0]
                row[fw], row[f"{fw}_speedup"] = rate, speedup
                cells.append(f"{rate:11.1f} {speedup:8.2f} {speedup / ranks:5.2f}")
            ratio = row["of"] / row["torch"]
            row["of_over_torch"] = ratio
            table.append(row)
            print(f"{label:12s} {ranks:5d} {cells[0]} {cells[1]} {ratio:9.2f}  {UNITS[name]}")
    if options.json:
        json.dump(table, open(options.json, "w"), indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
