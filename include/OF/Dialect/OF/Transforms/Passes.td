//===- Passes.td - OF transforms on upstream dialects ------*- tablegen -*-===//

#ifndef OF_TRANSFORMS_PASSES_TD
#define OF_TRANSFORMS_PASSES_TD

include "mlir/Pass/PassBase.td"

def FuseElementwisePass : Pass<"of-fuse-elementwise"> {
  let summary = "Fuse chains of elementwise linalg ops, leaving matrix products alone";
  let description = [{
    Upstream elementwise fusion (producer/consumer `linalg.generic` fusion
    and folding of reshapes into generics by expansion), controlled so that
    contractions (`linalg.contract`, matmul-like generics) are neither fused
    into nor reshaped: they stay whole so that the plan builder can hand
    them to BLAS, which is faster than a fused loop nest. A producer that
    has other users is not recomputed in a consumer when it reads more than
    one full-size input (it runs for its other users anyway, and reading
    its result is one stream), nor is a transcendental producer that the
    consumer broadcasts. Reductions (`linalg.reduce`) become generics first,
    so that a producer only a reduction reads (a squared deviation, the
    product of a gradient and a normalised input) fuses into it and is never
    written out; a transcendental producer kept for other users is not
    recomputed in a reduction.

    ```mlir
    %a = linalg.generic ... { exp } ins(%x) outs(%e0)
    %b = linalg.generic ... { tanh } ins(%a) outs(%e1)
    // becomes one generic computing tanh(exp(x))
    ```
  }];
  let dependentDialects = ["::mlir::linalg::LinalgDialect",
                           "::mlir::tensor::TensorDialect"];
}

//===----------------------------------------------------------------------===//
// Training
//===----------------------------------------------------------------------===//

def AutodiffPass : Pass<"of-autodiff", "::mlir::ModuleOp"> {
  let summary = "Add the reverse-mode gradient function of every function with parameters";
  let description = [{
    For each function whose arguments include `{of.param}` ones and whose
    first result is the scalar loss (`tensor<f32>`, or another float type),
    adds `@<name>_grad`: the same arguments, returning the loss followed by
    the gradient of the loss with respect to each parameter, in argument
    order, each of its parameter's type (a gradient computed without a
    distribution is boxed to the parameter's, so a `B` parameter gets a `B`
    gradient). The function's other results follow the gradients unchanged,
    in order: outputs (values a caller reads beside the loss, e.g. logits)
    and results marked `of.update = <argument>` (the function's own state,
    e.g. batch norm's running statistics). The original function stays.

    The backward program is built from each op's `GradientOpInterface`
    (vector-Jacobian product written with `of` ops) in reverse program
    order, only for ops on a path from a parameter to the loss; gradients
    of values used several times are summed, and forward values that no
    result needs are erased. It runs before SBP propagation,
    so the backward ops get signatures like any other: under data
    parallelism a weight gradient comes out `P` and its boxing to the
    parameter's `B` is an all-reduce. Fails, naming the op, when an op on
    such a path has no gradient.

    In a function over several placements (pipeline stages) the ops that
    the backward pass adds carry the unit attribute `of.backward`, which
    `--of-schedule-stages` reads (and removes); the gradient of a boxing
    between placements is boxed back to the source's placement.

    `seed-argument = true` gives `@<name>_grad` one more argument, last,
    named `loss_seed` and of the loss's type: the loss's cotangent (the
    seed of the backward pass, otherwise the constant 1). The gradients
    then come out multiplied by it; `--of-training-step`'s dynamic loss
    scaling passes its loss scale there.

    ```mlir
    func.func @loss(%x: tensor<4x8xf32>, %w: tensor<8x2xf32> {of.param})
        -> tensor<f32> {
      %y = of.matmul %x, %w : (tensor<4x8xf32>, tensor<8x2xf32>) -> tensor<4x2xf32>
      %l = of.reduce_sum %y {axes = array<i64: 0, 1>} : (tensor<4x2xf32>) -> tensor<f32>
      return %l : tensor<f32>
    }
    // adds
    func.func @loss_grad(%x: tensor<4x8xf32>, %w: tensor<8x2xf32> {of.param})
        -> (tensor<f32>, tensor<8x2xf32>) {
      ... forward ...
      %one = of.constant dense<1.0> : tensor<f32>
      %g = of.broadcast_to ... : (tensor<1x1xf32>) -> tensor<4x2xf32>
      %dw = of.matmul %x, %g {transpose_a = true} : ... -> tensor<8x2xf32>
      return %l, %dw : tensor<f32>, tensor<8x2xf32>
    }
    ```
  }];
  let options = [
    Option<"seedArgument", "seed-argument", "bool", "false",
           "Take the loss's cotangent as a last argument, loss_seed">,
  ];
  let dependentDialects = ["::mlir::of::OFDialect"];
}

