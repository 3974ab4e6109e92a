//===- TestPlan.h - Writing .ofp files for the runtime tests --------------===//
//
// Assembles binary plans the way of-translate does (header, metadata
// FlatBuffer, 64-byte aligned blobs, checksum), from the generated object
// API (of::plan::PlanT), so a test builds a plan as plain structs, changes
// one field to make it invalid, and writes it with a valid checksum. The
// sample plans are shared by the GoogleTest suite, by ofrt-test-plan (which
// writes them to disk for lit and as the fuzzer's seeds).
//
//===----------------------------------------------------------------------===//

#ifndef OF_TEST_RUNTIME_TESTPLAN_H
#define OF_TEST_RUNTIME_TESTPLAN_H

#include "OF/ABI/LibraryCalls.h"
#include "OF/ABI/PlanFormat.h"
#include "OF/ABI/PlanFormat_generated.h"

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

namespace of::test {

using Bytes = std::vector<uint8_t>;

/// Recomputes the header's checksum of a plan file (after an edit).
inline void rewriteChecksum(Bytes &file) {
  plan::FileHeader header;
  std::memcpy(&header, file.data(), sizeof header);
  header.checksum =
      plan::checksum(file.data() + sizeof header, file.size() - sizeof header);
  std::memcpy(file.data(), &header, sizeof header);
}

/// Writes `planT` with `blobs` as a .ofp file. Unless `keepBlobTable`, the
/// plan's blob table is replaced by the blobs' actual places.
inline Bytes writePlan(const plan::PlanT &planT,
                       const std::vector<Bytes> &blobs,
                       bool keepBlobTable = false) {
  plan::PlanT copy;
  // The object API has no copy constructor: round-trip through a buffer.
  {
    flatbuffers::FlatBufferBuilder builder;
    builder.Finish(plan::Plan::Pack(builder, &planT));
    plan::GetPlan(builder.GetBufferPointer())->UnPackTo(&copy);
  }
  std::vector<uint64_t> offsets;
  uint64_t blobsSize = 0;
  for (const Bytes &blob : blobs) {
    uint64_t offset = plan::alignTo(blobsSize, plan::kBlobAlignment);
    offsets.push_back(offset);
    blobsSize = offset + blob.size();
  }
  if (!keepBlobTable) {
    copy.blobs.clear();
    for (size_t i = 0; i < blobs.size(); ++i) {
      auto blob = std::make_unique<plan::BlobT>();
      blob->offset = offsets[i];
      blob->size = blobs[i].size();
      copy.blobs.push_back(std::move(blob));
    }
  }
  flatbuffers::FlatBufferBuilder builder;
  plan::FinishPlanBuffer(builder, plan::Plan::Pack(builder, &copy));

  plan::FileHeader header{};
  std::memcpy(header.magic, plan::kMagic, sizeof header.magic);
  header.version = plan::kFormatVersion;
  header.headerSize = sizeof(plan::FileHeader);
  header.metadataOffset = sizeof(plan::FileHeader);
  header.metadataSize = builder.GetSize();
  header.blobsOffset = plan::alignTo(
      header.metadataOffset + header.metadataSize, plan::kBlobAlignment);
  header.blobsSize = blobsSize;
  header.fileSize = header.blobsOffset + blobsSize;

  Bytes file(header.fileSize, 0);
  std::memcpy(file.data() + header.metadataOffset, builder.GetBufferPointer(),
              builder.GetSize());
  for (size_t i = 0; i < blobs.size(); ++i)
    if (!blobs[i].empty())
      std::memcpy(file.data() + header.blobsOffset + offsets[i],
                  blobs[i].data(), blobs[i].size());
  std::memcpy(file.data(), &header, sizeof header);
  rewriteChecksum(file);
  return file;
}

/// The bytes of the file at `path` (empty if it cannot be read).
inline Bytes readFileBytes(const std::string &path) {
  Bytes bytes;
  if (FILE *file = std::fopen(path.c_str(), "rb")) {
    uint8_t chunk[1 << 16];
    size_t got;
    while ((got = std::fread(chunk, 1, sizeof chunk, file)) > 0)
      bytes.insert(bytes.end(), chunk, chunk + got);
    std::fclose(file);
  }
  return bytes;
}

//===----------------------------------------------------------------------===//
// Building blocks
//===----------------------------------------------------------------------===//

inline uint64_t elementBytes(plan::DType dtype) {
  switch (dtype) {
  case plan::DType::F64:
  case plan::DType::I64:
    return 8;
  case plan::DType::F16:
  case plan::DType::BF16:
    return 2;
  case plan::DType::I8:
  case plan::DType::I1:
    return 1;
  default:
    return 4;
  }
}

inline std::unique_ptr<plan::BufferT> makeBuffer(const std::string &name,
                                                 plan::BufferKind kind,
                                                 plan::DType dtype,
                                                 std::vector<int64_t> shape) {
  auto buffer = std::make_unique<plan::BufferT>();
  buffer->name = name;
  buffer->kind = kind;
  buffer->dtype = dtype;
  buffer->size = elementBytes(dtype);
  for (int64_t dim : shape)
    buffer->size *= static_cast<uint64_t>(dim);
  buffer->shape = std::move(shape);
  return buffer;
}

/// Adds a buffer to `program` and returns its index.
inline uint32_t addArena(plan::ProgramT &program, const std::string &name,
                         plan::DType dtype, std::vector<int64_t> shape,
                         uint64_t offset) {
  auto buffer =
      makeBuffer(name, plan::BufferKind::Arena, dtype, std::move(shape));
  buffer->offset = offset;
  program.buffers.push_back(std::move(buffer));
  return static_cast<uint32_t>(program.buffers.size() - 1);
}

inline uint32_t addInput(plan::ProgramT &program, const std::string &name,
                         plan::DType dtype, std::vector<int64_t> shape) {
  auto buffer =
      makeBuffer(name, plan::BufferKind::Input, dtype, std::move(shape));
  buffer->binding = name;
  program.buffers.push_back(std::move(buffer));
  uint32_t index = static_cast<uint32_t>(program.buffers.size() - 1);
  program.inputs.push_back(index);
  return index;
}

inline uint32_t addConstant(plan::ProgramT &program, const std::string &name,
                            plan::DType dtype, std::vector<int64_t> shape,
                            uint32_t blob) {
  auto buffer =
      makeBuffer(name, plan::BufferKind::Constant, dtype, std::move(shape));
  buffer->blob = blob;
  program.buffers.push_back(std::move(buffer));
  return static_cast<uint32_t>(program.buffers.size() - 1);
}

template <typename Detail>
void addStep(plan::ProgramT &program, Detail detail, uint32_t stream = 0) {
  auto step = std::make_unique<plan::StepT>();
  step->stream = stream;
  step->detail.Set(std::move(detail));
  program.steps.push_back(std::move(step));
}

inline void addLaunch(plan::ProgramT &program, uint32_t executable,
                      const std::string &kernel, std::vector<uint32_t> buffers,
                      int64_t range = 0, int64_t work = 0) {
  plan::LaunchT launch;
  launch.executable = executable;
  launch.kernel = kernel;
  launch.buffers = std::move(buffers);
  launch.range = range;
  launch.work = work;
  addStep(program, std::move(launch));
}

/// Lists kernel `name` in `executable` with what it was compiled for: its
/// parameters (dtype and shape), range and work, and the parameters it
/// reads and writes (by default it writes the last and reads the others).
inline void
addKernel(plan::ExecutableT &executable, const std::string &name,
          std::vector<std::pair<plan::DType, std::vector<int64_t>>> params,
          int64_t range = 0, int64_t work = 0, std::vector<uint32_t> reads = {},
          std::vector<uint32_t> writes = {}) {
  if (writes.empty()) {
    writes = {static_cast<uint32_t>(params.size() - 1)};
    for (uint32_t i = 0; i + 1 < params.size(); ++i)
      reads.push_back(i);
  }
  executable.kernels.push_back(name);
  auto signature = std::make_unique<plan::KernelSignatureT>();
  for (auto &[dtype, shape] : params) {
    auto param = std::make_unique<plan::KernelParamT>();
    param->dtype = dtype;
    param->shape = std::move(shape);
    signature->params.push_back(std::move(param));
  }
  signature->range = range;
  signature->work = work;
  signature->reads = std::move(reads);
  signature->writes = std::move(writes);
  executable.signatures.push_back(std::move(signature));
}

inline void addLibraryCall(plan::ProgramT &program, const std::string &function,
                           std::vector<uint32_t> buffers,
                           std::vector<int64_t> params) {
  plan::LibraryCallT call;
  call.function = function;
  call.buffers = std::move(buffers);
  call.params = std::move(params);
  addStep(program, std::move(call));
}

inline void addCopy(plan::ProgramT &program, uint32_t src, uint32_t dst,
                    uint64_t bytes, uint64_t srcOffset = 0,
                    uint64_t dstOffset = 0) {
  plan::CopyT copy;
  copy.src = src;
  copy.dst = dst;
  copy.bytes = bytes;
  copy.src_offset = srcOffset;
  copy.dst_offset = dstOffset;
  addStep(program, std::move(copy));
}

/// Orders stream `to` after what stream `from` did so far: a record of
/// `event` on `from`, then a wait for it on `to`.
inline void addHandOff(plan::ProgramT &program, uint32_t event, uint32_t from,
                       uint32_t to) {
  plan::EventRecordT record;
  record.event = event;
  addStep(program, record, from);
  plan::EventWaitT wait;
  wait.event = event;
  addStep(program, wait, to);
}

inline void addOutput(plan::ProgramT &program, const std::string &name,
                      uint32_t buffer) {
  plan::OutputT output;
  output.name = name;
  output.buffer = buffer;
  addStep(program, std::move(output));
}

inline std::unique_ptr<plan::ProgramT> makeProgram(const std::string &entry,
                                                   uint64_t arenaSize) {
  auto program = std::make_unique<plan::ProgramT>();
  program->entry = entry;
  program->ranks = {0};
  program->device = "cpu";
  program->arena_size = arenaSize;
  program->num_streams = 1;
  return program;
}

inline Bytes floatBytes(const std::vector<float> &values) {
  Bytes bytes(values.size() * sizeof(float));
  std::memcpy(bytes.data(), values.data(), bytes.size());
  return bytes;
}

//===----------------------------------------------------------------------===//
// Sample plans
//===----------------------------------------------------------------------===//

/// A plan and the contents of its blobs.
struct SamplePlan {
  plan::PlanT plan;
  std::vector<Bytes> blobs;
  Bytes write() const { return writePlan(plan, blobs); }
};

/// The weight of the sample gemm: w[i][j] = i - 2j (row-major 4x4).
inline std::vector<float> sampleWeight() {
  std::vector<float> w(16);
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 4; ++j)
      w[i * 4 + j] = static_cast<float>(i - 2 * j);
  return w;
}

