//===- CpuKernelCompiler.cpp - CPU kernels to an ELF shared object --------===//
//
// Translates a kernel module in the LLVM dialect to LLVM IR, optimises it at
// -O2 for the host CPU (its features decide the vector width: AVX-512 on the
// development machines; machine code is generated at LLVM's Aggressive
// level), emits an object file and links it into a shared object with the
// system compiler driver. A plan compiled this way targets the CPU it was
// compiled on, as `-march=native` does;
// docs/decisions/0012-cpu-kernel-objects.md records this choice.
//
//===----------------------------------------------------------------------===//

#include "OF/Target/Target.h"

#include "mlir/ExecutionEngine/OptUtils.h"
#include "mlir/Target/LLVMIR/Dialect/Builtin/BuiltinToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/LLVMIR/LLVMToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Export.h"
#include "llvm/IR/IRBuilder.h"
#include "llvm/IR/LLVMContext.h"
#include "llvm/IR/LegacyPassManager.h"
#include "llvm/IR/Module.h"
#include "llvm/MC/TargetRegistry.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Target/TargetMachine.h"
#include "llvm/Target/TargetOptions.h"
#include "llvm/TargetParser/Host.h"

using namespace mlir;

namespace {
/// Removes a temporary file when it goes out of scope.
struct TempFile {
  llvm::SmallString<128> path;
  ~TempFile() {
    if (!path.empty())
      llvm::sys::fs::remove(path);
  }
};
} // namespace

/// Defines __truncsfbf2 (f32 to bf16, round to nearest even, NaN kept
/// quiet) in `module`, hidden. The kernels' bf16 conversions are integer
/// ops already (PlanToCPU), but on a CPU without AVX-512's bf16
/// instructions LLVM's x86 backend still promotes some bf16 selects through
/// f32 and calls this compiler-rt routine, which neither the kernel object
/// may import (lib/Runtime/Plan/ElfCheck.h) nor Debian's GCC 12 runtime has.
static void defineBf16Truncation(llvm::Module &module) {
  const char *name = "__truncsfbf2";
  if (module.getFunction(name))
    return;
  llvm::LLVMContext &ctx = module.getContext();
  llvm::Type *i32 = llvm::Type::getInt32Ty(ctx);
  auto *type = llvm::FunctionType::get(llvm::Type::getBFloatTy(ctx),
                                       {llvm::Type::getFloatTy(ctx)}, false);
  llvm::Function *function = llvm::Function::Create(
      type, llvm::GlobalValue::ExternalLinkage, name, module);
  function->setVisibility(llvm::GlobalValue::HiddenVisibility);
  function->setDoesNotThrow();
  llvm::IRBuilder<> b(llvm::BasicBlock::Create(ctx, "entry", function));
  llvm::Value *x = function->getArg(0);
  llvm::Value *bits = b.CreateBitCast(x, i32);
  llvm::Value *high = b.CreateLShr(bits, 16);
  llvm::Value *rounded =
      b.CreateLShr(b.CreateAdd(b.CreateAdd(bits, b.getInt32(0x7fff)),
                               b.CreateAnd(high, b.getInt32(1))),
                   16);
  llvm::Value *quiet =
      b.CreateOr(b.CreateAnd(high, b.getInt32(0x8000)), b.getInt32(0x7fc0));
  llvm::Value *result = b.CreateSelect(b.CreateFCmpUNO(x, x), quiet, rounded);
  b.CreateRet(b.CreateBitCast(b.CreateTrunc(result, b.getInt16Ty()),
                              llvm::Type::getBFloatTy(ctx)));
}

FailureOr<std::vector<char>> mlir::of::compileCpuKernels(ModuleOp kernels,
                                                         StringRef triple) {
  llvm::InitializeNativeTarget();
  llvm::InitializeNativeTargetAsmPrinter();

  DialectRegistry registry;
  registerBuiltinDialectTranslation(registry);
  registerLLVMDialectTranslation(registry);
  kernels->getContext()->appendDialectRegistry(registry);

  llvm::LLVMContext llvmContext;
  std::unique_ptr<llvm::Module> module =
      translateModuleToLLVMIR(kernels, llvmContext, "of_kernels");
  if (!module) {
    kernels.emitError("cannot translate the CPU kernels to LLVM IR");
    return failure();
  }

  std::string error;
  llvm::Triple targetTriple(triple);
  const llvm::Target *target =
      llvm::TargetRegistry::lookupTarget(targetTriple, error);
  if (!target) {
    kernels.emitError("no LLVM target for '") << triple << "': " << error;
    return failure();
  }
  std::string features;
  for (const auto &[feature, enabled] : llvm::sys::getHostCPUFeatures())
    features += (enabled ? "+" : "-") + feature.str() + ",";
  llvm::TargetOptions options;
  std::unique_ptr<llvm::TargetMachine> machine(target->createTargetMachine(
      targetTriple, llvm::sys::getHostCPUName(), features, options,
      llvm::Reloc::PIC_, std::nullopt, llvm::CodeGenOptLevel::Aggressive));
  module->setTargetTriple(targetTriple);
  module->setDataLayout(machine->createDataLayout());
  defineBf16Truncation(*module);

  auto optimize = makeOptimizingTransformer(2, 0, machine.get());
  if (llvm::Error err = optimize(module.get())) {
    kernels.emitError("optimising the CPU kernels failed: ")
        << llvm::toString(std::move(err));
    return failure();
  }

  TempFile object, shared;
  int objectFd;
  if (llvm::sys::fs::createTemporaryFile("of-kernels", "o", objectFd,
                                         object.path) ||
      llvm::sys::fs::createTemporaryFile("of-kernels", "so", shared.path)) {
    kernels.emitError("cannot create temporary files for the CPU kernels");
    return failure();
  }
  {
    llvm::raw_fd_ostream os(objectFd, /*shouldClose=*/true);
    llvm::legacy::PassManager codegen;
    if (machine->addPassesToEmitFile(codegen, os, nullptr,
                                     llvm::CodeGenFileType::ObjectFile)) {
      kernels.emitError("the target cannot emit object files");
      return failure();
    }
    codegen.run(*module);
  }

  llvm::ErrorOr<std::string> cc = llvm::sys::findProgramByName("cc");
  if (!cc) {
    kernels.emitError("linking the CPU kernels needs a C compiler driver "
                      "(`cc`) on PATH");
    return failure();
  }
  SmallVector<StringRef> args{
      *cc, "-shared", "-o", shared.path, object.path, "-lm", "-nostartfiles"};
  std::string linkError;
  if (llvm::sys::ExecuteAndWait(*cc, args, std::nullopt, {}, 0, 0,
                                &linkError) != 0) {
    kernels.emitError("linking the CPU kernels failed: ") << linkError;
    return failure();
  }
  auto buffer = llvm::MemoryBuffer::getFile(shared.path);
  if (!buffer) {
    kernels.emitError("cannot read the linked CPU kernels");
    return failure();
  }
  return std::vector<char>((*buffer)->getBufferStart(),
                           (*buffer)->getBufferEnd());
}
