//===- PlanFile.cpp - Opening and verifying a binary plan -----------------===//
//
// Verification happens once, at open, in three layers:
//   1. the fixed header: magic, version, header size, every section inside
//      the file, the file size, the checksum;
//   2. the FlatBuffer: file identifier "OFPM" and flatbuffers::Verifier, so
//      every offset inside the metadata is in bounds;
//   3. the semantics: every index, offset and size the runtime will follow,
//      enum values (the FlatBuffers verifier does not range-check them), the
//      parameters and buffer accesses of library calls, and events; then
//      the dataflow: every buffer a step reads was written before it, arena
//      buffers that are live at once do not share bytes, and the launches
//      of one kernel agree on its signature and range.
// After a successful open, sessions index the plan without checks. The
// messages name the problem and where it is; nothing here prints or aborts.
//
//===----------------------------------------------------------------------===//

#include "Plan/PlanFile.h"
#include "Plan/PlanSignature.h"

#include "Comm/Collective.h"
#include "Comm/Distribution.h"
#include "OF/ABI/StreamOrder.h"
#include "CPU/Reduce.h"

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <map>
#include <set>
#include <sys/stat.h>
#include <unistd.h>
#include <unordered_map>
#include <unordered_set>

using namespace of::plan;

namespace of::rt {

size_t dtypeSize(DType dtype) {
  switch (dtype) {
  case DType::F32:
  case DType::I32:
    return 4;
  case DType::F64:
  case DType::I64:
    return 8;
  case DType::F16:
  case DType::BF16:
    return 2;
  case DType::I8:
  case DType::I1:
    return 1;
  }
  return 0;
}

const char *dtypeName(DType dtype) {
  switch (dtype) {
  case DType::F32:
    return "f32";
  case DType::F64:
    return "f64";
  case DType::F16:
    return "f16";
  case DType::BF16:
    return "bf16";
  case DType::I64:
    return "i64";
  case DType::I32:
    return "i32";
  case DType::I8:
    return "i8";
  case DType::I1:
    return "i1";
  }
  return "invalid";
}

std::string formatShape(const flatbuffers::Vector<int64_t> *shape) {
  std::string text = "[";
  if (shape) {
    for (flatbuffers::uoffset_t i = 0; i < shape->size(); ++i) {
      if (i)
        text += ", ";
      text += std::to_string(shape->Get(i));
    }
  }
  return text + "]";
}

namespace {

/// The text of an optional FlatBuffers string ("" when absent).
std::string_view text(const flatbuffers::String *string) {
  return string ? std::string_view(string->c_str(), string->size())
                : std::string_view();
}

std::string hex(uint64_t value) {
  char buffer[19];
  std::snprintf(buffer, sizeof buffer, "0x%016llx",
                static_cast<unsigned long long>(value));
  return buffer;
}

template <typename T> uint32_t count(const flatbuffers::Vector<T> *vector) {
  return vector ? vector->size() : 0;
}

/// Whether the elements of a vector of 64-bit integers are 8-byte aligned.
/// The FlatBuffers verifier only checks the 4-byte length prefix. A
/// FlatBufferBuilder aligns the elements of a non-empty vector (an empty one,
/// the shape of a scalar, may be 4-aligned, and has nothing to read), so a
/// misaligned non-empty vector is corrupt metadata, and reading it in place
/// would be undefined behaviour.
bool elementsAligned(const flatbuffers::Vector<int64_t> *vector) {
  return !vector || vector->size() == 0 ||
         reinterpret_cast<uintptr_t>(vector->data()) % 8 == 0;
}

/// Sets `bytes` to the size of a tensor of `dtype` (valid) and `shape`
/// (aligned) and returns "", or returns what is wrong, worded to follow the
/// tensor's name: "has the negative dimension -1 in its shape [2, -1]" or
/// "of shape [...] overflows 64 bits of bytes".
std::string shapeBytes(DType dtype, const flatbuffers::Vector<int64_t> *shape,
                       uint64_t &bytes) {
  bytes = dtypeSize(dtype);
  for (uint32_t d = 0; d < count(shape); ++d) {
    int64_t dim = shape->Get(d);
    if (dim < 0)
      return formatMessage("has the negative dimension ", dim, " in its shape ",
                           formatShape(shape));
    if (__builtin_mul_overflow(bytes, static_cast<uint64_t>(dim), &bytes))
      return formatMessage("of shape ", formatShape(shape),
                           " overflows 64 bits of bytes");
  }
  return "";
}

/// The word for a step's kind in messages, before its detail is checked.
std::string stepKindWord(const Step &step) {
  switch (step.detail_type()) {
  case StepDetail::Launch:
    if (auto *launch = step.detail_as_Launch(); launch && launch->kernel())
      return formatMessage("launch ", text(launch->kernel()));
    return "launch";
  case StepDetail::LibraryCall:
    if (auto *call = step.detail_as_LibraryCall(); call && call->function())
      return formatMessage("library ", text(call->function()));
    return "library";
  case StepDetail::Copy:
    return "copy";
  case StepDetail::Collective:
    return "collective";
  case StepDetail::EventRecord:
    return "event record";
  case StepDetail::EventWait:
    return "event wait";
  case StepDetail::Output:
    return "output";
  default:
    return "unknown step";
  }
}

/// Checks the fixed header against the file's actual size, and the
/// checksum. Fills `header`.
Status verifyHeader(const uint8_t *data, uint64_t size, FileHeader &header) {
  if (size < sizeof(kMagic) || std::memcmp(data, kMagic, sizeof(kMagic)) != 0)
    return fail("not an OF plan: the file does not start with the .ofp magic");
  if (size < sizeof(FileHeader))
    return fail("truncated plan: the file is ", size,
                " bytes, shorter than the ", sizeof(FileHeader),
                "-byte header");
  std::memcpy(&header, data, sizeof(FileHeader));
  if (header.version != kFormatVersion)
    return fail("plan format version ", header.version,
                ", this runtime reads version ", kFormatVersion);
  if (header.headerSize != sizeof(FileHeader))
    return fail("plan header size is ", header.headerSize, " bytes; a version ",
                kFormatVersion, " header is ", sizeof(FileHeader));
  if (header.fileSize != size)
    return fail(size < header.fileSize ? "truncated plan: "
                                       : "plan has trailing bytes: ",
                "the file is ", size, " bytes, its header says ",
                header.fileSize);

  uint64_t metadataEnd;
  if (header.metadataOffset < header.headerSize ||
      __builtin_add_overflow(header.metadataOffset, header.metadataSize,
                             &metadataEnd) ||
      metadataEnd > size)
    return fail("plan metadata (", header.metadataSize, " bytes at offset ",
                header.metadataOffset,
                ") is not inside the file between the header and byte ", size);
  // FlatBuffers data is aligned relative to the buffer's start; with the
  // plan copy 64-byte aligned, an 8-aligned start keeps every scalar read
  // in place aligned.
  if (header.metadataOffset % 8 != 0)
    return fail("plan metadata offset ", header.metadataOffset,
                " is not 8-byte aligned");
  // An empty blob section holds nothing, so where it is does not matter.
  if (header.blobsSize != 0) {
    uint64_t blobsEnd;
    if (header.blobsOffset % kBlobAlignment != 0)
      return fail("plan blob section offset ", header.blobsOffset, " is not ",
                  kBlobAlignment, "-byte aligned");
    if (header.blobsOffset < metadataEnd ||
        __builtin_add_overflow(header.blobsOffset, header.blobsSize,
                               &blobsEnd) ||
        blobsEnd > size)
      return fail("plan blob section (", header.blobsSize, " bytes at offset ",
                  header.blobsOffset,
                  ") is not inside the file between the metadata (ending at ",
                  metadataEnd, ") and byte ", size);
  }

  uint64_t actual = checksum(data + header.headerSize,
                             static_cast<size_t>(size - header.headerSize));
  if (actual != header.checksum)
    return fail("plan checksum mismatch: the header says ",
                hex(header.checksum), ", the contents hash to ", hex(actual),
                " (the file is corrupt)");
  return Status::success();
}

/// The semantic checks of a plan whose FlatBuffer passed the verifier.
class SemanticChecker {
public:
  SemanticChecker(const Plan &plan, const FileHeader &header)
      : plan_(plan), header_(header) {}

  Status check() {
    if (Status status = checkBlobs(); status.failed())
      return status;
    if (Status status = checkExecutables(); status.failed())
      return status;
    if (Status status = checkProgramRanks(); status.failed())
      return status;
    for (uint32_t i = 0; i < count(plan_.programs()); ++i)
      if (Status status = checkProgram(*plan_.programs()->Get(i), i);
          status.failed())
        return status;
    return checkEntriesAgree();
  }

private:
  uint32_t numBlobs() const { return count(plan_.blobs()); }

  Status checkBlobs() {
    for (uint32_t i = 0; i < numBlobs(); ++i) {
      const Blob &blob = *plan_.blobs()->Get(i);
      uint64_t end;
      if (blob.offset() % kBlobAlignment != 0)
        return fail("blob ", i, " at offset ", blob.offset(), " is not ",
                    kBlobAlignment, "-byte aligned");
      if (__builtin_add_overflow(blob.offset(), blob.size(), &end) ||
          end > header_.blobsSize)
        return fail("blob ", i, " (", blob.size(), " bytes at offset ",
                    blob.offset(), ") exceeds the blob section of ",
                    header_.blobsSize, " bytes");
    }
    return Status::success();
  }

