#!/usr/bin/env python3
"""A small GPT (nanoGPT's architecture: token and position embeddings,
pre-norm blocks of causal multi-head self-attention and a GELU MLP, a final
layer norm and an untied LM head, mean cross-entropy over next tokens)
written as one global `of` program, with a parallel layout chosen by the
distributions of its arguments alone.

    python3 examples/gpt.py [--layout megatron-2] [--device cuda] [--layers 2 ...]

prints the program; `of-opt --of-pipeline=cpu,train=adamw` compiles its
training step. The tests (test/E2E/test_gpt_training.py) and the README's
main job import `program`, `LAYOUTS`, `Config` and `init_params`.

Parameters, with the shapes the layouts split (no reshapes of weights in
the program, so a split weight is a split argument):
  wte [V, C], wpe [T, C]
  h.<l>.ln_1.{weight,bias} [C]
  h.<l>.attn.{q,k,v}.weight [H, C, D]     (one [C, D] matrix per head)
  h.<l>.attn.c_proj.weight [H, D, C], h.<l>.attn.c_proj.bias [C]
  h.<l>.ln_2.{weight,bias} [C]
  h.<l>.mlp.c_fc.weight [C, 4C], .bias [4C]
  h.<l>.mlp.c_proj.weight [4C, C], .bias [C]
  ln_f.{weight,bias} [C], lm_head.weight [C, V]
Inputs: idx [B, T] and targets [B, T] (i64). Output: loss (f32 scalar).
"""

import argparse
import dataclasses
import math


@dataclasses.dataclass(frozen=True)
class Config:
    vocab: int = 64
    block: int = 16     # T: tokens per sequence
    d_model: int = 64   # C
    heads: int = 4      # H (D = C / H)
    layers: int = 2
    batch: int = 4      # B: sequences per step

    @property
    def head_dim(self):
        return self.d_model // self.heads


# name: (mesh, {argument name or suffix: SBP per mesh axis}). A key ending
# in '.' ... matches by suffix, so one entry covers every layer.
_MEGATRON = {".attn.q.weight": ["S(0)"], ".attn.k.weight": ["S(0)"],
             ".attn.v.weight": ["S(0)"], ".attn.c_proj.weight": ["S(0)"],
             ".mlp.c_fc.weight": ["S(1)"], ".mlp.c_fc.bias": ["S(0)"],
             ".mlp.c_proj.weight": ["S(0)"]}
LAYOUTS = {
    "1-rank": ([], {}),
    # batch split: weight gradients are partial sums, all-reduced
    "data-2": ([2], {"idx": ["S(0)"], "targets": ["S(0)"]}),
    "data-4": ([4], {"idx": ["S(0)"], "targets": ["S(0)"]}),
    # Megatron: heads split in attention, columns then rows in the MLP,
    # vocabulary split in the embedding and the LM head
    "megatron-2": ([2], {**_MEGATRON, "wte": ["S(0)"], "lm_head.weight": ["S(1)"]}),
    # 2-D: data parallel over mesh axis 0, Megatron over axis 1
    "2d-2x2": ([2, 2], {"idx": ["S(0)", "B"], "targets": ["S(0)", "B"],
                        **{k: ["B"] + v for k, v in _MEGATRON.items()}}),
    # 3-D: two pipeline stages (mesh axis 0; the first half of the blocks
    # on ranks 0-3, the second on ranks 4-7), each a 2x2 mesh of data
    # parallel by Megatron (vocabulary-parallel embedding and head).
    # Compile with accumulate=K (micro-batches, stacked on a new leading
    # axis of idx and targets) and schedule=1f1b.
    "3d-2x2x2": ([2, 2, 2], {"@stages": True, "idx": ["S(0)", "B"],
                             "targets": ["S(0)", "B"], "wte": ["B", "S(0)"],
                             "lm_head.weight": ["B", "S(1)"],
                             **{k: ["B"] + v for k, v in _MEGATRON.items()}}),
    # only the placement: compile with auto=true (--of-auto-parallel)
    "auto-2": ([2], "auto"),
    "auto-4": ([4], "auto"),
}


