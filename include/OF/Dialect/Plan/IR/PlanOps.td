//===- PlanOps.td - The ofrt (plan) dialect ----------------*- tablegen -*-===//
//
// The `ofrt` dialect is the plan that the runtime executes: buffers with
// their arena offsets, compiled kernels, and for each group of ranks an
// ordered list of steps. It is what `--of-build-plan` produces and what
// `of-translate --of-plan-to-binary` serialises; every decision (lifetimes,
// offsets, schedule) is already taken, so the runtime only follows it.
//
//===----------------------------------------------------------------------===//

#ifndef OF_DIALECT_PLAN_IR_PLANOPS_TD
#define OF_DIALECT_PLAN_IR_PLANOPS_TD

include "mlir/IR/OpBase.td"
include "mlir/IR/AttrTypeBase.td"
include "mlir/IR/EnumAttr.td"
include "mlir/IR/SymbolInterfaces.td"
include "mlir/IR/RegionKindInterface.td"

def Plan_Dialect : Dialect {
  let name = "ofrt";
  let cppNamespace = "::mlir::ofrt";
  let summary = "Execution plans: buffers, kernels and ordered steps per rank";
  let description = [{
    A plan module holds `ofrt.executable`s (compiled kernels) and
    `ofrt.program`s. A program is one entry function for a group of ranks
    that run the same code: its buffers (in one arena, bound inputs, or
    constants) and its steps in execution order.

    ```mlir
    ofrt.executable @kernels {target = "x86_64-unknown-linux-gnu"} {
      module { llvm.func @k0(%args: !llvm.ptr) { ... } }
    }
    ofrt.program "main" {arena_size = 512 : i64, device = "cpu", ranks = array<i64: 0>} {
      ofrt.buffer @x input binding "x" size 256 : tensor<8x8xf32>
      ofrt.buffer @t0 arena offset 0 size 256 : tensor<8x8xf32>
      ofrt.launch @kernels "k0" [@x, @t0]
      ofrt.output "y" = @t0
    }
    ```
  }];
  let useDefaultAttributePrinterParser = 1;
}

class Plan_Op<string mnemonic, list<Trait> traits = []>
    : Op<Plan_Dialect, mnemonic, traits>;

def Plan_DistAttr : AttrDef<Plan_Dialect, "Dist"> {
  let mnemonic = "dist";
  let summary = "How a rank's tensor is part of a global tensor";
  let description = [{
    The global tensor's shape, the placement's grid (`mesh`) and the world
    rank of each grid position in row-major order (`mesh_ranks`), and one
    SBP entry per grid axis, written as in `#of.sbp` and stored as the codes
    of OF/ABI/Sbp.h (`Distribution` in PlanFormat.fbs):

    ```mlir
    #ofrt.dist<global_shape = [7, 4], mesh = [2], mesh_ranks = [0, 1], sbp = [S(0)]>
    ```
  }];
  let parameters = (ins
    ArrayRefParameter<"int64_t", "global extents">:$globalShape,
    ArrayRefParameter<"int64_t", "grid extents">:$mesh,
    ArrayRefParameter<"int64_t", "world rank per grid position">:$meshRanks,
    ArrayRefParameter<"int32_t", "SBP code per grid axis">:$sbp);
  let assemblyFormat = [{
    `<` `global_shape` `=` custom<Extents>($globalShape) `,`
        `mesh` `=` custom<Extents>($mesh) `,`
        `mesh_ranks` `=` custom<Extents>($meshRanks) `,`
        `sbp` `=` custom<SbpCodes>($sbp) `>`
  }];
  let genVerifyDecl = 1;
}

def Plan_BufferKind : I32EnumAttr<"BufferKind", "where a buffer's memory comes from", [
    I32EnumAttrCase<"Arena", 0, "arena">,
    I32EnumAttrCase<"Input", 1, "input">,
    I32EnumAttrCase<"Constant", 2, "constant">]> {
  let cppNamespace = "::mlir::ofrt";
}

