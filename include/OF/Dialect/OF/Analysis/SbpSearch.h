//===- SbpSearch.h - The exact SBP search of --of-auto-parallel -*- C++ -*-===//
//
// Chooses an nd-SBP for every value of a function on one placement
// (arguments, op results) and an nd signature for every op, minimising the
// modeled step time (compute of each op under its signature plus the
// boxing of every edge, CostModel) subject to a per-device memory budget
// (the bytes live at each point of the program, arguments all the way).
//
// The problem is an integer program: a binary per (op or argument,
// candidate), one candidate each; an edge whose two ends both have a
// choice gets the continuous product variables y[a][b] of its producer's
// distribution a and its consumer's operand distribution b (sum over b =
// producer chose a, sum over a = consumer needs b), so the boxing cost is
// linear; an edge with one fixed end folds into the other's coefficients.
// CBC (COIN-OR, Debian's coinor-libcbc-dev) solves it exactly: LP
// relaxation, then branch and bound. Without CBC, or when it times out
// without a solution, a greedy pass and coordinate descent (the fallback)
// answer and the result says so. `exhaustive` enumerates every assignment
// (small problems only: the tests' brute force).
//
//===----------------------------------------------------------------------===//

#ifndef OF_DIALECT_OF_ANALYSIS_SBPSEARCH_H
#define OF_DIALECT_OF_ANALYSIS_SBPSEARCH_H

#include "OF/Dialect/OF/Analysis/SignatureChoice.h"

#include <string>

namespace mlir::of {

struct SbpSearchOptions {
  /// Bytes per device; 0: unlimited.
  double memoryBudget = 0;
  /// Seconds CBC may take before the best solution found so far is used.
  double timeLimit = 10;
  /// "cbc" (exact; the fallback when CBC is absent), "greedy", or
  /// "exhaustive" (every assignment; fails beyond a million).
  std::string solver = "cbc";
  /// Also cost every alternative of every argument (alternatives).
  bool explain = false;
  /// Repeated blocks choose alike: "on", "off", or "auto" (programs of
  /// over a thousand nodes). Exact only off.
  std::string cluster = "auto";
  /// On a mesh of several axes: per op, the signatures splitting on one
  /// axis alone and the cheapest this many of the rest.
  unsigned maxNdCandidates = 12;
};

/// A candidate distribution of a function argument, or an nd signature of
/// an op, with what the choice costs on its own.
struct SbpCandidate {
  NdSignature sig; ///< arguments: one result, the argument's distribution
  double compute = 0;
  double memory = 0; ///< bytes per device of the node's results
};

struct SbpSearchResult {
  /// The chosen distribution of every argument and op result, and the
  /// signature of every op.
  DenseMap<Value, NdSbp> dists;
  DenseMap<Operation *, NdSignature> signatures;
  /// The distribution each function result is returned in.
  SmallVector<NdSbp> results;
  double objective = 0, compute = 0, boxing = 0, peakMemory = 0;
  bool optimal = false;  ///< proven optimal by the solver
  bool memoryMet = true; ///< the peak fits the budget
  std::string solver;    ///< what answered, and why if not CBC
  unsigned variables = 0, constraints = 0, nodes = 0;
  unsigned reducedNodes = 0; ///< nodes left after the exact reductions
  unsigned clusters = 0;     ///< clusters of repeated blocks (0: none)
  bool pruned = false;       ///< nd candidates left out (maxNdCandidates)
  double seconds = 0;
  /// Per argument: every candidate distribution with the objective and
  /// peak memory of the chosen layout with that argument changed alone
  /// (the explanation of --of-auto-parallel's explain).
  struct Alternative {
    NdSbp dist;
    double objective, peakMemory;
  };
  DenseMap<Value, SmallVector<Alternative>> alternatives;
};

/// Searches the layout of `func`, all of whose distributed values are (or
/// will be) on `placement`. Arguments and op results that carry a
/// distribution keep it (constraints); a function result is returned as
/// annotated, as the argument it updates (`of.update`), or else B.
/// Failure (after an error) when an op has no SBP signature that fits, or
/// no assignment meets the memory budget.
FailureOr<SbpSearchResult> searchSbp(func::FuncOp func,
                                     const FuncPlacement &placement,
                                     const CostModel &model,
                                     const SbpSearchOptions &options);

/// The placement the search distributes `func` over: the one named `name`,
/// else the only one its annotations use, else the module's only
/// `of.placement`; nullopt when there is none (a one-device function).
/// Failure, after an error, when that is ambiguous or a pipeline.
FailureOr<std::optional<FuncPlacement>> searchPlacement(func::FuncOp func,
                                                        StringRef name);

/// Whether this build has CBC.
bool haveCbc();

} // namespace mlir::of

#endif // OF_DIALECT_OF_ANALYSIS_SBPSEARCH_H