/// Entry "main" (inputs x, y: f32 [16]):
///   s = add_f32_16(x, y)            launch, stream 0, then event 0 recorded
///   p = s (as 4x4) x w              blas.gemm on stream 1 after waiting on 0,
///                                   then event 1 recorded
///   q = p                           copy, on stream 0 after waiting on 1
///   outputs "sum" = s, "y.gemm" = p (a name with a '.'), "copy" = q
/// Entry "check" (input ids: i32 [8]): check.index_range [0, 16) on ids,
/// output "ids" = ids.
/// Blob 0 is the kernel object `kernels`, blob 1 the weight.
inline SamplePlan makeSamplePlan(const Bytes &kernels) {
  using namespace plan;
  SamplePlan sample;
  sample.plan.producer = "ofrt-test-plan";
  sample.blobs = {kernels, floatBytes(sampleWeight())};

  auto executable = std::make_unique<ExecutableT>();
  executable->name = "test_kernels";
  executable->format = "elf-shared-object";
  executable->target = "x86_64-unknown-linux-gnu";
  executable->blob = 0;
  addKernel(*executable, "add_f32_16",
            {{DType::F32, {16}}, {DType::F32, {16}}, {DType::F32, {16}}},
            /*range=*/16, /*work=*/16);
  addKernel(*executable, "count_visits", {{DType::I32, {16}}}, 16, 16,
            /*reads=*/{0}, /*writes=*/{0});
  sample.plan.executables.push_back(std::move(executable));

  auto entry = makeProgram("main", 192);
  entry->num_streams = 2;
  entry->num_events = 2;
  uint32_t x = addInput(*entry, "x", DType::F32, {16});
  uint32_t y = addInput(*entry, "y", DType::F32, {16});
  uint32_t w = addConstant(*entry, "w", DType::F32, {4, 4}, 1);
  uint32_t s = addArena(*entry, "s", DType::F32, {16}, 0);
  uint32_t p = addArena(*entry, "p", DType::F32, {4, 4}, 64);
  uint32_t q = addArena(*entry, "q", DType::F32, {4, 4}, 128);
  addLaunch(*entry, 0, "add_f32_16", {x, y, s}, /*range=*/16, /*work=*/16);
  addHandOff(*entry, 0, /*from=*/0, /*to=*/1);
  addLibraryCall(*entry, "blas.gemm", {s, w, p},
                 {1, 4, 4, 4, 16, 4, 1, 16, 4, 1, 16, 4});
  entry->steps.back()->stream = 1;
  addHandOff(*entry, 1, /*from=*/1, /*to=*/0);
  addCopy(*entry, p, q, 64);
  addOutput(*entry, "sum", s);
  addOutput(*entry, "y.gemm", p);
  addOutput(*entry, "copy", q);
  sample.plan.programs.push_back(std::move(entry));

  auto check = makeProgram("check", 0);
  uint32_t ids = addInput(*check, "ids", DType::I32, {8});
  addLibraryCall(*check, "check.index_range", {ids}, {0, 16});
  addOutput(*check, "ids", ids);
  sample.plan.programs.push_back(std::move(check));
  return sample;
}

