//===- OFDialect.h - The of dialect ----------------------------*- C++ -*-===//
//
// The of dialect: global tensor programs whose tensor types carry #of.sbp
// distributions over of.placement device grids.
//
//===----------------------------------------------------------------------===//

#ifndef OF_DIALECT_OF_IR_OFDIALECT_H
#define OF_DIALECT_OF_IR_OFDIALECT_H

#include "mlir/IR/Dialect.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/Operation.h"
#include "mlir/IR/TypeRange.h"

#include "OF/Dialect/OF/IR/OFDialect.h.inc"

namespace mlir {
namespace of {

/// True for a type that is not a ranked tensor, or a ranked tensor whose
/// encoding is absent or an #of.sbp attribute.
bool hasSbpOrNoEncoding(Type type);

/// The #of.sbp encoding of `type`, or null.
class SbpAttr;
SbpAttr getSbp(Type type);

/// `type` without its #of.sbp encoding (other types are returned unchanged).
Type stripSbp(Type type);

/// Whether two type lists are equal once #of.sbp encodings are dropped.
bool areCompatibleIgnoringSbp(TypeRange lhs, TypeRange rhs);

/// `loc` tagged as the location of a copy that --of-recompute made of an op
/// of checkpointed segment `segment`. Lowerings create their ops at the
/// location of the op they lower, so the tag outlives the op.
Location recomputedLoc(Location loc, IntegerAttr segment);

/// Marks every op under `root` whose location carries recomputedLoc's tag
/// with `of.recompute = segment`, so that CSE, which ignores locations, does
/// not merge a recomputed copy back into its original once both are
/// lowered (OFToLinalg and FuseElementwise call it).
void markRecomputed(Operation *root);

/// Registers the of dialect and its extensions of upstream dialects (the SBP
/// symbol checks on func.func signatures).
void registerOFDialect(DialectRegistry &registry);

/// Attaches one-shot bufferization to the ops that become plan steps (the
/// local collectives, of.library_call); registerOFDialect calls it.
void registerStepBufferization(DialectRegistry &registry);

} // namespace of
} // namespace mlir

#endif // OF_DIALECT_OF_IR_OFDIALECT_H