  Status checkExecutables() {
    for (uint32_t i = 0; i < count(plan_.executables()); ++i) {
      const Executable &executable = *plan_.executables()->Get(i);
      if (text(executable.name()).empty())
        return fail("executable #", i, " has no name");
      std::string label =
          formatMessage("executable '", text(executable.name()), "'");
      if (executable.blob() >= numBlobs())
        return fail(label, " refers to blob ", executable.blob(),
                    ", but the plan has ", numBlobs(), " blobs");
      for (uint32_t k = 0; k < count(executable.kernels()); ++k)
        if (text(executable.kernels()->Get(k)).empty())
          return fail(label, ": kernel #", k, " has no name");
      if (Status status = checkGpuKernels(label, executable); status.failed())
        return status;
      if (Status status = checkSignatures(label, executable); status.failed())
        return status;
    }
    return Status::success();
  }

  /// A CPU executable declares, per kernel, what it was compiled for; the
  /// launches are held to it (checkKernelSignature).
  Status checkSignatures(const std::string &label,
                         const Executable &executable) {
    if (executable.gpu_binaries() || executable.gpu_kernels()) {
      if (executable.signatures())
        return fail(label, ": a CUDA executable declares CPU kernel "
                           "signatures (corrupt metadata)");
      return Status::success();
    }
    if (count(executable.signatures()) != count(executable.kernels()))
      return fail(label, " declares ", count(executable.signatures()),
                  " kernel signatures for its ", count(executable.kernels()),
                  " kernels (each kernel declares what it was compiled for; "
                  "recompile the plan)");
    for (uint32_t k = 0; k < count(executable.kernels()); ++k) {
      const KernelSignature &signature = *executable.signatures()->Get(k);
      std::string where = formatMessage(
          label, ": kernel '", text(executable.kernels()->Get(k)), "'");
      if (signature.range() < 0 || signature.work() < 0)
        return fail(where, " declares the negative range ", signature.range(),
                    " or work ", signature.work(), " (corrupt metadata)");
      if (count(signature.params()) == 0)
        return fail(where, " declares no parameters (a kernel takes the "
                           "buffers it reads and writes)");
      for (const auto *list : {signature.reads(), signature.writes()})
        for (uint32_t i = 0; i < count(list); ++i) {
          uint32_t index = list->Get(i);
          if (index >= count(signature.params()) ||
              (i > 0 && index <= list->Get(i - 1)))
            return fail(where, " declares that it ",
                        list == signature.reads() ? "reads" : "writes",
                        " parameter ", index,
                        " (the list must be increasing indices of its ",
                        count(signature.params()), " parameters)");
        }
      if (count(signature.writes()) == 0)
        return fail(where, " declares that it writes nothing");
      for (uint32_t i = 0; i < count(signature.params()); ++i) {
        const KernelParam &param = *signature.params()->Get(i);
        if (param.dtype() > DType::MAX)
          return fail(where, ": parameter ", i, " has the invalid dtype ",
                      static_cast<unsigned>(param.dtype()));
        if (!elementsAligned(param.shape()))
          return fail(where, ": parameter ", i,
                      " has a misaligned shape vector (corrupt metadata)");
        uint64_t bytes;
        if (std::string problem =
                shapeBytes(param.dtype(), param.shape(), bytes);
            !problem.empty())
          return fail(where, ": parameter ", i, " ", problem);
      }
    }
    return Status::success();
  }

  /// A CUDA executable's GPU modules and launch tables (the arguments of
  /// each launch are checked against the plan launches that use it).
  Status checkGpuKernels(const std::string &label,
                         const Executable &executable) {
    uint32_t binaries = count(executable.gpu_binaries());
    for (uint32_t b = 0; b < binaries; ++b) {
      const GpuBinary &binary = *executable.gpu_binaries()->Get(b);
      if (text(binary.name()).empty())
        return fail(label, ": GPU binary #", b, " has no name");
      if (binary.blob() >= numBlobs())
        return fail(label, ": GPU binary '", text(binary.name()),
                    "' refers to blob ", binary.blob(), ", but the plan has ",
                    numBlobs(), " blobs");
    }
    for (uint32_t k = 0; k < count(executable.gpu_kernels()); ++k) {
      const GpuKernel &kernel = *executable.gpu_kernels()->Get(k);
      std::string_view name = text(kernel.name());
      bool listed = false;
      for (uint32_t i = 0; i < count(executable.kernels()) && !listed; ++i)
        listed = text(executable.kernels()->Get(i)) == name;
      if (name.empty() || !listed)
        return fail(label, ": GPU kernel #", k, " ('", name,
                    "') is not one of the executable's kernels");
      for (uint32_t l = 0; l < count(kernel.launches()); ++l) {
        const GpuLaunch &launch = *kernel.launches()->Get(l);
        std::string where =
            formatMessage(label, ": launch ", l, " of kernel '", name, "'");
        if (launch.binary() >= binaries)
          return fail(where, " uses GPU binary ", launch.binary(),
                      ", but the executable has ", binaries);
        if (text(launch.function()).empty())
          return fail(where, " names no function");
        for (const auto *dims : {launch.grid(), launch.block()}) {
          if (count(dims) != 3)
            return fail(where, " needs 3 grid and 3 block dimensions");
          for (uint32_t d = 0; d < 3; ++d)
            if (dims->Get(d) == 0)
              return fail(where, " has a zero launch dimension");
        }
      }
    }
    return Status::success();
  }

  /// Every program has an entry and ranks; no rank runs two programs of the
  /// same entry. Collects every rank of the plan.
  Status checkProgramRanks() {
    if (plan_.world_size() < 1 || plan_.world_size() > kMaxDevices)
      return fail("the plan's world size is ", plan_.world_size(),
                  "; it must be in [1, ", kMaxDevices, "]");
    std::set<std::pair<std::string, int>> entryRanks;
    for (uint32_t i = 0; i < count(plan_.programs()); ++i) {
      const Program &program = *plan_.programs()->Get(i);
      std::string_view entry = text(program.entry());
      if (entry.empty())
        return fail("program #", i, " has no entry name");
      if (count(program.ranks()) == 0)
        return fail("program '", entry, "' has no ranks");
      for (int rank : *program.ranks()) {
        if (rank < 0)
          return fail("program '", entry, "' lists the negative rank ", rank);
        if (rank >= plan_.world_size())
          return fail("program '", entry, "' runs rank ", rank,
                      ", but the plan's world size is ", plan_.world_size());
        if (!entryRanks.emplace(std::string(entry), rank).second)
          return fail("rank ", rank, " runs entry '", entry,
                      "' twice (ranks must be unique per entry)");
        allRanks_.insert(rank);
        entryRanks_[std::string(entry)].insert(rank);
      }
    }
    return Status::success();
  }

  Status checkProgram(const Program &program, uint32_t index) {
    program_ = &program;
    programRanks_.assign(program.ranks()->begin(), program.ranks()->end());
    ranksOfEntry_ = &entryRanks_[std::string(text(program.entry()))];
    label_ = formatMessage("program '", text(program.entry()), "'");
    // Name the program by index only when its entry name is ambiguous.
    for (uint32_t i = 0; i < count(plan_.programs()); ++i)
      if (i != index &&
          text(plan_.programs()->Get(i)->entry()) == text(program.entry())) {
        label_ += formatMessage(" (#", index, ")");
        break;
      }

    std::string_view device = text(program.device());
    if (!plan::isDevice(device))
      return fail(label_, ": unknown device '", device,
                  "' (expected \"cpu\" or \"cuda\")");
    if (program.num_streams() == 0)
      return fail(label_, ": num_streams is 0; a program needs a stream");
    if (program.num_streams() > kMaxStreams)
      return fail(label_, ": num_streams is ", program.num_streams(),
                  "; a program has at most ", kMaxStreams);
    if (program.num_events() > kMaxEvents)
      return fail(label_, ": num_events is ", program.num_events(),
                  "; a program has at most ", kMaxEvents);
    if (Status status = checkBuffers(); status.failed())
      return status;
    if (Status status = checkInputs(); status.failed())
      return status;

    recordedEvents_.clear();
    outputNames_.clear();
    for (uint32_t s = 0; s < count(program.steps()); ++s)
      if (Status status = checkStep(*program.steps()->Get(s), s);
          status.failed())
        return status;
    if (Status status = checkStreamOrder(); status.failed())
      return status;
    if (Status status = checkReadsFollowWrites(); status.failed())
      return status;
    return checkArenaLifetimes();
  }

  /// The declared signature of a (checked) launch's kernel, or null (a
  /// CUDA kernel).
  const KernelSignature *declaredSignature(const Launch &launch) const {
    const Executable &executable =
        *plan_.executables()->Get(launch.executable());
    if (!executable.signatures())
      return nullptr;
    uint32_t k = 0;
    while (text(executable.kernels()->Get(k)) != text(launch.kernel()))
      ++k; // listed: checked by checkLaunch
    return executable.signatures()->Get(k);
  }

