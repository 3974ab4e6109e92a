//===- BinaryPlan.cpp - ofrt modules to and from .ofp files ---------------===//
//
// --of-plan-to-binary writes a plan module as the header of PlanFormat.h, a
// FlatBuffer of PlanFormat.fbs and 64-byte aligned blobs (the compiled
// kernels, the constants). --of-binary-to-plan reads one back: libofrt
// verifies the file first (the one verifier of the format), then the
// FlatBuffer becomes ofrt ops again, kernels and constants as blobs.
//
//===----------------------------------------------------------------------===//

#include "OF/Target/Target.h"

#include "OF/ABI/Collectives.h"
#include "OF/ABI/PlanFormat.h"
#include "OF/ABI/PlanFormat_generated.h"
#include "OF/Dialect/Plan/IR/PlanDialect.h"
#include "OF/Runtime/ofrt.h"
#include "OF/Version.h"

#include "mlir/AsmParser/AsmParser.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/DialectResourceBlobManager.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Target/LLVMIR/Dialect/Builtin/BuiltinToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/LLVMIR/LLVMToLLVMIRTranslation.h"
#include "mlir/Tools/mlir-translate/Translation.h"
#include "llvm/ADT/TypeSwitch.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/SourceMgr.h"

#include <algorithm>
#include <cstdint>
#include <cstring>

using namespace mlir;
using namespace mlir::ofrt;
namespace fb = ::of::plan;

//===----------------------------------------------------------------------===//
// Element types
//===----------------------------------------------------------------------===//

static std::optional<fb::DType> toDType(Type type) {
  if (type.isF32())
    return fb::DType::F32;
  if (type.isF64())
    return fb::DType::F64;
  if (type.isF16())
    return fb::DType::F16;
  if (type.isBF16())
    return fb::DType::BF16;
  if (type.isInteger(64))
    return fb::DType::I64;
  if (type.isInteger(32))
    return fb::DType::I32;
  if (type.isInteger(8))
    return fb::DType::I8;
  if (type.isInteger(1))
    return fb::DType::I1;
  return std::nullopt;
}

static Type fromDType(fb::DType dtype, MLIRContext *ctx) {
  Builder b(ctx);
  switch (dtype) {
  case fb::DType::F32:
    return b.getF32Type();
  case fb::DType::F64:
    return b.getF64Type();
  case fb::DType::F16:
    return b.getF16Type();
  case fb::DType::BF16:
    return b.getBF16Type();
  case fb::DType::I64:
    return b.getI64Type();
  case fb::DType::I32:
    return b.getI32Type();
  case fb::DType::I8:
    return b.getI8Type();
  case fb::DType::I1:
    return b.getI1Type();
  }
  return {};
}

/// The elements of a FlatBuffers vector as `T` (none where it is absent:
/// the verifier accepts absent vectors as empty ones).
template <typename T, typename V>
static SmallVector<T> elementsOf(const flatbuffers::Vector<V> *vector) {
  SmallVector<T> out;
  if (vector)
    out.assign(vector->begin(), vector->end());
  return out;
}

/// The tensor type of a plan's dtype and shape.
static RankedTensorType tensorType(fb::DType dtype,
                                   const flatbuffers::Vector<int64_t> *shape,
                                   MLIRContext *ctx) {
  return RankedTensorType::get(elementsOf<int64_t>(shape),
                               fromDType(dtype, ctx));
}

//===----------------------------------------------------------------------===//
// Writing
//===----------------------------------------------------------------------===//

namespace {
/// Blobs of the file, in order, each to be placed 64-byte aligned.
struct BlobTable {
  std::vector<std::vector<char>> data;
  uint32_t add(std::vector<char> bytes) {
    data.push_back(std::move(bytes));
    return data.size() - 1;
  }
};
} // namespace

/// The bytes of a constant as the runtime reads them: little-endian,
/// row-major, one byte per i1, splats expanded.
static FailureOr<std::vector<char>> constantBytes(BufferOp buffer) {
  ElementsAttr value = *buffer.getValue();
  if (auto resource = dyn_cast<DenseResourceElementsAttr>(value)) {
    AsmResourceBlob *blob = resource.getRawHandle().getBlob();
    if (!blob)
      return buffer.emitOpError("constant resource has no data"), failure();
    ArrayRef<char> data = blob->getData();
    return std::vector<char>(data.begin(), data.end());
  }
  auto dense = dyn_cast<DenseElementsAttr>(value);
  if (!dense)
    return buffer.emitOpError("constant must be dense or a dense resource"),
           failure();
  Type et = dense.getElementType();
  int64_t width = getElementByteSize(et);
  std::vector<char> bytes;
  bytes.reserve(dense.getNumElements() * width);
  if (!dense.isSplat() && !et.isInteger(1)) {
    ArrayRef<char> raw = dense.getRawData();
    return std::vector<char>(raw.begin(), raw.end());
  }
  auto append = [&](const APInt &bits) {
    for (int64_t i = 0; i < width; ++i)
      bytes.push_back(static_cast<char>(
          bits.getBitWidth() > 8 * i
              ? bits.extractBitsAsZExtValue(
                    std::min<unsigned>(8, bits.getBitWidth() - 8 * i), 8 * i)
              : 0));
  };
  if (isa<FloatType>(et)) {
    for (const APFloat &v : dense.getValues<APFloat>())
      append(v.bitcastToAPInt());
  } else {
    for (const APInt &v : dense.getValues<APInt>())
      append(v);
  }
  return bytes;
}