/// Entry "main": C = A x B batched, A stored transposed ([batch, k, m]), B
/// stored transposed ([n, k]) and broadcast over the batch (stride 0), C
/// with padded rows (ldc = n + 3), or with `interleaved` stored [m, batch,
/// n] (the batch inside the rows). Inputs a, b; output "c".
inline SamplePlan makeBatchedGemmPlan(plan::DType dtype, int64_t batch,
                                      int64_t m, int64_t n, int64_t k,
                                      bool interleaved = false) {
  using namespace plan;
  SamplePlan sample;
  sample.plan.producer = "ofrt-test-plan";
  int64_t ldc = interleaved ? batch * n : n + 3;
  uint64_t cBytes = static_cast<uint64_t>(batch * m * (interleaved ? n : ldc)) *
                    elementBytes(dtype);
  auto entry = makeProgram("main", cBytes);
  uint32_t a = addInput(*entry, "a", dtype, {batch, k, m});
  uint32_t b = addInput(*entry, "b", dtype, {n, k});
  std::vector<int64_t> cShape = {batch, m, ldc};
  if (interleaved)
    cShape = {m, batch, n};
  uint32_t c = addArena(*entry, "c", dtype, cShape, 0);
  addLibraryCall(*entry, "blas.gemm", {a, b, c},
                 {batch, m, n, k,
                  /*A*/ k * m, 1, m,
                  /*B*/ 0, 1, k,
                  /*C*/ interleaved ? n : m * ldc, ldc});
  addOutput(*entry, "c", c);
  sample.plan.programs.push_back(std::move(entry));
  return sample;
}