  /// The buffers a (checked) step reads and writes. A launch's kernel
  /// reads and writes the parameters its signature says; a CUDA kernel,
  /// which declares none, counts as writing all its buffers and reading
  /// none. A zero-byte copy touches nothing.
  struct Access {
    std::vector<uint32_t> reads, writes;
  };
  Access accessOf(const Step &step) const {
    Access access;
    switch (step.detail_type()) {
    case StepDetail::Launch: {
      const Launch &launch = *step.detail_as_Launch();
      const KernelSignature *signature = declaredSignature(launch);
      if (!signature) {
        if (launch.buffers())
          access.writes.assign(launch.buffers()->begin(),
                               launch.buffers()->end());
        break;
      }
      for (uint32_t i = 0; i < count(signature->reads()); ++i)
        access.reads.push_back(
            launch.buffers()->Get(signature->reads()->Get(i)));
      for (uint32_t i : *signature->writes())
        access.writes.push_back(launch.buffers()->Get(i));
      break;
    }
    case StepDetail::LibraryCall: {
      const LibraryCall &call = *step.detail_as_LibraryCall();
      std::string_view function = text(call.function());
      size_t writes = function == kGemmFunction ? 1
                      : function == kIndexRangeFunction
                          ? 0
                          : plan::outputCount(function);
      for (uint32_t i = 0; i < count(call.buffers()); ++i)
        (i + writes < count(call.buffers()) ? access.reads : access.writes)
            .push_back(call.buffers()->Get(i));
      break;
    }
    case StepDetail::Copy:
      if (step.detail_as_Copy()->bytes() != 0) {
        access.reads = {step.detail_as_Copy()->src()};
        access.writes = {step.detail_as_Copy()->dst()};
      }
      break;
    case StepDetail::Collective: {
      const Collective &collective = *step.detail_as_Collective();
      if (collective.kind() != CollectiveKind::Recv)
        access.reads = {collective.src()};
      if (collective.kind() != CollectiveKind::Send)
        access.writes = {collective.dst()};
      break;
    }
    case StepDetail::Output:
      access.reads = {step.detail_as_Output()->buffer()};
      break;
    default:
      break;
    }
    return access;
  }

  /// Every buffer a step reads holds a value by then: an input, a
  /// constant, an empty buffer, or an arena buffer that an earlier step
  /// (in program order, which the stream check above makes the order of
  /// dependent steps) writes. Otherwise the step reads what the arena held
  /// before: zeros, or another buffer's leftovers.
  Status checkReadsFollowWrites() const {
    const Program &program = *program_;
    std::vector<bool> written(count(program.buffers()));
    for (uint32_t j = 0; j < written.size(); ++j)
      written[j] =
          buffer(j).kind() != BufferKind::Arena || buffer(j).size() == 0;
    for (uint32_t s = 0; s < count(program.steps()); ++s) {
      const Step &step = *program.steps()->Get(s);
      Access access = accessOf(step);
      for (uint32_t index : access.reads)
        if (!written[index])
          return fail(label_, " step ", s, " (", stepKindWord(step),
                      "): reads buffer ", bufferLabel(index),
                      " before any step writes it");
      for (uint32_t index : access.writes)
        written[index] = true;
    }
    return Status::success();
  }

  /// Arena buffers share bytes only when they are not live at the same
  /// time. A buffer is live from the first step that names it to the last
  /// (an output's to the end of the run: a session may read it then). The
  /// one exception is the compiler's in place: an elementwise kernel
  /// writing its output over an input that dies at that launch, at the same
  /// offset and of the same size.
  Status checkArenaLifetimes() const {
    const Program &program = *program_;
    uint32_t numSteps = count(program.steps());
    std::vector<int64_t> first(count(program.buffers()), -1),
        last(count(program.buffers()), -1);
    for (uint32_t s = 0; s < numSteps; ++s) {
      const Step &step = *program.steps()->Get(s);
      Access access = accessOf(step);
      std::vector<uint32_t> named = access.reads;
      named.insert(named.end(), access.writes.begin(), access.writes.end());
      if (step.detail_type() == StepDetail::Copy)
        named = {step.detail_as_Copy()->src(), step.detail_as_Copy()->dst()};
      for (uint32_t index : named) {
        if (first[index] < 0)
          first[index] = s;
        last[index] = std::max<int64_t>(
            last[index],
            step.detail_type() == StepDetail::Output ? numSteps : s);
      }
    }
    std::vector<uint32_t> placed;
    for (uint32_t j = 0; j < first.size(); ++j)
      if (buffer(j).kind() == BufferKind::Arena && buffer(j).size() != 0 &&
          first[j] >= 0)
        placed.push_back(j);
    std::stable_sort(placed.begin(), placed.end(), [&](uint32_t a, uint32_t b) {
      return buffer(a).offset() < buffer(b).offset();
    });
    auto inPlace = [&](uint32_t a, uint32_t b) {
      int64_t shared = std::max(first[a], first[b]);
      if (shared != std::min(last[a], last[b]) || shared == numSteps ||
          buffer(a).offset() != buffer(b).offset() ||
          buffer(a).size() != buffer(b).size())
        return false; // live together at more than one step, or not alike
      const Launch *launch = program.steps()->Get(shared)->detail_as_Launch();
      if (!launch)
        return false;
      bool hasA = false, hasB = false;
      for (uint32_t index : *launch->buffers()) {
        hasA = hasA || index == a;
        hasB = hasB || index == b;
      }
      return hasA && hasB;
    };
    auto describe = [&](uint32_t index) {
      const Buffer &b = buffer(index);
      return formatMessage(
          bufferLabel(index), " (bytes [", b.offset(), ", ",
          b.offset() + b.size(), "), live from step ", first[index],
          last[index] == numSteps ? std::string(" to the end")
                                  : formatMessage(" to step ", last[index]),
          ")");
    };
    for (size_t i = 0; i < placed.size(); ++i) {
      uint32_t a = placed[i];
      uint64_t end = buffer(a).offset() + buffer(a).size();
      for (size_t k = i + 1;
           k < placed.size() && buffer(placed[k]).offset() < end; ++k) {
        uint32_t b = placed[k];
        if (first[a] > last[b] || first[b] > last[a] || inPlace(a, b))
          continue;
        return fail(label_, " step ", std::max(first[a], first[b]),
                    ": arena buffers ", describe(a), " and ", describe(b),
                    " overlap in memory while both are live");
      }
    }
    return Status::success();
  }

  /// Steps on different streams that use overlapping memory are ordered
  /// by events (StreamOrder.h); the steps themselves are checked.
  Status checkStreamOrder() const {
    const Program &program = *program_;
    if (program.num_streams() < 2)
      return Status::success();
    StreamOrder order(program.num_streams());
    auto useOf = [&](uint32_t index) {
      const Buffer &b = buffer(index);
      MemoryUse use;
      if (b.kind() == BufferKind::Arena)
        use.begin = b.offset();
      else
        use.space = 1 + index;
      use.end = use.begin + b.size();
      return use;
    };
    for (uint32_t s = 0; s < count(program.steps()); ++s) {
      const Step &step = *program.steps()->Get(s);
      std::vector<uint32_t> buffers;
      switch (step.detail_type()) {
      case StepDetail::EventRecord:
        order.addRecord(step.stream(), step.detail_as_EventRecord()->event());
        continue;
      case StepDetail::EventWait:
        order.addWait(step.stream(), step.detail_as_EventWait()->event());
        continue;
      case StepDetail::Launch:
        if (auto *list = step.detail_as_Launch()->buffers())
          buffers.assign(list->begin(), list->end());
        break;
      case StepDetail::LibraryCall:
        if (auto *list = step.detail_as_LibraryCall()->buffers())
          buffers.assign(list->begin(), list->end());
        break;
      case StepDetail::Copy:
        buffers = {step.detail_as_Copy()->src(), step.detail_as_Copy()->dst()};
        break;
      case StepDetail::Collective:
        buffers = {step.detail_as_Collective()->src(),
                   step.detail_as_Collective()->dst()};
        break;
      case StepDetail::Output:
        buffers = {step.detail_as_Output()->buffer()};
        break;
      default:
        break;
      }
      std::vector<MemoryUse> uses;
      for (uint32_t b : buffers)
        if (buffer(b).size())
          uses.push_back(useOf(b));
      int64_t other = order.addStep(step.stream(), std::move(uses));
      if (other >= 0) {
        const Step &earlier = *program.steps()->Get(other);
        return fail(label_, " step ", s, " (", stepKindWord(step),
                    " on stream ", step.stream(), ") uses memory that step ",
                    other, " (", stepKindWord(earlier), " on stream ",
                    earlier.stream(),
                    ") also uses, and no event orders the two: they may run "
                    "at the same time");
      }
    }
    return Status::success();
  }

  const Buffer &buffer(uint32_t index) const {
    return *program_->buffers()->Get(index);
  }
  std::string bufferLabel(uint32_t index) const {
    return formatMessage("'", text(buffer(index).name()), "'");
  }
  uint64_t elementCount(uint32_t index) const {
    return buffer(index).size() / dtypeSize(buffer(index).dtype());
  }