def Plan_ExecutableOp : Plan_Op<"executable", [Symbol, IsolatedFromAbove,
    NoTerminator, SingleBlock]> {
  let summary = "Compiled kernels for one target";
  let description = [{
    In source form the body holds one `builtin.module` with the kernels (one
    function per kernel with the packed signature `void k(void **args,
    int64_t begin, int64_t end)`, `args[i]` the data pointer of the
    launch's i-th buffer, [begin, end) the slice of the launch's `range`). In binary form,
    read back from a `.ofp`, the body is empty and `object` holds the
    compiled shared object, `kernels` the entry points it exports.

    A CUDA executable (`target = "nvptx64-nvidia-cuda"`) lowered by
    `--of-lower-cuda-kernels` holds `gpu.binary` ops instead, and
    `launches` maps each plan kernel `kN` to the array of its GPU launches
    in order, each a dictionary with `kernel` (the `gpu.binary` name),
    `function` (the kernel function in it),
    `grid` and `block` (`array<i64: x, y, z>`) and `args` (indices into the
    plan launch's buffers, in the GPU kernel's parameter order).

    `signatures`, set by `--of-lower-cpu-kernels`, says what each kernel was
    compiled for: `kN = {params = [tensor<...>, ...], range = R, work = W,
    reads = array<i64: ...>, writes = array<i64: ...>}`, the element type
    and shape of each of its arguments in order, its iteration range and
    work, and which arguments it reads and which it writes (a pooling's
    window shape, neither). Every launch of `kN` passes
    buffers of those element types and element counts, with that range and
    work, and no constant where it writes (the verifier, and the runtime's
    when it opens a plan, check it: a kernel reads and writes its arguments
    whole, and runs only the slice of its loop a launch asks for).
  }];
  let arguments = (ins SymbolNameAttr:$sym_name, StrAttr:$target,
                       OptionalAttr<StrAttr>:$format,
                       OptionalAttr<StrArrayAttr>:$kernels,
                       OptionalAttr<ElementsAttr>:$object,
                       OptionalAttr<DictionaryAttr>:$launches,
                       OptionalAttr<DictionaryAttr>:$signatures);
  let regions = (region AnyRegion:$body);
  let assemblyFormat = "$sym_name attr-dict-with-keyword $body";
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// The kernel module of the source form, or null.
    ::mlir::ModuleOp getKernelModule();
    /// The declared signature of kernel `name` (see `signatures`), or null.
    ::mlir::DictionaryAttr getKernelSignature(::llvm::StringRef name);
  }];
}

def Plan_ProgramOp : Plan_Op<"program", [SymbolTable, IsolatedFromAbove,
    NoTerminator, SingleBlock]> {
  let summary = "The buffers and ordered steps of one entry for a group of ranks";
  let description = [{
    `entry` names the compiled function; `ranks` lists the ranks that run
    this program; `arena_size` is the bytes of the one arena that every
    `arena` buffer is placed in. Steps run in order on their `stream`;
    across streams only `ofrt.event_record`/`ofrt.event_wait` order them,
    and two steps on different streams that use overlapping memory must be
    so ordered (the verifier refuses a program where they may run at once).
    With `allow_tf32`, a GPU may compute the f32 products of gemm and
    convolution steps on TF32 tensor cores (inputs rounded to 10-bit
    mantissas, f32 accumulation); the CPU computes them in f32.
  }];
  let arguments = (ins StrAttr:$entry, DenseI64ArrayAttr:$ranks,
                       StrAttr:$device, I64Attr:$arena_size,
                       DefaultValuedAttr<I64Attr, "1">:$num_streams,
                       DefaultValuedAttr<I64Attr, "0">:$num_events,
                       UnitAttr:$allow_tf32);
  let regions = (region SizedRegion<1>:$body);
  let extraClassDeclaration = [{
    /// Two steps on different streams that use overlapping memory must be
    /// ordered by events (StreamOrder.h).
    ::mlir::LogicalResult verifyStreamOrder();
  }];
  let assemblyFormat = "$entry attr-dict-with-keyword $body";
  let hasVerifier = 1;
}

def Plan_BufferOp : Plan_Op<"buffer", [Symbol, HasParent<"ProgramOp">]> {
  let summary = "A buffer of a program: in the arena, a bound input, or a constant";
  let description = [{
    `type` gives the element type and shape; `size` the bytes. An `arena`
    buffer sits at `offset` in the arena; an `input` buffer is bound by the
    caller under the name `binding`; a `constant` buffer holds `value`.
    Buffers whose lifetimes do not overlap may share arena bytes.

    An input of a multi-rank program carries `dist` (`#ofrt.dist`), the
    global tensor it is this rank's part of.
  }];
  let arguments = (ins SymbolNameAttr:$sym_name, Plan_BufferKind:$kind,
                       OptionalAttr<I64Attr>:$offset,
                       OptionalAttr<StrAttr>:$binding, I64Attr:$size,
                       OptionalAttr<ElementsAttr>:$value, TypeAttr:$type,
                       OptionalAttr<Plan_DistAttr>:$dist);
  let assemblyFormat = [{
    $sym_name $kind (`binding` $binding^)? (`offset` $offset^)? `size` $size
    (`value` $value^)? attr-dict `:` $type
  }];
  let hasVerifier = 1;
}

