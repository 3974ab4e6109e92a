//===- Target.h - Binary plans and CPU kernel objects -----------*- C++ -*-===//
//
// The translations between ofrt plan modules and binary plans (.ofp), and the
// compilation of a CPU kernel module (LLVM dialect) into a shared object.
//
//===----------------------------------------------------------------------===//

#ifndef OF_TARGET_TARGET_H
#define OF_TARGET_TARGET_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Support/LLVM.h"
#include "llvm/Support/raw_ostream.h"

#include <string>
#include <vector>

namespace mlir::of {

/// Compiles `kernels` (LLVM dialect) for `triple` on the host CPU, at -O2,
/// and links it into an ELF shared object with the system C compiler
/// driver (`cc`). Errors are emitted on `kernels`.
FailureOr<std::vector<char>> compileCpuKernels(ModuleOp kernels,
                                               StringRef triple);

/// Writes the plan `module` (ofrt ops) as a .ofp to `os`.
LogicalResult writeBinaryPlan(ModuleOp module, raw_ostream &os);

/// Reads a .ofp (verified by libofrt first) into an ofrt module.
OwningOpRef<ModuleOp> readBinaryPlan(StringRef bytes, MLIRContext *ctx,
                                     Location loc);

/// Registers --of-plan-to-binary and --of-binary-to-plan with of-translate.
void registerOFTranslations();

} // namespace mlir::of

#endif // OF_TARGET_TARGET_H