  Status checkBuffers() {
    const Program &program = *program_;
    for (uint32_t j = 0; j < count(program.buffers()); ++j) {
      const Buffer &buf = buffer(j);
      if (text(buf.name()).empty())
        return fail(label_, ": buffer #", j, " has no name");
      std::string name = bufferLabel(j);
      if (buf.kind() > BufferKind::MAX)
        return fail(label_, ": buffer ", name, " has the invalid kind ",
                    static_cast<unsigned>(buf.kind()));
      if (buf.dtype() > DType::MAX)
        return fail(label_, ": buffer ", name, " has the invalid dtype ",
                    static_cast<unsigned>(buf.dtype()));
      if (!elementsAligned(buf.shape()))
        return fail(label_, ": buffer ", name,
                    " has a misaligned shape vector (corrupt metadata)");
      uint64_t bytes;
      if (std::string problem = shapeBytes(buf.dtype(), buf.shape(), bytes);
          !problem.empty())
        return fail(label_, ": buffer ", name, " ", problem);
      if (buf.size() != bytes)
        return fail(label_, ": buffer ", name, " is ", buf.size(),
                    " bytes, but ", dtypeName(buf.dtype()), " ",
                    formatShape(buf.shape()), " takes ", bytes);
      switch (buf.kind()) {
      case BufferKind::Arena: {
        uint64_t end;
        if (__builtin_add_overflow(buf.offset(), buf.size(), &end) ||
            end > program.arena_size())
          return fail(label_, ": arena buffer ", name, " (", buf.size(),
                      " bytes at offset ", buf.offset(),
                      ") exceeds the arena of ", program.arena_size(),
                      " bytes");
        break;
      }
      case BufferKind::Constant: {
        if (buf.blob() >= numBlobs())
          return fail(label_, ": constant buffer ", name, " refers to blob ",
                      buf.blob(), ", but the plan has ", numBlobs(), " blobs");
        uint64_t blobSize = plan_.blobs()->Get(buf.blob())->size();
        if (blobSize != buf.size())
          return fail(label_, ": constant buffer ", name, " is ", buf.size(),
                      " bytes, but blob ", buf.blob(), " holds ", blobSize);
        break;
      }
      case BufferKind::Input:
        if (text(buf.binding()).empty())
          return fail(label_, ": input buffer ", name, " has no binding name");
        break;
      }
      if (buf.dist()) {
        if (buf.kind() != BufferKind::Input)
          return fail(label_, ": buffer ", name, " has a distribution, but "
                      "only input buffers have one");
        if (Status status = checkDistribution(
                formatMessage(label_, ": input buffer ", name), *buf.dist(),
                buf);
            status.failed())
          return status;
      }
    }
    return Status::success();
  }

  /// A distribution is well formed, and gives every rank of the program
  /// exactly the shape of `local`.
  Status checkDistribution(const std::string &where, const Distribution &dist,
                           const Buffer &local) const {
    if (!elementsAligned(dist.global_shape()) || !elementsAligned(dist.mesh()))
      return fail(where, ": misaligned distribution vectors (corrupt "
                  "metadata)");
    DistSpec spec = DistSpec::from(dist);
    std::string described = spec.describe();
    for (int64_t extent : spec.globalShape)
      if (extent < 0)
        return fail(where, ": the distribution's global shape ",
                    formatDims(spec.globalShape), " has a negative extent");
    if (spec.mesh.empty())
      return fail(where, ": the distribution (", described,
                  ") has an empty mesh");
    uint64_t positions = 1;
    for (int64_t extent : spec.mesh)
      if (extent < 1 || __builtin_mul_overflow(
                            positions, static_cast<uint64_t>(extent),
                            &positions))
        return fail(where, ": the distribution's mesh ",
                    formatDims(spec.mesh),
                    " needs extents of at least 1 (and a product that fits)");
    if (positions != spec.meshRanks.size())
      return fail(where, ": the distribution's mesh ", formatDims(spec.mesh),
                  " has ", positions, " positions, but mesh_ranks lists ",
                  spec.meshRanks.size(), " ranks");
    std::set<int> seen;
    for (int rank : spec.meshRanks) {
      if (!ranksOfEntry_->count(rank))
        return fail(where, ": the distribution's mesh_ranks ",
                    formatRanks(spec.meshRanks), " name rank ", rank,
                    ", which runs no program of this entry");
      if (!seen.insert(rank).second)
        return fail(where, ": the distribution's mesh_ranks ",
                    formatRanks(spec.meshRanks), " name rank ", rank,
                    " twice");
    }
    if (spec.sbp.size() != spec.mesh.size())
      return fail(where, ": the distribution has ", spec.sbp.size(),
                  " sbp entries for the ", spec.mesh.size(), "-axis mesh ",
                  formatDims(spec.mesh), " (one per axis)");
    bool sum = false, max = false;
    for (int entry : spec.sbp) {
      if (!sbp::isValid(entry, spec.globalShape.size()))
        return fail(where, ": the distribution's sbp entry ", sbp::text(entry),
                    " is invalid for the global shape ",
                    formatDims(spec.globalShape), " (S(d) needs d < rank)");
      sum = sum || entry == sbp::kPartialSum;
      max = max || entry == sbp::kPartialMax;
    }
    if (sum && max)
      return fail(where, ": the distribution (", described,
                  ") mixes P (sum) and P(max)");
    if ((sum || max) && !isReducible(local.dtype()))
      return fail(where, ": the distribution (", described, ") is partial, "
                  "but ", dtypeName(local.dtype()), " values cannot be "
                  "reduced");
    std::vector<int64_t> localShape;
    if (local.shape())
      localShape.assign(local.shape()->begin(), local.shape()->end());
    // Each rank's place in the mesh (a scan per rank would be quadratic in
    // a placement of a million devices).
    std::unordered_map<int, int> members;
    members.reserve(spec.meshRanks.size());
    for (size_t i = 0; i < spec.meshRanks.size(); ++i)
      members.try_emplace(spec.meshRanks[i], static_cast<int>(i));
    for (int rank : programRanks_) {
      auto found = members.find(rank);
      int member = found == members.end() ? -1 : found->second;
      if (member < 0) {
        // Another pipeline stage's value: an empty [0] buffer stands in.
        if (localShape == std::vector<int64_t>{0})
          continue;
        return fail(where, " is ", formatDims(localShape), " on rank ", rank,
                    ", which is not in the distribution's mesh_ranks ",
                    formatRanks(spec.meshRanks),
                    "; such a rank holds an empty [0] buffer");
      }
      LocalPart part = localPart(spec, member);
      if (part.extents != localShape)
        return fail(where, " is ", formatDims(localShape), " on rank ", rank,
                    ", but its distribution (", described, ") gives rank ",
                    rank, " the part ", formatDims(part.extents));
    }
    return Status::success();
  }

  Status checkInputs() {
    const Program &program = *program_;
    std::unordered_set<uint32_t> listed;
    std::set<std::string_view> bindings;
    for (uint32_t i = 0; i < count(program.inputs()); ++i) {
      uint32_t index = program.inputs()->Get(i);
      if (index >= count(program.buffers()))
        return fail(label_, ": inputs[", i, "] is buffer index ", index,
                    ", but the program has ", count(program.buffers()),
                    " buffers");
      if (buffer(index).kind() != BufferKind::Input)
        return fail(label_, ": inputs[", i, "] is buffer ", bufferLabel(index),
                    ", which is not an input buffer");
      if (!listed.insert(index).second)
        return fail(label_, ": buffer ", bufferLabel(index),
                    " is listed twice in inputs");
      if (!bindings.insert(text(buffer(index).binding())).second)
        return fail(label_, ": two inputs are bound as '",
                    text(buffer(index).binding()), "'");
    }
    for (uint32_t j = 0; j < count(program.buffers()); ++j)
      if (buffer(j).kind() == BufferKind::Input && !listed.count(j))
        return fail(label_, ": input buffer ", bufferLabel(j),
                    " is not listed in the program's inputs");
    return Status::success();
  }

  Status checkBufferIndex(const std::string &where, uint32_t index) const {
    if (index >= count(program_->buffers()))
      return fail(where, ": buffer index ", index, " is out of range (the ",
                  "program has ", count(program_->buffers()), " buffers)");
    return Status::success();
  }

  Status checkWritable(const std::string &where, uint32_t index,
                       const char *role) const {
    if (buffer(index).kind() == BufferKind::Constant)
      return fail(where, ": the ", role, " ", bufferLabel(index),
                  " is a constant");
    return Status::success();
  }

  /// `[offset, offset + bytes)` lies inside buffer `index`.
  Status checkRange(const std::string &where, const char *role, uint32_t index,
                    uint64_t offset, uint64_t bytes) const {
    uint64_t end;
    bool overflows = __builtin_add_overflow(offset, bytes, &end);
    if (overflows || end > buffer(index).size()) {
      std::string range =
          overflows ? formatMessage("of ", bytes, " bytes at offset ", offset)
                    : formatMessage("[", offset, ", ", end, ")");
      return fail(where, ": ", role, " range ", range, " exceeds buffer ",
                  bufferLabel(index), " of ", buffer(index).size(), " bytes");
    }
    return Status::success();
  }

  Status checkStep(const Step &step, uint32_t index) {
    std::string where =
        formatMessage(label_, " step ", index, " (", stepKindWord(step), ")");
    if (step.detail_type() == StepDetail::NONE || !step.detail() ||
        step.detail_type() > StepDetail::MAX)
      return fail(where, ": the step has no detail");
    if (step.stream() >= program_->num_streams())
      return fail(where, ": stream ", step.stream(), ", but the program has ",
                  program_->num_streams(), " streams");
    switch (step.detail_type()) {
    case StepDetail::Launch:
      return checkLaunch(where, *step.detail_as_Launch());
    case StepDetail::LibraryCall:
      return checkLibraryCall(where, *step.detail_as_LibraryCall());
    case StepDetail::Copy:
      return checkCopy(where, *step.detail_as_Copy());
    case StepDetail::Collective:
      return checkCollective(where, *step.detail_as_Collective());
    case StepDetail::EventRecord: {
      uint32_t event = step.detail_as_EventRecord()->event();
      if (Status status = checkEvent(where, event); status.failed())
        return status;
      recordedEvents_.insert(event);
      return Status::success();
    }
    case StepDetail::EventWait: {
      uint32_t event = step.detail_as_EventWait()->event();
      if (Status status = checkEvent(where, event); status.failed())
        return status;
      if (!recordedEvents_.count(event))
        return fail(where, ": waits for event ", event,
                    ", which no earlier step records (the run would hang)");
      return Status::success();
    }
    case StepDetail::Output:
      return checkOutput(where, *step.detail_as_Output());
    default:
      return fail(where, ": the step has no detail");
    }
  }