/// The declared signature of kernel `name` of a CPU executable (the runtime
/// holds every launch to it, so a plan cannot be written without one).
static FailureOr<flatbuffers::Offset<fb::KernelSignature>>
writeKernelSignature(ExecutableOp exe, StringRef name,
                     flatbuffers::FlatBufferBuilder &fbb) {
  DictionaryAttr signature = exe.getKernelSignature(name);
  if (!signature)
    return exe.emitOpError("declares no signature for kernel '")
           << name << "' (--of-lower-cpu-kernels declares them)";
  std::vector<flatbuffers::Offset<fb::KernelParam>> params;
  for (Attribute param : signature.getAs<ArrayAttr>("params")) {
    auto type = cast<RankedTensorType>(cast<TypeAttr>(param).getValue());
    std::optional<fb::DType> dtype = toDType(type.getElementType());
    if (!dtype)
      return exe.emitOpError("kernel '")
             << name << "' has a parameter of unsupported type " << type;
    std::vector<int64_t> shape(type.getShape().begin(), type.getShape().end());
    params.push_back(fb::CreateKernelParamDirect(fbb, *dtype, &shape));
  }
  auto indices = [&](StringRef key) {
    std::vector<uint32_t> list;
    for (int64_t index : signature.getAs<DenseI64ArrayAttr>(key).asArrayRef())
      list.push_back(static_cast<uint32_t>(index));
    return list;
  };
  std::vector<uint32_t> reads = indices("reads"), writes = indices("writes");
  return fb::CreateKernelSignatureDirect(
      fbb, &params, signature.getAs<IntegerAttr>("range").getInt(),
      signature.getAs<IntegerAttr>("work").getInt(), &reads, &writes);
}

/// The `signatures` attribute of an executable read from a plan, or null.
static DictionaryAttr readKernelSignatures(const fb::Executable *exe,
                                           MLIRContext *ctx) {
  if (!exe->signatures() || !exe->kernels())
    return nullptr;
  Builder b(ctx);
  SmallVector<NamedAttribute> signatures;
  for (uint32_t k = 0;
       k < exe->kernels()->size() && k < exe->signatures()->size(); ++k) {
    const fb::KernelSignature *signature = exe->signatures()->Get(k);
    SmallVector<Attribute> params;
    if (signature->params())
      for (const fb::KernelParam *param : *signature->params())
        params.push_back(
            TypeAttr::get(tensorType(param->dtype(), param->shape(), ctx)));
    auto indices = [&](const flatbuffers::Vector<uint32_t> *list) {
      return b.getDenseI64ArrayAttr(elementsOf<int64_t>(list));
    };
    signatures.push_back(b.getNamedAttr(
        exe->kernels()->Get(k)->string_view(),
        b.getDictionaryAttr(
            {b.getNamedAttr("params", b.getArrayAttr(params)),
             b.getNamedAttr("range", b.getI64IntegerAttr(signature->range())),
             b.getNamedAttr("work", b.getI64IntegerAttr(signature->work())),
             b.getNamedAttr("reads", indices(signature->reads())),
             b.getNamedAttr("writes", indices(signature->writes()))})));
  }
  return b.getDictionaryAttr(signatures);
}

/// Bytes of an executable: compiled now (source form) or as read (binary).
static FailureOr<std::vector<char>> executableBytes(ExecutableOp exe) {
  if (ModuleOp kernels = exe.getKernelModule())
    return mlir::of::compileCpuKernels(kernels, exe.getTarget());
  auto object = dyn_cast<DenseResourceElementsAttr>(*exe.getObject());
  if (object) {
    AsmResourceBlob *blob = object.getRawHandle().getBlob();
    if (blob)
      return std::vector<char>(blob->getData().begin(), blob->getData().end());
  }
  if (auto dense = dyn_cast<DenseElementsAttr>(*exe.getObject())) {
    ArrayRef<char> raw = dense.getRawData();
    return std::vector<char>(raw.begin(), raw.end());
  }
  return exe.emitOpError("object must be a dense resource of i8"), failure();
}