def param_shapes(cfg):
    C, H, D, V, T = cfg.d_model, cfg.heads, cfg.head_dim, cfg.vocab, cfg.block
    shapes = {"wte": (V, C), "wpe": (T, C)}
    for l in range(cfg.layers):
        p = f"h.{l}."
        shapes.update({
            p + "ln_1.weight": (C,), p + "ln_1.bias": (C,),
            p + "attn.q.weight": (H, C, D), p + "attn.k.weight": (H, C, D),
            p + "attn.v.weight": (H, C, D),
            p + "attn.c_proj.weight": (H, D, C), p + "attn.c_proj.bias": (C,),
            p + "ln_2.weight": (C,), p + "ln_2.bias": (C,),
            p + "mlp.c_fc.weight": (C, 4 * C), p + "mlp.c_fc.bias": (4 * C,),
            p + "mlp.c_proj.weight": (4 * C, C), p + "mlp.c_proj.bias": (C,),
        })
    shapes.update({"ln_f.weight": (C,), "ln_f.bias": (C,), "lm_head.weight": (C, V)})
    return shapes


def init_params(cfg, rng):
    """GPT-2's initialisation: normal(0, 0.02) weights (residual projections
    scaled by 1/sqrt(2 L)), zero biases, unit layer-norm gains; float32."""
    import numpy as np
    params = {}
    for name, shape in param_shapes(cfg).items():
        if name.endswith("ln_1.weight") or name.endswith("ln_2.weight") or name == "ln_f.weight":
            value = np.ones(shape)
        elif name.endswith("bias"):
            value = np.zeros(shape)
        else:
            std = 0.02
            if name.endswith("c_proj.weight"):
                std /= math.sqrt(2 * cfg.layers)
            value = rng.normal(0.0, std, size=shape)
        params[name] = value.astype(np.float32)
    return params


def _sbp_for(layout, name):
    if name in layout:
        return layout[name]
    for key, sbp in layout.items():
        if key.startswith(".") and name.endswith(key):
            return sbp
    return None