  Status checkEvent(const std::string &where, uint32_t event) const {
    if (event >= program_->num_events())
      return fail(where, ": event ", event, ", but the program has ",
                  program_->num_events(), " events");
    return Status::success();
  }

  Status checkLaunch(const std::string &where, const Launch &launch) {
    if (launch.executable() >= count(plan_.executables()))
      return fail(where, ": executable ", launch.executable(),
                  ", but the plan has ", count(plan_.executables()),
                  " executables");
    const Executable &executable =
        *plan_.executables()->Get(launch.executable());
    std::string_view kernel = text(launch.kernel());
    if (kernel.empty())
      return fail(where, ": the launch names no kernel");
    if (launch.range() < 0 || launch.work() < 0)
      return fail(where, ": negative iteration range ", launch.range(),
                  " or work ", launch.work(), " (corrupt metadata)");
    bool listed = false;
    for (uint32_t k = 0; k < count(executable.kernels()) && !listed; ++k)
      listed = text(executable.kernels()->Get(k)) == kernel;
    if (!listed)
      return fail(where, ": kernel '", kernel, "' is not in executable '",
                  text(executable.name()), "'");
    for (uint32_t i = 0; i < count(launch.buffers()); ++i)
      if (Status status = checkBufferIndex(where, launch.buffers()->Get(i));
          status.failed())
        return status;
    // A kernel takes the root buffers it reads or writes, each once: with
    // none it would read its argument array out of bounds, and with a
    // buffer twice an output would land on an input of another size.
    if (count(launch.buffers()) == 0)
      return fail(where, ": the launch passes no buffers (a kernel takes "
                         "the buffers it reads and writes)");
    std::set<uint32_t> passed;
    for (uint32_t index : *launch.buffers())
      if (!passed.insert(index).second)
        return fail(where, ": buffer ", bufferLabel(index),
                    " is passed twice (a kernel takes each buffer once)");
    if (Status status = checkKernelSignature(where, launch); status.failed())
      return status;
    if (executable.gpu_kernels()) {
      const GpuKernel *gpuKernel = nullptr;
      for (uint32_t k = 0; k < count(executable.gpu_kernels()) && !gpuKernel;
           ++k)
        if (text(executable.gpu_kernels()->Get(k)->name()) == kernel)
          gpuKernel = executable.gpu_kernels()->Get(k);
      if (!gpuKernel)
        return fail(where, ": kernel '", kernel,
                    "' has no GPU launches in executable '",
                    text(executable.name()), "'");
      for (uint32_t l = 0; l < count(gpuKernel->launches()); ++l) {
        const GpuLaunch &gpu = *gpuKernel->launches()->Get(l);
        for (uint32_t a = 0; a < count(gpu.args()); ++a)
          if (gpu.args()->Get(a) >= count(launch.buffers()))
            return fail(where, ": GPU launch ", l, " of kernel '", kernel,
                        "' passes buffer ", gpu.args()->Get(a),
                        ", but the step has ", count(launch.buffers()));
      }
    }
    return Status::success();
  }

  /// A kernel is compiled for one signature (static shapes) and one
  /// iteration range: a CPU kernel's launches pass buffers of its declared
  /// parameters' dtypes and element counts (a buffer may be a reshaped
  /// view), with its declared range and work. (A CUDA executable declares
  /// no signatures: every launch of its kernel, in every program, agrees
  /// with the first.)
  Status checkKernelSignature(const std::string &where, const Launch &launch) {
    if (const KernelSignature *signature = declaredSignature(launch))
      return checkDeclaredSignature(where, launch, *signature);
    std::string kernel(text(launch.kernel()));
    auto [known, inserted] =
        kernelUses_.try_emplace(std::make_pair(launch.executable(), kernel),
                                KernelUse{program_, where, &launch});
    if (inserted)
      return Status::success();
    const KernelUse &first = known->second;
    const Launch &other = *first.launch;
    if (count(launch.buffers()) != count(other.buffers()))
      return fail(where, ": passes ", count(launch.buffers()),
                  " buffers to kernel '", kernel, "', but ", first.where,
                  " passes it ", count(other.buffers()),
                  " (a kernel has one signature)");
    for (uint32_t i = 0; i < count(launch.buffers()); ++i) {
      const Buffer &mine = buffer(launch.buffers()->Get(i));
      const Buffer &theirs =
          *first.program->buffers()->Get(other.buffers()->Get(i));
      if (mine.dtype() != theirs.dtype() ||
          !sameShape(mine.shape(), theirs.shape()))
        return fail(where, ": argument ", i, " of kernel '", kernel, "' is ",
                    bufferLabel(launch.buffers()->Get(i)), " (",
                    dtypeName(mine.dtype()), " ", formatShape(mine.shape()),
                    "), but ", first.where, " passes '", text(theirs.name()),
                    "' (", dtypeName(theirs.dtype()), " ",
                    formatShape(theirs.shape()),
                    ") (a kernel has one signature)");
    }
    if (launch.range() != other.range() || launch.work() != other.work())
      return fail(where, ": range ", launch.range(), " and work ",
                  launch.work(), " for kernel '", kernel, "', but ",
                  first.where, " launches it with range ", other.range(),
                  " and work ", other.work(),
                  " (they are the kernel's, not the launch's)");
    return Status::success();
  }

  Status checkDeclaredSignature(const std::string &where, const Launch &launch,
                                const KernelSignature &signature) {
    std::string_view kernel = text(launch.kernel());
    if (count(launch.buffers()) != count(signature.params()))
      return fail(where, ": passes ", count(launch.buffers()),
                  " buffers to kernel '", kernel, "', which takes ",
                  count(signature.params()));
    for (uint32_t i = 0; i < count(launch.buffers()); ++i) {
      uint32_t index = launch.buffers()->Get(i);
      const Buffer &mine = buffer(index);
      const KernelParam &param = *signature.params()->Get(i);
      uint64_t elements = 1;
      for (uint32_t d = 0; d < count(param.shape()); ++d)
        elements *= static_cast<uint64_t>(param.shape()->Get(d)); // checked
      if (mine.dtype() != param.dtype() || elementCount(index) != elements)
        return fail(where, ": argument ", i, " of kernel '", kernel, "' is ",
                    bufferLabel(index), " (", dtypeName(mine.dtype()), " ",
                    formatShape(mine.shape()),
                    "), but the kernel was compiled for ",
                    dtypeName(param.dtype()), " ", formatShape(param.shape()));
    }
    for (uint32_t i : *signature.writes())
      if (Status status =
              checkWritable(where, launch.buffers()->Get(i), "output");
          status.failed())
        return status;
    if (launch.range() != signature.range() ||
        launch.work() != signature.work())
      return fail(where, ": launches kernel '", kernel, "' with range ",
                  launch.range(), " and work ", launch.work(),
                  ", but it was compiled for range ", signature.range(),
                  " and work ", signature.work());
    return Status::success();
  }

  static bool sameShape(const flatbuffers::Vector<int64_t> *a,
                        const flatbuffers::Vector<int64_t> *b) {
    if (count(a) != count(b))
      return false;
    for (uint32_t d = 0; d < count(a); ++d)
      if (a->Get(d) != b->Get(d))
        return false;
    return true;
  }

  Status checkLibraryCall(const std::string &where, const LibraryCall &call) {
    std::string_view function = text(call.function());
    if (!elementsAligned(call.params()))
      return fail(where, ": misaligned parameter vector (corrupt metadata)");
    for (uint32_t i = 0; i < count(call.buffers()); ++i)
      if (Status status = checkBufferIndex(where, call.buffers()->Get(i));
          status.failed())
        return status;
    if (function == kGemmFunction)
      return checkGemm(where, call);
    if (function == kIndexRangeFunction)
      return checkIndexRange(where, call);
    if (plan::isConvFunction(function))
      return checkConv(where, call);
    if (plan::isPoolFunction(function))
      return checkPool(where, call);
    if (plan::isBatchNormFunction(function))
      return checkBatchNorm(where, call);
    return fail(where, ": unknown library function '", function,
                "' (this runtime knows blas.gemm, check.index_range, "
                "dnn.conv2d, dnn.conv2d_grad_input, dnn.conv2d_grad_filter, "
                "dnn.pool2d, dnn.pool2d_grad, dnn.batch_norm and "
                "dnn.batch_norm_grad)");
  }

  /// The largest element index that `extents`/`strides` reach, or -1 when an
  /// extent is 0 (nothing is accessed); false on overflow.
  static bool maxElement(const int64_t (&extents)[4],
                         const int64_t (&strides)[4], int64_t &maxIndex) {
    maxIndex = 0;
    for (int d = 0; d < 4; ++d)
      if (extents[d] == 0) {
        maxIndex = -1;
        return true;
      }
    for (int d = 0; d < 4; ++d) {
      int64_t term;
      if (__builtin_mul_overflow(extents[d] - 1, strides[d], &term) ||
          __builtin_add_overflow(maxIndex, term, &maxIndex))
        return false;
    }
    return true;
  }

  Status checkGemmAccess(const std::string &where, const char *operand,
                         uint32_t index, const int64_t (&extents)[4],
                         const int64_t (&strides)[4]) const {
    int64_t maxIndex;
    if (!maxElement(extents, strides, maxIndex))
      return fail(where, ": the accesses of ", operand,
                  " overflow 64-bit element indices");
    if (maxIndex >= 0 && static_cast<uint64_t>(maxIndex) >= elementCount(index))
      return fail(where, ": ", operand, " reaches element ", maxIndex,
                  " of buffer ", bufferLabel(index), ", which has ",
                  elementCount(index), " elements");
    return Status::success();
  }