class Plan_StepOp<string mnemonic, list<Trait> traits = []>
    : Plan_Op<mnemonic, !listconcat([HasParent<"ProgramOp">], traits)> {
}

def Plan_LaunchOp : Plan_StepOp<"launch"> {
  let summary = "Run a kernel of an executable on buffers";
  let description = [{
    A CPU kernel is called as `void k(void **args, int64_t begin, int64_t
    end)`. `range` > 0 says that the kernel runs iterations [begin, end) of
    an outermost loop of `range` independent iterations, so the runtime may
    split them among threads; `work` counts the kernel's innermost
    iterations, by which the runtime judges whether threads pay off.
    `--of-lower-cpu-kernels` sets both; with `range` 0 the runtime passes
    [0, INT64_MAX) and the kernel runs whole (kernels clamp the slice to
    their loop).
  }];
  let arguments = (ins FlatSymbolRefAttr:$executable, StrAttr:$kernel,
                       SymbolRefArrayAttr:$buffers,
                       DefaultValuedAttr<I64Attr, "0">:$stream,
                       DefaultValuedAttr<I64Attr, "0">:$range,
                       DefaultValuedAttr<I64Attr, "0">:$work);
  let assemblyFormat = "$executable $kernel $buffers attr-dict";
}

def Plan_LibraryCallOp : Plan_StepOp<"library"> {
  let summary = "Call a runtime library function (BLAS, ...) on buffers";
  let description = [{
    `"blas.gemm"` takes buffers `[A, B, C]` and params `[batch, m, n, k,
    a_batch_stride, a_m_stride, a_k_stride, b_batch_stride, b_k_stride,
    b_n_stride, c_batch_stride, c_m_stride]` (element strides) and computes
    `C[b] = A[b] x B[b]`; four more params `[outer_batch, a_outer_stride,
    b_outer_stride, c_outer_stride]` add an outer batch loop (two batch
    dimensions that do not merge into one stride). `"check.index_range"`
    takes `[I]` and params `[lo, hi]` and fails the run unless every element
    is in `[lo, hi)`. `"dnn.conv2d"` (`[x, w, y]` or `[x, w, bias, y]`),
    `"dnn.conv2d_grad_input"` (`[dy, w, dx]`) and `"dnn.conv2d_grad_filter"`
    (`[x, dy, dw]`) are NCHW convolutions, and `"dnn.pool2d"` (`[x, y]`)
    and `"dnn.pool2d_grad"` (`[x, dy, dx]`) NCHW poolings, which the
    runtime runs through oneDNN on the CPU and cuDNN on a GPU; their 18
    (15) params are the geometry that `include/OF/ABI/LibraryCalls.h`
    defines (`of.library_call`).
  }];
  let arguments = (ins StrAttr:$function, SymbolRefArrayAttr:$buffers,
                       DenseI64ArrayAttr:$params,
                       DefaultValuedAttr<I64Attr, "0">:$stream);
  let assemblyFormat = "$function $buffers `params` $params attr-dict";
}

def Plan_CopyOp : Plan_StepOp<"copy"> {
  let summary = "Copy bytes between buffers";
  let arguments = (ins FlatSymbolRefAttr:$source, FlatSymbolRefAttr:$target,
                       DefaultValuedAttr<I64Attr, "0">:$source_offset,
                       DefaultValuedAttr<I64Attr, "0">:$target_offset,
                       I64Attr:$bytes,
                       DefaultValuedAttr<I64Attr, "0">:$stream);
  let assemblyFormat = "$source `to` $target attr-dict";
}

