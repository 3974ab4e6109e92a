#!/usr/bin/env python3
"""Trains ResNet-50 v1.5 (resnet50.py, a PyTorch model file) with of, as
DLPerf's and NVIDIA's recipe does: SGD with momentum, weight decay on
convolution and classifier weights only (not on batch-norm gains and
shifts or biases: two parameter groups), label smoothing, optional bf16
autocast, data parallel over --ranks, on deterministic synthetic images
(or a local .npz):

    PYTHONPATH=build/python python3 examples/models/train_resnet50.py \\
        --batch-size 16 --image-size 64 --width 16 --steps 20
    PYTHONPATH=build/python python3 examples/models/train_resnet50.py --ranks 2 --amp
    PYTHONPATH=build/python python3 examples/models/train_resnet50.py --framework torch

--ranks N starts N ranks (python -m of.distributed.launch) unless the
script already runs in a job of N. The batch (--batch-size, the global
batch) is split over the ranks (S(0)) and the parameters are broadcast, so
batch norm normalises over the global batch. --framework torch runs the
same loop with PyTorch (one rank) for comparison. Prints a progress line
per step with the loss and img/s, then img/s without the first two steps,
and saves a checkpoint (of.save of the model's and the optimizer's
state_dict) in --out.
"""

import argparse
import math
import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import workload  # noqa: E402


def parse(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--batch-size", type=int, default=8, help="global batch")
    parser.add_argument("--image-size", type=int, default=64, help="224 for the real model")
    parser.add_argument("--width", type=int, default=16, help="64 for the real model")
    parser.add_argument("--classes", type=int, default=1000)
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--lr", type=float,
                        help="default 0.256 per 256 images (NVIDIA's recipe)")
    parser.add_argument("--momentum", type=float, default=0.875)
    parser.add_argument("--weight-decay", type=float, default=1 / 32768)
    parser.add_argument("--label-smoothing", type=float, default=0.1)
    parser.add_argument("--warmup", type=int, default=0,
                        help="steps of linear warm-up before the cosine decay")
    parser.add_argument("--schedule", choices=["cosine", "constant"], default="cosine")
    parser.add_argument("--zero-init-residual", type=int, choices=[0, 1], default=1,
                        help="start each block's last batch-norm gain at 0 (NVIDIA's "
                             "recipe; 1 by default)")
    parser.add_argument("--amp", action="store_true",
                        help="forward under autocast in bfloat16 (the loss in float32)")
    parser.add_argument("--ranks", type=int, help="data-parallel ranks (default: the job's)")
    parser.add_argument("--eager", action="store_true",
                        help="run the loop eagerly instead of under of.compile(model)")
    parser.add_argument("--framework", choices=["of", "torch"], default="of")
    parser.add_argument("--device", choices=["cpu", "cuda"], default="cpu")
    parser.add_argument("--data", help=".npz with images [N,3,H,W] float32 and labels [N] "
                                       "(default: synthetic images from --seed)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--init", help="initial weights: a state_dict file (of.save, or a "
                                       ".npz of arrays named by state_dict keys)")
    parser.add_argument("--dump-dir", help="of.compile's dump_dir: the IR after each pass "
                                           "and the plan")
    parser.add_argument("--out", default="resnet50-out", help="folder for the checkpoint")
    parser.add_argument("--no-checkpoint", action="store_true")
    parser.add_argument("--log", help="write the per-step losses and times as JSON")
    return parser.parse_args(argv)


class Images:
    """Batches of images and labels: a local .npz cycled through in order,
    or synthetic ones, the batch of step k drawn from NumPy's generator
    seeded (seed, k), so every rank and every run sees the same batches."""

    def __init__(self, options):
        self.options = options
        self.data = np.load(options.data) if options.data else None

    def batch(self, step):
        o = self.options
        if self.data is not None:
            images, labels = self.data["images"], self.data["labels"]
            idx = (np.arange(o.batch_size) + step * o.batch_size) % len(images)
            return images[idx].astype(np.float32), labels[idx].astype(np.int64)
        rng = np.random.default_rng((o.seed, step))
        images = rng.standard_normal((o.batch_size, 3, o.image_size, o.image_size),
                                     dtype=np.float32)
        return images, rng.integers(0, o.classes, o.batch_size)


def schedule(options):
    """LambdaLR's factor at each step: linear warm-up, then cosine decay to 0
    (or constant)."""
    def factor(step):
        if step < options.warmup:
            return (step + 1) / options.warmup
        if options.schedule == "constant":
            return 1.0
        progress = (step - options.warmup) / max(1, options.steps - options.warmup)
        return 0.5 * (1.0 + math.cos(math.pi * min(progress, 1.0)))
    return factor


def main(argv=None):
    options = parse(argv)
    started = workload.start_ranks(options, os.path.abspath(__file__))
    if started is not None:
        return started
    fw = workload.framework(options.framework)
    ns = workload.load_model(options.framework, os.path.join(HERE, "resnet50.py"))
    if options.lr is None:
        options.lr = 0.256 * options.batch_size / 256
    if options.batch_size % workload.world_size(fw):
        sys.exit(f"--batch-size {options.batch_size} is not a multiple of the "
                 f"{workload.world_size(fw)} ranks")

    fw.manual_seed(options.seed)
    model = ns["resnet50"](num_classes=options.classes, width=options.width,
                           zero_init_residual=bool(options.zero_init_residual))
    if options.init:
        workload.load_weights(fw, model, options.init)
    where = workload.placement(fw, options.device) if options.framework == "of" else None
    if where is not None:
        model.to_global(where, fw.sbp.broadcast)
    else:
        model.to(options.device)
    opt = fw.optim.SGD(ns["parameter_groups"](model, options.weight_decay), lr=options.lr,
                       momentum=options.momentum)
    scheduler = fw.optim.lr_scheduler.LambdaLR(opt, schedule(options))
    net = model
    model = ns["TrainingModel"](net, options.label_smoothing, options.amp, options.device)
    if not options.eager:
        model = fw.compile(model, dump_dir=options.dump_dir)
    model.train()

    import of  # the progress line (rank 0 only)
    data = Images(options)
    log = workload.StepLog()
    progress = of.utils.Progress(options.steps, items_per_step=options.batch_size, unit="img")
    for step in progress:
        images, labels = data.batch(step)
        x = fw.tensor(images, device=options.device)
        y = fw.tensor(labels, device=options.device)
        x, y = workload.data_parallel(fw, [x, y], where)
        log.start()
        _, loss = model(x, y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        scheduler.step()
        log.stop(loss.item())
        progress.update(loss=log.losses[-1], lr=f"{scheduler.get_last_lr()[0]:.3e}")

    rate = log.throughput(options.batch_size)
    if workload.rank(fw) == 0 and rate:
        print(f"resnet50 {options.framework} ranks={workload.world_size(fw)} "
              f"batch={options.batch_size} image={options.image_size} width={options.width}"
              f"{' amp=bf16' if options.amp else ''}: {rate:.1f} img/s "
              f"(steps 3-{options.steps})", flush=True)
    log.save(options.log, fw, img_per_s=rate)
    if not options.no_checkpoint:
        os.makedirs(options.out, exist_ok=True)
        path = os.path.join(options.out, "checkpoint.pt")
        fw.save({"model": net.state_dict(), "optimizer": opt.state_dict(),
                 "scheduler": scheduler.state_dict(), "step": options.steps}, path)
        if workload.rank(fw) == 0:
            print(f"checkpoint in {path}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
