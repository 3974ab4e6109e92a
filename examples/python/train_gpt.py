#!/usr/bin/env python3
"""Trains the nanoGPT-style model of nanogpt.py (a PyTorch model file) with
of, after changing only its imports, on a text that ships with Debian:

    PYTHONPATH=build/python python3 examples/python/train_gpt.py --steps 200
    PYTHONPATH=build/python python3 -m of.distributed.launch --nproc 2 \\
        examples/python/train_gpt.py --layout megatron
    PYTHONPATH=build/python python3 examples/python/train_gpt.py --device cuda --aot gpu-job
    PYTHONPATH=build/python python3 examples/python/train_gpt.py --device cuda --aot job4 \\
        --ranks 4 --layout megatron

The model runs on a GPU where one is (--device auto), else on the CPU.
--aot DIR compiles the training step without running it (on any machine:
a "cuda" plan needs no GPU to build, and a plan for --ranks N needs one
process) and writes what `of-run` needs to train it there, without
Python: the plan, the initial weights and the batches, and prints the
command.

Layouts on N ranks: data (parameters broadcast, batch split), megatron
(column/row-parallel MLP, vocabulary-parallel tied embedding), or auto
(only the placement: of.compile(..., auto_parallel=True) searches every
distribution). Prints a
progress line with the loss and tokens/s, saves the step's plan (which
`of-run` executes without Python) and a checkpoint, and samples text.
"""

import argparse
import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
MODEL = os.path.join(HERE, "nanogpt.py")
IMPORTS = [("import torch\n", "import of as torch\n"),
           ("import torch.nn as nn\n", "import of.nn as nn\n"),
           ("from torch.nn import functional as F\n", "from of.nn import functional as F\n")]


def load_model(framework, path=MODEL):
    """A model file written against PyTorch (nanogpt.py by default) as a
    namespace: as written (torch), or with its import lines changed (of)."""
    source = open(path).read()
    if framework == "of":
        changed = 0
        for old, new in IMPORTS:
            assert source.count(old) <= 1, old
            changed += source.count(old)
            source = source.replace(old, new)
        assert changed, f"{path} imports nothing of torch's that of replaces"
    namespace = {"__name__": f"{os.path.splitext(os.path.basename(path))[0]}_{framework}"}
    exec(compile(source, path, "exec"), namespace)
    return namespace


def corpus(vocab):
    text = open("/usr/share/common-licenses/GPL-3", "rb").read()
    return np.frombuffer(text, np.uint8).astype(np.int64) % vocab