  Status checkGemm(const std::string &where, const LibraryCall &call) const {
    if (count(call.buffers()) != 3)
      return fail(where, ": blas.gemm takes 3 buffers [A, B, C], got ",
                  count(call.buffers()));
    GemmCall gemm;
    if (Status status = decodeGemm(call.params(), gemm); status.failed())
      return fail(where, ": ", status.message());
    uint32_t a = call.buffers()->Get(0), b = call.buffers()->Get(1),
             c = call.buffers()->Get(2);
    // A and B share a floating-point type; C has it too, or is f32 for
    // bf16 and f16 products (which accumulate in f32). Which of these an
    // executor runs is its own check.
    DType dtype = buffer(a).dtype(), out = buffer(c).dtype();
    bool half = dtype == DType::BF16 || dtype == DType::F16;
    if ((dtype != DType::F32 && dtype != DType::F64 && !half) ||
        buffer(b).dtype() != dtype ||
        (out != dtype && !(half && out == DType::F32)))
      return fail(where,
                  ": blas.gemm needs A and B of one type (f32, f64, bf16 or "
                  "f16) and C of that type or, for bf16 and f16, f32; got ",
                  dtypeName(buffer(a).dtype()), ", ",
                  dtypeName(buffer(b).dtype()), ", ", dtypeName(out));
    if (Status status = checkWritable(where, c, "result C"); status.failed())
      return status;
    if (Status status = checkGemmAccess(
            where, "A", a, {gemm.outerBatch, gemm.batch, gemm.m, gemm.k},
            {gemm.aOuterStride, gemm.aBatchStride, gemm.aMStride,
             gemm.aKStride});
        status.failed())
      return status;
    if (Status status = checkGemmAccess(
            where, "B", b, {gemm.outerBatch, gemm.batch, gemm.k, gemm.n},
            {gemm.bOuterStride, gemm.bBatchStride, gemm.bKStride,
             gemm.bNStride});
        status.failed())
      return status;
    if (Status status = checkGemmAccess(
            where, "C", c, {gemm.outerBatch, gemm.batch, gemm.m, gemm.n},
            {gemm.cOuterStride, gemm.cBatchStride, gemm.cMStride, 1});
        status.failed())
      return status;
    // A zero extent computes nothing from the operands: with outer_batch,
    // batch, m or n 0 the step writes none of C, with k 0 it zeroes C
    // without reading A or B. Both are right only for buffers that are
    // empty too: otherwise an extent was lost, and the result would be
    // zeros (or whatever C held) without an error.
    if (gemm.outerBatch == 0 || gemm.batch == 0 || gemm.m == 0 || gemm.n == 0) {
      if (elementCount(c) == 0)
        return Status::success();
      const char *extent = gemm.outerBatch == 0 ? "outer_batch"
                           : gemm.batch == 0    ? "batch"
                           : gemm.m == 0        ? "m"
                                                : "n";
      return fail(where, ": blas.gemm's extent ", extent,
                  " is 0, so the step writes none of C ", bufferLabel(c), " (",
                  elementCount(c), " elements)");
    }
    if (gemm.k == 0)
      for (auto [operand, index] : {std::pair{"A", a}, std::pair{"B", b}})
        if (elementCount(index) != 0)
          return fail(where,
                      ": blas.gemm's extent k is 0, so the step "
                      "zeroes C without reading ",
                      operand, " ", bufferLabel(index), " (",
                      elementCount(index), " elements)");
    // Every element of C is written once: executors compute batches (and
    // rows) at once on different threads.
    std::vector<std::pair<int64_t, int64_t>> levels; // (stride, extent)
    for (auto [stride, extent] :
         {std::pair{gemm.cOuterStride, gemm.outerBatch},
          std::pair{gemm.cBatchStride, gemm.batch},
          std::pair{gemm.cMStride, gemm.m}, std::pair{int64_t(1), gemm.n}})
      if (extent > 1)
        levels.push_back({stride, extent});
    std::sort(levels.begin(), levels.end());
    int64_t span = 1; // elements covered by the levels so far
    for (auto [stride, extent] : levels) {
      if (stride < span)
        return fail(where, ": blas.gemm's result C overlaps itself (stride ",
                    stride, " for an extent of ", extent,
                    "; every element of C must be distinct)");
      // In bounds (checked above), so no overflow; but be sure.
      int64_t reach;
      if (__builtin_mul_overflow(stride, extent - 1, &reach) ||
          __builtin_add_overflow(reach, span, &span))
        return fail(where, ": blas.gemm's result C is out of range");
    }
    return Status::success();
  }

  Status checkIndexRange(const std::string &where,
                         const LibraryCall &call) const {
    if (count(call.buffers()) != 1)
      return fail(where, ": check.index_range takes 1 buffer, got ",
                  count(call.buffers()));
    if (count(call.params()) != 2)
      return fail(where,
                  ": check.index_range takes 2 parameters [lo, hi], got ",
                  count(call.params()));
    DType dtype = buffer(call.buffers()->Get(0)).dtype();
    if (dtype != DType::I32 && dtype != DType::I64)
      return fail(where, ": check.index_range needs an i32 or i64 buffer, got ",
                  dtypeName(dtype), " buffer ",
                  bufferLabel(call.buffers()->Get(0)));
    return Status::success();
  }

  /// A convolution step: its geometry (LibraryCalls.h), and dnn buffers.
  Status checkConv(const std::string &where, const LibraryCall &call) const {
    std::string_view function = text(call.function());
    if (count(call.params()) != plan::kConvParamCount)
      return fail(where, ": ", function, " takes ", plan::kConvParamCount,
                  " parameters, got ", count(call.params()));
    plan::ConvGeometry g = plan::decodeConvGeometry(call.params()->data());
    if (const char *why = plan::checkConvGeometry(g))
      return fail(where, ": ", function, " parameters: ", why);
    int64_t x = plan::convInputElements(g), w = plan::convWeightElements(g),
            y = plan::convOutputElements(g);
    if (function == plan::kConvForwardFunction)
      return count(call.buffers()) == 4
                 ? checkDnnBuffers(where, call, {x, w, g.f, y},
                                   "[x, w, y] or [x, w, bias, y]")
                 : checkDnnBuffers(where, call, {x, w, y},
                                   "[x, w, y] or [x, w, bias, y]");
    if (function == plan::kConvGradInputFunction)
      return checkDnnBuffers(where, call, {y, w, x}, "[dy, w, dx]");
    return checkDnnBuffers(where, call, {x, y, w}, "[x, dy, dw]");
  }

  /// A pooling step: its geometry (LibraryCalls.h), and dnn buffers.
  Status checkPool(const std::string &where, const LibraryCall &call) const {
    std::string_view function = text(call.function());
    if (count(call.params()) != plan::kPoolParamCount)
      return fail(where, ": ", function, " takes ", plan::kPoolParamCount,
                  " parameters, got ", count(call.params()));
    plan::PoolGeometry g = plan::decodePoolGeometry(call.params()->data());
    if (const char *why = plan::checkPoolGeometry(g))
      return fail(where, ": ", function, " parameters: ", why);
    int64_t x = plan::poolInputElements(g), y = plan::poolOutputElements(g);
    if (function == plan::kPoolForwardFunction)
      return checkDnnBuffers(where, call, {x, y}, "[x, y]");
    return checkDnnBuffers(where, call, {x, y, x}, "[x, dy, dx]");
  }

  /// A batch-normalization step: its geometry (LibraryCalls.h), and f32
  /// dnn buffers.
  Status checkBatchNorm(const std::string &where,
                        const LibraryCall &call) const {
    std::string_view function = text(call.function());
    if (count(call.params()) != plan::kBatchNormParamCount)
      return fail(where, ": ", function, " takes ", plan::kBatchNormParamCount,
                  " parameters, got ", count(call.params()));
    plan::BatchNormGeometry g =
        plan::decodeBatchNormGeometry(call.params()->data());
    if (const char *why = plan::checkBatchNormGeometry(g))
      return fail(where, ": ", function, " parameters: ", why);
    int64_t x = plan::batchNormInputElements(g), c = g.c;
    Status status =
        function == plan::kBatchNormForwardFunction
            ? checkDnnBuffers(where, call, {x, c, c, x, c, c},
                              "[x, scale, shift, y, mean, var]")
            : checkDnnBuffers(where, call, {x, x, c, c, c, x, c, c},
                              "[x, dy, scale, mean, var, dx, dscale, dshift]");
    if (status.failed())
      return status;
    if (DType dtype = buffer(call.buffers()->Get(0)).dtype();
        dtype != DType::F32)
      return fail(where, ": ", function, " is f32 only, got ",
                  dtypeName(dtype));
    return Status::success();
  }

