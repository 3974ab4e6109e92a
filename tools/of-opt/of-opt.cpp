//===- of-opt.cpp - The OF optimizer driver -------------------------------===//
//
// mlir-opt with every upstream dialect, extension and pass, plus OF's.
//
//===----------------------------------------------------------------------===//

#include "OF/Conversion/Passes.h"
#include "OF/Dialect/OF/IR/OFDialect.h"
#include "OF/Dialect/OF/Transforms/Passes.h"
#include "OF/Dialect/Plan/IR/PlanDialect.h"
#include "OF/Pipelines/Pipelines.h"
#include "OF/Support/InputLimits.h"
#include "OF/Version.h"

#include "mlir/IR/DialectRegistry.h"
#include "mlir/InitAllDialects.h"
#include "mlir/InitAllExtensions.h"
#include "mlir/InitAllPasses.h"
#include "mlir/Support/FileUtilities.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/ToolOutputFile.h"

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
  auto [inputFilename, outputFilename] = mlir::registerAndParseCLIOptions(
      argc, argv, "OF optimizer driver: of dialect passes and pipelines\n",
      registry);
  mlir::MlirOptMainConfig config =
      mlir::MlirOptMainConfig::createFromCLOptions();
  if (config.shouldShowDialects() || config.shouldListPasses())
    return mlir::asMainReturnCode(
        mlir::MlirOptMain(argc, argv, inputFilename, outputFilename, registry));
  // As MlirOptMain(argc, argv, ...), with the input's nesting bounded and
  // the work on a thread whose stack holds it (InputLimits.h).
  std::string message;
  std::unique_ptr<llvm::MemoryBuffer> file =
      mlir::openInputFile(inputFilename, &message);
  if (!file) {
    llvm::errs() << message << "\n";
    return 1;
  }
  if (std::string error = mlir::of::checkBeforeParsing(
          file->getBuffer(), inputFilename == "-" ? "<stdin>" : inputFilename);
      !error.empty()) {
    llvm::errs() << error << "\n";
    return 1;
  }
  std::unique_ptr<llvm::ToolOutputFile> output =
      mlir::openOutputFile(outputFilename, &message);
  if (!output) {
    llvm::errs() << message << "\n";
    return 1;
  }
  return mlir::of::runOnLargeStack([&] {
    if (mlir::failed(
            mlir::MlirOptMain(output->os(), std::move(file), registry, config)))
      return 1;
    output->keep();
    return 0;
  });
}