def AmpPass : Pass<"of-amp", "::mlir::ModuleOp"> {
  let summary = "Automatic mixed precision: matrix products and convolutions in bf16 or f16";
  let description = [{
    Rewrites every `of.matmul` and `of.conv2d` of f32 operands into one of
    `dtype` operands (bf16 or f16; cast in, a convolution's bias too),
    computed with f32 accumulation and rounded to `dtype` once (the
    lowering's mixed-precision contraction, convolution and convolution
    gradients), and cast back to f32, so everything around it (softmax,
    normalisations, reductions, losses, the optimizer) stays f32 and
    parameters stay f32 master weights. Run before `--of-autodiff`: the
    backward products then run in `dtype` too, and each parameter's
    gradient is cast back to f32 by the casts' own gradients. This is
    PyTorch autocast's treatment of matmul and conv.

    f16 has 5 exponent bits: gradients below 6e-8 flush to zero and above
    65504 overflow. Training in f16 therefore needs dynamic loss scaling
    (`--of-training-step` with `loss-scaling = true`, which
    `--of-pipeline=...,train=...,amp=f16` turns on); bf16 has f32's
    exponent range and needs none.

    ```mlir
    %y = of.matmul %x, %w : (tensor<4x8xf32>, tensor<8x3xf32>) -> tensor<4x3xf32>
    // becomes
    %xb = of.cast %x : tensor<4x8xf32> to tensor<4x8xbf16>
    %wb = of.cast %w : tensor<8x3xf32> to tensor<8x3xbf16>
    %p = of.matmul %xb, %wb : (tensor<4x8xbf16>, tensor<8x3xbf16>) -> tensor<4x3xbf16>
    %y = of.cast %p : tensor<4x3xbf16> to tensor<4x3xf32>
    ```
  }];
  let options = [
    Option<"dtype", "dtype", "std::string", "\"bf16\"",
           "The reduced precision: bf16 or f16">,
  ];
  let dependentDialects = ["::mlir::of::OFDialect"];
}

def TrainingStepPass : Pass<"of-training-step", "::mlir::ModuleOp"> {
  let summary = "Add the training step (gradients + optimizer update) of every differentiated function";
  let description = [{
    For each `@<name>` that `--of-autodiff` differentiated (it has
    `@<name>_grad`), adds `@<name>_train_step`: the primal's arguments, then
    the optimizer's state (one tensor per parameter and kind, of the
    parameter's type: `momentum_<p>` for SGD with momentum, `adam_m_<p>`
    and `adam_v_<p>` plus the scalar `adam_step` for AdamW), then the
    learning rate `lr` (`tensor<f32>`, a run-time input so that schedules
    need no recompilation). It returns the loss, the primal's outputs
    beside the loss (its results not marked `of.update`, with their names;
    refused with `accumulate` > 1), then the updated parameters and state,
    each result marked `of.update = <argument>`: the
    runtime keeps those arguments across runs and replaces them with the
    results after every step, on every rank its own shard.

    Optimizers follow PyTorch's definitions: SGD
    (`g += wd p; buf = momentum buf + (1 - dampening) g` (`buf = g` at the
    first step); `g = nesterov ? g + momentum buf : buf; p -= lr g`), AdamW
    (`p *= 1 - lr wd; m, v` moving averages with bias correction
    `1 - beta^t`, computed in f64; `p -= lr m_hat / (sqrt(v_hat) + eps)`),
    Adagrad (`g += wd p; sum += g^2; p -= lr / (1 + (t - 1) lr_decay) g /
    (sqrt(sum) + eps)`), RMSprop (`g += wd p; sq = alpha sq + (1 - alpha)
    g^2`; centered: `ga = alpha ga + (1 - alpha) g`, `avg = sqrt(sq - ga^2)
    + eps`, else `sqrt(sq) + eps`; with momentum `buf = momentum buf + g /
    avg; p -= lr buf`, else `p -= lr g / avg`) and Adadelta (`g += wd p;
    sq = rho sq + (1 - rho) g^2; d = sqrt(acc + eps) / sqrt(sq + eps) g;
    acc = rho acc + (1 - rho) d^2; p -= lr d`). Their state: `momentum_<p>`;
    `adam_m_<p>`, `adam_v_<p>`, `adam_step`; `adagrad_sum_<p>`,
    `adagrad_step`; `rmsprop_square_avg_<p>` (`momentum_<p>`,
    `rmsprop_grad_avg_<p>`); `adadelta_square_avg_<p>`,
    `adadelta_acc_delta_<p>`, all starting at zero. A parameter
    argument with `of.weight_decay = <f64>` uses that decay instead of the
    option's (PyTorch's parameter groups: no decay for biases and norms).
    With `max-grad-norm > 0` the gradients are first scaled by
    `min(1, max / (||g|| + 1e-6))`, `||g||` the global norm over every
    parameter (its partial sums are reduced across ranks by boxing).

    `grads-out = true` also returns, after the outputs, each parameter's
    gradient `grad_<p>` (clipped, as PyTorch's `p.grad` after
    `clip_grad_norm_`) and with `max-grad-norm` the norm before clipping,
    `grad_norm`: the eager loop's fused step reads them (a script may
    read `.grad` after `opt.step()`).

    `accumulate = K > 1` accumulates gradients over K micro-batches in one
    step: every data (non-parameter) argument takes K micro-batches stacked
    on a new leading axis (its distribution shifted: `S(d)` becomes
    `S(d+1)`); the step runs `@<name>_grad` on each in turn and averages
    the losses and gradients, so a mean loss over K micro-batches of B
    equals the loss over one batch of K B, while only one micro-batch's
    activations are alive at a time (the arena reuses them).

    `zero = true` (ZeRO stage 1/2): the optimizer state of a parameter is
    split `S(d)` on every mesh axis where the parameter is `B` (d its first
    dimension not split otherwise and at least as long as the axis). SBP
    then updates the parameter shard-wise: a data-parallel gradient (`P`)
    meets its state as a reduce-scatter instead of an all-reduce, and the
    updated shard is all-gathered back to the parameter's `B`.

    `loss-scaling = true` (dynamic loss scaling, for f16 mixed precision;
    needs `@<name>_grad` built with `--of-autodiff=seed-argument=true`)
    follows PyTorch's `GradScaler`. Two more scalar state arguments,
    `loss_scale_log2` and `loss_scale_good_steps`, both starting at 0, give
    the scale `2^(loss-scale-log2 + loss_scale_log2)`. The step seeds the
    backward pass with the scale and divides the gradients by it. If any
    gradient is then not finite (its global sum of squares is inf or NaN),
    the step leaves every parameter and optimizer state (AdamW's step
    count too) as it was, halves the scale and restarts the count of good
    steps. Otherwise it updates as usual and counts the step; after
    `loss-scale-window` good steps in a row the scale doubles. A primal's
    own state updates (batch norm's statistics) apply either way, as
    PyTorch's forward pass applies them.

    ```mlir
    // @loss(%x, %w {of.param}) -> tensor<f32> and its @loss_grad give
    func.func @loss_train_step(%x: ..., %w: ... {of.param},
                               %mw: ... {of.name = "momentum_w"},
                               %lr: tensor<f32> {of.name = "lr"})
        -> (tensor<f32>, ... {of.update = 1}, ... {of.update = 2}) {
      %l, %g = call @loss_grad(%x, %w)
      ... momentum and update ...
    }
    ```
  }];
  let options = [
    Option<"optimizer", "optimizer", "std::string", "\"sgd\"",
           "sgd, adam, adamw, adamax, nadam, radam, adagrad, rmsprop or "
           "adadelta">,
    Option<"momentum", "momentum", "double", "0.0",
           "SGD and RMSprop momentum">,
    Option<"dampening", "dampening", "double", "0.0", "SGD dampening">,
    Option<"nesterov", "nesterov", "bool", "false", "SGD Nesterov momentum">,
    Option<"alpha", "alpha", "double", "0.99", "RMSprop smoothing constant">,
    Option<"centered", "centered", "bool", "false",
           "RMSprop: normalise by the centred second moment">,
    Option<"rho", "rho", "double", "0.9", "Adadelta running-average decay">,
    Option<"lrDecay", "lr-decay", "double", "0.0", "Adagrad rate decay">,
    Option<"weightDecay", "weight-decay", "double", "0.0",
           "Weight decay (added to the gradient; AdamW: decoupled)">,
    Option<"beta1", "beta1", "double", "0.9", "AdamW first-moment decay">,
    Option<"beta2", "beta2", "double", "0.999", "AdamW second-moment decay">,
    Option<"momentumDecay", "momentum-decay", "double", "4.0e-3",
           "NAdam's momentum decay (psi)">,
    Option<"amsgrad", "amsgrad", "bool", "false",
           "Adam/AdamW: divide by the running maximum of the second moment">,
    Option<"epsilon", "epsilon", "double", "1.0e-8",
           "Denominator term (AdamW, Adagrad, RMSprop, Adadelta)">,
    Option<"maxGradNorm", "max-grad-norm", "double", "0.0",
           "Clip the gradients to this global norm (0: no clipping)">,
    Option<"accumulate", "accumulate", "unsigned", "1",
           "Accumulate gradients over this many micro-batches per step: "
           "each data argument takes them stacked on a new leading axis">,
    Option<"zero", "zero", "bool", "false",
           "ZeRO: split the optimizer state over every mesh axis where its "
           "parameter is broadcast">,
    Option<"gradsOut", "grads-out", "bool", "false",
           "Also return each parameter's gradient as `grad_<p>` (after "
           "clipping, as PyTorch's p.grad after clip_grad_norm_) and, with "
           "max-grad-norm, the norm before clipping as `grad_norm`">,
    Option<"lossScaling", "loss-scaling", "bool", "false",
           "Dynamic loss scaling (f16 mixed precision): skip steps whose "
           "gradients are not finite and adapt the scale">,
    Option<"lossScaleLog2", "loss-scale-log2", "int", "16",
           "log2 of the initial loss scale (PyTorch's GradScaler: 2^16)">,
    Option<"lossScaleWindow", "loss-scale-window", "unsigned", "2000",
           "Good steps in a row after which the loss scale doubles">,
  ];
  let dependentDialects = ["::mlir::of::OFDialect"];
}

