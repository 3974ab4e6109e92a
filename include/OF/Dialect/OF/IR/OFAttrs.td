//===- OFAttrs.td - #of.sbp and the enums of the of dialect -*- tablegen -*-===//
//
// The SBP distribution attribute, used as the encoding of ranked tensor types,
// and the enums that op attributes use.
//
//===----------------------------------------------------------------------===//

#ifndef OF_DIALECT_OF_IR_OFATTRS_TD
#define OF_DIALECT_OF_IR_OFATTRS_TD

include "OF/Dialect/OF/IR/OFBase.td"
include "mlir/IR/BuiltinAttributeInterfaces.td"
include "mlir/IR/TensorEncoding.td"
include "mlir/IR/EnumAttr.td"

def OF_SbpAttr : AttrDef<OF_Dialect, "Sbp", [
    DeclareAttrInterfaceMethods<VerifiableTensorEncoding>]> {
  let mnemonic = "sbp";
  let summary = "SBP distribution of a global tensor over a placement";
  let description = [{
    `#of.sbp<@placement, [e_0, ..., e_(k-1)]>` says how a global (logical)
    tensor is laid out on the devices of the placement `@placement`, whose
    device grid has `k` axes. Entry `e_a` applies to placement axis `a` and is
    one of:

    | entry    | meaning on axis `a` of size `n`                                 |
    |----------|-----------------------------------------------------------------|
    | `S(d)`   | *split*: dimension `d` of the tensor is cut into `n` shards      |
    | `B`      | *broadcast*: every device along the axis holds the same tensor   |
    | `P`      | *partial sum*: devices hold full-shape tensors whose sum is it   |
    | `P(max)` | *partial max*: devices hold full-shape tensors whose max is it   |

    ### SBP as a function from global to local tensors

    Let `T` be a global tensor of shape `[s_0, ..., s_(r-1)]`, and let a device
    sit at coordinate `(c_0, ..., c_(k-1))` of a placement of shape
    `[n_0, ..., n_(k-1)]`. Its local tensor `L` is obtained by applying the
    entries in axis order, `a = 0 .. k-1`, to the running local tensor `X`
    (initially `X = T`):

    - `S(d)`: `X := X[..., lo : hi, ...]` along dimension `d`, where the
      balanced split of a length `m` into `n` shards gives shard `c` the
      half-open range `[lo, hi)` with
      `lo = c * (m / n) + min(c, m % n)` and
      `hi = lo + m / n + (c < m % n ? 1 : 0)`.
      The first `m % n` shards get one extra row; nothing is truncated.
    - `B`: `X` is unchanged.
    - `P` (and `P(max)`): `X` is one *addend*: the global value is recovered
      as `sum` (or `max`) over the `n_a` devices of the axis. Which addends the
      devices hold is up to the producer; the only promise is the reduction.

    So `[S(0), S(0)]` splits dimension 0 first across axis 0, then splits each
    shard again across axis 1; `[S(0), S(1)]` tiles a matrix as a 2-D grid.

    ### Worked examples

    `of.placement @row {device = "cpu", shape = [2]}`, `T : tensor<5x4xf32>`:

    - `#of.sbp<@row, [S(0)]>`: rank 0 holds `T[0:3, :]` (3x4), rank 1 holds
      `T[3:5, :]` (2x4).
    - `#of.sbp<@row, [B]>`: both ranks hold `T` (5x4).
    - `#of.sbp<@row, [P]>`: ranks hold 5x4 tensors `L_0`, `L_1` with
      `T = L_0 + L_1` (the result of `S(1)·S(0)` matmul is of this kind).

    `of.placement @mesh {device = "cpu", shape = [2, 2]}` (ranks 0..3,
    row-major, so rank `r` sits at `(r / 2, r % 2)`), `T : tensor<8x6xf32>`:

    - `[S(0), B]`: ranks 0, 1 hold `T[0:4, :]`; ranks 2, 3 hold `T[4:8, :]`.
    - `[S(0), S(1)]`: rank 0 `T[0:4, 0:3]`, rank 1 `T[0:4, 3:6]`,
      rank 2 `T[4:8, 0:3]`, rank 3 `T[4:8, 3:6]`.
    - `[S(0), S(0)]`: rank 0 `T[0:2]`, rank 1 `T[2:4]`, rank 2 `T[4:6]`,
      rank 3 `T[6:8]`.
    - `[B, P]`: ranks 0 and 1 hold addends of `T` (as do ranks 2 and 3, the
      same pair of addends again).

    ### Verification

    The type verifier checks every `S(d)` against the tensor's rank. Ops of
    the dialect (and `func.func` signatures) check, through the symbol
    table, that `@placement` names an `of.placement` and that the list has
    one entry per placement axis.
  }];
  let parameters = (ins
    "::mlir::FlatSymbolRefAttr":$placement,
    ArrayRefParameter<"::mlir::of::SbpEntry", "SBP entries, one per placement axis">:$entries);
  let hasCustomAssemblyFormat = 1;
  let genVerifyDecl = 1;
  let extraClassDeclaration = [{
    /// The number of placement axes the distribution covers.
    unsigned getNumAxes() const { return getEntries().size(); }
  }];
}

def OF_CompareDirection : I32EnumAttr<"CompareDirection",
    "comparison of of.compare", [
      I32EnumAttrCase<"eq", 0>, I32EnumAttrCase<"ne", 1>,
      I32EnumAttrCase<"lt", 2>, I32EnumAttrCase<"le", 3>,
      I32EnumAttrCase<"gt", 4>, I32EnumAttrCase<"ge", 5>]> {
  let cppNamespace = "::mlir::of";
}

// How an all-reduce or a reduce-scatter combines the members' tensors (P
// and P(max)); the plan's ofrt.collective has the same two.
def OF_ReduceKind : I32EnumAttr<"ReduceKind",
    "how a collective combines the members' tensors", [
      I32EnumAttrCase<"Sum", 0, "sum">, I32EnumAttrCase<"Max", 1, "max">]> {
  let cppNamespace = "::mlir::of";
  let genSpecializedAttr = 0;
}
def OF_ReduceKindAttr : EnumAttr<OF_Dialect, OF_ReduceKind, "reduce">;

#endif // OF_DIALECT_OF_IR_OFATTRS_TD