// The plan dialect's collective and reduction kinds are the file's, value
// for value (PlanOps.td).
#define OF_SAME_KIND(ours, file)                                               \
  static_assert(static_cast<int>(ours) == static_cast<int>(file),              \
                #ours " differs from the plan file's " #file);
OF_SAME_KIND(CollectiveKind::AllReduce, fb::CollectiveKind::AllReduce)
OF_SAME_KIND(CollectiveKind::AllGather, fb::CollectiveKind::AllGather)
OF_SAME_KIND(CollectiveKind::ReduceScatter, fb::CollectiveKind::ReduceScatter)
OF_SAME_KIND(CollectiveKind::AllToAll, fb::CollectiveKind::AllToAll)
OF_SAME_KIND(CollectiveKind::Broadcast, fb::CollectiveKind::Broadcast)
OF_SAME_KIND(CollectiveKind::Send, fb::CollectiveKind::Send)
OF_SAME_KIND(CollectiveKind::Recv, fb::CollectiveKind::Recv)
OF_SAME_KIND(CollectiveKind::Slice, fb::CollectiveKind::Slice)
OF_SAME_KIND(CollectiveKind::ToPartial, fb::CollectiveKind::ToPartial)
OF_SAME_KIND(ReduceKind::Sum, fb::ReduceOp::Sum)
OF_SAME_KIND(ReduceKind::Max, fb::ReduceOp::Max)
#undef OF_SAME_KIND
static_assert(static_cast<int>(fb::CollectiveKind::MAX) ==
                  static_cast<int>(CollectiveKind::ToPartial),
              "the plan file has a collective kind the dialect lacks");
static_assert(static_cast<int>(fb::ReduceOp::MAX) ==
                  static_cast<int>(ReduceKind::Max),
              "the plan file has a reduction the dialect lacks");

static fb::CollectiveKind toFile(CollectiveKind kind) {
  return static_cast<fb::CollectiveKind>(kind);
}
static fb::ReduceOp toFile(ReduceKind kind) {
  return static_cast<fb::ReduceOp>(kind);
}
/// By name (OF/ABI/Collectives.h), so that the runtime's names are the
/// dialect's: a round trip through a file fails on a name that differs.
/// (The plan loader has checked that the file's values are known ones.)
static CollectiveKind fromFile(fb::CollectiveKind kind) {
  std::optional<CollectiveKind> ours =
      symbolizeCollectiveKind(::of::plan::collectiveKindName(kind));
  assert(ours && "the runtime names a collective kind the dialect lacks");
  return ours.value_or(CollectiveKind::AllReduce);
}
static ReduceKind fromFile(fb::ReduceOp kind) {
  std::optional<ReduceKind> ours =
      symbolizeReduceKind(::of::plan::reduceOpName(kind));
  assert(ours && "the runtime names a reduction the dialect lacks");
  return ours.value_or(ReduceKind::Sum);
}

/// The `dist` attribute of an input buffer or an output as a Distribution
/// (a null offset when absent).
static flatbuffers::Offset<fb::Distribution>
writeDistribution(DistAttr dist, flatbuffers::FlatBufferBuilder &fbb) {
  if (!dist)
    return flatbuffers::Offset<fb::Distribution>();
  std::vector<int64_t> shape(dist.getGlobalShape().begin(),
                             dist.getGlobalShape().end());
  std::vector<int64_t> mesh(dist.getMesh().begin(), dist.getMesh().end());
  std::vector<int32_t> ranks(dist.getMeshRanks().begin(),
                             dist.getMeshRanks().end());
  std::vector<int32_t> sbp(dist.getSbp().begin(), dist.getSbp().end());
  return fb::CreateDistributionDirect(fbb, &shape, &mesh, &ranks, &sbp);
}

/// A CUDA executable (lowered by --of-lower-cuda-kernels): its gpu.binary
/// modules as blobs and each plan kernel's launches.
static FailureOr<flatbuffers::Offset<fb::Executable>>
writeCudaExecutable(ExecutableOp exe, flatbuffers::FlatBufferBuilder &fbb,
                    BlobTable &blobs) {
  ModuleOp source = exe.getKernelModule();
  DictionaryAttr launches = exe.getLaunchesAttr();
  if (!source || !launches || !exe.getFormat())
    return exe.emitOpError("is a CUDA executable whose kernels are not "
                           "compiled (run --of-lower-cuda-kernels)"),
           failure();
  std::vector<flatbuffers::Offset<fb::GpuBinary>> binaries;
  llvm::StringMap<uint32_t> binaryIndex;
  for (auto binary : source.getOps<gpu::BinaryOp>()) {
    ArrayAttr objects = binary.getObjectsAttr();
    if (objects.size() != 1)
      return binary.emitOpError("needs exactly one object in a plan"),
             failure();
    auto object = cast<gpu::ObjectAttr>(objects[0]);
    std::string target;
    llvm::raw_string_ostream(target) << object.getTarget();
    StringRef bytes = object.getObject().getValue();
    binaryIndex[binary.getSymName()] = binaries.size();
    binaries.push_back(fb::CreateGpuBinaryDirect(
        fbb, binary.getSymName().str().c_str(), target.c_str(),
        gpu::stringifyCompilationTarget(object.getFormat()).str().c_str(),
        blobs.add(std::vector<char>(bytes.begin(), bytes.end()))));
  }
  std::vector<flatbuffers::Offset<flatbuffers::String>> kernels;
  std::vector<flatbuffers::Offset<fb::GpuKernel>> gpuKernels;
  for (NamedAttribute kernel : launches) {
    std::vector<flatbuffers::Offset<fb::GpuLaunch>> list;
    for (Attribute a : cast<ArrayAttr>(kernel.getValue())) {
      auto d = cast<DictionaryAttr>(a);
      StringRef name = d.getAs<StringAttr>("kernel").getValue();
      auto it = binaryIndex.find(name);
      if (it == binaryIndex.end())
        return exe.emitOpError("launch of kernel '")
                   << kernel.getName().getValue() << "' names gpu.binary '"
                   << name << "', which the executable does not hold",
               failure();
      auto toVector = [](DenseI64ArrayAttr v) {
        return std::vector<uint32_t>(v.asArrayRef().begin(),
                                     v.asArrayRef().end());
      };
      std::vector<uint32_t> grid = toVector(d.getAs<DenseI64ArrayAttr>("grid"));
      std::vector<uint32_t> block =
          toVector(d.getAs<DenseI64ArrayAttr>("block"));
      std::vector<uint32_t> args = toVector(d.getAs<DenseI64ArrayAttr>("args"));
      list.push_back(fb::CreateGpuLaunchDirect(
          fbb, it->second,
          d.getAs<StringAttr>("function").getValue().str().c_str(), &grid,
          &block, &args));
    }
    kernels.push_back(fbb.CreateString(kernel.getName().str()));
    gpuKernels.push_back(fb::CreateGpuKernelDirect(
        fbb, kernel.getName().str().c_str(), &list));
  }
  return fb::CreateExecutableDirect(
      fbb, exe.getSymName().str().c_str(), exe.getFormat()->str().c_str(),
      exe.getTarget().str().c_str(), blobs.add({}), &kernels, &binaries,
      &gpuKernels);
}

LogicalResult mlir::of::writeBinaryPlan(ModuleOp module, raw_ostream &os) {
  flatbuffers::FlatBufferBuilder fbb;
  BlobTable blobs;

  std::vector<flatbuffers::Offset<fb::Executable>> executables;
  llvm::StringMap<uint32_t> executableIndex;
  for (auto exe : module.getOps<ExecutableOp>()) {
    if (exe.getTarget().starts_with("nvptx")) {
      FailureOr<flatbuffers::Offset<fb::Executable>> cuda =
          writeCudaExecutable(exe, fbb, blobs);
      if (failed(cuda))
        return failure();
      executableIndex[exe.getSymName()] = executables.size();
      executables.push_back(*cuda);
      continue;
    }
    FailureOr<std::vector<char>> bytes = executableBytes(exe);
    if (failed(bytes))
      return failure();
    SmallVector<StringRef> names;
    if (ModuleOp source = exe.getKernelModule()) {
      // Packed entry points are the public functions.
      for (auto func : source.getOps<LLVM::LLVMFuncOp>())
        if (func.getLinkage() != LLVM::Linkage::Internal && !func.isExternal())
          names.push_back(func.getSymName());
    } else {
      for (Attribute name : exe.getKernelsAttr())
        names.push_back(cast<StringAttr>(name).getValue());
    }
    std::vector<flatbuffers::Offset<flatbuffers::String>> kernels;
    std::vector<flatbuffers::Offset<fb::KernelSignature>> signatures;
    for (StringRef name : names) {
      kernels.push_back(fbb.CreateString(name.str()));
      FailureOr<flatbuffers::Offset<fb::KernelSignature>> signature =
          writeKernelSignature(exe, name, fbb);
      if (failed(signature))
        return failure();
      signatures.push_back(*signature);
    }
    executableIndex[exe.getSymName()] = executables.size();
    executables.push_back(fb::CreateExecutableDirect(
        fbb, exe.getSymName().str().c_str(), "elf-shared-object",
        exe.getTarget().str().c_str(), blobs.add(std::move(*bytes)), &kernels,
        nullptr, nullptr, &signatures));
  }

  std::vector<flatbuffers::Offset<fb::Program>> programs;
  int64_t worldSize = 1;
  for (auto program : module.getOps<ProgramOp>()) {
    for (int64_t rank : program.getRanks())
      worldSize = std::max(worldSize, rank + 1);
    llvm::StringMap<uint32_t> bufferIndex;
    std::vector<flatbuffers::Offset<fb::Buffer>> buffers;
    std::vector<uint32_t> inputs;
    std::vector<flatbuffers::Offset<fb::Step>> steps;
    // A step's origin (its op's marked source location), for errors.
    auto origin = [&](Operation *op) {
      std::string text = describeOrigin(getOrigin(op->getLoc()));
      return text.empty() ? flatbuffers::Offset<flatbuffers::String>()
                          : fbb.CreateString(text);
    };
    auto indexOf = [&](Attribute ref) {
      return bufferIndex.lookup(cast<FlatSymbolRefAttr>(ref).getValue());
    };
    auto indicesOf = [&](ArrayAttr refs) {
      std::vector<uint32_t> out;
      for (Attribute ref : refs)
        out.push_back(indexOf(ref));
      return out;
    };
    for (Operation &op : program.getBody().front()) {
      LogicalResult result =
          llvm::TypeSwitch<Operation *, LogicalResult>(&op)
              .Case([&](BufferOp buffer) -> LogicalResult {
                auto type = cast<RankedTensorType>(buffer.getType());
                std::optional<fb::DType> dtype = toDType(type.getElementType());
                if (!dtype)
                  return buffer.emitOpError("element type has no plan dtype");
                std::vector<int64_t> shape(type.getShape().begin(),
                                           type.getShape().end());
                fb::BufferKind kind = fb::BufferKind::Arena;
                uint32_t blob = 0;
                if (buffer.getKind() == BufferKind::Input) {
                  kind = fb::BufferKind::Input;
                  inputs.push_back(buffers.size());
                } else if (buffer.getKind() == BufferKind::Constant) {
                  kind = fb::BufferKind::Constant;
                  FailureOr<std::vector<char>> bytes = constantBytes(buffer);
                  if (failed(bytes))
                    return failure();
                  if (bytes->size() != buffer.getSize())
                    return buffer.emitOpError("constant has ")
                           << bytes->size() << " bytes, expected "
                           << buffer.getSize();
                  blob = blobs.add(std::move(*bytes));
                }
                bufferIndex[buffer.getSymName()] = buffers.size();
                std::string binding =
                    buffer.getBinding() ? buffer.getBinding()->str() : "";
                auto dist = writeDistribution(buffer.getDistAttr(), fbb);
                buffers.push_back(fb::CreateBufferDirect(
                    fbb, buffer.getSymName().str().c_str(), kind, *dtype,
                    &shape, buffer.getSize(),
                    buffer.getOffset() ? *buffer.getOffset() : 0, blob,
                    buffer.getBinding() ? binding.c_str() : nullptr, dist));
                return success();
              })
              .Case([&](LaunchOp launch) -> LogicalResult {
                auto it = executableIndex.find(launch.getExecutable());
                if (it == executableIndex.end())
                  return launch.emitOpError("unknown executable");
                std::vector<uint32_t> refs = indicesOf(launch.getBuffers());
                auto detail = fb::CreateLaunchDirect(
                    fbb, it->second, launch.getKernel().str().c_str(), &refs,
                    launch.getRange(), launch.getWork());
                steps.push_back(fb::CreateStep(fbb, launch.getStream(),
                                               fb::StepDetail::Launch,
                                               detail.Union(), origin(launch)));
                return success();
              })
              .Case([&](LibraryCallOp call) -> LogicalResult {
                std::vector<uint32_t> refs = indicesOf(call.getBuffers());
                std::vector<int64_t> params(call.getParams().begin(),
                                            call.getParams().end());
                auto detail = fb::CreateLibraryCallDirect(
                    fbb, call.getFunction().str().c_str(), &refs, &params);
                steps.push_back(fb::CreateStep(fbb, call.getStream(),
                                               fb::StepDetail::LibraryCall,
                                               detail.Union(), origin(call)));
                return success();
              })
              .Case([&](CopyOp copy) -> LogicalResult {
                auto detail = fb::CreateCopy(
                    fbb, indexOf(copy.getSourceAttr()),
                    indexOf(copy.getTargetAttr()), copy.getSourceOffset(),
                    copy.getTargetOffset(), copy.getBytes());
                steps.push_back(fb::CreateStep(fbb, copy.getStream(),
                                               fb::StepDetail::Copy,
                                               detail.Union(), origin(copy)));
                return success();
              })
              .Case([&](CollectiveOp coll) -> LogicalResult {
                std::vector<int32_t> group(coll.getGroup().begin(),
                                           coll.getGroup().end());
                // Absent and empty stay distinct, so text and binary round
                // trip exactly.
                std::vector<int64_t> mesh, shape;
                if (auto attr = coll.getMeshAttr())
                  mesh.assign(attr.asArrayRef().begin(),
                              attr.asArrayRef().end());
                if (auto attr = coll.getShapeAttr())
                  shape.assign(attr.asArrayRef().begin(),
                               attr.asArrayRef().end());
                auto detail = fb::CreateCollectiveDirect(
                    fbb, toFile(coll.getKind()), toFile(coll.getReduce()),
                    &group, indexOf(coll.getSourceAttr()),
                    indexOf(coll.getTargetAttr()), coll.getPeer(),
                    coll.getMeshAttr() ? &mesh : nullptr, coll.getAxis(),
                    coll.getShapeAttr() ? &shape : nullptr, coll.getDim(),
                    coll.getDim2());
                steps.push_back(fb::CreateStep(fbb, coll.getStream(),
                                               fb::StepDetail::Collective,
                                               detail.Union(), origin(coll)));
                return success();
              })
              .Case([&](EventRecordOp record) -> LogicalResult {
                auto detail = fb::CreateEventRecord(fbb, record.getEvent());
                steps.push_back(fb::CreateStep(fbb, record.getStream(),
                                               fb::StepDetail::EventRecord,
                                               detail.Union(), origin(record)));
                return success();
              })
              .Case([&](EventWaitOp wait) -> LogicalResult {
                auto detail = fb::CreateEventWait(fbb, wait.getEvent());
                steps.push_back(fb::CreateStep(fbb, wait.getStream(),
                                               fb::StepDetail::EventWait,
                                               detail.Union(), origin(wait)));
                return success();
              })
              .Case([&](OutputOp output) -> LogicalResult {
                auto dist = writeDistribution(output.getDistAttr(), fbb);
                std::string updates =
                    output.getUpdates() ? output.getUpdates()->str() : "";
                auto detail = fb::CreateOutputDirect(
                    fbb, output.getName().str().c_str(),
                    indexOf(output.getBufferAttr()), dist,
                    updates.empty() ? nullptr : updates.c_str());
                steps.push_back(fb::CreateStep(fbb, output.getStream(),
                                               fb::StepDetail::Output,
                                               detail.Union(), origin(output)));
                return success();
              })
              .Default([](Operation *other) {
                return other->emitOpError("cannot be serialised in a plan");
              });
      if (failed(result))
        return failure();
    }
    std::vector<int32_t> ranks(program.getRanks().begin(),
                               program.getRanks().end());
    programs.push_back(fb::CreateProgramDirect(
        fbb, program.getEntry().str().c_str(), &ranks,
        program.getDevice().str().c_str(), program.getArenaSize(),
        program.getNumStreams(), program.getNumEvents(), &buffers, &inputs,
        &steps, program.getAllowTf32()));
  }

  // Blob placement: 64-byte aligned, relative to the blob section.
  std::vector<flatbuffers::Offset<fb::Blob>> blobOffsets;
  uint64_t cursor = 0;
  std::vector<uint64_t> blobStarts;
  for (const std::vector<char> &blob : blobs.data) {
    cursor = ::of::plan::alignTo(cursor, ::of::plan::kBlobAlignment);
    blobStarts.push_back(cursor);
    blobOffsets.push_back(fb::CreateBlob(fbb, cursor, blob.size()));
    cursor += blob.size();
  }
  std::string producer = std::string("OF ") + getVersionString();
  if (worldSize > INT32_MAX)
    return module.emitError("a program's rank exceeds the plan format's "
                            "32-bit ranks");
  auto plan =
      fb::CreatePlanDirect(fbb, producer.c_str(), &executables, &programs,
                           &blobOffsets, static_cast<int32_t>(worldSize));
  fb::FinishPlanBuffer(fbb, plan);

  ::of::plan::FileHeader header{};
  std::memcpy(header.magic, ::of::plan::kMagic, sizeof(header.magic));
  header.version = ::of::plan::kFormatVersion;
  header.headerSize = sizeof(header);
  header.metadataOffset = sizeof(header);
  header.metadataSize = fbb.GetSize();
  header.blobsOffset = ::of::plan::alignTo(
      header.metadataOffset + header.metadataSize, ::of::plan::kBlobAlignment);
  header.blobsSize = cursor;
  header.fileSize = header.blobsOffset + header.blobsSize;

  std::vector<char> file(header.fileSize, 0);
  std::memcpy(file.data() + header.metadataOffset, fbb.GetBufferPointer(),
              fbb.GetSize());
  for (auto [blob, start] : llvm::zip(blobs.data, blobStarts))
    if (!blob.empty())
      std::memcpy(file.data() + header.blobsOffset + start, blob.data(),
                  blob.size());
  header.checksum = ::of::plan::checksum(file.data() + header.headerSize,
                                         file.size() - header.headerSize);
  std::memcpy(file.data(), &header, sizeof(header));
  // The runtime's loader is the one verifier of the format: a plan it would
  // refuse (a collective's buffers that do not fit what it does on some
  // rank, a distribution that does not give a rank its buffer's shape, ...)
  // is an error here, where it is produced.
  ofrt_plan *verified = nullptr;
  if (ofrt_error *error =
          ofrt_plan_open_memory(file.data(), file.size(), &verified)) {
    mlir::emitError(module.getLoc(), "the plan does not verify: ")
        << ofrt_error_message(error);
    ofrt_error_free(error);
    return failure();
  }
  ofrt_plan_close(verified);
  os.write(file.data(), file.size());
  return success();
}

//===----------------------------------------------------------------------===//
// Reading
//===----------------------------------------------------------------------===//

/// A FlatBuffer string, empty when absent.
static std::string str(const flatbuffers::String *s) {
  return s ? s->str() : std::string();
}

/// A Distribution as the `dist` attribute (null when absent).
static DistAttr readDistribution(const fb::Distribution *dist, Builder &b) {
  if (!dist)
    return DistAttr();
  return DistAttr::get(b.getContext(),
                       elementsOf<int64_t>(dist->global_shape()),
                       elementsOf<int64_t>(dist->mesh()),
                       elementsOf<int64_t>(dist->mesh_ranks()),
                       elementsOf<int32_t>(dist->sbp()));
}

/// A blob of the file as a dense resource attribute (kept out of line in the
/// printed IR, in the file's resource section).
static DenseResourceElementsAttr blobAttr(MLIRContext *ctx, StringRef name,
                                          ArrayRef<char> data,
                                          ShapedType type) {
  AsmResourceBlob blob = HeapAsmResourceBlob::allocateAndCopyWithAlign(
      data, ::of::plan::kBlobAlignment);
  return DenseResourceElementsAttr::get(type, name, std::move(blob));
}

/// A CUDA executable back in its lowered form: a kernel module of
/// gpu.binary ops and the `launches` table.
static LogicalResult
readCudaExecutable(const fb::Executable *exe, OpBuilder &ob, Location loc,
                   llvm::function_ref<ArrayRef<char>(uint32_t)> blobData) {
  MLIRContext *ctx = ob.getContext();
  ctx->loadDialect<gpu::GPUDialect, NVVM::NVVMDialect>();
  Builder b(ctx);
  auto op = ExecutableOp::create(
      ob, loc, b.getStringAttr(str(exe->name())),
      b.getStringAttr(str(exe->target())), b.getStringAttr(str(exe->format())),
      ArrayAttr(), ElementsAttr(), DictionaryAttr(), DictionaryAttr());
  op.getBody().push_back(new Block());
  OpBuilder eb = OpBuilder::atBlockEnd(&op.getBody().front());
  auto kernels = ModuleOp::create(eb, loc);
  kernels->setAttr(gpu::GPUDialect::getContainerModuleAttrName(),
                   UnitAttr::get(ctx));
  OpBuilder kb = OpBuilder::atBlockEnd(kernels.getBody());
  SmallVector<std::string> binaryNames;
  if (exe->gpu_binaries())
    for (const fb::GpuBinary *binary : *exe->gpu_binaries()) {
      Attribute target = parseAttribute(str(binary->target()), ctx);
      std::optional<gpu::CompilationTarget> format =
          gpu::symbolizeCompilationTarget(str(binary->format()));
      if (!target || !format)
        return emitError(loc, "GPU binary '")
               << str(binary->name()) << "' has an unreadable target '"
               << str(binary->target()) << "' or format '"
               << str(binary->format()) << "'";
      ArrayRef<char> data = blobData(binary->blob());
      auto object = gpu::ObjectAttr::get(
          ctx, target, *format,
          b.getStringAttr(StringRef(data.data(), data.size())), nullptr,
          nullptr);
      gpu::BinaryOp::create(kb, loc, str(binary->name()), Attribute(),
                            b.getArrayAttr({object}));
      binaryNames.push_back(str(binary->name()));
    }
  SmallVector<NamedAttribute> table;
  if (exe->gpu_kernels())
    for (const fb::GpuKernel *kernel : *exe->gpu_kernels()) {
      SmallVector<Attribute> launches;
      if (kernel->launches())
        for (const fb::GpuLaunch *launch : *kernel->launches()) {
          auto array = [&](const flatbuffers::Vector<uint32_t> *v) {
            return b.getDenseI64ArrayAttr(elementsOf<int64_t>(v));
          };
          launches.push_back(b.getDictionaryAttr(
              {b.getNamedAttr("kernel",
                              b.getStringAttr(binaryNames[launch->binary()])),
               b.getNamedAttr("function",
                              b.getStringAttr(str(launch->function()))),
               b.getNamedAttr("grid", array(launch->grid())),
               b.getNamedAttr("block", array(launch->block())),
               b.getNamedAttr("args", array(launch->args()))}));
        }
      table.push_back(
          b.getNamedAttr(str(kernel->name()), b.getArrayAttr(launches)));
    }
  op.setLaunchesAttr(b.getDictionaryAttr(table));
  return success();
}

OwningOpRef<ModuleOp> mlir::of::readBinaryPlan(StringRef bytes,
                                               MLIRContext *ctx, Location loc) {
  // The runtime's loader is the one verifier of the format.
  ofrt_plan *verified = nullptr;
  if (ofrt_error *error =
          ofrt_plan_open_memory(bytes.data(), bytes.size(), &verified)) {
    emitError(loc, "invalid plan: ") << ofrt_error_message(error);
    ofrt_error_free(error);
    return nullptr;
  }
  ofrt_plan_close(verified);

  ctx->loadDialect<PlanDialect>();
  ::of::plan::FileHeader header;
  std::memcpy(&header, bytes.data(), sizeof(header));
  const fb::Plan *plan = fb::GetPlan(bytes.data() + header.metadataOffset);
  const char *blobBase = bytes.data() + header.blobsOffset;
  auto blobData = [&](uint32_t index) {
    const fb::Blob *blob = plan->blobs()->Get(index);
    return ArrayRef<char>(blobBase + blob->offset(), blob->size());
  };

  Builder b(ctx);
  OwningOpRef<ModuleOp> module = ModuleOp::create(loc);
  OpBuilder ob = OpBuilder::atBlockEnd(module->getBody());
  if (plan->executables()) {
    for (const fb::Executable *exe : *plan->executables()) {
      if (exe->gpu_binaries() || exe->gpu_kernels()) {
        if (failed(readCudaExecutable(exe, ob, loc, blobData)))
          return nullptr;
        continue;
      }
      SmallVector<StringRef> kernels;
      if (exe->kernels())
        for (const flatbuffers::String *k : *exe->kernels())
          kernels.push_back(k->string_view());
      ArrayRef<char> data = blobData(exe->blob());
      auto type = RankedTensorType::get({int64_t(data.size())}, b.getI8Type());
      auto op = ExecutableOp::create(
          ob, loc, b.getStringAttr(str(exe->name())),
          b.getStringAttr(str(exe->target())),
          b.getStringAttr(exe->format() ? exe->format()->str() : ""),
          b.getStrArrayAttr(kernels),
          blobAttr(ctx, "kernels_" + str(exe->name()), data, type),
          DictionaryAttr(), readKernelSignatures(exe, ctx));
      op.getBody().push_back(new Block());
    }
  }
  if (!plan->programs()) {
    emitError(loc, "invalid plan: no programs");
    return nullptr;
  }
  for (const fb::Program *program : *plan->programs()) {
    SmallVector<int64_t> ranks = elementsOf<int64_t>(program->ranks());
    auto op = ProgramOp::create(
        ob, loc, b.getStringAttr(str(program->entry())),
        b.getDenseI64ArrayAttr(ranks),
        b.getStringAttr(program->device()
                            ? str(program->device())
                            : std::string(::of::plan::kDeviceCpu)),
        b.getI64IntegerAttr(program->arena_size()),
        b.getI64IntegerAttr(program->num_streams()),
        b.getI64IntegerAttr(program->num_events()));
    if (program->allow_tf32())
      op.setAllowTf32(true);
    Block *block = new Block();
    op.getBody().push_back(block);
    OpBuilder pb = OpBuilder::atBlockEnd(block);
    SmallVector<FlatSymbolRefAttr> refs;
    // The verifier accepts absent vectors as empty ones.
    if (program->buffers())
      for (const fb::Buffer *buffer : *program->buffers()) {
        auto type = tensorType(buffer->dtype(), buffer->shape(), ctx);
        refs.push_back(FlatSymbolRefAttr::get(ctx, str(buffer->name())));
        IntegerAttr offset;
        StringAttr binding;
        ElementsAttr value;
        BufferKind kind = BufferKind::Arena;
        if (buffer->kind() == fb::BufferKind::Arena) {
          offset = b.getI64IntegerAttr(buffer->offset());
        } else if (buffer->kind() == fb::BufferKind::Input) {
          kind = BufferKind::Input;
          binding = b.getStringAttr(str(buffer->binding()));
        } else {
          kind = BufferKind::Constant;
          ArrayRef<char> data = blobData(buffer->blob());
          if (type.getElementType().isInteger(1)) {
            SmallVector<bool> bits;
            for (char c : data)
              bits.push_back(c != 0);
            value = DenseElementsAttr::get(type, bits);
          } else {
            value = DenseElementsAttr::getFromRawBuffer(type, data);
          }
        }
        BufferOp::create(pb, loc, b.getStringAttr(str(buffer->name())),
                         BufferKindAttr::get(ctx, kind), offset, binding,
                         b.getI64IntegerAttr(buffer->size()), value,
                         TypeAttr::get(type),
                         readDistribution(buffer->dist(), b));
      }
    auto refsOf = [&](const flatbuffers::Vector<uint32_t> *indices) {
      SmallVector<Attribute> attrs;
      if (indices)
        for (uint32_t i : *indices)
          attrs.push_back(refs[i]);
      return b.getArrayAttr(attrs);
    };
    if (program->steps())
      for (const fb::Step *step : *program->steps()) {
        IntegerAttr stream = b.getI64IntegerAttr(step->stream());
        Location at =
            step->origin()
                ? markOrigin(NameLoc::get(b.getStringAttr(str(step->origin()))))
                : loc;
        switch (step->detail_type()) {
        case fb::StepDetail::Launch: {
          const fb::Launch *l = step->detail_as_Launch();
          LaunchOp::create(
              pb, at,
              FlatSymbolRefAttr::get(
                  ctx, str(plan->executables()->Get(l->executable())->name())),
              b.getStringAttr(str(l->kernel())), refsOf(l->buffers()), stream,
              b.getI64IntegerAttr(l->range()), b.getI64IntegerAttr(l->work()));
          break;
        }
        case fb::StepDetail::LibraryCall: {
          const fb::LibraryCall *c = step->detail_as_LibraryCall();
          LibraryCallOp::create(
              pb, at, b.getStringAttr(str(c->function())), refsOf(c->buffers()),
              b.getDenseI64ArrayAttr(elementsOf<int64_t>(c->params())), stream);
          break;
        }
        case fb::StepDetail::Copy: {
          const fb::Copy *c = step->detail_as_Copy();
          CopyOp::create(pb, at, refs[c->src()], refs[c->dst()],
                         b.getI64IntegerAttr(c->src_offset()),
                         b.getI64IntegerAttr(c->dst_offset()),
                         b.getI64IntegerAttr(c->bytes()), stream);
          break;
        }
        case fb::StepDetail::Collective: {
          const fb::Collective *c = step->detail_as_Collective();
          SmallVector<int64_t> group = elementsOf<int64_t>(c->group());
          auto optionalArray = [&](const flatbuffers::Vector<int64_t> *v) {
            if (!v)
              return DenseI64ArrayAttr();
            return b.getDenseI64ArrayAttr(
                SmallVector<int64_t>(v->begin(), v->end()));
          };
          CollectiveOp::create(
              pb, at, CollectiveKindAttr::get(ctx, fromFile(c->kind())),
              refs[c->src()], refs[c->dst()], b.getDenseI64ArrayAttr(group),
              ReduceKindAttr::get(ctx, fromFile(c->reduce())),
              b.getI64IntegerAttr(c->peer()), stream, optionalArray(c->mesh()),
              b.getI64IntegerAttr(c->axis()), optionalArray(c->shape()),
              b.getI64IntegerAttr(c->dim()), b.getI64IntegerAttr(c->dim2()));
          break;
        }
        case fb::StepDetail::EventRecord:
          EventRecordOp::create(
              pb, at,
              b.getI64IntegerAttr(step->detail_as_EventRecord()->event()),
              stream);
          break;
        case fb::StepDetail::EventWait:
          EventWaitOp::create(
              pb, at, b.getI64IntegerAttr(step->detail_as_EventWait()->event()),
              stream);
          break;
        case fb::StepDetail::Output: {
          const fb::Output *o = step->detail_as_Output();
          OutputOp::create(
              pb, at, b.getStringAttr(str(o->name())), refs[o->buffer()],
              stream, readDistribution(o->dist(), b),
              o->updates() ? b.getStringAttr(str(o->updates())) : StringAttr());
          break;
        }
        case fb::StepDetail::NONE:
          break;
        }
      }
  }
  if (failed(mlir::verify(*module)))
    return nullptr;
  return module;
}

//===----------------------------------------------------------------------===//
// Registration
//===----------------------------------------------------------------------===//

void mlir::of::registerOFTranslations() {
  static TranslateFromMLIRRegistration toBinary(
      "of-plan-to-binary",
      "Write an ofrt plan module (from --of-pipeline=cpu) as a binary plan "
      "(.ofp), compiling its CPU kernels",
      [](ModuleOp module, raw_ostream &os) {
        return writeBinaryPlan(module, os);
      },
      [](DialectRegistry &registry) {
        // gpu and nvvm parse plans of --of-pipeline=cuda, to refuse them
        // with a message rather than a parse error.
        registry.insert<PlanDialect, LLVM::LLVMDialect, gpu::GPUDialect,
                        NVVM::NVVMDialect>();
        registerBuiltinDialectTranslation(registry);
        registerLLVMDialectTranslation(registry);
      });
  static TranslateToMLIRRegistration fromBinary(
      "of-binary-to-plan", "Read a binary plan (.ofp) back into ofrt text",
      [](llvm::SourceMgr &sourceMgr,
         MLIRContext *ctx) -> OwningOpRef<Operation *> {
        const llvm::MemoryBuffer *buffer =
            sourceMgr.getMemoryBuffer(sourceMgr.getMainFileID());
        Location loc =
            FileLineColLoc::get(ctx, buffer->getBufferIdentifier(), 0, 0);
        OwningOpRef<ModuleOp> module =
            readBinaryPlan(buffer->getBuffer(), ctx, loc);
        return OwningOpRef<Operation *>(module.release());
      },
      [](DialectRegistry &registry) { registry.insert<PlanDialect>(); });
}
