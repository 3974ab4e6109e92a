#!/usr/bin/env python3
"""Pretrains BERT (bert.py, a PyTorch model file) with of on deterministic
synthetic sentence pairs masked as BERT masks them: AdamW (weight decay not
on LayerNorm or biases) with linear warm-up then linear decay (LambdaLR),
optional bf16 autocast, data parallel or Megatron tensor parallel over
--ranks:

    PYTHONPATH=build/python python3 examples/models/train_bert.py \\
        --hidden 128 --layers 2 --heads 4 --seq-len 64 --batch-size 8 --steps 20
    PYTHONPATH=build/python python3 examples/models/train_bert.py --ranks 2
    PYTHONPATH=build/python python3 examples/models/train_bert.py --ranks 2 --layout megatron
    PYTHONPATH=build/python python3 examples/models/train_bert.py --base --seq-len 128 \\
        --batch-size 64 --amp     # BERT-base, DLPerf's setting

Layouts on N ranks: data (parameters broadcast, batch split S(0)) or
megatron (query/key/value and the FFN's first linear split by output
features, S(0) of the weight: column parallel, so each rank holds
heads/N heads; the attention output and the FFN's second linear split by
input features, S(1): row parallel, their sums reduced by the compiler;
the word embedding, which is also the MLM decoder, and the decoder bias
split over the vocabulary, S(0); the batch broadcast).

Each sequence is [CLS] A [SEP] B [SEP] padded to --seq-len, its length
drawn between half and all of it; 15% of its word tokens (at most
--max-predictions) are predicted: 80% of them replaced by [MASK], 10% by
a random word, 10% kept. Prints a progress line per step with the loss
and sequences/s, then sequences/s without the first two steps, and saves
a checkpoint (of.save of the model's and the optimizer's state_dict).
"""

import argparse
import math
import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import workload  # noqa: E402

PAD, CLS, SEP, MASK = 0, 1, 2, 3  # the special tokens; words are 4 .. vocab-1


def parse(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--base", action="store_true",
                        help="BERT-base: hidden 768, 12 layers, 12 heads, vocabulary 30522")
    parser.add_argument("--hidden", type=int, default=128)
    parser.add_argument("--layers", type=int, default=2)
    parser.add_argument("--heads", type=int, default=4)
    parser.add_argument("--intermediate", type=int, help="default 4 x hidden")
    parser.add_argument("--vocab", type=int, default=1024)
    parser.add_argument("--seq-len", type=int, default=64)
    parser.add_argument("--max-predictions", type=int,
                        help="masked positions per sequence (default ceil(0.15 * seq-len))")
    parser.add_argument("--dropout", type=float, default=0.1)
    parser.add_argument("--batch-size", type=int, default=8, help="global batch")
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--lr", type=float, default=1e-4)
    parser.add_argument("--warmup", type=float, default=0.1,
                        help="warm-up steps, or a fraction of --steps below 1")
    parser.add_argument("--weight-decay", type=float, default=0.01)
    parser.add_argument("--eps", type=float, default=1e-6, help="AdamW's (BERT's 1e-6)")
    parser.add_argument("--amp", action="store_true",
                        help="forward under autocast in bfloat16 (the losses in float32)")
    parser.add_argument("--ranks", type=int, help="ranks (default: the job's)")
    parser.add_argument("--layout", choices=["data", "megatron"], default="data")
    parser.add_argument("--eager", action="store_true",
                        help="run the loop eagerly instead of under of.compile(model)")
    parser.add_argument("--framework", choices=["of", "torch"], default="of")
    parser.add_argument("--device", choices=["cpu", "cuda"], default="cpu")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--init", help="initial weights: a state_dict file (of.save, or a "
                                       ".npz of arrays named by state_dict keys)")
    parser.add_argument("--dump-dir", help="of.compile's dump_dir: the IR after each pass "
                                           "and the plan")
    parser.add_argument("--out", default="bert-out", help="folder for the checkpoint")
    parser.add_argument("--no-checkpoint", action="store_true")
    parser.add_argument("--log", help="write the per-step losses and times as JSON")
    options = parser.parse_args(argv)
    if options.base:
        options.hidden, options.layers, options.heads, options.vocab = 768, 12, 12, 30522
    if options.max_predictions is None:
        options.max_predictions = math.ceil(0.15 * options.seq_len)
    if options.warmup < 1:
        options.warmup = int(options.warmup * options.steps)
    return options


def config(ns, options):
    return ns["BertConfig"](
        vocab_size=options.vocab, hidden_size=options.hidden,
        num_hidden_layers=options.layers, num_attention_heads=options.heads,
        intermediate_size=options.intermediate or 4 * options.hidden,
        max_position_embeddings=max(512, options.seq_len),
        hidden_dropout_prob=options.dropout, attention_probs_dropout_prob=options.dropout)