//===----------------------------------------------------------------------===//
// SBP: propagation, boxing, partitioning
//===----------------------------------------------------------------------===//

defvar OF_CostModelOptions = [
    Option<"interconnect", "interconnect", "std::string", "\"mpi-shm\"",
           "Cost model preset: mpi-shm, nvlink, infiniband, h100-cluster or h200-cluster">,
    Option<"machineFile", "machine-file", "std::string", "\"\"",
           "JSON machine file overriding the preset's figures">,
];

def PropagateSbpPass : Pass<"of-propagate-sbp", "::mlir::ModuleOp"> {
  let summary = "Give every value an SBP distribution, choosing each op's cheapest signature";
  let description = [{
    Starts from the distributions the user wrote (function arguments and
    results, `of.boxing` targets, any annotated value); an argument without
    one is broadcast. Then, in program order, each op takes the nd
    signature (one SbpOpInterface signature per placement axis) with the
    lowest cost: boxing its operands from their distributions to the
    signature's, plus its compute, plus boxing its results to annotations
    they carry (alpha-beta per placement axis, see CostModel). Ties go to
    the op's first-listed signature, so the result is deterministic.
    Results get the chosen distributions as their types' encodings; the
    chosen operand and result distributions are recorded as `of.operand_sbp`
    and `of.result_sbp` for `--of-insert-boxing`. Unannotated function
    results take their operand's distribution.
  }];
  let options = !listconcat(OF_CostModelOptions, [
    Option<"explain", "explain", "bool", "false",
           "Emit a remark per op with its chosen signature and the cost of the alternatives">,
  ]);
  let dependentDialects = ["::mlir::of::OFDialect"];
}

