#!/usr/bin/env python3
"""Trains a partial-FC face classifier (face.py, a PyTorch model file) with
of, as InsightFace's arcface_torch does: an iResNet backbone data parallel
over --ranks, the classification layer's weight [classes, embedding] split
over the ranks by class, an ArcFace or CosFace margin softmax, optional
class sampling, SGD with momentum and weight decay, on deterministic
synthetic images:

    PYTHONPATH=build/python python3 examples/models/train_face.py \\
        --num-classes 10000 --embedding 512 --steps 20
    PYTHONPATH=build/python python3 examples/models/train_face.py --ranks 2 \\
        --num-classes 100000 --sample-rate 0.1 --fc-budget-mb 200
    PYTHONPATH=build/python python3 examples/models/train_face.py --framework torch

Layout on N ranks: the backbone's parameters broadcast and the images and
labels split by the batch (S(0)); the classification weight split by class
(S(0), each rank holding classes/N rows, 1/N of its bytes), so the logits
[batch, classes] come out split by class (S(1)): the compiler all-gathers
the embeddings (batch x embedding floats), and the cross entropy over the
class-split logits all-reduces each example's maximum (P(max)), sum of
exponentials and target logit (P) instead of gathering the logits.
--dump-dir keeps the compiled step's IR after each pass (the
of-insert-boxing stage shows every op's SBP and each of.boxing). At 20000
classes on 2 ranks: the forward's logits matmul is (B embeddings x S(1)
weight^T) -> S(1), of.cross_entropy takes S(1) logits and B labels with
the two-stage reduction, the weight's gradient matmul stays S(1) (no
gathered weight or logits). The backward, though, turns batch split:
propagation gives the loss gradient's broadcast_to an S(0) result, so the
softmax gradient and the margin's where/clamp gradients run on S(0) with
some ten [batch, classes] all-to-alls (S(1) <-> S(0)) around them, where
keeping S(1) would need none.

--fc-budget-mb is the memory one rank may give the classification weight:
the script stops before training when a rank's part of it is larger (so
a class count that one rank cannot hold trains on more). --sample-rate r
< 1 trains each step on the batch's classes and random others, round(r x
classes) in all (face.sample_mask; the same classes on any number of
ranks). Prints a progress line per step with the loss and img/s, then
img/s without the first two steps, and saves a checkpoint.
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
    parser.add_argument("--num-classes", type=int, default=1000)
    parser.add_argument("--embedding", type=int, default=512)
    parser.add_argument("--width", type=int, default=16, help="64 for the real backbone")
    parser.add_argument("--layers", type=int, nargs=4, default=[1, 1, 1, 1],
                        help="blocks per stage (iResNet-18: 2 2 2 2, -100: 3 13 30 3)")
    parser.add_argument("--image-size", type=int, default=32, help="112 for the real model")
    parser.add_argument("--batch-size", type=int, default=16, help="global batch")
    parser.add_argument("--margin", choices=["arcface", "cosface"], default="arcface")
    parser.add_argument("--m", type=float, help="the margin (ArcFace 0.5, CosFace 0.4)")
    parser.add_argument("--scale", type=float, default=64.0)
    parser.add_argument("--sample-rate", type=float, default=1.0,
                        help="partial FC: the fraction of classes in each step's softmax")
    parser.add_argument("--fc-budget-mb", type=float,
                        help="memory per rank for the classification weight (MiB)")
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--lr", type=float, default=0.02)
    parser.add_argument("--momentum", type=float, default=0.9)
    parser.add_argument("--weight-decay", type=float, default=5e-4)
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
    parser.add_argument("--out", default="face-out", help="folder for the checkpoint")
    parser.add_argument("--no-checkpoint", action="store_true")
    parser.add_argument("--log", help="write the per-step losses and times as JSON")
    return parser.parse_args(argv)


def build(ns, options):
    """The backbone and the margin-softmax layer as one FaceModel."""
    backbone = ns["IResNet"](tuple(options.layers), options.embedding, options.width,
                             options.image_size)
    head = ns["PartialFC"](options.embedding, options.num_classes, options.margin,
                           options.m, options.scale)
    return ns["FaceModel"](backbone, head)


def batch(options, step, sample_mask):
    """Images, labels and the sampled classes' mask (None without
    sampling) of step `step`, from NumPy's generator seeded (seed, step):
    the same on every rank and in every run."""
    rng = np.random.default_rng((options.seed, step))
    s = options.image_size
    images = rng.standard_normal((options.batch_size, 3, s, s), dtype=np.float32)
    labels = rng.integers(0, options.num_classes, options.batch_size)
    if options.sample_rate >= 1.0:
        return images, labels, None
    return images, labels, sample_mask(labels, options.num_classes, options.sample_rate, rng)


def layout(name, tensor):
    """The classification weight split by class; the rest broadcast."""
    import of
    return [of.sbp.split(0)] if name == "head.weight" else [of.sbp.broadcast]


def fc_bytes_per_rank(model, fw):
    """This rank's bytes of the classification weight (its part's shape on
    several ranks)."""
    w = model.head.weight
    part = w.to_local() if getattr(w, "is_global", False) else w
    return tuple(part.shape), part.numel() * part.element_size()


def main(argv=None):
    options = parse(argv)
    started = workload.start_ranks(options, os.path.abspath(__file__))
    if started is not None:
        return started
    fw = workload.framework(options.framework)
    ns = workload.load_model(options.framework, os.path.join(HERE, "face.py"))
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
    shape, nbytes = fc_bytes_per_rank(model, fw)
    if workload.rank(fw) == 0:
        print(f"classification weight per rank: {list(shape)}, {nbytes / 2 ** 20:.2f} MiB",
              flush=True)
    if options.fc_budget_mb is not None and nbytes > options.fc_budget_mb * 2 ** 20:
        sys.exit(f"the classification weight's part on each of {ranks} rank(s) is "
                 f"{nbytes / 2 ** 20:.2f} MiB, over --fc-budget-mb {options.fc_budget_mb}: "
                 f"train on more ranks")
    opt = fw.optim.SGD(model.parameters(), lr=options.lr, momentum=options.momentum,
                       weight_decay=options.weight_decay)
    net = model
    if not options.eager and options.framework == "of":
        model = fw.compile(model, dump_dir=options.dump_dir)
    model.train()

    import of  # the progress line (rank 0 only)
    log = workload.StepLog()
    progress = of.utils.Progress(options.steps, items_per_step=options.batch_size, unit="img")
    for step in progress:
        images, labels, mask = batch(options, step, ns["sample_mask"])
        x, y = (fw.tensor(a, device=options.device) for a in (images, labels))
        if where is not None:  # images by the batch, labels whole (see the docstring)
            x, y = x.to_global(where, fw.sbp.split(0)), y.to_global(where, fw.sbp.broadcast)
        extra = []
        if mask is not None:
            m = fw.tensor(mask, device=options.device)
            extra = [m.to_global(where, fw.sbp.split(0)) if where is not None else m]
        log.start()
        loss = model(x, y, *extra)
        opt.zero_grad()
        loss.backward()
        opt.step()
        log.stop(loss.item())
        progress.update(loss=log.losses[-1])

    rate = log.throughput(options.batch_size)
    if workload.rank(fw) == 0 and rate:
        print(f"face {options.framework} ranks={ranks} classes={options.num_classes} "
              f"embedding={options.embedding} batch={options.batch_size} "
              f"sample-rate={options.sample_rate}: {rate:.1f} img/s "
              f"(steps 3-{options.steps})", flush=True)
    log.save(options.log, fw, img_per_s=rate, fc_shape=list(shape), fc_bytes=nbytes)
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