/// Entry "main": one input per dtype, named by the dtype ("f32", "bf16",
/// ...; shape [2, 3]), each copied through the arena and output as
/// "<dtype>.out", so that of-run's .npy reading and writing round-trips
/// every element type.
inline SamplePlan makeDtypePlan() {
  using namespace plan;
  SamplePlan sample;
  sample.plan.producer = "ofrt-test-plan";
  const std::pair<const char *, DType> types[] = {
      {"f32", DType::F32},   {"f64", DType::F64}, {"f16", DType::F16},
      {"bf16", DType::BF16}, {"i64", DType::I64}, {"i32", DType::I32},
      {"i8", DType::I8},     {"i1", DType::I1}};
  auto entry = makeProgram("main", 8 * 64);
  uint64_t offset = 0;
  for (const auto &[name, dtype] : types) {
    uint32_t input = addInput(*entry, name, dtype, {2, 3});
    uint32_t copy =
        addArena(*entry, std::string(name) + ".copy", dtype, {2, 3}, offset);
    addCopy(*entry, input, copy, 6 * elementBytes(dtype));
    addOutput(*entry, std::string(name) + ".out", copy);
    offset += 64;
  }
  sample.plan.programs.push_back(std::move(entry));
  return sample;
}

/// A grouped, strided, dilated, unevenly padded convolution: the forward
/// step (with bias) and both gradient steps of one geometry in one program.
struct ConvCase {
  plan::ConvGeometry g{2, 4, 7, 6, 6, 3, 2, 3, 7, 2, 1, 1, 2, 1, 0, 2, 1, 2};
  std::vector<int64_t> params() const {
    return {g.n,       g.c,         g.h,         g.w,      g.f,
            g.kh,      g.kw,        g.oh,        g.ow,     g.strideH,
            g.strideW, g.dilationH, g.dilationW, g.padTop, g.padBottom,
            g.padLeft, g.padRight,  g.groups};
  }
  std::vector<int64_t> x() const { return {g.n, g.c, g.h, g.w}; }
  std::vector<int64_t> w() const { return {g.f, g.c / g.groups, g.kh, g.kw}; }
  std::vector<int64_t> y() const { return {g.n, g.f, g.oh, g.ow}; }