def AutoParallelPass : Pass<"of-auto-parallel", "::mlir::ModuleOp"> {
  let summary = "Choose every value's SBP by an exact search of the modeled step time";
  let description = [{
    For a program on one placement whose values carry at most some
    distributions (those are constraints), chooses an nd-SBP for every
    argument (parameters, inputs, optimizer state) and op result and an nd
    signature for every op, minimising the modeled step time (each op's
    compute under its signature plus the boxing of every edge, the cost
    model of `--of-propagate-sbp`) subject to `memory-budget` bytes per
    device live at any point. The search is an integer program solved
    exactly by CBC (SbpSearch.h); a function result is returned annotated,
    in the distribution of the argument it updates (`of.update`), or B.
    The placement is `placement`, else the one the function's annotations
    use, else the module's only `of.placement`. Writes the choice as
    annotations (every argument and result typed, `of.operand_sbp` and
    `of.result_sbp` on every op), so the output is a fixed program that
    `--of-propagate-sbp` keeps; a remark on each function gives the
    solver, the objective and the peak memory, and with `explain` one per
    argument gives the chosen distribution, the modeled cost of the
    alternatives and whether memory or time decided. With `factorize`, a
    1-D placement of N devices may become a grid [a, N/a]: the search runs
    on each (the largest function decides; with a cluster preset each
    axis gets the link of its span, CostModel::forGrid) and the placement
    takes the cheapest shape.

    Example (`of-opt --of-auto-parallel`): an MLP whose weights dominate,

    ```mlir
    of.placement @mesh {device = "cpu", shape = [4]}
    func.func @mlp(%x: tensor<8x1024xf32>, %w1: tensor<1024x4096xf32>,
                   %w2: tensor<4096x1024xf32>) -> tensor<8x1024xf32, #of.sbp<@mesh, [B]>>
    ```

    gets Megatron's layout: `%x` `[B]`, `%w1` `[S(1)]`, `%w2` `[S(0)]`, and
    the second matmul's partial result all-reduced into the annotated `[B]`.
  }];
  let options = !listconcat(OF_CostModelOptions, [
    Option<"placement", "placement", "std::string", "\"\"",
           "The placement to distribute over (default: see above)">,
    Option<"memoryBudget", "memory-budget", "double", "0",
           "Bytes per device the program may hold at any point (0: no limit)">,
    Option<"timeLimit", "time-limit", "double", "10",
           "Seconds the solver may search before it keeps the best found">,
    Option<"solver", "solver", "std::string", "\"cbc\"",
           "cbc (exact), greedy, or exhaustive (every assignment; tests)">,
    Option<"cluster", "cluster", "std::string", "\"auto\"",
           "Repeated blocks choose alike: on, off, or auto (over 1000 nodes)">,
    Option<"maxNdCandidates", "max-nd-candidates", "unsigned", "12",
           "On a mesh of several axes: per op, the signatures that split on one axis alone and this many of the rest">,
    Option<"factorize", "factorize", "bool", "false",
           "Also choose the mesh: a 1-D placement of N devices may become any 2-D grid [a, N/a]">,
    Option<"explain", "explain", "bool", "false",
           "A remark per argument: chosen SBP, alternatives, what decided">,
  ]);
  let dependentDialects = ["::mlir::of::OFDialect"];
}

