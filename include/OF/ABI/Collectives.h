//===- Collectives.h - The names of a plan's collective kinds ------------===//
//
// The name of each CollectiveKind of PlanFormat.fbs, as `ofrt.collective`
// spells it (the plan dialect's CollectiveKind enum, whose values equal the
// file's): libofrt's messages use it, and the plan reader maps a file's
// kinds to the dialect's through it, so a name that differs fails the
// round-trip tests (test/Target/plan-collectives.mlir). Header-only, no
// MLIR: libofrt includes it.
//
//===----------------------------------------------------------------------===//

#ifndef OF_ABI_COLLECTIVES_H
#define OF_ABI_COLLECTIVES_H

#include "OF/ABI/PlanFormat_generated.h"

namespace of::plan {

/// "all_reduce", "all_gather", ...; "invalid" for a value outside the enum.
inline const char *collectiveKindName(CollectiveKind kind) {
  switch (kind) {
  case CollectiveKind::AllReduce:
    return "all_reduce";
  case CollectiveKind::AllGather:
    return "all_gather";
  case CollectiveKind::ReduceScatter:
    return "reduce_scatter";
  case CollectiveKind::AllToAll:
    return "all_to_all";
  case CollectiveKind::Broadcast:
    return "broadcast";
  case CollectiveKind::Send:
    return "send";
  case CollectiveKind::Recv:
    return "recv";
  case CollectiveKind::Slice:
    return "slice";
  case CollectiveKind::ToPartial:
    return "to_partial";
  }
  return "invalid";
}

/// "sum" or "max"; "invalid" for a value outside the enum.
inline const char *reduceOpName(ReduceOp op) {
  switch (op) {
  case ReduceOp::Sum:
    return "sum";
  case ReduceOp::Max:
    return "max";
  }
  return "invalid";
}

} // namespace of::plan

#endif // OF_ABI_COLLECTIVES_H