def megatron(name, tensor):
    import of
    S, B = of.sbp.split, of.sbp.broadcast
    if name.endswith(("mlp.c_fc.weight", "mlp.c_fc.bias")):
        return [S(0)]
    if name.endswith("mlp.c_proj.weight"):
        return [S(1)]
    if name in ("transformer.wte.weight", "lm_head.weight"):
        return [S(0)]
    return [B]


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=300)
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--lr", type=float, default=3e-3)
    parser.add_argument("--layout", choices=["data", "megatron", "auto"], default="data",
                        help="auto: only the placement; the compiler's SBP search "
                             "chooses every distribution")
    parser.add_argument("--out", default="gpt-out", help="folder for the plan and checkpoint")
    parser.add_argument("--device", choices=["auto", "cpu", "cuda"], default="auto",
                        help="auto: cuda where of.cuda.is_available(), else cpu")
    parser.add_argument("--aot", metavar="DIR",
                        help="compile the step for of-run into DIR instead of training")
    parser.add_argument("--ranks", type=int,
                        help="with --aot: the ranks to compile for (default: this job's)")
    options = parser.parse_args()

    import of
    device = options.device
    if device == "auto":
        device = "cuda" if of.cuda.is_available() else "cpu"
    ns = load_model("of")
    cfg = ns["GPTConfig"](vocab_size=128, block_size=32)
    of.manual_seed(0)
    model = ns["GPT"](cfg)
    ranks = of.env.world_size()
    if options.aot and ranks > 1:
        sys.exit("--aot compiles in one process (--ranks N for N ranks): run it without "
                 "the launcher")
    if options.ranks is not None:
        if not options.aot:
            sys.exit("--ranks is for --aot; a training job has the launcher's ranks")
        if options.ranks < 1:
            sys.exit(f"--ranks must be at least 1, not {options.ranks}")
        ranks = options.ranks
    placement = of.placement(device, ranks=list(range(ranks))) if ranks > 1 else None
    if placement is not None:
        model.to_global(placement,
                        megatron if options.layout == "megatron" else of.sbp.broadcast)
    else:
        model.to(device)
    opt = of.optim.AdamW(model.parameters(), lr=options.lr, betas=(0.9, 0.95),
                         weight_decay=0.1)
    schedule = of.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=options.steps,
                                                       eta_min=options.lr / 10)
    step = of.compile(model, optimizer=opt, auto_parallel=options.layout == "auto")

    tokens = corpus(cfg.vocab_size)
    rng = np.random.default_rng(0)
    if options.aot:
        return ahead_of_time(options, of, cfg, model, step, tokens, rng, device, placement)
    progress = of.utils.Progress(options.steps, items_per_step=options.batch * cfg.block_size,
                                 unit="tok")
    for _ in progress:
        starts = rng.integers(0, len(tokens) - cfg.block_size - 1, options.batch)
        x = of.tensor(np.stack([tokens[s:s + cfg.block_size] for s in starts]), device=device)
        y = of.tensor(np.stack([tokens[s + 1:s + 1 + cfg.block_size] for s in starts]),
                      device=device)
        if placement is not None:
            sbp = of.sbp.split(0) if options.layout == "data" else of.sbp.broadcast
            x, y = x.to_global(placement, sbp), y.to_global(placement, sbp)
        loss = step(x, y)
        schedule.step()
        progress.update(loss=loss.item(), lr=f"{opt.param_groups[0]['lr']:.2e}")

    os.makedirs(options.out, exist_ok=True)
    step.save_plan(os.path.join(options.out, "train_step.ofp"))
    step.save_state(os.path.join(options.out, "checkpoint.safetensors"))

    # sampling with the trained weights on rank 0 (temperature 0.8)
    state = {k: v.numpy() for k, v in model.state_dict().items()}
    if of.env.rank() == 0:
        sampler = ns["GPT"](cfg).to(device)
        sampler.load_state_dict(state)
        sampler.eval()
        forward = of.compile(sampler)
        context = list(tokens[:cfg.block_size])
        out = []
        for _ in range(64):
            logits, _ = forward(of.tensor(np.array([context[-cfg.block_size:]]), device=device))
            z = logits.numpy()[0, -1].astype(np.float64) / 0.8
            p = np.exp(z - z.max())
            nxt = int(rng.choice(len(p), p=p / p.sum()))
            context.append(nxt)
            out.append(nxt)
        text = bytes(t if 32 <= t < 127 or t == 10 else 63 for t in out).decode()
        print(f"sample: {text!r}")
        print(f"plan and checkpoint in {options.out}/")


def ahead_of_time(options, of, cfg, model, step, tokens, rng, device, placement):
    """Writes the step's plan (compiled for one batch's signature, nothing
    run: global tensors on more ranks than this process keep their logical
    values), the initial weights and the batches of `--steps` steps into
    `--aot`, and prints the of-run command that trains it."""
    out = options.aot
    os.makedirs(out, exist_ok=True)
    starts = rng.integers(0, len(tokens) - cfg.block_size - 1, (options.steps, options.batch))
    x = np.stack([[tokens[s:s + cfg.block_size] for s in row] for row in starts])
    y = np.stack([[tokens[s + 1:s + 1 + cfg.block_size] for s in row] for row in starts])
    plan = os.path.join(out, "train_step.ofp")
    example = [of.tensor(x[0], device=device), of.tensor(y[0], device=device)]
    if placement is not None:
        sbp = of.sbp.split(0) if options.layout == "data" else of.sbp.broadcast
        example = [t.to_global(placement, sbp) for t in example]
    step.save_plan(plan, *example)
    of.save(model.state_dict(), os.path.join(out, "init.safetensors"))
    np.save(os.path.join(out, "idx.npy"), x)
    np.save(os.path.join(out, "targets.npy"), y)
    ranks = len(placement.ranks) if placement is not None else 1
    print(f"compiled a {device} training step for {ranks} rank(s) into {out}/; train it with "
          "(at a constant learning rate: the Python run anneals it):")
    print(f"  cd {out} && of-run {f'-n {ranks} ' if ranks > 1 else ''}train_step.ofp "
          f"--entry gpt_train_step "
          f"--init-state init.safetensors --batch idx=idx.npy --batch targets=targets.npy "
          f"--set lr={options.lr} --steps {options.steps} --output-dir trained "
          f"--save-state checkpoint.safetensors")
    return 0


if __name__ == "__main__":
    sys.exit(main())
