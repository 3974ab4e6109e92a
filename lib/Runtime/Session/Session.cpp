//===- Session.cpp - Preparing and running one program --------------------===//
//
// Creation resolves everything a run needs (storage, kernels, pointers) so
// that a run is a loop over prepared steps. It relies on the plan having
// been verified at open (PlanFile.cpp): indices, ranges, gemm layouts and
// every rank's collective layouts are not re-checked here. What is checked
// here is what depends on the session: the entry and rank, the device, and
// the communicator.
//
//===----------------------------------------------------------------------===//

#include "Session/Session.h"

#include "CPU/Reduce.h"

#include "OF/ABI/Sbp.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>

using namespace of::plan;

namespace of::rt {

/// A 64-bit digest of `bytes` bytes (FNV-1a over 8-byte words, then the
/// tail), for comparing values across ranks.
static uint64_t digestOf(const void *data, size_t bytes) {
  const unsigned char *p = static_cast<const unsigned char *>(data);
  uint64_t hash = 0xcbf29ce484222325ull;
  size_t words = bytes / 8;
  for (size_t i = 0; i < words; ++i) {
    uint64_t word;
    std::memcpy(&word, p + 8 * i, 8);
    hash = (hash ^ word) * 0x100000001b3ull;
  }
  for (size_t i = 8 * words; i < bytes; ++i)
    hash = (hash ^ p[i]) * 0x100000001b3ull;
  return hash;
}

namespace {

std::string_view text(const flatbuffers::String *string) {
  return string ? std::string_view(string->c_str(), string->size())
                : std::string_view();
}

std::string joinQuoted(const std::vector<std::string> &names) {
  std::string joined;
  for (const std::string &name : names)
    joined += (joined.empty() ? "'" : ", '") + name + "'";
  return joined;
}

TensorInfo describeBuffer(const Buffer &buffer, std::string_view name,
                          const Distribution *dist) {
  TensorInfo info;
  info.name = std::string(name);
  info.dtype = buffer.dtype();
  if (buffer.shape())
    info.dims.assign(buffer.shape()->begin(), buffer.shape()->end());
  info.bytes = buffer.size();
  if (dist) {
    info.distributed = true;
    info.dist = DistSpec::from(*dist);
    info.globalBytes = product(info.dist.globalShape) * dtypeSize(info.dtype);
  } else {
    info.globalBytes = info.bytes;
  }
  return info;
}

/// The tag of the messages that gather inputs and outputs.
constexpr int kGatherTag = 101;

} // namespace

Session::~Session() = default;

Status Session::create(std::shared_ptr<const PlanFile> plan, const char *entry,
                       int rank, Communicator *comm,
                       std::unique_ptr<Session> &out, bool describeOnly) {
  if (!plan)
    return fail("no plan");
  std::unique_ptr<Session> session(new Session());
  session->plan_ = std::move(plan);
  session->describeOnly_ = describeOnly;
  if (Status status = session->prepare(entry, rank, comm); status.failed())
    return status;
  out = std::move(session);
  return Status::success();
}

Status Session::prepare(const char *requestedEntry, int rank,
                        Communicator *comm) {
  const PlanFile &plan = *plan_;
  const std::vector<std::string> &entries = plan.entries();
  if (entries.empty())
    return fail("the plan has no programs");
  if (comm) {
    int worldSize = plan.plan().world_size();
    if (comm->size() != worldSize)
      return fail("the plan is compiled for ", worldSize,
                  worldSize == 1 ? " rank" : " ranks", " but ", comm->size(),
                  comm->size() == 1 ? " is" : " are", " running");
    if (comm->worldRank() != rank)
      return fail("the session is for rank ", rank,
                  ", but the communicator's rank is ", comm->worldRank());
    comm_ = comm;
  }

  std::string entry;
  if (requestedEntry) {
    entry = requestedEntry;
  } else if (plan.findProgram("main")) {
    entry = "main";
  } else if (entries.size() == 1) {
    entry = entries.front();
  } else {
    return fail("the plan has several entries (", joinQuoted(entries),
                ") and none is 'main'; name one");
  }
  program_ = plan.findProgram(entry, rank);
  if (!program_) {
    if (plan.findProgram(entry)) {
      std::string ranks;
      for (const Program *program : *plan.plan().programs())
        if (text(program->entry()) == entry)
          for (int programRank : *program->ranks())
            ranks += (ranks.empty() ? "" : ", ") + std::to_string(programRank);
      return fail("rank ", rank, " does not run entry '", entry,
                  "' (its ranks are ", ranks, ")");
    }
    return fail("the plan has no entry '", entry, "'; its entries are ",
                joinQuoted(entries));
  }
  const Program &program = *program_;
  rank_ = rank;
  entry_ = entry;
  label_ = formatMessage("program '", entry, "'");

  std::string_view device = text(program.device());
  if (describeOnly_ && plan::isDevice(device)) {
    // Describing a plan (of-run --list) touches no memory and loads and
    // runs none of its code: no arena, no input or output storage, no
    // kernel object, only the inputs' and outputs' descriptions.
    executor_ = createDescribingExecutor();
  } else if (device == plan::kDeviceCuda) {
    if (Status status = createCudaExecutor(rank, executor_); status.failed())
      return fail(label_, " runs on cuda: ", status.message());
  } else if (device == plan::kDeviceCpu) {
    executor_ = createCpuExecutor();
  } else {
    return fail(label_, " runs on ", device,
                "; this runtime has CPU and CUDA executors");
  }
  onDevice_ = !executor_->hostMemory();
  if (comm_)
    if (Status status =
            executor_->collectiveCommunicator(comm_, collectiveComm_);
        status.failed())
      return fail(label_, ": ", status.message());

  // Storage: the arena, then one allocation per input and per output.
  uint8_t *arena = nullptr;
  if (describeOnly_) {
  } else if (onDevice_) {
    void *deviceArena = nullptr;
    if (Status status =
            executor_->allocate(program.arena_size(), "the arena", deviceArena);
        status.failed())
      return fail(label_, ": ", status.message());
    arena = static_cast<uint8_t *>(deviceArena);
  } else {
    if (Status status = arena_.allocate(program.arena_size(), "the arena");
        status.failed())
      return fail(label_, ": ", status.message());
    arena = arena_.data();
  }
  uint32_t numBuffers = program.buffers() ? program.buffers()->size() : 0;
  bufferData_.assign(numBuffers, nullptr);
  std::map<uint32_t, void *> uploadedBlobs;
  for (uint32_t i = 0; i < numBuffers; ++i) {
    const Buffer &buffer = *program.buffers()->Get(i);
    if (describeOnly_) {
      continue;
    } else if (buffer.kind() == BufferKind::Arena) {
      bufferData_[i] = arena + buffer.offset();
    } else if (buffer.kind() == BufferKind::Constant && !onDevice_) {
      // Constants are read-only by construction: the loader rejects every
      // step that would write one.
      bufferData_[i] = const_cast<uint8_t *>(plan.blobData(buffer.blob()));
    } else if (buffer.kind() == BufferKind::Constant) {
      void *&copy = uploadedBlobs[buffer.blob()];
      std::string what = formatMessage("constant '", text(buffer.name()), "'");
      if (!copy)
        if (Status status = executor_->allocate(buffer.size(), what, copy);
            status.failed() ||
            (status = executor_->upload(copy, plan.blobData(buffer.blob()),
                                        buffer.size()))
                .failed())
          return fail(label_, ": ", what, ": ", status.message());
      bufferData_[i] = copy;
    }
  }
  uint32_t numInputs = program.inputs() ? program.inputs()->size() : 0;
  inputDigest_.assign(numInputs, 0);
  if (const char *check = std::getenv("OF_CHECK_INPUTS"))
    compareInputs_ = std::string_view(check) != "0";
  inputStorage_.resize(numInputs);
  inputSet_.assign(numInputs, false);
  inputData_.assign(numInputs, nullptr);
  inputStale_.assign(numInputs, false);
  inputOnHost_.assign(numInputs, true);
  for (uint32_t i = 0; i < numInputs; ++i) {
    uint32_t index = program.inputs()->Get(i);
    const Buffer &buffer = *program.buffers()->Get(index);
    inputs_.push_back(
        describeBuffer(buffer, text(buffer.binding()), buffer.dist()));
    std::string what = "input '" + inputs_.back().name + "'";
    if (describeOnly_)
      continue;
    if (Status status = inputStorage_[i].allocate(buffer.size(), what.c_str());
        status.failed())
      return fail(label_, ": ", status.message());
    inputData_[i] = inputStorage_[i].data();
    if (onDevice_)
      if (Status status =
              executor_->allocate(buffer.size(), what, inputData_[i]);
          status.failed())
        return fail(label_, ": ", status.message());
    bufferData_[index] = inputData_[i];
  }

  if (!describeOnly_)
    if (Status status = loadKernels(); status.failed())
      return status;

  uint32_t numSteps = program.steps() ? program.steps()->size() : 0;
  for (uint32_t s = 0; s < numSteps; ++s) {
    if (describeOnly_ &&
        program.steps()->Get(s)->detail_type() != StepDetail::Output)
      continue; // only the outputs are described
    if (Status status = prepareStep(*program.steps()->Get(s), s);
        status.failed())
      return status;
    if (Status status = executor_->check(steps_.back()); status.failed())
      return fail(label_, " step ", s, " (", status.message(), ")");
  }
  stepSeconds_.assign(steps_.size(), 0.0);
  outputOnHost_.assign(outputs_.size(), true);
  if (describeOnly_)
    return Status::success();
  planDirectUpdates();
  planStepGraphs();
  return Status::success();
}

void Session::planDirectUpdates() {
  // An output that updates an input is copied straight into the input's
  // storage when nothing after its step can read the old value: every
  // later step is an output copy, and none copies from that input. The
  // plan builder puts all outputs last, so a training step's state is
  // written once per run instead of copied twice (arena -> output ->
  // input). A run that fails stops before its outputs, so the state is
  // never half updated.
  directUpdate_.assign(outputs_.size(), false);
  for (size_t o = 0; o < outputs_.size(); ++o) {
    if (outputs_[o].updates < 0)
      continue;
    const void *input = inputData_[outputs_[o].updates];
    bool safe = true;
    for (size_t s = outputStep_[o] + 1; s < steps_.size() && safe; ++s)
      safe = steps_[s].isOutput && steps_[s].src != input;
    if (!safe)
      continue;
    directUpdate_[o] = true;
    steps_[outputStep_[o]].dst = inputStorage_[outputs_[o].updates].data();
    outputStorage_[o] = AlignedBytes(); // not needed
  }
}

Status Session::outputToHost(size_t index) const {
  if (outputOnHost_[index])
    return Status::success();
  const TensorInfo &info = outputs_[index];
  if (Status status =
          executor_->download(const_cast<uint8_t *>(outputData(index)),
                              steps_[outputStep_[index]].src, info.bytes);
      status.failed())
    return fail(label_, ": output '", info.name, "': ", status.message());
  outputOnHost_[index] = true;
  if (directUpdate_[index]) // that storage is the updated input's
    inputOnHost_[info.updates] = true;
  return Status::success();
}

Status Session::inputToHost(size_t index) const {
  if (inputOnHost_[index])
    return Status::success();
  if (Status status = executor_->download(
          const_cast<uint8_t *>(inputStorage_[index].data()), inputData_[index],
          inputs_[index].bytes);
      status.failed())
    return fail(label_, ": input '", inputs_[index].name,
                "': ", status.message());
  inputOnHost_[index] = true;
  return Status::success();
}

bool Session::deferred(const PreparedStep &step) const {
  return onDevice_ && step.isOutput;
}

void Session::planStepGraphs() {
  graphs_.clear();
  size_t i = 0;
  while (i < steps_.size()) {
    if (deferred(steps_[i]) || !executor_->canRecord(steps_[i])) {
      ++i;
      continue;
    }
    size_t end = i, recordable = 0;
    while (end < steps_.size() &&
           (deferred(steps_[end]) ||
            (executor_->canRecord(steps_[end]) &&
             steps_[end].stream == steps_[i].stream))) {
      recordable += !deferred(steps_[end]);
      ++end;
    }
    if (recordable >= 2)
      graphs_.push_back({i, end, std::nullopt});
    i = end;
  }
}

Status Session::runSteps() {
  using Clock = std::chrono::steady_clock;
  size_t next = 0; // the next graph of graphs_
  std::vector<const PreparedStep *> recorded;
  for (size_t i = 0; i < steps_.size(); ++i) {
    if (deferred(steps_[i]))
      continue;
    if (!profiling_ && warmedUp_ && next < graphs_.size() &&
        graphs_[next].begin == i) {
      StepGraph &g = graphs_[next++];
      if (g.graph) {
        if (Status status = executor_->replay(*g.graph); status.failed())
          return status;
      } else {
        recorded.clear();
        for (size_t s = g.begin; s < g.end; ++s)
          if (!deferred(steps_[s]))
            recorded.push_back(&steps_[s]);
        size_t graph = 0;
        if (Status status =
                executor_->record(recorded.data(), recorded.size(), graph);
            status.failed())
          return status;
        g.graph = graph;
      }
      i = g.end - 1;
      continue;
    }
    while (next < graphs_.size() && graphs_[next].begin < i)
      ++next;
    Clock::time_point start;
    if (profiling_)
      start = Clock::now();
    if (Status status = executor_->execute(steps_[i]); status.failed())
      return fail(status.message(), " [", stepLabel(steps_[i], i), "]");
    if (profiling_) {
      // On a device a step's time is its completion, not its enqueueing.
      if (onDevice_)
        if (Status status = executor_->synchronize(); status.failed())
          return status;
      stepSeconds_[i] +=
          std::chrono::duration<double>(Clock::now() - start).count();
    }
  }
  if (Status status = executor_->synchronize(); status.failed())
    return status;
  warmedUp_ = true;
  return Status::success();
}

const uint8_t *Session::outputData(size_t index) const {
  return directUpdate_[index] ? inputStorage_[outputs_[index].updates].data()
                              : outputStorage_[index].data();
}

Status Session::loadKernels() {
  const Plan &plan = plan_->plan();
  uint32_t numExecutables = plan.executables() ? plan.executables()->size() : 0;
  objects_.resize(numExecutables);
  if (!program_->steps())
    return Status::success();
  for (const Step *step : *program_->steps()) {
    const Launch *launch = step->detail_as_Launch();
    if (!launch || objects_[launch->executable()] ||
        gpuModules_.count(launch->executable()))
      continue;
    const Executable &executable =
        *plan.executables()->Get(launch->executable());
    std::string name(text(executable.name()));
    if (onDevice_) {
      // Every GPU module of the executable, loaded once.
      if (!executable.gpu_binaries() || !executable.gpu_kernels())
        return fail(label_, ": executable '", name, "' (format '",
                    text(executable.format()),
                    "') has no GPU modules for the CUDA executor");
      std::vector<void *> &modules = gpuModules_[launch->executable()];
      for (const GpuBinary *binary : *executable.gpu_binaries()) {
        void *module = nullptr;
        if (Status status = executor_->loadGpuModule(
                plan_->blobData(binary->blob()),
                plan_->blobSize(binary->blob()),
                text(binary->format()) == "assembly",
                formatMessage("GPU module '", text(binary->name()),
                              "' of executable '", name, "' (",
                              text(binary->target()), ")"),
                module);
            status.failed())
          return fail(label_, ": ", status.message());
        modules.push_back(module);
      }
      continue;
    }
    if (text(executable.format()) != "elf-shared-object")
      return fail(label_, ": executable '", name, "' has the format '",
                  text(executable.format()),
                  "'; the CPU executor loads \"elf-shared-object\"");
    if (Status status = KernelObject::load(
            name, plan_->blobData(executable.blob()),
            plan_->blobSize(executable.blob()), objects_[launch->executable()]);
        status.failed())
      return fail(label_, ": ", status.message());
  }
  return Status::success();
}

std::string Session::stepLabel(const PreparedStep &step, size_t index) const {
  return formatMessage(label_, " step ", index, " (", step.name,
                       step.origin.empty() ? "" : ", from ", step.origin, ")");
}

Status Session::prepareStep(const Step &step, uint32_t index) {
  const Program &program = *program_;
  PreparedStep prepared;
  prepared.stream = step.stream();
  prepared.name = describeStep(program, step);
  if (step.origin())
    prepared.origin = step.origin()->str();
  prepared.tf32 = program.allow_tf32();
  std::string where = stepLabel(prepared, index);
  prepared.label = where;

  switch (step.detail_type()) {
  case StepDetail::Launch: {
    const Launch &launch = *step.detail_as_Launch();
    prepared.kind = StepKind::Launch;
    if (onDevice_) {
      if (Status status = prepareGpuLaunch(launch, prepared); status.failed())
        return fail(where, ": ", status.message());
      break;
    }
    // Each kernel is resolved once per session, at creation.
    auto key =
        std::make_pair(launch.executable(), std::string(text(launch.kernel())));
    auto found = kernels_.find(key);
    if (found == kernels_.end()) {
      KernelFunction kernel;
      if (Status status =
              objects_[launch.executable()]->resolve(key.second, kernel);
          status.failed())
        return fail(where, ": ", status.message());
      found = kernels_.emplace(std::move(key), kernel).first;
    }
    prepared.kernel = found->second;
    prepared.range = launch.range();
    prepared.work = launch.work();
    if (launch.buffers())
      for (uint32_t buffer : *launch.buffers())
        prepared.args.push_back(bufferData(buffer));
    break;
  }
  case StepDetail::LibraryCall: {
    const LibraryCall &call = *step.detail_as_LibraryCall();
    if (text(call.function()) == kGemmFunction) {
      prepared.kind = StepKind::Gemm;
      if (Status status = decodeGemm(call.params(), prepared.gemm);
          status.failed())
        return fail(where, ": ", status.message());
      prepared.gemmType =
          program.buffers()->Get(call.buffers()->Get(0))->dtype();
      prepared.gemmOutType =
          program.buffers()->Get(call.buffers()->Get(2))->dtype();
      prepared.gemmA = bufferData(call.buffers()->Get(0));
      prepared.gemmB = bufferData(call.buffers()->Get(1));
      prepared.gemmC = bufferData(call.buffers()->Get(2));
      for (uint32_t buffer : *call.buffers())
        prepared.args.push_back(bufferData(buffer));
    } else if (plan::isConvFunction(text(call.function())) ||
               plan::isPoolFunction(text(call.function())) ||
               plan::isBatchNormFunction(text(call.function()))) {
      prepared.function = std::string(text(call.function()));
      if (plan::isConvFunction(prepared.function)) {
        prepared.kind = StepKind::Conv;
        prepared.conv = plan::decodeConvGeometry(call.params()->data());
      } else if (plan::isPoolFunction(prepared.function)) {
        prepared.kind = StepKind::Pool;
        prepared.pool = plan::decodePoolGeometry(call.params()->data());
      } else {
        prepared.kind = StepKind::BatchNorm;
        prepared.norm = plan::decodeBatchNormGeometry(call.params()->data());
      }
      prepared.dnnType =
          program.buffers()->Get(call.buffers()->Get(0))->dtype();
      for (uint32_t buffer : *call.buffers())
        prepared.args.push_back(bufferData(buffer));
    } else {
      prepared.kind = StepKind::IndexRangeCheck;
      const Buffer &buffer = *program.buffers()->Get(call.buffers()->Get(0));
      prepared.indices = bufferData(call.buffers()->Get(0));
      prepared.indexType = buffer.dtype();
      prepared.indexCount = buffer.size() / dtypeSize(buffer.dtype());
      prepared.lo = call.params()->Get(0);
      prepared.hi = call.params()->Get(1);
      prepared.indicesLabel =
          buffer.binding() && buffer.binding()->size()
              ? formatMessage("input '", text(buffer.binding()), "'")
              : formatMessage("buffer '", text(buffer.name()), "'");
    }
    break;
  }
  case StepDetail::Copy: {
    const Copy &copy = *step.detail_as_Copy();
    prepared.kind = StepKind::Copy;
    prepared.src =
        static_cast<uint8_t *>(bufferData(copy.src())) + copy.src_offset();
    prepared.dst =
        static_cast<uint8_t *>(bufferData(copy.dst())) + copy.dst_offset();
    prepared.bytes = copy.bytes();
    break;
  }
  case StepDetail::Collective: {
    const Collective &collective = *step.detail_as_Collective();
    std::unique_ptr<PreparedCollective> run;
    if (Status status = PreparedCollective::prepare(
            collective, *program.buffers()->Get(collective.src()),
            *program.buffers()->Get(collective.dst()),
            bufferData(collective.src()), bufferData(collective.dst()), rank_,
            collectiveComm_, executor_->collectiveMemory(),
            formatMessage(collectiveKindName(collective.kind()), " at step ",
                          index, " (", label_, ")"),
            run);
        status.failed())
      return status;
    prepared.kind = StepKind::Collective;
    prepared.collective = run.get();
    collectives_.push_back(std::move(run));
    break;
  }
  case StepDetail::EventRecord:
    prepared.kind = StepKind::EventRecord;
    prepared.event = step.detail_as_EventRecord()->event();
    break;
  case StepDetail::EventWait:
    prepared.kind = StepKind::EventWait;
    prepared.event = step.detail_as_EventWait()->event();
    break;
  case StepDetail::Output: {
    const Output &output = *step.detail_as_Output();
    const Buffer &buffer = *program.buffers()->Get(output.buffer());
    outputs_.push_back(
        describeBuffer(buffer, text(output.name()), output.dist()));
    if (output.updates()) {
      // The input this output replaces after a run must be its twin.
      TensorInfo &out = outputs_.back();
      int64_t in = findInput(text(output.updates()));
      if (in < 0)
        return fail(where, ": output '", out.name, "' updates input '",
                    text(output.updates()),
                    "', which the program does not have");
      const TensorInfo &info = inputs_[in];
      if (info.dtype != out.dtype || info.dims != out.dims ||
          info.distributed != out.distributed ||
          (info.distributed && info.dist.globalShape != out.dist.globalShape))
        return fail(where, ": output '", out.name, "' (", dtypeName(out.dtype),
                    " ", formatDims(out.dims), ") cannot update input '",
                    info.name, "' (", dtypeName(info.dtype), " ",
                    formatDims(info.dims), ")");
      out.updates = in;
    }
    outputStorage_.emplace_back();
    if (!describeOnly_)
      if (Status status = outputStorage_.back().allocate(
              buffer.size(), ("output '" + outputs_.back().name + "'").c_str());
          status.failed())
        return fail(label_, ": ", status.message());
    prepared.kind = StepKind::Copy;
    prepared.isOutput = true;
    prepared.src = bufferData(output.buffer());
    prepared.dst = outputStorage_.back().data();
    prepared.bytes = buffer.size();
    outputStep_.push_back(steps_.size());
    break;
  }
  default:
    return fail(where, ": unknown step");
  }
  steps_.push_back(std::move(prepared));
  return Status::success();
}

Status Session::prepareGpuLaunch(const Launch &launch, PreparedStep &step) {
  // The loader checked that the kernel has its launch table and that every
  // argument indexes the launch's buffers.
  const Executable &executable =
      *plan_->plan().executables()->Get(launch.executable());
  std::string_view kernel = text(launch.kernel());
  const GpuKernel *table = nullptr;
  for (const GpuKernel *candidate : *executable.gpu_kernels())
    if (text(candidate->name()) == kernel)
      table = candidate;
  if (!table)
    return fail("kernel '", kernel, "' has no GPU launches");
  const std::vector<void *> &modules = gpuModules_[launch.executable()];
  for (const GpuLaunch *gpu : *table->launches()) {
    PreparedStep::GpuCall call;
    std::string function(text(gpu->function()));
    auto key = std::make_pair(modules[gpu->binary()], function);
    auto found = gpuFunctions_.find(key);
    if (found == gpuFunctions_.end()) {
      void *handle = nullptr;
      if (Status status =
              executor_->getGpuFunction(key.first, function, handle);
          status.failed())
        return status;
      found = gpuFunctions_.emplace(std::move(key), handle).first;
    }
    call.function = found->second;
    for (uint32_t d = 0; d < 3; ++d) {
      call.grid[d] = gpu->grid()->Get(d);
      call.block[d] = gpu->block()->Get(d);
    }
    for (uint32_t arg : *gpu->args())
      call.args.push_back(bufferData(launch.buffers()->Get(arg)));
    step.gpuCalls.push_back(std::move(call));
  }
  return Status::success();
}

int64_t Session::findInput(std::string_view name) const {
  for (size_t i = 0; i < inputs_.size(); ++i)
    if (inputs_[i].name == name)
      return static_cast<int64_t>(i);
  return -1;
}

int64_t Session::findOutput(std::string_view name) const {
  for (size_t i = 0; i < outputs_.size(); ++i)
    if (outputs_[i].name == name)
      return static_cast<int64_t>(i);
  return -1;
}

static std::string hexText(uint64_t value) {
  char buffer[19];
  std::snprintf(buffer, sizeof buffer, "0x%016llx",
                static_cast<unsigned long long>(value));
  return buffer;
}

Status Session::checkRanksAgree() {
  // Each rank sends [plan checksum, then per compared input: a hash of its
  // name and mesh, its digest]; every rank receives every rank's message
  // and reaches the same verdict, so all fail together or none does.
  auto nameHash = [](const TensorInfo &info) {
    uint64_t h = digestOf(info.name.data(), info.name.size());
    for (int r : info.dist.meshRanks)
      h = (h ^ static_cast<uint64_t>(r)) * 0x100000001b3ull;
    return h;
  };
  std::vector<uint64_t> mine = {plan_->header().checksum};
  for (size_t i = 0; i < inputs_.size(); ++i)
    if (inputDigest_[i]) {
      mine.push_back(nameHash(inputs_[i]));
      mine.push_back(inputDigest_[i]);
    }
  int size = comm_->size();
  uint64_t count = mine.size();
  std::vector<uint64_t> counts(size);
  if (Status status = comm_->allGatherV(&count, counts.data(),
                                        std::vector<uint64_t>(size, 8),
                                        "the ranks' agreement check");
      status.failed())
    return fail(label_, ": ", status.message());
  std::vector<uint64_t> bytes(size), all;
  uint64_t total = 0;
  for (int r = 0; r < size; ++r) {
    bytes[r] = counts[r] * 8;
    total += counts[r];
  }
  all.resize(total);
  if (Status status = comm_->allGatherV(mine.data(), all.data(), bytes,
                                        "the ranks' agreement check");
      status.failed())
    return fail(label_, ": ", status.message());
  // The verdict, from every rank's message (the same on every rank).
  std::vector<const uint64_t *> message(size);
  for (int r = 0, at = 0; r < size; at += counts[r++])
    message[r] = all.data() + at;
  for (int r = 1; r < size; ++r)
    if (message[r][0] != message[0][0])
      return fail(label_, ": rank ", comm_->worldRanks()[r],
                  " runs a different plan (checksum ", hexText(message[r][0]),
                  ") than rank ", comm_->worldRanks()[0], " (",
                  hexText(message[0][0]),
                  "); every rank must run the same plan");
  std::map<uint64_t, std::pair<int, uint64_t>> first; // input -> (rank, digest)
  for (int r = 0; r < size; ++r)
    for (uint64_t k = 1; k + 1 < counts[r]; k += 2) {
      auto [it, inserted] =
          first.insert({message[r][k], {r, message[r][k + 1]}});
      if (inserted || it->second.second == message[r][k + 1])
        continue;
      std::string name = "?";
      for (size_t i = 0; i < inputs_.size(); ++i)
        if (inputDigest_[i] && nameHash(inputs_[i]) == message[r][k])
          name = inputs_[i].name;
      return fail(label_, ": input '", name,
                  "' is broadcast (B) but its value on rank ",
                  comm_->worldRanks()[r], " differs from rank ",
                  comm_->worldRanks()[it->second.first],
                  "'s; give every rank the same value "
                  "($OF_CHECK_INPUTS=0 skips this check)");
    }
  return Status::success();
}

Status Session::describeOnlyError() const {
  return fail(label_, ": this session only describes the entry (made by "
                      "ofrt_session_create_description); it holds no memory "
                      "and runs nothing");
}

Status Session::checkInputCopy(size_t index, const void *data,
                               size_t bytes) const {
  if (describeOnly_)
    return describeOnlyError();
  if (index >= inputs_.size())
    return fail("input index ", index, " is out of range (", label_, " has ",
                inputs_.size(), " inputs)");
  const TensorInfo &info = inputs_[index];
  if (bytes != info.bytes)
    return fail("input '", info.name, "' takes ", info.bytes, " bytes (",
                dtypeName(info.dtype), " ", formatDims(info.dims), "), got ",
                bytes);
  if (!data && bytes)
    return fail("input '", info.name, "': the data pointer is NULL");
  return Status::success();
}

Status Session::setInput(size_t index, const void *data, size_t bytes) {
  if (Status status = checkInputCopy(index, data, bytes); status.failed())
    return status;
  if (bytes)
    std::memcpy(inputStorage_[index].data(), data, bytes);
  inputWasSet(index);
  return Status::success();
}

Status Session::getInput(size_t index, void *data, size_t bytes) const {
  if (Status status = checkInputCopy(index, data, bytes); status.failed())
    return status;
  if (!inputSet_[index])
    return fail("input '", inputs_[index].name,
                "' has no value: it was never set");
  if (Status status = inputToHost(index); status.failed())
    return status;
  if (bytes)
    std::memcpy(data, inputStorage_[index].data(), bytes);
  return Status::success();
}

void Session::inputWasSet(size_t input) {
  inputSet_[input] = true;
  const TensorInfo &info = inputs_[input];
  if (comm_ && compareInputs_ && info.distributed &&
      info.dist.memberIndex(rank_) >= 0 &&
      std::all_of(info.dist.sbp.begin(), info.dist.sbp.end(),
                  [](int code) { return code == ::of::sbp::kBroadcast; }))
    inputDigest_[input] = digestOf(inputStorage_[input].data(), info.bytes) | 1;
  // A device reads its own copy, uploaded before the next run.
  inputStale_[input] = onDevice_;
  inputOnHost_[input] = true;
  // An output written straight into this input no longer holds the last
  // run's value.
  for (size_t o = 0; o < outputs_.size(); ++o)
    if (directUpdate_[o] && outputs_[o].updates == static_cast<int64_t>(input))
      outputsValid_ = false;
}

Status Session::run() {
  if (describeOnly_)
    return describeOnlyError();
  std::vector<std::string> unset;
  for (size_t i = 0; i < inputs_.size(); ++i)
    if (!inputSet_[i])
      unset.push_back(inputs_[i].name);
  if (!unset.empty())
    return fail(label_, ": ", unset.size() == 1 ? "input " : "inputs ",
                joinQuoted(unset), unset.size() == 1 ? " was" : " were",
                " never set");
  for (const std::unique_ptr<PreparedCollective> &collective : collectives_)
    if (collective->needsCommunicator())
      return collective->run(); // fails, saying why
  if (comm_ && comm_->size() > 1)
    if (Status status = checkRanksAgree(); status.failed())
      return status;

  outputsValid_ = false;
  if (Status status = uploadStaleInputs(); status.failed())
    return status;
  if (Status status = runSteps(); status.failed())
    return status;
  if (profiling_)
    ++profiledRuns_;
  // A training step's parameters and optimizer state: the next run starts
  // from this run's results, on this rank its own part.
  if (onDevice_) {
    outputOnHost_.assign(outputs_.size(), false);
    // An output that is an updated input's device copy is downloaded
    // before updateDeviceInputs overwrites that copy.
    for (size_t o = 0; o < outputs_.size(); ++o)
      for (const TensorInfo &output : outputs_)
        if (output.updates >= 0 &&
            steps_[outputStep_[o]].src == inputData_[output.updates])
          if (Status status = outputToHost(o); status.failed())
            return status;
  } else {
    for (size_t i = 0; i < outputs_.size(); ++i)
      if (outputs_[i].updates >= 0 && !directUpdate_[i])
        std::memcpy(inputStorage_[outputs_[i].updates].data(),
                    outputStorage_[i].data(), outputs_[i].bytes);
  }
  if (Status status = updateDeviceInputs(); status.failed())
    return status;
  outputsValid_ = true;
  return Status::success();
}

Status Session::uploadStaleInputs() {
  for (size_t i = 0; i < inputs_.size(); ++i) {
    if (!inputStale_[i])
      continue;
    if (Status status = executor_->upload(
            inputData_[i], inputStorage_[i].data(), inputs_[i].bytes);
        status.failed())
      return fail(label_, ": input '", inputs_[i].name, "': ",
                  status.message());
    inputStale_[i] = false;
  }
  return Status::success();
}

Status Session::updateDeviceInputs() {
  if (!onDevice_)
    return Status::success();
  // Each updated input takes its output's value on the device, and its
  // host storage is out of date until read. Unless that value is itself an
  // input's copy, which this loop may overwrite first: such an output is
  // downloaded now, and its input uploaded from the host before the next
  // run.
  std::vector<bool> updated(inputs_.size(), false);
  for (const TensorInfo &output : outputs_)
    if (output.updates >= 0)
      updated[output.updates] = true;
  bool copied = false;
  for (size_t o = 0; o < outputs_.size(); ++o) {
    int64_t input = outputs_[o].updates;
    if (input < 0)
      continue;
    const void *value = steps_[outputStep_[o]].src;
    bool fromUpdatedInput = false;
    for (size_t i = 0; i < inputs_.size(); ++i)
      fromUpdatedInput |= updated[i] && value == inputData_[i] &&
                          static_cast<int64_t>(i) != input;
    if (fromUpdatedInput) {
      if (Status status = outputToHost(o); status.failed())
        return status;
      if (!directUpdate_[o])
        std::memcpy(inputStorage_[input].data(), outputStorage_[o].data(),
                    outputs_[o].bytes);
      inputOnHost_[input] = true;
      inputStale_[input] = true;
      continue;
    }
    if (Status status = executor_->copyOnDevice(inputData_[input], value,
                                                outputs_[o].bytes);
        status.failed())
      return fail(label_, ": updating input '", inputs_[input].name,
                  "': ", status.message());
    inputOnHost_[input] = false;
    copied = true;
  }
  return copied ? executor_->synchronize() : Status::success();
}

Status Session::setInputGlobal(size_t index, const void *data, size_t bytes) {
  if (describeOnly_)
    return describeOnlyError();
  if (index >= inputs_.size() || !inputs_[index].distributed)
    return setInput(index, data, bytes);
  const TensorInfo &info = inputs_[index];
  if (bytes != info.globalBytes)
    return fail("input '", info.name, "' takes the global ",
                dtypeName(info.dtype), " ", formatDims(info.dist.globalShape),
                " (", info.globalBytes, " bytes), got ", bytes);
  // A rank whose part is empty (an uneven split's, or another pipeline
  // stage's input) reads nothing.
  if (!data && bytes && info.bytes)
    return fail("input '", info.name, "': the data pointer is NULL");
  // The loader checked that this rank is in the mesh with this local shape,
  // or outside it (another pipeline stage's input) with an empty buffer.
  int member = info.dist.memberIndex(rank_);
  if (member < 0) {
    inputWasSet(index);
    return Status::success();
  }
  LocalPart part = localPart(info.dist, member);
  void *local = inputStorage_[index].data();
  if (part.holdsIdentity)
    fillIdentity(info.dtype, info.dist.partialOp(), local,
                 info.bytes / dtypeSize(info.dtype));
  else if (info.bytes)
    copyBox(data, info.dist.globalShape, part.offsets, part.extents, local,
            dtypeSize(info.dtype));
  inputWasSet(index);
  // Every rank was given the global value: they must agree on all of it,
  // whatever part each keeps (a split of values that differ per rank is
  // as wrong as a broadcast of them).
  if (comm_ && compareInputs_)
    inputDigest_[index] = digestOf(data, bytes) | 1;
  return Status::success();
}

Status Session::gatherOutput(size_t index, void *data, size_t bytes,
                             bool &isRoot) const {
  if (describeOnly_)
    return describeOnlyError();
  isRoot = false;
  if (index >= outputs_.size())
    return fail("output index ", index, " is out of range (", label_, " has ",
                outputs_.size(), " outputs)");
  const TensorInfo &info = outputs_[index];
  if (!outputsValid_)
    return fail("output '", info.name,
                "' has no value: no run has completed successfully");
  if (Status status = outputToHost(index); status.failed())
    return status;
  return gather(info, "output", outputData(index), data, bytes, isRoot);
}

Status Session::gatherInput(size_t index, void *data, size_t bytes,
                            bool &isRoot) const {
  if (describeOnly_)
    return describeOnlyError();
  isRoot = false;
  if (index >= inputs_.size())
    return fail("input index ", index, " is out of range (", label_, " has ",
                inputs_.size(), " inputs)");
  const TensorInfo &info = inputs_[index];
  if (!inputSet_[index])
    return fail("input '", info.name, "' has no value: it was never set");
  if (Status status = inputToHost(index); status.failed())
    return status;
  return gather(info, "input", inputStorage_[index].data(), data, bytes,
                isRoot);
}

Status Session::gather(const TensorInfo &info, const char *kind,
                       const uint8_t *mine, void *data, size_t bytes,
                       bool &rootOut) const {
  bool root = isRoot();
  if (root) {
    if (bytes != info.globalBytes)
      return fail(
          kind, " '", info.name, "' is ", info.globalBytes, " bytes globally (",
          dtypeName(info.dtype), " ",
          formatDims(info.distributed ? info.dist.globalShape : info.dims),
          "), got ", bytes);
    if (!data && bytes)
      return fail(kind, " '", info.name, "': the data pointer is NULL");
  }
  rootOut = root;
  if (!info.distributed) {
    if (root && bytes)
      std::memcpy(data, mine, bytes);
    return Status::success();
  }
  const DistSpec &dist = info.dist;
  if (!comm_ && dist.meshRanks.size() > 1)
    return fail(kind, " '", info.name, "' is distributed over ",
                dist.meshRanks.size(),
                " ranks; gathering it needs the session's communicator");
  size_t elementSize = dtypeSize(info.dtype);
  bool partial = dist.partial();
  if (root && partial)
    fillIdentity(info.dtype, dist.partialOp(), data,
                 info.globalBytes / elementSize);
  std::string what =
      formatMessage("gathering ", kind, " '", info.name, "' on rank 0");
  AlignedBytes piece;
  for (size_t member = 0; member < dist.meshRanks.size(); ++member) {
    LocalPart part = localPart(dist, static_cast<int>(member));
    if (part.duplicate)
      continue; // the same value as the member with coordinate 0
    int owner = dist.meshRanks[member];
    uint64_t partBytes = product(part.extents) * elementSize;
    if (root) {
      const void *value = mine;
      if (owner != rank_) {
        if (Status status = piece.allocate(partBytes, "an output part");
            status.failed())
          return status;
        if (Status status =
                comm_->recv(piece.data(), partBytes, owner, kGatherTag, what);
            status.failed())
          return status;
        value = piece.data();
      }
      if (partial)
        reduceIntoBox(data, dist.globalShape, part.offsets, part.extents, value,
                      info.dtype, dist.partialOp());
      else
        copyIntoBox(data, dist.globalShape, part.offsets, part.extents, value,
                    elementSize);
    } else if (owner == rank_) {
      if (Status status = comm_->send(mine, info.bytes, 0, kGatherTag, what);
          status.failed())
        return status;
    }
  }
  return Status::success();
}

Status Session::getOutput(size_t index, void *data, size_t bytes) const {
  if (describeOnly_)
    return describeOnlyError();
  if (index >= outputs_.size())
    return fail("output index ", index, " is out of range (", label_, " has ",
                outputs_.size(), " outputs)");
  const TensorInfo &info = outputs_[index];
  if (!outputsValid_)
    return fail("output '", info.name,
                "' has no value: no run has completed successfully");
  if (bytes != info.bytes)
    return fail("output '", info.name, "' is ", info.bytes, " bytes, got ",
                bytes);
  if (!data && bytes)
    return fail("output '", info.name, "': the data pointer is NULL");
  if (Status status = outputToHost(index); status.failed())
    return status;
  if (bytes)
    std::memcpy(data, outputData(index), bytes);
  return Status::success();
}

} // namespace of::rt