def ExplainSbpPass : Pass<"of-explain-sbp", "::mlir::ModuleOp"> {
  let summary = "SBP propagation that explains every choice in a remark";
  let description = [{
    `--of-propagate-sbp` with a remark per op: the chosen nd signature with
    its cost in seconds, and the alternatives, cheapest first.
  }];
  let options = OF_CostModelOptions;
  let dependentDialects = ["::mlir::of::OFDialect"];
}

def InsertBoxingPass : Pass<"of-insert-boxing", "::mlir::ModuleOp"> {
  let summary = "Make every distribution mismatch an explicit of.boxing";
  let description = [{
    Where an operand's distribution is not the one its op's signature needs
    (`of.operand_sbp`, or, on ops that carry none, the cheapest signature
    that matches their result distributions), an `of.boxing` converts it;
    likewise for results whose signature differs from their annotation and
    for returned values. Afterwards every op's operands and results form a
    legal signature. Fails, naming the op and the distributions, when an
    op has no legal signature at all for its annotated results or when
    operands are on different placements.
  }];
  let options = OF_CostModelOptions;
  let dependentDialects = ["::mlir::of::OFDialect"];
}

def EarlyBoxingPass : Pass<"of-early-boxing", "::mlir::ModuleOp"> {
  let summary = "Move every boxing up to right after the value it converts";
  let description = [{
    Moves each `of.boxing` to right after the op that defines its operand
    (an argument's to the start of the body); boxings of one value keep
    their order. After `--of-partition` a gradient's all-reduce then comes
    right after the gradient is computed rather than where the optimizer
    reads it, so on a GPU, where `--of-build-plan` runs collectives on a
    communication stream, it overlaps the rest of the backward pass. The
    CUDA pipeline runs it before `--of-partition`: every rank partitions the
    same reordered function, so all ranks issue their collectives in one
    order.

    ```mlir
    %g = of.matmul %a, %b : ...
    %h = of.tanh %x : ...
    %r = of.boxing %g : ... [P] -> ... [B]
    // becomes
    %g = of.matmul %a, %b : ...
    %r = of.boxing %g : ... [P] -> ... [B]
    %h = of.tanh %x : ...
    ```
  }];
}

def PartitionPass : Pass<"of-partition", "::mlir::ModuleOp"> {
  let summary = "Turn global programs into per-rank programs with explicit collectives";
  let description = [{
    Each function on a placement becomes one function per *role*: the ranks
    whose local shapes (and those of every boxing step) are all equal share
    one program, so an even split gives one program whatever the rank count
    and an uneven one a few. Tensors get their local types (no encoding),
    every `of.boxing` becomes the per-axis collectives of its boxing plan
    (`of.all_reduce`, `of.all_gather`, `of.reduce_scatter`,
    `of.all_to_all`, `of.shard_slice`, `of.to_partial`), and ops whose local
    form differs are rewritten (a mean over a split dimension divides by the
    global count). A role's function carries `of.ranks` (its world ranks)
    and `of.entry` (the original name); its arguments and results carry
    `of.global`, the global type with its distribution, so the runtime can
    shard inputs and gather outputs. A boxing's collectives are its
    cheapest plan under the cost model options (the same as
    `--of-propagate-sbp`'s): on a hierarchy, a shortest-path search over
    single-axis steps (see `cheapestBoxing` in `Sbp.h`).

    A function over several placements (pipeline stages) gives every rank of
    every placement the ops of the placements it is on; a value of another
    placement is an empty `tensor<0xT>` there. A boxing between placements
    becomes, on each rank, the sends (`of.send`) of the parts of its shard
    that other ranks need and the receives (`of.recv`) of the parts it
    needs, placed with `tensor.extract_slice`/`tensor.insert_slice`, in one
    order that every rank follows.
  }];
  let options = OF_CostModelOptions;
  let dependentDialects = ["::mlir::of::OFDialect",
                           "::mlir::tensor::TensorDialect"];
}

def ScheduleStagesPass : Pass<"of-schedule-stages", "::mlir::ModuleOp"> {
  let summary = "Order a pipeline's micro-batches: all forwards first (GPipe) or one forward, one backward (1F1B)";
  let description = [{
    In a function over several placements (pipeline stages), orders the
    forward and backward work of the micro-batches of a training step with
    `accumulate=K`. After `--of-partition` each stage's program is this
    order restricted to its ops, and every rank does its transfers in it.

    `schedule=gpipe` (the default) moves every op that `--of-autodiff` did
    not add for the backward pass (`of.backward`), and that depends on no
    such op, ahead of the first backward op: the forward passes of the K
    micro-batches run before their backward passes, and a stage holds the
    activations of all K until their backward pass.

    `schedule=1f1b` orders each stage s of S (stages in the order the
    micro-batches enter them) as PipeDream-flush's one-forward-one-backward:
    S - s forwards, then one backward and one forward in turn, then the
    remaining backwards, so a stage holds at most S micro-batches'
    activations. A micro-batch's ops are those that depend on the slices
    `--of-training-step` marks `of.micro_batch = i`. One program order
    serves all stages: every op gets the start time of its (stage,
    forward or backward, micro-batch) in the ideal 1F1B timeline (a
    forward takes 1, a backward 2; a transfer the time its source is
    done; ops of no micro-batch the time of their first user), and the
    ops are listed in that order as far as their operands allow. Without
    micro-batch marks (K = 1) it is GPipe's order.

    Functions on one placement are left alone. The `of.backward` and
    `of.micro_batch` marks are removed.

    ```mlir
    // before: micro-batch 1 forward and backward, then micro-batch 2
    %f1 = of.tanh %x1 : ...
    %g1 = of.mul %d1, %f1 {of.backward} : ...
    %f2 = of.tanh %x2 : ...
    %g2 = of.mul %d2, %f2 {of.backward} : ...
    // after (gpipe): both forwards, then both backwards
    %f1 = of.tanh %x1 : ...
    %f2 = of.tanh %x2 : ...
    %g1 = of.mul %d1, %f1 : ...
    %g2 = of.mul %d2, %f2 : ...
    ```
  }];
  let options = [
    Option<"schedule", "schedule", "std::string", "\"gpipe\"",
           "gpipe (every forward before the backwards) or 1f1b (one "
           "forward, one backward per stage)">,
  ];
}

def RecomputePass : Pass<"of-recompute", "::mlir::ModuleOp"> {
  let summary = "Activation recomputation: compute a checkpointed segment's activations again in the backward pass";
  let description = [{
    In a differentiated function, the forward ops of a segment marked
    `of.recompute = N` (the frontend's `of.utils.checkpoint.checkpoint`,
    PyTorch's `torch.utils.checkpoint`) whose values backward ops
    (`of.backward`, which `--of-autodiff` sets when a segment is marked)
    read are copied, with the segment's ops they depend on, just before
    the first backward op that reads one, and the backward ops read the
    copies. The segment's activations then die with the forward pass and
    only its inputs (and the values of ops with side effects, which are not
    copied) stay live until its backward pass: the plan's arena, packed by
    liveness, holds one segment's activations at a time in the backward
    pass instead of all of them, for the cost of running each segment's
    forward twice. A segment's copies are found per connected piece, so a
    segment repeated per micro-batch is recomputed per micro-batch. Random
    ops take their seed as an operand, so a copy draws what the original
    drew.

    The copies keep `of.recompute` and get `of.backward`; the originals
    lose the mark. The copies' locations carry the segment too (a fused
    location whose metadata is `{of.recompute = N}`), and the lowerings
    (--convert-of-to-linalg, --of-fuse-elementwise) mark the ops made at
    such a location, so that CSE, which compares attributes and ignores
    locations, never merges a copy back into its original.

    ```mlir
    // before
    %h = of.tanh %x {of.recompute = 0 : i64} : ...
    %y = of.mul %h, %h {of.recompute = 0 : i64} : ...
    ...
    %g = of.mul %d, %h {of.backward} : ...
    // after
    %h = of.tanh %x : ...
    %y = of.mul %h, %h : ...
    ...
    %h2 = of.tanh %x {of.backward, of.recompute = 0 : i64} : ...
    %g = of.mul %d, %h2 {of.backward} : ...
    ```
  }];
}

def TestSbpSignaturesPass : Pass<"of-test-sbp-signatures", "::mlir::ModuleOp"> {
  let summary = "Emit a remark per op listing its SBP signatures (for tests and docs)";
}

def TestSbpSearchPass : Pass<"of-test-sbp-search", "::mlir::ModuleOp"> {
  let summary = "Solve each function's SBP search exactly, by enumeration and greedily, and compare (for tests)";
  let description = [{
    Emits a remark per function with the objective (seconds, all digits)
    and peak memory of the CBC, exhaustive and greedy answers, and an error
    when CBC's objective is not the enumerated optimum's or a solver breaks
    the memory budget. The IR is unchanged.
  }];
  let options = [
    Option<"memoryBudget", "memory-budget", "double", "0",
           "Bytes per device (0: no limit)">,
  ];
}

#endif // OF_TRANSFORMS_PASSES_TD