  SamplePlan plan(plan::DType dtype = plan::DType::F32) const {
    SamplePlan sample;
    uint64_t size = elementBytes(dtype);
    uint64_t ySize = plan::convOutputElements(g) * size,
             xSize = plan::convInputElements(g) * size,
             wSize = plan::convWeightElements(g) * size;
    auto program = makeProgram("main", ySize + xSize + wSize);
    uint32_t xi = addInput(*program, "x", dtype, x());
    uint32_t wi = addInput(*program, "w", dtype, w());
    uint32_t bi = addInput(*program, "b", dtype, {g.f});
    uint32_t dyi = addInput(*program, "dy", dtype, y());
    uint32_t yo = addArena(*program, "y", dtype, y(), 0);
    uint32_t dxo = addArena(*program, "dx", dtype, x(), ySize);
    uint32_t dwo = addArena(*program, "dw", dtype, w(), ySize + xSize);
    addLibraryCall(*program, "dnn.conv2d", {xi, wi, bi, yo}, params());
    addLibraryCall(*program, "dnn.conv2d_grad_input", {dyi, wi, dxo}, params());
    addLibraryCall(*program, "dnn.conv2d_grad_filter", {xi, dyi, dwo},
                   params());
    addOutput(*program, "y", yo);
    addOutput(*program, "dx", dxo);
    addOutput(*program, "dw", dwo);
    sample.plan.programs.push_back(std::move(program));
    return sample;
  }

  /// Calls `f(n, f, oh, ow, input channel, weight offset, input offset)`
  /// for every product of the convolution.
  template <typename F> void forEachProduct(F f) const {
    int64_t cg = g.c / g.groups, fg = g.f / g.groups;
    for (int64_t n = 0; n < g.n; ++n)
      for (int64_t o = 0; o < g.f; ++o)
        for (int64_t i = 0; i < g.oh; ++i)
          for (int64_t j = 0; j < g.ow; ++j)
            for (int64_t c = 0; c < cg; ++c)
              for (int64_t p = 0; p < g.kh; ++p)
                for (int64_t q = 0; q < g.kw; ++q) {
                  int64_t h = i * g.strideH + p * g.dilationH - g.padTop;
                  int64_t v = j * g.strideW + q * g.dilationW - g.padLeft;
                  if (h < 0 || h >= g.h || v < 0 || v >= g.w)
                    continue;
                  int64_t channel = (o / fg) * cg + c;
                  f(((n * g.f + o) * g.oh + i) * g.ow + j,
                    ((o * cg + c) * g.kh + p) * g.kw + q,
                    ((n * g.c + channel) * g.h + h) * g.w + v, o);
                }
  }
};

/// Poolings over one unevenly padded, strided geometry: max, both
/// averages, and the max and both average gradients, one step each.
struct PoolCase {
  plan::PoolGeometry g{
      2, 3, 7, 6, 3, 2, 4, 6, 2, 1, 1, 1, 0, 1, plan::PoolMode::Max};
  std::vector<int64_t> params(plan::PoolMode mode) const {
    return {g.n,       g.c,        g.h,
            g.w,       g.kh,       g.kw,
            g.oh,      g.ow,       g.strideH,
            g.strideW, g.padTop,   g.padBottom,
            g.padLeft, g.padRight, static_cast<int64_t>(mode)};
  }
  std::vector<int64_t> x() const { return {g.n, g.c, g.h, g.w}; }
  std::vector<int64_t> y() const { return {g.n, g.c, g.oh, g.ow}; }

