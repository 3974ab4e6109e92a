//===- of-translate.cpp - The OF translation driver -----------------------===//
//
// mlir-translate with the upstream translations plus OF's (the binary plan
// translations --of-plan-to-binary and --of-binary-to-plan).
//
//===----------------------------------------------------------------------===//

#include "OF/Support/InputLimits.h"
#include "OF/Target/Target.h"
#include "OF/Version.h"

#include "mlir/InitAllTranslations.h"
#include "mlir/Tools/mlir-translate/MlirTranslateMain.h"
#include "mlir/Tools/mlir-translate/Translation.h"
#include "llvm/Support/CommandLine.h"

int main(int argc, char **argv) {
  mlir::registerAllTranslations();
  mlir::of::registerOFTranslations();
  llvm::cl::AddExtraVersionPrinter(mlir::of::printVersion);
  // On a thread whose stack holds deep nesting (InputLimits.h).
  return mlir::of::runOnLargeStack([&] {
    return mlir::failed(mlir::mlirTranslateMain(
               argc, argv,
               "OF translation driver: of modules to and from files\n"))
               ? 1
               : 0;
  });
}