// The values are those of CollectiveKind and ReduceOp in PlanFormat.fbs
// (the binary writer checks that they agree).
def Plan_CollectiveKind : I32EnumAttr<"CollectiveKind", "what a collective step does", [
    I32EnumAttrCase<"AllReduce", 0, "all_reduce">,
    I32EnumAttrCase<"AllGather", 1, "all_gather">,
    I32EnumAttrCase<"ReduceScatter", 2, "reduce_scatter">,
    I32EnumAttrCase<"AllToAll", 3, "all_to_all">,
    I32EnumAttrCase<"Broadcast", 4, "broadcast">,
    I32EnumAttrCase<"Send", 5, "send">,
    I32EnumAttrCase<"Recv", 6, "recv">,
    I32EnumAttrCase<"Slice", 7, "slice">,
    I32EnumAttrCase<"ToPartial", 8, "to_partial">]> {
  let cppNamespace = "::mlir::ofrt";
}

def Plan_ReduceKind : I32EnumAttr<"ReduceKind", "how a collective combines values", [
    I32EnumAttrCase<"Sum", 0, "sum">,
    I32EnumAttrCase<"Max", 1, "max">]> {
  let cppNamespace = "::mlir::ofrt";
}

def Plan_CollectiveOp : Plan_StepOp<"collective"> {
  let summary = "A collective over a group of ranks";
  let description = [{
    `kind` is one of `all_reduce`, `all_gather`, `reduce_scatter`,
    `all_to_all`, `broadcast`, `send`, `recv`, `slice` (B to S, local) and
    `to_partial` (B to P, local); `reduce` is `sum` or `max`.

    `group` is the ranks of a placement in row-major order over the grid
    `mesh` (absent: one axis). The collective runs among the ranks that share
    this rank's coordinates on every grid axis but `axis`. `shape` is the
    full (gathered, unscattered) local shape, `dim` the dimension that is
    gathered or scattered, `dim2` the dimension an `all_to_all` scatters.
    Chunks are balanced splits, and each rank computes its own from its
    coordinate, so one program serves every rank of a role. The exact
    semantics of each kind are in `Collective` in PlanFormat.fbs.
  }];
  let arguments = (ins Plan_CollectiveKind:$kind, FlatSymbolRefAttr:$source,
                       FlatSymbolRefAttr:$target, DenseI64ArrayAttr:$group,
                       DefaultValuedAttr<Plan_ReduceKind,
                                         "::mlir::ofrt::ReduceKind::Sum">:$reduce,
                       DefaultValuedAttr<I64Attr, "-1">:$peer,
                       DefaultValuedAttr<I64Attr, "0">:$stream,
                       OptionalAttr<DenseI64ArrayAttr>:$mesh,
                       DefaultValuedAttr<I64Attr, "0">:$axis,
                       OptionalAttr<DenseI64ArrayAttr>:$shape,
                       DefaultValuedAttr<I64Attr, "0">:$dim,
                       DefaultValuedAttr<I64Attr, "0">:$dim2);
  let assemblyFormat = [{
    $kind $source `to` $target `group` $group (`reduce` $reduce^)? attr-dict
  }];
  let hasVerifier = 1;
}

def Plan_EventRecordOp : Plan_StepOp<"event_record"> {
  let summary = "Mark a point of a stream that other streams can wait for";
  let arguments = (ins I64Attr:$event, DefaultValuedAttr<I64Attr, "0">:$stream);
  let assemblyFormat = "$event attr-dict";
}

def Plan_EventWaitOp : Plan_StepOp<"event_wait"> {
  let summary = "Wait on a stream until an event is recorded";
  let arguments = (ins I64Attr:$event, DefaultValuedAttr<I64Attr, "0">:$stream);
  let assemblyFormat = "$event attr-dict";
}

def Plan_OutputOp : Plan_StepOp<"output"> {
  let summary = "Hand a buffer's content to the caller as a named output";
  let description = [{
    In a multi-rank program `dist` (as on `ofrt.buffer`) says how this rank's
    part makes up the global output. `updates` names an input of the
    program that this output replaces after every run (a training step's
    parameters and optimizer state, which thus persist in the session).
  }];
  let arguments = (ins StrAttr:$name, FlatSymbolRefAttr:$buffer,
                       DefaultValuedAttr<I64Attr, "0">:$stream,
                       OptionalAttr<Plan_DistAttr>:$dist,
                       OptionalAttr<StrAttr>:$updates);
  let assemblyFormat = "$name `=` $buffer attr-dict";
}

#endif // OF_DIALECT_PLAN_IR_PLANOPS_TD