  SamplePlan plan(plan::DType dtype = plan::DType::F32) const {
    SamplePlan sample;
    uint64_t size = elementBytes(dtype);
    uint64_t ySize = plan::poolOutputElements(g) * size,
             xSize = plan::poolInputElements(g) * size;
    auto program = makeProgram("main", 3 * ySize + 3 * xSize);
    uint32_t xi = addInput(*program, "x", dtype, x());
    uint32_t dyi = addInput(*program, "dy", dtype, y());
    uint32_t maxo = addArena(*program, "max", dtype, y(), 0);
    uint32_t avgo = addArena(*program, "avg", dtype, y(), ySize);
    uint32_t avgInsideo =
        addArena(*program, "avg_inside", dtype, y(), 2 * ySize);
    uint32_t dmaxo = addArena(*program, "dmax", dtype, x(), 3 * ySize);
    uint32_t davgo =
        addArena(*program, "davg_inside", dtype, x(), 3 * ySize + xSize);
    addLibraryCall(*program, "dnn.pool2d", {xi, maxo},
                   params(plan::PoolMode::Max));
    addLibraryCall(*program, "dnn.pool2d", {xi, avgo},
                   params(plan::PoolMode::AvgIncludePad));
    addLibraryCall(*program, "dnn.pool2d", {xi, avgInsideo},
                   params(plan::PoolMode::AvgExcludePad));
    addLibraryCall(*program, "dnn.pool2d_grad", {xi, dyi, dmaxo},
                   params(plan::PoolMode::Max));
    addLibraryCall(*program, "dnn.pool2d_grad", {xi, dyi, davgo},
                   params(plan::PoolMode::AvgExcludePad));
    uint32_t davgPado =
        addArena(*program, "davg", dtype, x(), 3 * ySize + 2 * xSize);
    addLibraryCall(*program, "dnn.pool2d_grad", {xi, dyi, davgPado},
                   params(plan::PoolMode::AvgIncludePad));
    for (uint32_t o : {maxo, avgo, avgInsideo, dmaxo, davgo, davgPado})
      addOutput(*program, program->buffers[o]->name, o);
    sample.plan.programs.push_back(std::move(program));
    return sample;
  }
};

/// A training batch norm and its gradients (LibraryCalls.h) on x [3, 4,
/// 10]: inputs x, dy, scale and shift; outputs y, mean, var (dnn.batch_norm)
/// and dx, dscale, dshift (dnn.batch_norm_grad, reading the forward step's
/// mean and var).
struct NormCase {
  plan::BatchNormGeometry g{3, 4, 10, 1e-3};
  std::vector<int64_t> params() const {
    return {g.n, g.c, g.s, plan::encodeBatchNormEpsilon(g.epsilon)};
  }
  std::vector<int64_t> x() const { return {g.n, g.c, g.s}; }
  std::vector<int64_t> c() const { return {g.c}; }

  SamplePlan plan(plan::DType dtype = plan::DType::F32) const {
    SamplePlan sample;
    uint64_t size = elementBytes(dtype);
    uint64_t xSize = plan::batchNormInputElements(g) * size, cSize = g.c * size;
    auto program = makeProgram("main", 2 * xSize + 5 * cSize);
    uint32_t xi = addInput(*program, "x", dtype, x());
    uint32_t dyi = addInput(*program, "dy", dtype, x());
    uint32_t scalei = addInput(*program, "scale", dtype, c());
    uint32_t shifti = addInput(*program, "shift", dtype, c());
    uint32_t yo = addArena(*program, "y", dtype, x(), 0);
    uint32_t meano = addArena(*program, "mean", dtype, c(), xSize);
    uint32_t varo = addArena(*program, "var", dtype, c(), xSize + cSize);
    uint32_t dxo = addArena(*program, "dx", dtype, x(), xSize + 2 * cSize);
    uint32_t dscaleo =
        addArena(*program, "dscale", dtype, c(), 2 * xSize + 2 * cSize);
    uint32_t dshifto =
        addArena(*program, "dshift", dtype, c(), 2 * xSize + 3 * cSize);
    addLibraryCall(*program, "dnn.batch_norm",
                   {xi, scalei, shifti, yo, meano, varo}, params());
    addLibraryCall(*program, "dnn.batch_norm_grad",
                   {xi, dyi, scalei, meano, varo, dxo, dscaleo, dshifto},
                   params());
    for (uint32_t o : {yo, meano, varo, dxo, dscaleo, dshifto})
      addOutput(*program, program->buffers[o]->name, o);
    sample.plan.programs.push_back(std::move(program));
    return sample;
  }
};

} // namespace of::test

#endif // OF_TEST_RUNTIME_TESTPLAN_H
