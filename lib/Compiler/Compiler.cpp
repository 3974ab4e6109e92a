//===- Compiler.cpp - OF's compiler as a library call ---------------------===//
//
// Parse, --of-pipeline, write the binary plan, with every diagnostic
// captured (not printed) and reported at its op's source location.
//
//===----------------------------------------------------------------------===//

#include "OF/Compiler/Compiler.h"
#include "OF/Dialect/OF/IR/OFDialect.h"
#include "OF/Dialect/Plan/IR/PlanDialect.h"
#include "OF/Pipelines/Pipelines.h"
#include "OF/Support/InputLimits.h"
#include "OF/Target/Target.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/InitAllDialects.h"
#include "mlir/InitAllExtensions.h"
#include "mlir/InitAllPasses.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/Pass.h"
#include "mlir/Pass/PassInstrumentation.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/Support/SourceMgr.h"

#include <chrono>
#include <mutex>

using namespace mlir;

namespace {

/// Records each pass that runs and its wall time.
class PassLog : public PassInstrumentation {
public:
  explicit PassLog(std::vector<std::pair<std::string, double>> &log)
      : log(log) {}
  void runBeforePass(Pass *pass, Operation *) override {
    starts.push_back(std::chrono::steady_clock::now());
  }
  void runAfterPass(Pass *pass, Operation *) override { record(pass); }
  void runAfterPassFailed(Pass *pass, Operation *) override { record(pass); }

private:
  void record(Pass *pass) {
    std::chrono::duration<double> seconds =
        std::chrono::steady_clock::now() - starts.back();
    starts.pop_back();
    log.emplace_back(pass->getArgument().empty() ? pass->getName().str()
                                                 : pass->getArgument().str(),
                     seconds.count());
  }
  std::vector<std::pair<std::string, double>> &log;
  std::vector<std::chrono::steady_clock::time_point> starts;
};

/// The file position a location stands for: the innermost file location
/// of names, call sites (the callee) and fusions (the first with one).
std::optional<FileLineColLoc> fileLocation(Location loc) {
  if (auto file = dyn_cast<FileLineColLoc>(loc))
    return file;
  if (auto name = dyn_cast<NameLoc>(loc))
    return fileLocation(name.getChildLoc());
  if (auto call = dyn_cast<CallSiteLoc>(loc))
    return fileLocation(call.getCallee());
  if (auto fused = dyn_cast<FusedLoc>(loc))
    for (Location inner : fused.getLocations())
      if (auto file = fileLocation(inner))
        return file;
  return std::nullopt;
}

::of::compiler::Diagnostic convert(Diagnostic &diag) {
  ::of::compiler::Diagnostic out;
  switch (diag.getSeverity()) {
  case DiagnosticSeverity::Error:
    out.severity = "error";
    break;
  case DiagnosticSeverity::Warning:
    out.severity = "warning";
    break;
  case DiagnosticSeverity::Note:
    out.severity = "note";
    break;
  case DiagnosticSeverity::Remark:
    out.severity = "remark";
    break;
  }
  if (auto file = fileLocation(diag.getLocation())) {
    out.file = file->getFilename().str();
    out.line = file->getLine();
    out.column = file->getColumn();
  }
  out.message = diag.str();
  for (Diagnostic &note : diag.getNotes())
    out.notes.push_back(convert(note));
  return out;
}

} // namespace

namespace of::compiler {

CompileResult compile(const std::string &source, const std::string &sourceName,
                      const std::string &pipeline, const std::string &dumpDir) {
  // Some of OF's passes run upstream pipelines given as text, which need
  // the pass registry.
  static std::once_flag passesRegistered;
  std::call_once(passesRegistered, [] { registerAllPasses(); });

  CompileResult result;
  DialectRegistry registry;
  registerAllDialects(registry);
  registerAllExtensions(registry);
  mlir::of::registerOFDialect(registry);
  registry.insert<ofrt::PlanDialect>();
  MLIRContext ctx(registry);
  // The IR dump prints the whole module after each pass, which needs the
  // passes to run one at a time.
  if (!dumpDir.empty())
    ctx.disableMultithreading();
  ScopedDiagnosticHandler handler(&ctx, [&](mlir::Diagnostic &diag) {
    result.diagnostics.push_back(convert(diag));
    return success();
  });
  auto error = [&](const std::string &message) {
    mlir::Diagnostic diag(UnknownLoc::get(&ctx), DiagnosticSeverity::Error);
    diag << message;
    result.diagnostics.push_back(convert(diag));
    return result;
  };

  if (std::string deep = mlir::of::checkBeforeParsing(
          source, sourceName.empty() ? "<of program>" : sourceName);
      !deep.empty())
    return error(deep);
  ParserConfig config(&ctx);
  OwningOpRef<ModuleOp> module = parseSourceString<ModuleOp>(
      source, config, sourceName.empty() ? "<of program>" : sourceName);
  if (!module)
    return result;

  mlir::of::PipelineOptions options;
  std::string optionError;
  if (failed(mlir::of::parsePipelineOptions(pipeline, options,
                                            [&](const Twine &message) {
                                              optionError = message.str();
                                              return failure();
                                            })))
    return error(optionError);
  PassManager pm(&ctx);
  pm.addInstrumentation(std::make_unique<PassLog>(result.passes));
  if (!dumpDir.empty())
    pm.enableIRPrintingToFileTree(
        /*shouldPrintBeforePass=*/[](Pass *, Operation *) { return false; },
        /*shouldPrintAfterPass=*/[](Pass *, Operation *) { return true; },
        /*printModuleScope=*/true, /*printAfterOnlyOnChange=*/true,
        /*printAfterOnlyOnFailure=*/false, dumpDir);
  mlir::of::buildPipeline(pm, options);
  if (failed(pm.run(*module)))
    return result;
  if (!options.stopAfter.empty())
    return error("compile: the pipeline stops after '" + options.stopAfter +
                 "', before a plan exists");

  llvm::raw_string_ostream os(result.plan);
  if (failed(mlir::of::writeBinaryPlan(*module, os))) {
    result.plan.clear();
    return result;
  }
  result.success = true;
  return result;
}

} // namespace of::compiler