  /// The buffers of a dnn step: as many as `elements` (`layout` names
  /// them), of one floating-point type, with exactly those element counts,
  /// the results (the last outputCount) writable and used once.
  Status checkDnnBuffers(const std::string &where, const LibraryCall &call,
                         const std::vector<int64_t> &elements,
                         const char *layout) const {
    std::string_view function = text(call.function());
    if (count(call.buffers()) != elements.size())
      return fail(where, ": ", function, " takes buffers ", layout, ", got ",
                  count(call.buffers()));
    DType dtype = buffer(call.buffers()->Get(0)).dtype();
    // Inputs may repeat (a batch norm's scale and shift one tensor, say);
    // a result may not be any other buffer of the step.
    size_t firstOutput = elements.size() - plan::outputCount(function);
    std::map<uint32_t, int> uses;
    for (uint32_t i = 0; i < elements.size(); ++i)
      ++uses[call.buffers()->Get(i)];
    for (uint32_t i = 0; i < elements.size(); ++i) {
      uint32_t index = call.buffers()->Get(i);
      if (i >= firstOutput && uses[index] > 1)
        return fail(where, ": ", function, " uses buffer ", bufferLabel(index),
                    " twice");
      if (buffer(index).dtype() != dtype ||
          (dtype != DType::F32 && dtype != DType::F64 && dtype != DType::BF16 &&
           dtype != DType::F16))
        return fail(where, ": ", function,
                    " needs buffers of one floating-point type, got ",
                    dtypeName(dtype), " and ",
                    dtypeName(buffer(index).dtype()));
      if (elementCount(index) != static_cast<uint64_t>(elements[i]))
        return fail(where, ": ", function, " buffer ", i, " (",
                    bufferLabel(index), ") has ", elementCount(index),
                    " elements, its geometry needs ", elements[i]);
    }
    for (size_t i = firstOutput; i < elements.size(); ++i)
      if (Status status =
              checkWritable(where, call.buffers()->Get(i), "result");
          status.failed())
        return status;
    return Status::success();
  }

  Status checkCopy(const std::string &where, const Copy &copy) const {
    if (Status status = checkBufferIndex(where, copy.src()); status.failed())
      return status;
    if (Status status = checkBufferIndex(where, copy.dst()); status.failed())
      return status;
    if (Status status = checkWritable(where, copy.dst(), "destination");
        status.failed())
      return status;
    if (Status status = checkRange(where, "source", copy.src(),
                                   copy.src_offset(), copy.bytes());
        status.failed())
      return status;
    return checkRange(where, "destination", copy.dst(), copy.dst_offset(),
                      copy.bytes());
  }

  Status checkCollective(const std::string &where,
                         const Collective &collective) const {
    if (collective.kind() > CollectiveKind::MAX)
      return fail(where, ": invalid collective kind ",
                  static_cast<unsigned>(collective.kind()));
    if (collective.reduce() > ReduceOp::MAX)
      return fail(where, ": invalid reduction ",
                  static_cast<unsigned>(collective.reduce()));
    if (count(collective.group()) == 0)
      return fail(where, ": the collective's group is empty");
    std::set<int> members;
    for (int rank : *collective.group()) {
      if (!ranksOfEntry_->count(rank))
        return fail(where, ": the group names rank ", rank,
                    ", which runs no program of this entry");
      if (!members.insert(rank).second)
        return fail(where, ": the group names rank ", rank, " twice");
    }
    if (Status status = checkBufferIndex(where, collective.src());
        status.failed())
      return status;
    if (Status status = checkBufferIndex(where, collective.dst());
        status.failed())
      return status;
    if (Status status = checkWritable(where, collective.dst(), "destination");
        status.failed())
      return status;
    bool pointToPoint = collective.kind() == CollectiveKind::Send ||
                        collective.kind() == CollectiveKind::Recv;
    if (pointToPoint) {
      if (members.size() == 1)
        return fail(where, ": ", EnumNameCollectiveKind(collective.kind()),
                    " needs a group of two ranks, the group has one");
      if (!ranksOfEntry_->count(collective.peer()))
        return fail(where, ": peer rank ", collective.peer(),
                    " runs no program of this entry");
    }
    if (!elementsAligned(collective.mesh()) ||
        !elementsAligned(collective.shape()))
      return fail(where, ": misaligned mesh or shape vector (corrupt "
                  "metadata)");
    for (uint32_t d = 0; d < count(collective.shape()); ++d)
      if (collective.shape()->Get(d) < 0)
        return fail(where, ": the shape ", formatShape(collective.shape()),
                    " has a negative extent");
    // What the collective does on every rank that runs this program, and
    // whether the buffers have the sizes that implies there.
    const Buffer &src = buffer(collective.src());
    const Buffer &dst = buffer(collective.dst());
    for (int rank : programRanks_) {
      CollectiveLayout layout;
      if (Status status =
              CollectiveLayout::compute(collective, src, dst, rank, layout);
          status.failed())
        return fail(where, ": ", status.message());
      if (Status status = layout.checkBuffers(collective, src, dst, rank);
          status.failed())
        return fail(where, ": ", status.message());
    }
    return Status::success();
  }

  Status checkOutput(const std::string &where, const Output &output) {
    if (Status status = checkBufferIndex(where, output.buffer());
        status.failed())
      return status;
    std::string_view name = text(output.name());
    if (name.empty())
      return fail(where, ": the output has no name");
    if (!outputNames_.insert(name).second)
      return fail(where, ": a second output named '", name, "'");
    if (output.dist())
      return checkDistribution(formatMessage(where, ": output '", name, "'"),
                               *output.dist(), buffer(output.buffer()));
    return Status::success();
  }

  /// What the caller sees of an input or output: its dtype and its global
  /// shape and layout (without a distribution, its shape).
  struct Interface {
    DType dtype;
    bool distributed;
    DistSpec dist; // globalShape holds the shape when not distributed
    std::string describe() const {
      return formatMessage(dtypeName(dtype), " ",
                           distributed ? dist.describe()
                                       : formatDims(dist.globalShape));
    }
    bool operator==(const Interface &other) const {
      return dtype == other.dtype && distributed == other.distributed &&
             dist == other.dist;
    }
  };

  static Interface interfaceOf(const Buffer &buffer,
                               const Distribution *dist) {
    Interface face{buffer.dtype(), dist != nullptr, {}};
    if (dist)
      face.dist = DistSpec::from(*dist);
    else if (buffer.shape())
      face.dist.globalShape.assign(buffer.shape()->begin(),
                                   buffer.shape()->end());
    return face;
  }

  /// The programs of one entry (one per role of its ranks) take the same
  /// inputs and give the same outputs, by name, dtype and global layout
  /// (an input without a distribution: its shape), so that the caller binds
  /// and collects them once for all ranks.
  Status checkEntriesAgree() const {
    using Interfaces = std::map<std::string, Interface>;
    std::map<std::string, std::pair<const Program *,
                                    std::pair<Interfaces, Interfaces>>>
        first;
    auto programLabel = [](const Program &program) {
      std::vector<int> ranks(program.ranks()->begin(), program.ranks()->end());
      return formatMessage("the program of ranks ", formatRanks(ranks));
    };
    for (uint32_t p = 0; p < count(plan_.programs()); ++p) {
      const Program *program = plan_.programs()->Get(p);
      Interfaces inputs, outputs;
      for (uint32_t i = 0; i < count(program->inputs()); ++i) {
        const Buffer &buf = *program->buffers()->Get(program->inputs()->Get(i));
        inputs.emplace(std::string(text(buf.binding())),
                       interfaceOf(buf, buf.dist()));
      }
      for (uint32_t s = 0; s < count(program->steps()); ++s)
        if (const Output *output = program->steps()->Get(s)->detail_as_Output())
          outputs.emplace(
              std::string(text(output->name())),
              interfaceOf(*program->buffers()->Get(output->buffer()),
                          output->dist()));
      std::string entry(text(program->entry()));
      auto [known, inserted] = first.emplace(
          entry, std::make_pair(program, std::make_pair(inputs, outputs)));
      if (inserted)
        continue;
      const Program &reference = *known->second.first;
      for (int role = 0; role < 2; ++role) {
        const Interfaces &mine = role ? outputs : inputs;
        const Interfaces &theirs =
            role ? known->second.second.second : known->second.second.first;
        const char *noun = role ? "output" : "input";
        for (const auto &[name, face] : theirs) {
          auto found = mine.find(name);
          if (found == mine.end())
            return fail("entry '", entry, "': ", programLabel(*program),
                        " has no ", noun, " '", name, "', which ",
                        programLabel(reference), " has (the programs of an "
                        "entry take and give the same tensors)");
          // An output without a distribution is rank 0's value: other
          // roles may hold other shapes (their values are not collected).
          bool agrees = role && !face.distributed &&
                                !found->second.distributed
                            ? found->second.dtype == face.dtype
                            : found->second == face;
          if (!agrees)
            return fail("entry '", entry, "': the ", noun, " '", name,
                        "' is ", found->second.describe(), " in ",
                        programLabel(*program), " but ", face.describe(),
                        " in ", programLabel(reference));
        }
        for (const auto &[name, face] : mine)
          if (!theirs.count(name))
            return fail("entry '", entry, "': ", programLabel(*program),
                        " has the ", noun, " '", name, "', which ",
                        programLabel(reference), " does not have (the "
                        "programs of an entry take and give the same "
                        "tensors)");
      }
    }
    return Status::success();
  }

  const Plan &plan_;
  const FileHeader &header_;
  std::set<int> allRanks_;
  std::map<std::string, std::set<int>> entryRanks_;

  // The program being checked: its ranks, and every rank of its entry.
  std::vector<int> programRanks_;
  const std::set<int> *ranksOfEntry_ = nullptr;

  // The program being checked.
  const Program *program_ = nullptr;
  std::string label_;
  std::unordered_set<uint32_t> recordedEvents_;
  std::set<std::string_view> outputNames_;