def program(cfg, mesh=(), layout=None, func="gpt", output="loss", device="cpu",
            recompute=False):
    """The GPT as MLIR text: @<func>(idx, targets, params...) -> loss, or
    with output="logits" @<func>(idx, params...) -> logits [B, T, V] (for
    sampling; its parameters are plain inputs, not of.param). A layout's
    placement is on `device` ("cpu" or "cuda": the plan's kind). The layout
    "auto" writes the placement and no distribution: --of-auto-parallel
    (the pipeline's auto=true) chooses them. With `recompute`, each block
    is a checkpointed segment (`of.recompute = l`): the training step
    computes its activations again in the backward pass (--of-recompute)."""
    auto = layout == "auto"
    layout = {} if auto else (layout or {})
    B, T, C, H, D, V = cfg.batch, cfg.block, cfg.d_model, cfg.heads, cfg.head_dim, cfg.vocab
    types = {}
    # Pipeline stages: mesh[0] placements @p0, @p1, ... of mesh[1:] each,
    # on consecutive ranks; block l on stage l * stages // layers.
    stages = mesh[0] if layout.get("@stages") else 1
    if stages > 1:
        mesh = list(mesh[1:])
        if cfg.layers < stages:
            raise ValueError(f"{cfg.layers} blocks cannot fill {stages} pipeline stages")
    per_stage = math.prod(mesh)
    places = [f"p{k}" for k in range(stages)] if stages > 1 else ["p"]
    stage_of_layer = [l * stages // cfg.layers for l in range(cfg.layers)]

    def stage_of(name):
        if name.startswith("h."):
            return stage_of_layer[int(name.split(".")[1])]
        return 0 if name in ("idx", "wte", "wpe") else stages - 1

    def sbp_type(shape, sbp, stage, et="f32"):
        return (plain(shape, et)[:-1]
                + f", #of.sbp<@{places[stage]}, [{', '.join(sbp or ['B'] * len(mesh))}]>>")

    def ty(shape, et="f32", sbp=None, stage=0):
        if mesh and not auto:
            return sbp_type(shape, sbp, stage, et)
        return plain(shape, et)

    def plain(shape, et="f32"):
        return "tensor<" + "".join(f"{d}x" for d in shape) + et + ">"

    args = []
    data = [("idx", "i64", (B, T), "")]
    if output == "loss":
        data.append(("targets", "i64", (B, T), ""))
    param = ", of.param" if output == "loss" else ""
    for name, et, shape, attrs in (
            data + [(n, "f32", s, param) for n, s in param_shapes(cfg).items()]):
        ssa = "%" + name.replace(".", "_")
        types[ssa] = ty(shape, et, _sbp_for(layout, name), stage_of(name))
        args.append(f'{ssa}: {types[ssa]} {{of.name = "{name}"{attrs}}}')

    lines = []
    segment = [None]  # the block being written, when it is recomputed

    def op(result, text, shape, et="f32"):
        if segment[0] is not None:
            mark = f"of.recompute = {segment[0]} : i64"
            head, sep, tail = text.partition(" : ")
            text = (head[:-1] + f", {mark}}}" if head.endswith("}") else head + f" {{{mark}}}") \
                + sep + tail
        types[result] = plain(shape, et)
        lines.append(f"{result} = " + text.replace("$R", types[result]))
        return result

    def t(*values):
        return ", ".join(types[v] for v in values)

    def layer_norm(out, x, prefix, shape):
        w, b = f"%{prefix}_weight", f"%{prefix}_bias"
        return op(out, f"of.layer_norm {x} weight {w} bias {b} : ({t(x, w, b)}) -> $R", shape)

    tok = op("%tok", f"of.embedding %idx, %wte : ({t('%idx', '%wte')}) -> $R", (B, T, C))
    h = op("%h0", f"of.add {tok}, %wpe : ({t(tok, '%wpe')}) -> $R", (B, T, C))
    mask = ", ".join("[" + ", ".join("true" if j <= i else "false" for j in range(T)) + "]"
                     for i in range(T))
    for k in range(stages):  # each stage's own constants
        sfx = f"_s{k}" if stages > 1 else ""
        lines.append(f"%causal{sfx} = of.constant dense<[{mask}]> : {plain((T, T), 'i1')}")
        types[f"%causal{sfx}"] = plain((T, T), "i1")
        lines.append(f"%scale{sfx} = of.constant dense<{1 / math.sqrt(D):.9e}> : tensor<f32>")
        lines.append(f"%neg{sfx} = of.constant dense<-1.0e9> : tensor<f32>")
        types[f"%scale{sfx}"] = types[f"%neg{sfx}"] = "tensor<f32>"
    for l in range(cfg.layers):
        segment[0] = l if recompute else None
        sfx = f"_s{stage_of_layer[l]}" if stages > 1 else ""
        if l and stage_of_layer[l] != stage_of_layer[l - 1]:
            # the stage boundary: the residual stream moves on, rows split
            # over the data-parallel axis as the batch is
            moved = sbp_type((B, T, C), ["S(0)"] + ["B"] * (len(mesh) - 1),
                             stage_of_layer[l])
            lines.append(f"%x{l} = of.boxing {h} : {types[h]} -> {moved}")
            types[f"%x{l}"] = moved
            h = f"%x{l}"
        p = f"%h_{l}_"
        n1 = layer_norm(f"%n1_{l}", h, f"h_{l}_ln_1", (B, T, C))
        n1r = op(f"%n1r_{l}", f"of.reshape {n1} : ({t(n1)}) -> $R", (B, 1, T, C))
        q, k, v = (op(f"%{w}_{l}", f"of.matmul {n1r}, {p}attn_{w}_weight : "
                      f"({t(n1r, p + f'attn_{w}_weight')}) -> $R", (B, H, T, D))
                   for w in "qkv")
        s = op(f"%s_{l}", f"of.matmul {q}, {k} {{transpose_b = true}} : ({t(q, k)}) -> $R",
               (B, H, T, T))
        ss = op(f"%ss_{l}", f"of.mul {s}, %scale{sfx} : ({t(s, '%scale' + sfx)}) -> $R",
                (B, H, T, T))
        sm = op(f"%sm_{l}", f"of.select %causal{sfx}, {ss}, %neg{sfx} : "
                f"({t('%causal' + sfx, ss, '%neg' + sfx)}) -> $R", (B, H, T, T))
        a = op(f"%a_{l}", f"of.softmax {sm} {{axis = -1}} : ({t(sm)}) -> $R", (B, H, T, T))
        o = op(f"%o_{l}", f"of.matmul {a}, {v} : ({t(a, v)}) -> $R", (B, H, T, D))
        po = op(f"%po_{l}", f"of.matmul {o}, {p}attn_c_proj_weight : "
                f"({t(o, p + 'attn_c_proj_weight')}) -> $R", (B, H, T, C))
        att = op(f"%att_{l}", f"of.reduce_sum {po} {{axes = array<i64: 1>}} : ({t(po)}) -> $R",
                 (B, T, C))
        attb = op(f"%attb_{l}", f"of.add {att}, {p}attn_c_proj_bias : "
                  f"({t(att, p + 'attn_c_proj_bias')}) -> $R", (B, T, C))
        r1 = op(f"%r1_{l}", f"of.add {h}, {attb} : ({t(h, attb)}) -> $R", (B, T, C))
        n2 = layer_norm(f"%n2_{l}", r1, f"h_{l}_ln_2", (B, T, C))
        f1 = op(f"%f1_{l}", f"of.matmul {n2}, {p}mlp_c_fc_weight : "
                f"({t(n2, p + 'mlp_c_fc_weight')}) -> $R", (B, T, 4 * C))
        f2 = op(f"%f2_{l}", f"of.add {f1}, {p}mlp_c_fc_bias : "
                f"({t(f1, p + 'mlp_c_fc_bias')}) -> $R", (B, T, 4 * C))
        f3 = op(f"%f3_{l}", f'of.gelu {f2} {{approximate = "tanh"}} : ({t(f2)}) -> $R',
                (B, T, 4 * C))
        f4 = op(f"%f4_{l}", f"of.matmul {f3}, {p}mlp_c_proj_weight : "
                f"({t(f3, p + 'mlp_c_proj_weight')}) -> $R", (B, T, C))
        f5 = op(f"%f5_{l}", f"of.add {f4}, {p}mlp_c_proj_bias : "
                f"({t(f4, p + 'mlp_c_proj_bias')}) -> $R", (B, T, C))
        h = op(f"%h{l + 1}", f"of.add {r1}, {f5} : ({t(r1, f5)}) -> $R", (B, T, C))
    segment[0] = None
    hf = layer_norm("%hf", h, "ln_f", (B, T, C))
    logits = op("%logits", f"of.matmul {hf}, %lm_head_weight : "
                f"({t(hf, '%lm_head_weight')}) -> $R", (B, T, V))
    if output == "loss":
        flat = op("%flat", f"of.reshape {logits} : ({t(logits)}) -> $R", (B * T, V))
        tgt = op("%tgt", f"of.reshape %targets : ({t('%targets')}) -> $R", (B * T,), "i64")
        ce = op("%ce", f"of.cross_entropy {flat}, {tgt} : ({t(flat, tgt)}) -> $R", (B * T,))
        result = op("%loss", f"of.reduce_mean {ce} {{axes = array<i64: 0>}} : ({t(ce)}) -> $R",
                    ())
        result_shape = ()
    else:
        result, result_shape = logits, (B, T, V)
    result_type = plain(result_shape)
    if mesh:
        result_type = sbp_type(result_shape, None, stages - 1)
        lines.append(f"%result = of.boxing {result} : {types[result]} -> {result_type}")
        result = "%result"
    shape = ", ".join(map(str, mesh))
    if stages > 1:
        header = "".join(
            f'of.placement @{places[k]} {{device = "{device}", shape = [{shape}], ranks = '
            f'[{", ".join(str(r) for r in range(k * per_stage, (k + 1) * per_stage))}]}}\n'
            for k in range(stages))
    else:
        header = f'of.placement @p {{device = "{device}", shape = [{shape}]}}\n' if mesh else ""
    body = "\n  ".join(lines)
    return (f"{header}func.func @{func}({', '.join(args)}) -> "
            f"({result_type} {{of.name = \"{output}\"}}) {{\n  {body}\n  return {result} : {result_type}\n}}\n")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--layout", choices=list(LAYOUTS), default="1-rank")
    parser.add_argument("--output", choices=["loss", "logits"], default="loss")
    parser.add_argument("--device", choices=["cpu", "cuda"], default="cpu",
                        help="the placement's device (the plan's: --of-pipeline=cpu|cuda)")
    parser.add_argument("--recompute", action="store_true",
                        help="recompute each block's activations in the backward pass")
    for field in dataclasses.fields(Config):
        parser.add_argument("--" + field.name.replace("_", "-"), type=int, default=field.default)
    options = parser.parse_args()
    cfg = Config(**{f.name: getattr(options, f.name) for f in dataclasses.fields(Config)})
    mesh, layout = LAYOUTS[options.layout]
    print(program(cfg, mesh, layout, output=options.output, device=options.device,
                  recompute=options.recompute), end="")


if __name__ == "__main__":
    main()
