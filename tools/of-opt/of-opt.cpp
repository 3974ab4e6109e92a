//===- of-opt.cpp - The OF optimizer driver -------------------------------===//
//
// mlir-opt with every upstream dialect, extension and pass, plus OF's.
//
//===----------------------------------------------------------------------===//

#include "OF/Conversion/Passes.h"
#include "OF/Dialect/OF/IR/OFDialect.h"
#include "OF/Dialect/Plan/IR/PlanDialect.h"
#include "OF/Pipelines/Pipelines.h"
#include "OF/Dialect/OF/Transforms/Passes.h"
#include "OF/Version.h"

#include "mlir/IR/DialectRegistry.h"
#include "mlir/InitAllDialects.h"
#include "mlir/InitAllExtensions.h"
#include "mlir/InitAllPasses.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"
#include "llvm/Support/CommandLine.h"

int main(int argc, char **argv) {
  mlir::registerAllPasses();
  mlir::of::registerOFConversionPasses();
  mlir::of::registerOFPipelines();
  mlir::of::registerOFTransformsPasses();

  mlir::DialectRegistry registry;
  mlir::registerAllDialects(registry);
  mlir::registerAllExtensions(registry);
  mlir::of::registerOFDialect(registry);
  registry.insert<mlir::ofrt::PlanDialect>();

  llvm::cl::AddExtraVersionPrinter(mlir::of::printVersion);
  return mlir::asMainReturnCode(mlir::MlirOptMain(
      argc, argv, "OF optimizer driver: of dialect passes and pipelines\n",
      registry));
}