  /// The first launch of each kernel (executable, name) in the plan.
  struct KernelUse {
    const Program *program;
    std::string where;
    const Launch *launch;
  };
  std::map<std::pair<uint32_t, std::string>, KernelUse> kernelUses_;
};

} // namespace

std::string describeStep(const Program &program, const Step &step) {
  auto bufferName = [&](uint32_t index) {
    return text(program.buffers()->Get(index)->name());
  };
  switch (step.detail_type()) {
  case StepDetail::Launch:
    return formatMessage("launch ", text(step.detail_as_Launch()->kernel()));
  case StepDetail::LibraryCall:
    return formatMessage("library ",
                         text(step.detail_as_LibraryCall()->function()));
  case StepDetail::Copy:
    return formatMessage("copy ", bufferName(step.detail_as_Copy()->src()),
                         "->", bufferName(step.detail_as_Copy()->dst()));
  case StepDetail::Collective:
    return formatMessage(
        "collective ",
        EnumNameCollectiveKind(step.detail_as_Collective()->kind()));
  case StepDetail::EventRecord:
    return formatMessage("event record ",
                         step.detail_as_EventRecord()->event());
  case StepDetail::EventWait:
    return formatMessage("event wait ", step.detail_as_EventWait()->event());
  case StepDetail::Output:
    return formatMessage("output ", text(step.detail_as_Output()->name()));
  default:
    return "unknown step";
  }
}

Status decodeGemm(const flatbuffers::Vector<int64_t> *params, GemmCall &call) {
  static constexpr const char *kNames[16] = {"batch",
                                             "m",
                                             "n",
                                             "k",
                                             "a_batch_stride",
                                             "a_m_stride",
                                             "a_k_stride",
                                             "b_batch_stride",
                                             "b_k_stride",
                                             "b_n_stride",
                                             "c_batch_stride",
                                             "c_m_stride",
                                             "outer_batch",
                                             "a_outer_stride",
                                             "b_outer_stride",
                                             "c_outer_stride"};
  size_t numParams = count(params);
  if (numParams != 12 && numParams != 16)
    return fail("blas.gemm takes 12 parameters [batch, m, n, k, "
                "a_batch_stride, a_m_stride, a_k_stride, b_batch_stride, "
                "b_k_stride, b_n_stride, c_batch_stride, c_m_stride], or 16 "
                "with [outer_batch, a_outer_stride, b_outer_stride, "
                "c_outer_stride] after them, got ",
                numParams);
  int64_t values[16] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0};
  for (size_t i = 0; i < numParams; ++i) {
    values[i] = params->Get(static_cast<flatbuffers::uoffset_t>(i));
    if (values[i] < 0)
      return fail("blas.gemm parameter ", kNames[i], " is negative (",
                  values[i], ")");
  }
  call = GemmCall{};
  call.batch = values[0];
  call.m = values[1];
  call.n = values[2];
  call.k = values[3];
  call.aBatchStride = values[4];
  call.aMStride = values[5];
  call.aKStride = values[6];
  call.bBatchStride = values[7];
  call.bKStride = values[8];
  call.bNStride = values[9];
  call.cBatchStride = values[10];
  call.cMStride = values[11];
  call.outerBatch = values[12];
  call.aOuterStride = values[13];
  call.bOuterStride = values[14];
  call.cOuterStride = values[15];

  // BLAS needs a unit stride along one dimension of each operand, and a
  // leading dimension at least the other extent. An operand that is never
  // read (an extent is 0) has no layout to check; the executor skips BLAS.
  auto atLeastOne = [](int64_t value) { return value > 1 ? value : 1; };
  if (call.m > 0 && call.k > 0) {
    if (call.aKStride == 1) {
      call.lda = call.aMStride;
      if (call.lda < atLeastOne(call.k))
        return fail("blas.gemm A's m stride ", call.lda,
                    " is below max(1, k) = ", atLeastOne(call.k));
    } else if (call.aMStride == 1) {
      call.transposeA = true;
      call.lda = call.aKStride;
      if (call.lda < atLeastOne(call.m))
        return fail("blas.gemm A's k stride ", call.lda,
                    " is below max(1, m) = ", atLeastOne(call.m));
    } else {
      return fail("blas.gemm A has no unit stride (m stride ", call.aMStride,
                  ", k stride ", call.aKStride,
                  "); BLAS needs one of them to be 1");
    }
  }
  if (call.k > 0 && call.n > 0) {
    if (call.bNStride == 1) {
      call.ldb = call.bKStride;
      if (call.ldb < atLeastOne(call.n))
        return fail("blas.gemm B's k stride ", call.ldb,
                    " is below max(1, n) = ", atLeastOne(call.n));
    } else if (call.bKStride == 1) {
      call.transposeB = true;
      call.ldb = call.bNStride;
      if (call.ldb < atLeastOne(call.k))
        return fail("blas.gemm B's n stride ", call.ldb,
                    " is below max(1, k) = ", atLeastOne(call.k));
    } else {
      return fail("blas.gemm B has no unit stride (k stride ", call.bKStride,
                  ", n stride ", call.bNStride,
                  "); BLAS needs one of them to be 1");
    }
  }
  if (call.m > 0 && call.n > 0) {
    call.ldc = call.cMStride;
    if (call.ldc < atLeastOne(call.n))
      return fail("blas.gemm C's m stride ", call.ldc,
                  " is below max(1, n) = ", atLeastOne(call.n));
  }
  for (int64_t value : {call.m, call.n, call.k, call.lda, call.ldb, call.ldc})
    if (value > INT_MAX)
      return fail("blas.gemm extent or leading dimension ", value,
                  " exceeds the 32-bit BLAS interface");
  return Status::success();
}

Status PlanFile::verify() {
  const uint8_t *data = bytes_.data();
  uint64_t size = bytes_.size();
  if (Status status = verifyHeader(data, size, header_); status.failed())
    return status;

  const uint8_t *metadata = data + header_.metadataOffset;
  size_t metadataSize = static_cast<size_t>(header_.metadataSize);
  if (metadataSize < 8 || !PlanBufferHasIdentifier(metadata))
    return fail("plan metadata does not carry the file identifier \"",
                PlanIdentifier(), "\"");
  flatbuffers::Verifier verifier(metadata, metadataSize);
  if (!VerifyPlanBuffer(verifier))
    return fail("plan metadata fails the FlatBuffers verifier (corrupt, or "
                "not a version ",
                kFormatVersion, " plan)");
  plan_ = GetPlan(metadata);

  if (Status status = SemanticChecker(*plan_, header_).check(); status.failed())
    return status;

  for (uint32_t i = 0; i < count(plan_->programs()); ++i) {
    std::string entry(text(plan_->programs()->Get(i)->entry()));
    bool known = false;
    for (const std::string &name : entries_)
      known = known || name == entry;
    if (!known)
      entries_.push_back(std::move(entry));
  }
  return Status::success();
}

const uint8_t *PlanFile::blobData(uint32_t index) const {
  return bytes_.data() + header_.blobsOffset +
         plan_->blobs()->Get(index)->offset();
}

uint64_t PlanFile::blobSize(uint32_t index) const {
  return plan_->blobs()->Get(index)->size();
}

const Program *PlanFile::findProgram(std::string_view entry, int rank) const {
  for (const Program *program : *plan_->programs())
    if (text(program->entry()) == entry)
      for (int programRank : *program->ranks())
        if (programRank == rank)
          return program;
  return nullptr;
}

const Program *PlanFile::findProgram(std::string_view entry) const {
  for (const Program *program : *plan_->programs())
    if (text(program->entry()) == entry)
      return program;
  return nullptr;
}

Status PlanFile::openMemory(const void *data, size_t size,
                            std::shared_ptr<const PlanFile> &out) {
  if (!data && size != 0)
    return fail("plan data is NULL");
  std::shared_ptr<PlanFile> plan(new PlanFile());
  if (Status status = plan->bytes_.allocate(size, "the plan"); status.failed())
    return status;
  if (size)
    std::memcpy(plan->bytes_.data(), data, size);
  if (Status status = plan->verify(); status.failed())
    return status;
  out = std::move(plan);
  return Status::success();
}

Status PlanFile::openFile(const char *path,
                          std::shared_ptr<const PlanFile> &out,
                          const std::string &trustedKeys) {
  if (!path)
    return fail("plan path is NULL");
  int fd = ::open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return fail("cannot open plan '", path, "': ", std::strerror(errno));
  struct FdCloser {
    int fd;
    ~FdCloser() { ::close(fd); }
  } closer{fd};

  struct stat info;
  if (::fstat(fd, &info) != 0)
    return fail("cannot read plan '", path, "': ", std::strerror(errno));
  if (!S_ISREG(info.st_mode))
    return fail("cannot read plan '", path, "': not a regular file");
  std::shared_ptr<PlanFile> plan(new PlanFile());
  if (Status status = plan->bytes_.allocate(static_cast<uint64_t>(info.st_size),
                                            "the plan");
      status.failed())
    return status;
  uint64_t done = 0;
  while (done < plan->bytes_.size()) {
    ssize_t got = ::read(fd, plan->bytes_.data() + done,
                         static_cast<size_t>(plan->bytes_.size() - done));
    if (got < 0 && errno == EINTR)
      continue;
    if (got < 0)
      return fail("cannot read plan '", path, "': ", std::strerror(errno));
    if (got == 0)
      return fail("cannot read plan '", path, "': it shrank while reading");
    done += static_cast<uint64_t>(got);
  }
  // The signature covers the bytes just read, not the file, which may
  // change after the check.
  if (!trustedKeys.empty())
    if (Status status = verifyPlanSignature(
            plan->bytes_.data(), plan->bytes_.size(), path, trustedKeys);
        status.failed())
      return status;
  if (Status status = plan->verify(); status.failed())
    return fail(path, ": ", status.message());
  out = std::move(plan);
  return Status::success();
}

} // namespace of::rt