def pretraining_batch(options, step):
    """One batch of BERT's pretraining inputs from NumPy's generator seeded
    (seed, step): input_ids, token_type_ids, attention_mask [B, T],
    masked_lm_positions, masked_lm_labels [B, P] (label -1 where a short
    sequence has fewer than P predictions) and next_sentence_labels [B]."""
    B, T, P, V = options.batch_size, options.seq_len, options.max_predictions, options.vocab
    rng = np.random.default_rng((options.seed, step))
    ids = np.full((B, T), PAD, np.int64)
    types = np.zeros((B, T), np.int64)
    mask = np.zeros((B, T), np.int64)
    positions = np.zeros((B, P), np.int64)
    labels = np.full((B, P), -1, np.int64)
    for b in range(B):
        length = int(rng.integers(max(5, T // 2), T + 1))
        a = int(rng.integers(1, length - 3))  # [CLS] a words [SEP] length-3-a words [SEP]
        ids[b, :length] = rng.integers(4, V, length)
        ids[b, 0], ids[b, a + 1], ids[b, length - 1] = CLS, SEP, SEP
        types[b, a + 2:length] = 1
        mask[b, :length] = 1
        words = np.array([i for i in range(1, length - 1) if i != a + 1])
        n = min(P, max(1, int(round(0.15 * len(words)))))
        chosen = np.sort(rng.choice(words, n, replace=False))
        positions[b, :n], labels[b, :n] = chosen, ids[b, chosen]
        fate = rng.random(n)
        ids[b, chosen[fate < 0.8]] = MASK
        swap = chosen[(fate >= 0.8) & (fate < 0.9)]
        ids[b, swap] = rng.integers(4, V, len(swap))
    nsp = rng.integers(0, 2, B)
    return ids, types, mask, positions, labels, nsp


def linear_warmup_decay(options):
    """LambdaLR's factor: linear from 0 to 1 over the warm-up steps, then
    linear to 0 at --steps (BERT's schedule)."""
    def factor(step):
        if step < options.warmup:
            return (step + 1) / (options.warmup + 1)
        return max(0.0, (options.steps - step) / max(1, options.steps - options.warmup))
    return factor


def megatron(name, tensor):
    """Megatron-LM's layout of a BERT parameter (see the module docstring)."""
    import of
    S, B = of.sbp.split, of.sbp.broadcast
    column = ("attention.self.query.", "attention.self.key.", "attention.self.value.",
              "intermediate.dense.")
    if any(c in name for c in column):
        return [S(0)]
    if name.endswith("output.dense.weight"):  # attention.output and the FFN's output
        return [S(1)]
    if name in ("bert.embeddings.word_embeddings.weight", "cls.predictions.decoder.weight",
                "cls.predictions.bias"):
        return [S(0)]
    return [B]


def main(argv=None):
    options = parse(argv)
    started = workload.start_ranks(options, os.path.abspath(__file__))
    if started is not None:
        return started
    fw = workload.framework(options.framework)
    ns = workload.load_model(options.framework, os.path.join(HERE, "bert.py"))
    ranks = workload.world_size(fw)
    if options.layout == "data" and options.batch_size % ranks:
        sys.exit(f"--batch-size {options.batch_size} is not a multiple of the {ranks} ranks")
    if options.layout == "megatron" and options.heads % ranks:
        sys.exit(f"--heads {options.heads} is not a multiple of the {ranks} ranks")

    fw.manual_seed(options.seed)
    model = ns["BertForPreTraining"](config(ns, options))
    if options.init:
        workload.load_weights(fw, model, options.init)
    where = workload.placement(fw, options.device) if options.framework == "of" else None
    if where is not None:
        model.to_global(where, megatron if options.layout == "megatron" else fw.sbp.broadcast)
    else:
        model.to(options.device)
    opt = fw.optim.AdamW(ns["parameter_groups"](model, options.weight_decay), lr=options.lr,
                         betas=(0.9, 0.999), eps=options.eps)
    scheduler = fw.optim.lr_scheduler.LambdaLR(opt, linear_warmup_decay(options))
    net = model
    if not options.eager:
        model = fw.compile(model, dump_dir=options.dump_dir)
    model.train()

    import of  # the progress line (rank 0 only)
    log = workload.StepLog()
    progress = of.utils.Progress(options.steps, items_per_step=options.batch_size, unit="seq")
    for step in progress:
        batch = [fw.tensor(a, device=options.device) for a in pretraining_batch(options, step)]
        if where is not None:
            sbp = fw.sbp.split(0) if options.layout == "data" else fw.sbp.broadcast
            batch = [t.to_global(where, sbp) for t in batch]
        log.start()
        with fw.autocast(options.device, dtype=fw.bfloat16, enabled=options.amp):
            *_, loss = model(*batch)
        opt.zero_grad()
        loss.backward()
        opt.step()
        scheduler.step()
        log.stop(loss.item())
        progress.update(loss=log.losses[-1], lr=f"{scheduler.get_last_lr()[0]:.3e}")

    rate = log.throughput(options.batch_size)
    if workload.rank(fw) == 0 and rate:
        print(f"bert {options.framework} ranks={ranks} layout={options.layout} "
              f"hidden={options.hidden} layers={options.layers} seq={options.seq_len} "
              f"batch={options.batch_size}{' amp=bf16' if options.amp else ''}: "
              f"{rate:.1f} seq/s (steps 3-{options.steps})", flush=True)
    log.save(options.log, fw, seq_per_s=rate)
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
