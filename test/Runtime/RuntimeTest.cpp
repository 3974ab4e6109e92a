//===- RuntimeTest.cpp - libofrt through its C API ------------------------===//
//
// Builds plans in memory (TestPlan.h), with the real kernel shared object
// compiled from test_kernels.c, and runs them through ofrt.h: results are
// compared with naive loops, and every kind of corruption or semantic error
// must be refused with the expected message. Nothing is mocked: OpenBLAS
// computes the gemms, dlopen loads the kernels.
//
//===----------------------------------------------------------------------===//

#include "TestPlan.h"

#include "OF/ABI/LibraryCalls.h"
#include "OF/Runtime/ofrt.h"

#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <elf.h>
#include <random>
#include <sys/wait.h>
#include <unistd.h>

using namespace of::test;
using namespace of::plan;

namespace {

/// The message of `error` (freed), or "" on success.
std::string take(ofrt_error *error) {
  if (!error)
    return "";
  std::string message = ofrt_error_message(error);
  ofrt_error_free(error);
  return message;
}

struct PlanHandle {
  ofrt_plan *plan = nullptr;
  ~PlanHandle() { ofrt_plan_close(plan); }
};
struct SessionHandle {
  ofrt_session *session = nullptr;
  ~SessionHandle() { ofrt_session_destroy(session); }
};

/// Opens `file` and creates a session of its "main" entry for rank 0.
void openSession(const Bytes &file, PlanHandle &plan, SessionHandle &session) {
  ASSERT_EQ(take(ofrt_plan_open_memory(file.data(), file.size(), &plan.plan)),
            "");
  ASSERT_EQ(take(ofrt_session_create(plan.plan, "main", 0, &session.session)),
            "");
}

const Bytes &kernelObject() {
  static const Bytes bytes = readFileBytes(OFRT_TEST_KERNELS);
  return bytes;
}

/// The error of opening `file` ("" if it opens).
std::string openError(const Bytes &file) {
  PlanHandle handle;
  return take(ofrt_plan_open_memory(file.data(), file.size(), &handle.plan));
}

/// The error of opening `file` and creating a session of `entry`.
std::string sessionError(const Bytes &file, const char *entry = nullptr,
                         int rank = 0) {
  PlanHandle plan;
  if (std::string error =
          take(ofrt_plan_open_memory(file.data(), file.size(), &plan.plan));
      !error.empty())
    return error;
  SessionHandle session;
  return take(ofrt_session_create(plan.plan, entry, rank, &session.session));
}

std::vector<float> sequence(size_t count, float scale, float offset) {
  std::vector<float> values(count);
  for (size_t i = 0; i < count; ++i)
    values[i] = scale * static_cast<float>(i) + offset;
  return values;
}

ProgramT &mainProgram(SamplePlan &sample) { return *sample.plan.programs[0]; }

TEST(Runtime, KernelObjectIsBuilt) {
  ASSERT_GT(kernelObject().size(), 4u) << OFRT_TEST_KERNELS;
}

TEST(Runtime, RunsLaunchGemmCopyAndOutputs) {
  Bytes file = makeSamplePlan(kernelObject()).write();
  PlanHandle plan;
  ASSERT_EQ(take(ofrt_plan_open_memory(file.data(), file.size(), &plan.plan)),
            "");
  ASSERT_EQ(ofrt_plan_num_entries(plan.plan), 2u);
  EXPECT_STREQ(ofrt_plan_entry_name(plan.plan, 0), "main");
  EXPECT_STREQ(ofrt_plan_entry_name(plan.plan, 1), "check");

  SessionHandle session;
  ASSERT_EQ(take(ofrt_session_create(plan.plan, nullptr, 0, &session.session)),
            "");
  ofrt_session *s = session.session;
  ASSERT_EQ(ofrt_session_num_inputs(s), 2u);
  ASSERT_EQ(ofrt_session_num_outputs(s), 3u);
  EXPECT_EQ(ofrt_session_find_input(s, "y"), 1);
  EXPECT_EQ(ofrt_session_find_output(s, "y.gemm"), 1);
  EXPECT_EQ(ofrt_session_find_output(s, "nope"), -1);
  ofrt_tensor_info info = ofrt_session_output_info(s, 1);
  EXPECT_STREQ(info.name, "y.gemm");
  EXPECT_EQ(info.dtype, OFRT_F32);
  ASSERT_EQ(info.rank, 2u);
  EXPECT_EQ(info.dims[0], 4);
  EXPECT_EQ(info.bytes, 64u);
  EXPECT_EQ(ofrt_session_arena_bytes(s), 192u);

  std::vector<float> x = sequence(16, 0.5f, -3.0f), y = sequence(16, -0.25f, 1);
  ASSERT_EQ(take(ofrt_session_set_input(s, 0, x.data(), 64)), "");
  ASSERT_EQ(take(ofrt_session_set_input(s, 1, y.data(), 64)), "");
  ofrt_session_enable_profiling(s, 1);
  ASSERT_EQ(take(ofrt_session_run(s)), "");
  ASSERT_EQ(take(ofrt_session_run(s)), "");

  std::vector<float> sum(16), product(16), copy(16);
  ASSERT_EQ(take(ofrt_session_get_output(s, 0, sum.data(), 64)), "");
  ASSERT_EQ(take(ofrt_session_get_output(s, 1, product.data(), 64)), "");
  ASSERT_EQ(take(ofrt_session_get_output(s, 2, copy.data(), 64)), "");
  std::vector<float> w = sampleWeight();
  for (int i = 0; i < 16; ++i)
    EXPECT_EQ(sum[i], x[i] + y[i]);
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 4; ++j) {
      double expected = 0;
      for (int p = 0; p < 4; ++p)
        expected += double(sum[i * 4 + p]) * w[p * 4 + j];
      EXPECT_LE(std::fabs(product[i * 4 + j] - expected),
                1e-5 * std::max(1.0, std::fabs(expected)));
      EXPECT_EQ(copy[i * 4 + j], product[i * 4 + j]);
    }

  ASSERT_EQ(ofrt_session_num_steps(s), 10u);
  EXPECT_STREQ(ofrt_session_step_name(s, 0), "launch add_f32_16");
  EXPECT_STREQ(ofrt_session_step_name(s, 1), "event record 0");
  EXPECT_STREQ(ofrt_session_step_name(s, 2), "event wait 0");
  EXPECT_STREQ(ofrt_session_step_name(s, 3), "library blas.gemm");
  EXPECT_STREQ(ofrt_session_step_name(s, 4), "event record 1");
  EXPECT_STREQ(ofrt_session_step_name(s, 5), "event wait 1");
  EXPECT_STREQ(ofrt_session_step_name(s, 6), "copy p->q");
  EXPECT_STREQ(ofrt_session_step_name(s, 7), "output sum");
  EXPECT_EQ(ofrt_session_profiled_runs(s), 2u);
  EXPECT_GE(ofrt_session_step_seconds(s, 3), 0.0);
}

/// Runs the batched gemm plan and compares with a double loop.
/// A bfloat16 value as the plan stores it (round to nearest even).
struct Bf16 {
  uint16_t bits = 0;
  Bf16() = default;
  explicit Bf16(double value) {
    float f = static_cast<float>(value);
    uint32_t u;
    std::memcpy(&u, &f, 4);
    bits = static_cast<uint16_t>((u + 0x7fff + ((u >> 16) & 1)) >> 16);
  }
  explicit operator double() const {
    uint32_t u = uint32_t(bits) << 16;
    float f;
    std::memcpy(&f, &u, 4);
    return f;
  }
};

template <typename T>
void checkBatchedGemm(DType dtype, int64_t batch, int64_t m, int64_t n,
                      int64_t k, bool interleaved = false) {
  SCOPED_TRACE(testing::Message()
               << "batch " << batch << " m " << m << " n " << n << " k " << k);
  PlanHandle plan;
  SessionHandle session;
  ASSERT_NO_FATAL_FAILURE(openSession(
      makeBatchedGemmPlan(dtype, batch, m, n, k, interleaved).write(), plan,
      session));
  std::mt19937 random(42);
  std::uniform_real_distribution<double> uniform(-1, 1);
  std::vector<T> a(batch * k * m), b(n * k);
  for (T &value : a)
    value = static_cast<T>(uniform(random));
  for (T &value : b)
    value = static_cast<T>(uniform(random));
  ASSERT_EQ(take(ofrt_session_set_input(session.session, 0, a.data(),
                                        a.size() * sizeof(T))),
            "");
  ASSERT_EQ(take(ofrt_session_set_input(session.session, 1, b.data(),
                                        b.size() * sizeof(T))),
            "");
  ASSERT_EQ(take(ofrt_session_run(session.session)), "");
  int64_t ldc = interleaved ? batch * n : n + 3;
  int64_t cBatchStride = interleaved ? n : m * ldc;
  std::vector<T> c(batch * m * (interleaved ? n : ldc));
  ASSERT_EQ(take(ofrt_session_get_output(session.session, 0, c.data(),
                                         c.size() * sizeof(T))),
            "");
  for (int64_t bi = 0; bi < batch; ++bi)
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        double expected = 0;
        for (int64_t p = 0; p < k; ++p)
          // A[b] is stored [k, m], B is stored [n, k] and shared by batches.
          expected += double(a[bi * k * m + p * m + i]) * double(b[j * k + p]);
        double actual = static_cast<double>(c[bi * cBatchStride + i * ldc + j]);
        // bf16: C is rounded once from an f32 accumulator.
        double tolerance = std::is_same_v<T, Bf16> ? 8e-3 : 1e-5;
        EXPECT_LE(std::fabs(actual - expected),
                  tolerance * std::max(1.0, std::fabs(expected)))
            << "at " << bi << ", " << i << ", " << j;
      }
}

/// f32 on oneDNN's matmul and, with OF_CPU_GEMM=openblas, on OpenBLAS
/// (batches split among threads); f64 on OpenBLAS; bf16 on oneDNN; also
/// with C's batch inside its rows (an einsum's "bhtd" output seen as
/// [t, b, h*d]).
TEST(Runtime, BatchedGemmBroadcastAndTransposes) {
  for (const char *library : {"onednn", "openblas"}) {
    SCOPED_TRACE(library);
    ::setenv("OF_CPU_GEMM", library, 1);
    checkBatchedGemm<float>(DType::F32, 3, 5, 7, 6);
    checkBatchedGemm<float>(DType::F32, 1, 1, 1, 1);
    checkBatchedGemm<float>(DType::F32, 64, 16, 24, 8);
  }
  ::unsetenv("OF_CPU_GEMM");
  checkBatchedGemm<double>(DType::F64, 2, 9, 4, 11);
  checkBatchedGemm<Bf16>(DType::BF16, 3, 5, 7, 6);
  checkBatchedGemm<Bf16>(DType::BF16, 64, 16, 24, 8);
  checkBatchedGemm<float>(DType::F32, 4, 12, 16, 8, /*interleaved=*/true);
  checkBatchedGemm<Bf16>(DType::BF16, 4, 12, 16, 8, /*interleaved=*/true);
}

/// A launch with a range runs its kernel on slices of it, among threads
/// when its work pays for them (here it always does): every iteration runs
/// exactly once per run, whatever the thread count and however the range
/// divides (4097 is prime to every likely count).
TEST(Runtime, KernelRangeRunsEveryIterationOnce) {
  for (int64_t range : {int64_t(1), int64_t(2), int64_t(4097)}) {
    SamplePlan sample;
    sample.blobs = {kernelObject()};
    auto executable = std::make_unique<ExecutableT>();
    executable->name = "test_kernels";
    executable->format = "elf-shared-object";
    executable->target = "x86_64-unknown-linux-gnu";
    executable->blob = 0;
    addKernel(*executable, "count_visits", {{DType::I32, {range}}}, range,
              /*work=*/int64_t(1) << 40, /*reads=*/{0}, /*writes=*/{0});
    sample.plan.executables.push_back(std::move(executable));
    auto program = makeProgram("main", 0);
    uint32_t counts = addInput(*program, "counts", DType::I32, {range});
    addLaunch(*program, 0, "count_visits", {counts}, range,
              /*work=*/int64_t(1) << 40);
    addOutput(*program, "counts", counts);
    sample.plan.programs.push_back(std::move(program));

    PlanHandle plan;
    SessionHandle session;
    ASSERT_NO_FATAL_FAILURE(openSession(sample.write(), plan, session));
    std::vector<int32_t> zeros(range, 0), counted(range, -1);
    uint64_t bytes = range * sizeof(int32_t);
    ASSERT_EQ(
        take(ofrt_session_set_input(session.session, 0, zeros.data(), bytes)),
        "");
    ASSERT_EQ(take(ofrt_session_run(session.session)), "");
    ASSERT_EQ(take(ofrt_session_run(session.session)), "");
    ASSERT_EQ(take(ofrt_session_get_output(session.session, 0, counted.data(),
                                           bytes)),
              "");
    for (int64_t i = 0; i < range; ++i)
      ASSERT_EQ(counted[i], 2) << "iteration " << i << " of " << range;
  }
}

TEST(Runtime, NumThreads) {
  int before = ofrt_num_threads();
  EXPECT_GE(before, 1);
  EXPECT_NE(take(ofrt_set_num_threads(0)), "");
  EXPECT_EQ(ofrt_num_threads(), before);
  ASSERT_EQ(take(ofrt_set_num_threads(1)), "");
  EXPECT_EQ(ofrt_num_threads(), 1);
  ASSERT_EQ(take(ofrt_set_num_threads(3)), "");
  EXPECT_EQ(ofrt_num_threads(), 3);
  ASSERT_EQ(take(ofrt_set_num_threads(before)), "");
}

TEST(PlanErrors, NegativeKernelRange) {
  SamplePlan sample = makeSamplePlan(kernelObject());
  auto &launch = *mainProgram(sample).steps[0]->detail.AsLaunch();
  launch.range = -3;
  EXPECT_EQ(openError(sample.write()),
            "program 'main' step 0 (launch add_f32_16): negative iteration "
            "range -3 or work 16 (corrupt metadata)");
}

TEST(Runtime, GemmWithEmptyReductionZeroesC) {
  SamplePlan sample;
  auto program = makeProgram("main", 0);
  uint32_t a = addInput(*program, "a", DType::F32, {2, 0});
  uint32_t b = addInput(*program, "b", DType::F32, {0, 3});
  uint32_t c = addInput(*program, "c", DType::F32, {2, 3});
  addLibraryCall(*program, "blas.gemm", {a, b, c},
                 {1, 2, 3, 0, 0, 0, 1, 0, 3, 1, 6, 3});
  addOutput(*program, "c", c);
  sample.plan.programs.push_back(std::move(program));
  Bytes file = sample.write();
  PlanHandle plan;
  ASSERT_EQ(take(ofrt_plan_open_memory(file.data(), file.size(), &plan.plan)),
            "");
  SessionHandle session;
  ASSERT_EQ(take(ofrt_session_create(plan.plan, nullptr, 0, &session.session)),
            "");
  std::vector<float> ones(6, 1.0f);
  ASSERT_EQ(take(ofrt_session_set_input(session.session, 0, nullptr, 0)), "");
  ASSERT_EQ(take(ofrt_session_set_input(session.session, 1, nullptr, 0)), "");
  ASSERT_EQ(take(ofrt_session_set_input(session.session, 2, ones.data(), 24)),
            "");
  ASSERT_EQ(take(ofrt_session_run(session.session)), "");
  std::vector<float> result(6, 5.0f);
  ASSERT_EQ(
      take(ofrt_session_get_output(session.session, 0, result.data(), 24)), "");
  for (float value : result)
    EXPECT_EQ(value, 0.0f);
}

TEST(Runtime, ConvolutionStepsMatchLoops) {
  ConvCase conv;
  PlanHandle plan;
  SessionHandle session;
  ASSERT_NO_FATAL_FAILURE(openSession(conv.plan().write(), plan, session));
  std::mt19937 random(7);
  std::uniform_real_distribution<float> uniform(-1, 1);
  auto randomVector = [&](int64_t count) {
    std::vector<float> v(count);
    for (float &value : v)
      value = uniform(random);
    return v;
  };
  const ConvGeometry &g = conv.g;
  std::vector<float> x = randomVector(convInputElements(g)),
                     w = randomVector(convWeightElements(g)),
                     b = randomVector(g.f),
                     dy = randomVector(convOutputElements(g));
  for (auto [index, values] : {std::pair<int, std::vector<float> *>{0, &x},
                               {1, &w},
                               {2, &b},
                               {3, &dy}})
    ASSERT_EQ(
        take(ofrt_session_set_input(session.session, index, values->data(),
                                    values->size() * sizeof(float))),
        "");
  ASSERT_EQ(take(ofrt_session_run(session.session)), "");
  std::vector<double> y(dy.size()), dx(x.size()), dw(w.size());
  for (int64_t o = 0; o < static_cast<int64_t>(y.size()); ++o)
    y[o] = b[(o / (g.oh * g.ow)) % g.f];
  conv.forEachProduct([&](int64_t yi, int64_t wi, int64_t xi, int64_t) {
    y[yi] += double(x[xi]) * w[wi];
    dx[xi] += double(dy[yi]) * w[wi];
    dw[wi] += double(x[xi]) * dy[yi];
  });
  auto expectClose = [&](int output, const std::vector<double> &expected) {
    SCOPED_TRACE(testing::Message() << "output " << output);
    std::vector<float> actual(expected.size());
    ASSERT_EQ(
        take(ofrt_session_get_output(session.session, output, actual.data(),
                                     actual.size() * sizeof(float))),
        "");
    double error = 0, norm = 0;
    for (size_t i = 0; i < expected.size(); ++i) {
      error += (actual[i] - expected[i]) * (actual[i] - expected[i]);
      norm += expected[i] * expected[i];
    }
    EXPECT_GT(norm, 0);
    EXPECT_LE(std::sqrt(error / norm), 1e-5);
  };
  expectClose(0, y);
  expectClose(1, dx);
  expectClose(2, dw);
}

TEST(PlanErrors, StreamsThatRace) {
  // Without the join (event 1), the copy on stream 0 reads p while the
  // gemm on stream 1 may still write it.
  SamplePlan sample = makeSamplePlan(kernelObject());
  auto &steps = mainProgram(sample).steps;
  steps.erase(steps.begin() + 4, steps.begin() + 6);
  EXPECT_EQ(openError(sample.write()),
            "program 'main' step 4 (copy on stream 0) uses memory that step 3 "
            "(library blas.gemm on stream 1) also uses, and no event orders "
            "the two: they may run at the same time");
  // Without the hand-off (event 0), the gemm may read s before the launch
  // wrote it.
  SamplePlan early = makeSamplePlan(kernelObject());
  auto &earlySteps = mainProgram(early).steps;
  earlySteps.erase(earlySteps.begin() + 1, earlySteps.begin() + 3);
  for (auto &step : earlySteps)
    if (step->detail.type == StepDetail::EventWait)
      step->detail.AsEventWait()->event = 1;
  EXPECT_EQ(openError(early.write()),
            "program 'main' step 1 (library blas.gemm on stream 1) uses "
            "memory that step 0 (launch add_f32_16 on stream 0) also uses, "
            "and no event orders the two: they may run at the same time");
  // Distinct arena buffers race where their bytes overlap: t, written on
  // stream 0 while the gemm may still write p, shares p's bytes.
  SamplePlan shared = makeSamplePlan(kernelObject());
  auto &program = mainProgram(shared);
  uint32_t t = addArena(program, "t", DType::F32, {16}, 64);
  addLaunch(program, 0, "add_f32_16", {0, 1, t}, 16, 16);
  std::rotate(program.steps.begin() + 4, program.steps.end() - 1,
              program.steps.end());
  EXPECT_EQ(openError(shared.write()),
            "program 'main' step 4 (launch add_f32_16 on stream 0) uses "
            "memory that step 3 (library blas.gemm on stream 1) also uses, "
            "and no event orders the two: they may run at the same time");
  // Placed elsewhere, it may run alongside.
  program.buffers[t]->offset = 128 + 64;
  program.arena_size = 256;
  EXPECT_EQ(openError(shared.write()), "");
}

/// A launch passes the buffers its kernel takes: none, or one buffer for
/// several arguments, would make the kernel read its argument array out of
/// bounds or write an output over an input of another size.
TEST(PlanErrors, LaunchBuffers) {
  SamplePlan sample = makeSamplePlan(kernelObject());
  auto &launch = *mainProgram(sample).steps[0]->detail.AsLaunch();
  launch.buffers.clear();
  EXPECT_EQ(openError(sample.write()),
            "program 'main' step 0 (launch add_f32_16): the launch passes no "
            "buffers (a kernel takes the buffers it reads and writes)");
  launch.buffers = {3, 3, 3};
  EXPECT_EQ(openError(sample.write()),
            "program 'main' step 0 (launch add_f32_16): buffer 's' is passed "
            "twice (a kernel takes each buffer once)");
}

/// Every launch of a CPU kernel passes what the executable declares the
/// kernel was compiled for, with its iteration range: a range of 1 would
/// run only the kernel's first row, a smaller buffer would be written past
/// its end.
TEST(PlanErrors, LaunchDisagreesWithKernelSignature) {
  auto withSecondLaunch = [](std::vector<uint32_t> buffers, int64_t range) {
    SamplePlan sample = makeSamplePlan(kernelObject());
    addLaunch(mainProgram(sample), 0, "add_f32_16", std::move(buffers), range,
              16);
    return sample.write();
  };
  EXPECT_EQ(openError(withSecondLaunch({0, 1, 3}, 16)), "");
  // p is f32 [4, 4]: the same 16 elements, a reshaped view.
  EXPECT_EQ(openError(withSecondLaunch({0, 1, 4}, 16)), "");
  EXPECT_EQ(openError(withSecondLaunch({0, 1}, 16)),
            "program 'main' step 10 (launch add_f32_16): passes 2 buffers to "
            "kernel 'add_f32_16', which takes 3");
  EXPECT_EQ(openError(withSecondLaunch({0, 1, 2}, 16)),
            "program 'main' step 10 (launch add_f32_16): the output 'w' is "
            "a constant");
  // Inputs are only read: a launch reading an arena buffer that nothing
  // wrote reads the arena's leftovers.
  SamplePlan unwritten = makeSamplePlan(kernelObject());
  auto &main = mainProgram(unwritten);
  main.arena_size = 256;
  uint32_t t = addArena(main, "t", DType::F32, {16}, 192);
  addLaunch(main, 0, "add_f32_16", {t, 1, 3}, 16, 16);
  EXPECT_EQ(openError(unwritten.write()),
            "program 'main' step 10 (launch add_f32_16): reads buffer 't' "
            "before any step writes it");
  EXPECT_EQ(openError(withSecondLaunch({0, 1, 3}, 1)),
            "program 'main' step 10 (launch add_f32_16): launches kernel "
            "'add_f32_16' with range 1 and work 16, but it was compiled for "
            "range 16 and work 16");
  // The first launch is held to the declaration too.
  SamplePlan sample = makeSamplePlan(kernelObject());
  sample.plan.executables[0]->signatures[0]->params[2]->shape = {8};
  EXPECT_EQ(openError(sample.write()),
            "program 'main' step 0 (launch add_f32_16): argument 2 of kernel "
            "'add_f32_16' is 's' (f32 [16]), but the kernel was compiled for "
            "f32 [8]");
  sample = makeSamplePlan(kernelObject());
  sample.plan.executables[0]->signatures.pop_back();
  EXPECT_EQ(openError(sample.write()),
            "executable 'test_kernels' declares 1 kernel signatures for its 2 "
            "kernels (each kernel declares what it was compiled for; "
            "recompile the plan)");
  sample = makeSamplePlan(kernelObject());
  sample.plan.executables[0]->signatures[1]->params[0]->dtype =
      static_cast<DType>(200);
  EXPECT_EQ(openError(sample.write()),
            "executable 'test_kernels': kernel 'count_visits': parameter 0 "
            "has the invalid dtype 200");
}

/// A step reads an arena buffer only after an earlier step writes it.
TEST(PlanErrors, ReadBeforeWrite) {
  // The output "copy" moved before the copy that computes q.
  SamplePlan sample = makeSamplePlan(kernelObject());
  auto &steps = mainProgram(sample).steps;
  std::rotate(steps.begin() + 6, steps.end() - 1, steps.end());
  EXPECT_EQ(openError(sample.write()),
            "program 'main' step 6 (output): reads buffer 'q' before any step "
            "writes it");
  // Without the gemm, the copy reads a p that nothing computed.
  SamplePlan noGemm = makeSamplePlan(kernelObject());
  mainProgram(noGemm).steps.erase(mainProgram(noGemm).steps.begin() + 3);
  EXPECT_EQ(openError(noGemm.write()),
            "program 'main' step 5 (copy): reads buffer 'p' before any step "
            "writes it");
}

/// Arena buffers that are live at the same time do not share bytes; an
/// elementwise launch may write its output over an input that dies there.
TEST(PlanErrors, ArenaBuffersOverlapWhileLive) {
  SamplePlan sample = makeSamplePlan(kernelObject());
  mainProgram(sample).buffers[5]->offset = 64;
  EXPECT_EQ(openError(sample.write()),
            "program 'main' step 6: arena buffers 'p' (bytes [64, 128), live "
            "from step 3 to the end) and 'q' (bytes [64, 128), live from step "
            "6 to the end) overlap in memory while both are live");

  // b = a + y written over a, which dies at that launch.
  SamplePlan inPlace = makeSamplePlan(kernelObject());
  auto program = makeProgram("main", 64);
  uint32_t x = addInput(*program, "x", DType::F32, {16});
  uint32_t y = addInput(*program, "y", DType::F32, {16});
  uint32_t a = addArena(*program, "a", DType::F32, {16}, 0);
  uint32_t b = addArena(*program, "b", DType::F32, {16}, 0);
  addLaunch(*program, 0, "add_f32_16", {x, y, a}, 16, 16);
  addLaunch(*program, 0, "add_f32_16", {a, y, b}, 16, 16);
  addOutput(*program, "b", b);
  inPlace.plan.programs.clear();
  inPlace.plan.programs.push_back(std::move(program));
  EXPECT_EQ(openError(inPlace.write()), "");
  // Not when a is still read afterwards.
  addOutput(*inPlace.plan.programs[0], "a", a);
  EXPECT_EQ(openError(inPlace.write()),
            "program 'main' step 1: arena buffers 'a' (bytes [0, 64), live "
            "from step 0 to the end) and 'b' (bytes [0, 64), live from step 1 "
            "to the end) overlap in memory while both are live");
}

/// A gemm with a zero extent computes nothing from its operands: right
/// only when they are empty too.
TEST(PlanErrors, GemmZeroExtents) {
  SamplePlan sample = makeSamplePlan(kernelObject());
  auto &params = mainProgram(sample).steps[3]->detail.AsLibraryCall()->params;
  params[1] = 0; // m
  EXPECT_EQ(openError(sample.write()),
            "program 'main' step 3 (library blas.gemm): blas.gemm's extent m "
            "is 0, so the step writes none of C 'p' (16 elements)");
  params[1] = 4;
  params[3] = 0; // k
  EXPECT_EQ(openError(sample.write()),
            "program 'main' step 3 (library blas.gemm): blas.gemm's extent k "
            "is 0, so the step zeroes C without reading A 's' (16 elements)");
}

TEST(PlanErrors, ConvolutionParameters) {
  ConvCase conv;
  SamplePlan sample = conv.plan();
  auto *forward = mainProgram(sample).steps[0]->detail.AsLibraryCall();
  forward->params[7] = 4; // OH: the geometry gives 3
  EXPECT_EQ(openError(sample.write()),
            "program 'main' step 0 (library dnn.conv2d): dnn.conv2d "
            "parameters: the output extent does not follow from the input, "
            "kernel, padding, dilation and stride");
  forward->params = conv.params();
  forward->params[17] = 3; // groups 3 divides neither 4 nor 6
  EXPECT_EQ(openError(sample.write()),
            "program 'main' step 0 (library dnn.conv2d): dnn.conv2d "
            "parameters: groups must divide the input and output channels");
  forward->params.pop_back();
  EXPECT_EQ(openError(sample.write()),
            "program 'main' step 0 (library dnn.conv2d): dnn.conv2d takes 18 "
            "parameters, got 17");
  forward->params = conv.params();
  forward->buffers = {0, 1, 2, 5}; // dx (2x4x7x6) as y (2x6x3x7)
  EXPECT_EQ(openError(sample.write()),
            "program 'main' step 0 (library dnn.conv2d): dnn.conv2d buffer 3 "
            "('dx') has 336 elements, its geometry needs 252");
  forward->buffers = {0, 1, 2, 0}; // y into x
  EXPECT_EQ(openError(sample.write()),
            "program 'main' step 0 (library dnn.conv2d): dnn.conv2d uses "
            "buffer 'x' twice");
  forward->buffers = {0, 1};
  EXPECT_EQ(openError(sample.write()),
            "program 'main' step 0 (library dnn.conv2d): dnn.conv2d takes "
            "buffers [x, w, y] or [x, w, bias, y], got 2");
}

TEST(SessionErrors, ConvolutionTypeTheCpuCannotRun) {
  // oneDNN has no f64 convolution: the session, not a run, says so.
  EXPECT_EQ(sessionError(ConvCase().plan(DType::F64).write(), "main"),
            "program 'main' step 0 (library dnn.conv2d: oneDNN has no f64 "
            "convolution (f32, bf16 and f16 only))");
}

/// Runs PoolCase's plan in `dtype` (elements T: float or Bf16) and compares
/// with loops over the same (rounded) inputs, within `tolerance`.
template <typename T> void checkPooling(DType dtype, double tolerance) {
  PoolCase pool;
  const PoolGeometry &g = pool.g;
  PlanHandle plan;
  SessionHandle session;
  ASSERT_NO_FATAL_FAILURE(openSession(pool.plan(dtype).write(), plan, session));
  // Few distinct values, so that windows hold ties: a max gradient goes to
  // the first largest element in row-major window order (PyTorch's rule).
  std::mt19937 random(11);
  std::uniform_int_distribution<int> level(-2, 2);
  std::uniform_real_distribution<float> uniform(-1, 1);
  std::vector<T> xIn(poolInputElements(g)), dyIn(poolOutputElements(g));
  std::vector<double> x(xIn.size()), dy(dyIn.size());
  for (size_t i = 0; i < x.size(); ++i) {
    xIn[i] = T(0.5 * level(random));
    x[i] = double(xIn[i]);
  }
  for (size_t i = 0; i < dy.size(); ++i) {
    dyIn[i] = T(uniform(random));
    dy[i] = double(dyIn[i]);
  }
  ASSERT_EQ(take(ofrt_session_set_input(session.session, 0, xIn.data(),
                                        xIn.size() * sizeof(T))),
            "");
  ASSERT_EQ(take(ofrt_session_set_input(session.session, 1, dyIn.data(),
                                        dyIn.size() * sizeof(T))),
            "");
  ASSERT_EQ(take(ofrt_session_run(session.session)), "");

  std::vector<double> max(dy.size()), avg(dy.size()), avgInside(dy.size()),
      dmax(x.size()), davg(x.size()), davgPad(x.size());
  for (int64_t n = 0; n < g.n * g.c; ++n)
    for (int64_t i = 0; i < g.oh; ++i)
      for (int64_t j = 0; j < g.ow; ++j) {
        int64_t o = (n * g.oh + i) * g.ow + j, first = -1, inside = 0;
        double sum = 0;
        for (int64_t p = 0; p < g.kh; ++p)
          for (int64_t q = 0; q < g.kw; ++q) {
            int64_t h = i * g.strideH + p - g.padTop;
            int64_t v = j * g.strideW + q - g.padLeft;
            if (h < 0 || h >= g.h || v < 0 || v >= g.w)
              continue;
            int64_t e = (n * g.h + h) * g.w + v;
            if (first < 0 || x[e] > x[first])
              first = e;
            sum += x[e];
            ++inside;
          }
        ASSERT_GE(first, 0);
        max[o] = x[first];
        avg[o] = sum / double(g.kh * g.kw);
        avgInside[o] = sum / double(inside);
        dmax[first] += dy[o];
        for (int64_t p = 0; p < g.kh; ++p)
          for (int64_t q = 0; q < g.kw; ++q) {
            int64_t h = i * g.strideH + p - g.padTop;
            int64_t v = j * g.strideW + q - g.padLeft;
            if (h >= 0 && h < g.h && v >= 0 && v < g.w) {
              davg[(n * g.h + h) * g.w + v] += dy[o] / double(inside);
              davgPad[(n * g.h + h) * g.w + v] += dy[o] / double(g.kh * g.kw);
            }
          }
      }
  int output = 0;
  for (const std::vector<double> *expected :
       {&max, &avg, &avgInside, &dmax, &davg, &davgPad}) {
    SCOPED_TRACE(testing::Message() << "output " << output);
    std::vector<T> actual(expected->size());
    ASSERT_EQ(
        take(ofrt_session_get_output(session.session, output++, actual.data(),
                                     actual.size() * sizeof(T))),
        "");
    for (size_t i = 0; i < actual.size(); ++i)
      ASSERT_NEAR(double(actual[i]), (*expected)[i], tolerance)
          << "element " << i;
  }
}

TEST(Runtime, PoolingStepsMatchLoops) {
  checkPooling<float>(DType::F32, 1e-5);
  // bf16 on oneDNN: the inputs are exact in bf16, the results rounded once
  // (2^-8 relative; a gradient sums up to six window shares).
  checkPooling<Bf16>(DType::BF16, 2e-2);
}

TEST(PlanErrors, PoolingParameters) {
  PoolCase pool;
  SamplePlan sample = pool.plan();
  auto *forward = mainProgram(sample).steps[0]->detail.AsLibraryCall();
  forward->params[6] = 5; // OH: the geometry gives 4
  EXPECT_EQ(openError(sample.write()),
            "program 'main' step 0 (library dnn.pool2d): dnn.pool2d "
            "parameters: the output extent does not follow from the input, "
            "kernel, padding, dilation and stride");
  forward->params = pool.params(PoolMode::Max);
  forward->params[14] = 7;
  EXPECT_EQ(openError(sample.write()),
            "program 'main' step 0 (library dnn.pool2d): dnn.pool2d "
            "parameters: the mode must be 0 (max), 1 (avg counting padding) "
            "or 2 (avg not counting it)");
  forward->params.pop_back();
  EXPECT_EQ(openError(sample.write()),
            "program 'main' step 0 (library dnn.pool2d): dnn.pool2d takes 15 "
            "parameters, got 14");
  forward->params = pool.params(PoolMode::Max);
  forward->buffers = {0, 5}; // dmax (2x3x7x6) as y (2x3x4x6)
  EXPECT_EQ(openError(sample.write()),
            "program 'main' step 0 (library dnn.pool2d): dnn.pool2d buffer 1 "
            "('dmax') has 252 elements, its geometry needs 144");
  forward->buffers = {0};
  EXPECT_EQ(openError(sample.write()),
            "program 'main' step 0 (library dnn.pool2d): dnn.pool2d takes "
            "buffers [x, y], got 1");
  forward->buffers = {0, 2};
  auto *gradient = mainProgram(sample).steps[3]->detail.AsLibraryCall();
  gradient->buffers = {0, 1, 0};
  EXPECT_EQ(openError(sample.write()),
            "program 'main' step 3 (library dnn.pool2d_grad): "
            "dnn.pool2d_grad uses buffer 'x' twice");
}

TEST(SessionErrors, PoolingTypeTheCpuCannotRun) {
  // oneDNN has no f64 pooling: the session, not a run, says so.
  EXPECT_EQ(sessionError(PoolCase().plan(DType::F64).write(), "main"),
            "program 'main' step 0 (library dnn.pool2d: oneDNN has no f64 "
            "pooling (f32, bf16 and f16 only))");
}

TEST(Runtime, BatchNormStepsMatchLoops) {
  NormCase norm;
  const BatchNormGeometry &g = norm.g;
  PlanHandle plan;
  SessionHandle session;
  ASSERT_NO_FATAL_FAILURE(openSession(norm.plan().write(), plan, session));
  // Channels of different means and spreads.
  std::mt19937 random(5);
  std::uniform_real_distribution<float> uniform(-1, 1);
  int64_t size = batchNormInputElements(g);
  std::vector<float> xIn(size), dyIn(size), scaleIn(g.c), shiftIn(g.c);
  for (int64_t i = 0; i < size; ++i) {
    int64_t c = (i / g.s) % g.c;
    xIn[i] = float(c) + float(c + 1) * uniform(random);
    dyIn[i] = uniform(random);
  }
  for (int64_t c = 0; c < g.c; ++c) {
    scaleIn[c] = 0.5f + float(c);
    shiftIn[c] = uniform(random);
  }
  int input = 0;
  for (const std::vector<float> *in : {&xIn, &dyIn, &scaleIn, &shiftIn}) {
    ASSERT_EQ(take(ofrt_session_set_input(session.session, input++, in->data(),
                                          in->size() * sizeof(float))),
              "");
  }
  ASSERT_EQ(take(ofrt_session_run(session.session)), "");

  // In double: y = xhat * scale + shift; dshift = sum(dy), dscale =
  // sum(dy * xhat), dx = scale * rstd * (dy - (dshift + xhat * dscale) / m).
  double m = double(g.n * g.s);
  std::vector<double> mean(g.c), var(g.c), y(size), dx(size), dscale(g.c),
      dshift(g.c);
  auto at = [&](int64_t n, int64_t c, int64_t s) {
    return (n * g.c + c) * g.s + s;
  };
  for (int64_t c = 0; c < g.c; ++c) {
    for (int64_t n = 0; n < g.n; ++n)
      for (int64_t s = 0; s < g.s; ++s)
        mean[c] += xIn[at(n, c, s)] / m;
    for (int64_t n = 0; n < g.n; ++n)
      for (int64_t s = 0; s < g.s; ++s) {
        double d = xIn[at(n, c, s)] - mean[c];
        var[c] += d * d / m;
      }
    double rstd = 1.0 / std::sqrt(var[c] + g.epsilon);
    auto xhat = [&](int64_t i) { return (xIn[i] - mean[c]) * rstd; };
    for (int64_t n = 0; n < g.n; ++n)
      for (int64_t s = 0; s < g.s; ++s) {
        int64_t i = at(n, c, s);
        y[i] = xhat(i) * scaleIn[c] + shiftIn[c];
        dshift[c] += dyIn[i];
        dscale[c] += dyIn[i] * xhat(i);
      }
    for (int64_t n = 0; n < g.n; ++n)
      for (int64_t s = 0; s < g.s; ++s) {
        int64_t i = at(n, c, s);
        dx[i] = scaleIn[c] * rstd *
                (dyIn[i] - (dshift[c] + xhat(i) * dscale[c]) / m);
      }
  }
  int output = 0;
  for (const std::vector<double> *expected :
       {&y, &mean, &var, &dx, &dscale, &dshift}) {
    SCOPED_TRACE(testing::Message() << "output " << output);
    std::vector<float> actual(expected->size());
    ASSERT_EQ(
        take(ofrt_session_get_output(session.session, output++, actual.data(),
                                     actual.size() * sizeof(float))),
        "");
    for (size_t i = 0; i < actual.size(); ++i)
      ASSERT_NEAR(double(actual[i]), (*expected)[i],
                  2e-5 * (1 + std::abs((*expected)[i])))
          << "element " << i;
  }
}

TEST(PlanErrors, BatchNormParameters) {
  NormCase norm;
  SamplePlan sample = norm.plan();
  auto *forward = mainProgram(sample).steps[0]->detail.AsLibraryCall();
  forward->params[3] = encodeBatchNormEpsilon(-1.0);
  EXPECT_EQ(openError(sample.write()),
            "program 'main' step 0 (library dnn.batch_norm): dnn.batch_norm "
            "parameters: epsilon must be positive and finite");
  forward->params[3] = encodeBatchNormEpsilon(std::nan(""));
  EXPECT_EQ(openError(sample.write()),
            "program 'main' step 0 (library dnn.batch_norm): dnn.batch_norm "
            "parameters: epsilon must be positive and finite");
  forward->params = norm.params();
  forward->params[1] = 5; // C: the buffers have 4 channels
  EXPECT_EQ(openError(sample.write()),
            "program 'main' step 0 (library dnn.batch_norm): dnn.batch_norm "
            "buffer 0 ('x') has 120 elements, its geometry needs 150");
  forward->params = norm.params();
  forward->params.pop_back();
  EXPECT_EQ(openError(sample.write()),
            "program 'main' step 0 (library dnn.batch_norm): dnn.batch_norm "
            "takes 4 parameters, got 3");
  forward->params = norm.params();
  forward->buffers.pop_back();
  EXPECT_EQ(openError(sample.write()),
            "program 'main' step 0 (library dnn.batch_norm): dnn.batch_norm "
            "takes buffers [x, scale, shift, y, mean, var], got 5");
  forward->buffers.push_back(0); // var into x, an input
  EXPECT_EQ(openError(sample.write()),
            "program 'main' step 0 (library dnn.batch_norm): dnn.batch_norm "
            "uses buffer 'x' twice");
  // An input read twice is fine (scale and shift one tensor).
  forward->buffers = {0, 2, 2, 4, 5, 6};
  EXPECT_EQ(openError(sample.write()), "");
  auto *gradient = mainProgram(sample).steps[1]->detail.AsLibraryCall();
  forward->buffers = {0, 2, 3, 4, 5, 6};
  gradient->buffers.pop_back();
  EXPECT_EQ(openError(sample.write()),
            "program 'main' step 1 (library dnn.batch_norm_grad): "
            "dnn.batch_norm_grad takes buffers [x, dy, scale, mean, var, dx, "
            "dscale, dshift], got 7");
  // oneDNN and cuDNN keep statistics in f32: the step is f32 only.
  EXPECT_EQ(openError(norm.plan(DType::BF16).write()),
            "program 'main' step 0 (library dnn.batch_norm): dnn.batch_norm "
            "is f32 only, got bf16");
}

TEST(Runtime, IndexRangeCheck) {
  SamplePlan sample = makeSamplePlan(kernelObject());
  // Where the check comes from in the source, which the error names.
  ASSERT_EQ(sample.plan.programs[1]->entry, "check");
  sample.plan.programs[1]->steps[0]->origin = "model.py:7:1";
  Bytes file = sample.write();
  PlanHandle plan;
  ASSERT_EQ(take(ofrt_plan_open_memory(file.data(), file.size(), &plan.plan)),
            "");
  SessionHandle session;
  ASSERT_EQ(take(ofrt_session_create(plan.plan, "check", 0, &session.session)),
            "");
  std::vector<int32_t> ids = {0, 1, 15, 3, 4, 16, 6, 7};
  ASSERT_EQ(take(ofrt_session_set_input(session.session, 0, ids.data(), 32)),
            "");
  EXPECT_EQ(take(ofrt_session_run(session.session)),
            "index 16 out of range [0, 16) in input 'ids' at element 5 "
            "[program 'check' step 0 (library check.index_range, from "
            "model.py:7:1)]");
  std::vector<int32_t> out(8);
  EXPECT_EQ(take(ofrt_session_get_output(session.session, 0, out.data(), 32)),
            "output 'ids' has no value: no run has completed successfully");
  ids[5] = 5;
  ASSERT_EQ(take(ofrt_session_set_input(session.session, 0, ids.data(), 32)),
            "");
  EXPECT_EQ(take(ofrt_session_run(session.session)), "");
  EXPECT_EQ(take(ofrt_session_get_output(session.session, 0, out.data(), 32)),
            "");
  EXPECT_EQ(out, ids);
}

TEST(Runtime, OneRankCollectiveIsACopy) {
  SamplePlan sample;
  auto program = makeProgram("main", 64);
  program->ranks = {0};
  uint32_t x = addInput(*program, "x", DType::F32, {16});
  uint32_t r = addArena(*program, "r", DType::F32, {16}, 0);
  CollectiveT collective;
  collective.kind = CollectiveKind::AllReduce;
  collective.group = {0};
  collective.src = x;
  collective.dst = r;
  addStep(*program, collective);
  addOutput(*program, "r", r);
  sample.plan.programs.push_back(std::move(program));
  Bytes file = sample.write();
  PlanHandle plan;
  ASSERT_EQ(take(ofrt_plan_open_memory(file.data(), file.size(), &plan.plan)),
            "");
  EXPECT_EQ(ofrt_plan_world_size(plan.plan), 1);
  SessionHandle session;
  ASSERT_EQ(take(ofrt_session_create(plan.plan, nullptr, 0, &session.session)),
            "");
  EXPECT_STREQ(ofrt_session_step_name(session.session, 0),
               "collective AllReduce");
  std::vector<float> in = sequence(16, 2, 1), out(16);
  ASSERT_EQ(take(ofrt_session_set_input(session.session, 0, in.data(), 64)),
            "");
  ASSERT_EQ(take(ofrt_session_run(session.session)), "");
  ASSERT_EQ(take(ofrt_session_get_output(session.session, 0, out.data(), 64)),
            "");
  EXPECT_EQ(out, in);
}

//===----------------------------------------------------------------------===//
// Multi-rank plans without MPI: local collectives, distributions, checks
//===----------------------------------------------------------------------===//

DistributionT makeDist(std::vector<int64_t> global, std::vector<int64_t> mesh,
                       std::vector<int32_t> ranks, std::vector<int32_t> sbp) {
  DistributionT dist;
  dist.global_shape = std::move(global);
  dist.mesh = std::move(mesh);
  dist.mesh_ranks = std::move(ranks);
  dist.sbp = std::move(sbp);
  return dist;
}

void addCollective(ProgramT &program, CollectiveKind kind, uint32_t src,
                   uint32_t dst, std::vector<int32_t> group,
                   std::vector<int64_t> shape, int dim = 0,
                   ReduceOp reduce = ReduceOp::Sum,
                   std::vector<int64_t> mesh = {}, int axis = 0,
                   int dim2 = 0) {
  CollectiveT collective;
  collective.kind = kind;
  collective.reduce = reduce;
  collective.group = std::move(group);
  collective.src = src;
  collective.dst = dst;
  collective.shape = std::move(shape);
  collective.dim = dim;
  collective.dim2 = dim2;
  collective.mesh = std::move(mesh);
  collective.axis = axis;
  addStep(program, std::move(collective));
}

void setDist(ProgramT &program, uint32_t buffer, DistributionT dist) {
  program.buffers[buffer]->dist = std::make_unique<DistributionT>(dist);
}

void addOutputWithDist(ProgramT &program, const std::string &name,
                       uint32_t buffer, DistributionT dist) {
  OutputT output;
  output.name = name;
  output.buffer = buffer;
  output.dist = std::make_unique<DistributionT>(dist);
  addStep(program, std::move(output));
}

/// A 2-rank plan with one program per rank: x is f32 [5, 3] S(0) (3 and
/// 2 rows); rank r slices its x by columns (slice, dim 1: 2 and 1
/// columns) and turns it partial (to_partial, sum and max); outputs s, p,
/// m (no distribution) and x (S(0)).
SamplePlan makeTwoRankLocalPlan() {
  SamplePlan sample;
  sample.plan.world_size = 2;
  for (int rank = 0; rank < 2; ++rank) {
    int64_t rows = rank == 0 ? 3 : 2, cols = rank == 0 ? 2 : 1;
    auto program = makeProgram("main", 256);
    program->ranks = {rank};
    uint32_t x = addInput(*program, "x", DType::F32, {rows, 3});
    setDist(*program, x, makeDist({5, 3}, {2}, {0, 1}, {0}));
    uint32_t s = addArena(*program, "s", DType::F32, {rows, cols}, 0);
    uint32_t p = addArena(*program, "p", DType::F32, {rows, 3}, 64);
    uint32_t m = addArena(*program, "m", DType::F32, {rows, 3}, 128);
    addCollective(*program, CollectiveKind::Slice, x, s, {0, 1}, {rows, 3},
                  1);
    addCollective(*program, CollectiveKind::ToPartial, x, p, {0, 1},
                  {rows, 3});
    addCollective(*program, CollectiveKind::ToPartial, x, m, {0, 1},
                  {rows, 3}, 0, ReduceOp::Max);
    addOutput(*program, "s", s);
    addOutput(*program, "p", p);
    addOutput(*program, "m", m);
    addOutputWithDist(*program, "x", x, makeDist({5, 3}, {2}, {0, 1}, {0}));
    sample.plan.programs.push_back(std::move(program));
  }
  return sample;
}

TEST(MultiRank, LocalCollectivesAndInputPartsWithoutMpi) {
  Bytes file = makeTwoRankLocalPlan().write();
  PlanHandle plan;
  ASSERT_EQ(take(ofrt_plan_open_memory(file.data(), file.size(), &plan.plan)),
            "");
  EXPECT_EQ(ofrt_plan_world_size(plan.plan), 2);
  SessionHandle session;
  ASSERT_EQ(take(ofrt_session_create(plan.plan, nullptr, 1, &session.session)),
            "");
  ofrt_session *s = session.session;
  ofrt_dist dist;
  ASSERT_EQ(ofrt_session_input_dist(s, 0, &dist), 1);
  ASSERT_EQ(dist.rank, 2u);
  EXPECT_EQ(dist.global_dims[0], 5);
  EXPECT_EQ(dist.global_bytes, 60u);
  ASSERT_EQ(dist.mesh_rank, 1u);
  EXPECT_EQ(dist.mesh[0], 2);
  EXPECT_EQ(dist.sbp[0], 0);
  ASSERT_EQ(dist.num_mesh_ranks, 2u);
  EXPECT_EQ(dist.mesh_ranks[1], 1);
  EXPECT_EQ(ofrt_session_output_dist(s, 1, &dist), 0);
  EXPECT_EQ(dist.rank, 0u);

  std::vector<float> global = sequence(15, 1, 0);
  EXPECT_EQ(take(ofrt_session_set_input_global(s, 0, global.data(), 24)),
            "input 'x' takes the global f32 [5, 3] (60 bytes), got 24");
  ASSERT_EQ(take(ofrt_session_set_input_global(s, 0, global.data(), 60)), "");
  ASSERT_EQ(take(ofrt_session_run(s)), "");
  // Rank 1 holds rows 3 and 4; its column chunk of 3 over 2 is column 2.
  std::vector<float> sliced(2), partial(6), maxed(6);
  ASSERT_EQ(take(ofrt_session_get_output(s, 0, sliced.data(), 8)), "");
  EXPECT_EQ(sliced, (std::vector<float>{11, 14}));
  ASSERT_EQ(take(ofrt_session_get_output(s, 1, partial.data(), 24)), "");
  EXPECT_EQ(partial, std::vector<float>(6, 0.0f));
  ASSERT_EQ(take(ofrt_session_get_output(s, 2, maxed.data(), 24)), "");
  EXPECT_EQ(maxed, std::vector<float>(6, -INFINITY));
  // Gathering a part of two ranks needs the communicator; an output
  // without a distribution is this process's value.
  std::vector<float> all(15);
  int root = -1;
  EXPECT_EQ(take(ofrt_session_gather_output(s, 3, all.data(), 60, &root)),
            "output 'x' is distributed over 2 ranks; gathering it needs the "
            "session's communicator");
  EXPECT_EQ(take(ofrt_session_gather_output(s, 3, all.data(), 24, &root)),
            "output 'x' is 60 bytes globally (f32 [5, 3]), got 24");
  std::fill(sliced.begin(), sliced.end(), 0.0f);
  ASSERT_EQ(take(ofrt_session_gather_output(s, 0, sliced.data(), 8, &root)),
            "");
  EXPECT_EQ(root, 1);
  EXPECT_EQ(sliced, (std::vector<float>{11, 14}));
}

TEST(MultiRank, CollectiveOverRanksNeedsACommunicator) {
  SamplePlan sample;
  sample.plan.world_size = 2;
  auto program = makeProgram("main", 64);
  program->ranks = {0, 1};
  uint32_t x = addInput(*program, "x", DType::F32, {4});
  uint32_t r = addArena(*program, "r", DType::F32, {4}, 0);
  addCollective(*program, CollectiveKind::AllReduce, x, r, {0, 1}, {4});
  addOutput(*program, "r", r);
  sample.plan.programs.push_back(std::move(program));
  Bytes file = sample.write();
  PlanHandle plan;
  ASSERT_EQ(take(ofrt_plan_open_memory(file.data(), file.size(), &plan.plan)),
            "");
  SessionHandle session;
  ASSERT_EQ(take(ofrt_session_create(plan.plan, nullptr, 1, &session.session)),
            "");
  std::vector<float> in(4, 1.0f);
  ASSERT_EQ(take(ofrt_session_set_input(session.session, 0, in.data(), 16)),
            "");
  EXPECT_EQ(take(ofrt_session_run(session.session)),
            "all_reduce at step 0 (program 'main') runs over 2 ranks; the "
            "session has no communicator (run the plan under MPI: of-run -n "
            "N, or ofrt_session_create_with_comm)");
  EXPECT_EQ(take(ofrt_session_create_with_comm(plan.plan, nullptr, nullptr,
                                               &session.session)),
            "ofrt_session_create_with_comm: the communicator is NULL");
}

/// Edits one collective of a fresh 2-rank plan and returns the loader's
/// error: x f32 [4, 6] on both ranks, r f32 [2, 6].
std::string collectiveError(void (*edit)(SamplePlan &, CollectiveT &)) {
  SamplePlan sample;
  sample.plan.world_size = 2;
  auto program = makeProgram("main", 256);
  program->ranks = {0, 1};
  uint32_t x = addInput(*program, "x", DType::F32, {4, 6});
  uint32_t r = addArena(*program, "r", DType::F32, {2, 6}, 0);
  addArena(*program, "b", DType::I1, {4, 6}, 64);
  addCollective(*program, CollectiveKind::ReduceScatter, x, r, {0, 1}, {4, 6},
                0);
  sample.plan.programs.push_back(std::move(program));
  EXPECT_EQ(openError(sample.write()), "");
  edit(sample, *sample.plan.programs[0]->steps[0]->detail.AsCollective());
  return openError(sample.write());
}

TEST(PlanErrors, CollectiveLayouts) {
  const std::string where = "program 'main' step 0 (collective): ";
  EXPECT_EQ(collectiveError([](SamplePlan &, CollectiveT &c) {
              c.shape = {5, 6};
            }),
            where + "on rank 0 (coordinate 0 of 2 on axis 0) the source 'x' "
                    "must hold f32 [5, 6] (30 elements), but it holds 24");
  EXPECT_EQ(collectiveError([](SamplePlan &, CollectiveT &c) {
              c.kind = CollectiveKind::AllGather;
              c.shape = {5, 6};
            }),
            where + "on rank 0 (coordinate 0 of 2 on axis 0) the source 'x' "
                    "must hold f32 [3, 6] (18 elements), but it holds 24");
  EXPECT_EQ(collectiveError([](SamplePlan &, CollectiveT &c) { c.dim = 2; }),
            where + "dim 2 is outside the shape [4, 6]");
  EXPECT_EQ(collectiveError([](SamplePlan &, CollectiveT &c) {
              c.mesh = {3};
            }),
            where + "the mesh [3] has 3 positions, but the group [0, 1] has 2 "
                    "ranks");
  EXPECT_EQ(collectiveError([](SamplePlan &, CollectiveT &c) {
              c.axis = 1;
            }),
            where + "axis 1 is outside the mesh [2]");
  EXPECT_EQ(collectiveError([](SamplePlan &, CollectiveT &c) {
              c.group = {1};
            }),
            where + "rank 0 runs the reduce_scatter but is not in its group "
                    "[1]");
  EXPECT_EQ(collectiveError([](SamplePlan &, CollectiveT &c) {
              c.group = {0, 2};
            }),
            where + "the group names rank 2, which runs no program of this "
                    "entry");
  EXPECT_EQ(collectiveError([](SamplePlan &, CollectiveT &c) { c.dst = 0; }),
            where + "on rank 0 (coordinate 0 of 2 on axis 0) the destination "
                    "'x' must hold f32 [2, 6] (12 elements), but it holds 24");
  EXPECT_EQ(collectiveError([](SamplePlan &, CollectiveT &c) { c.src = 2; }),
            where + "the source 'b' is i1 but the destination 'r' is f32");
  EXPECT_EQ(collectiveError([](SamplePlan &, CollectiveT &c) {
              c.kind = CollectiveKind::AllReduce;
              c.src = 2;
              c.dst = 2;
              c.shape = {4, 6};
            }),
            where + "cannot reduce i1 values (reductions take floats and "
                    "integers)");
  EXPECT_EQ(collectiveError([](SamplePlan &, CollectiveT &c) {
              c.kind = CollectiveKind::AllToAll;
              c.shape.clear();
            }),
            where + "all_to_all needs a shape");
  EXPECT_EQ(collectiveError([](SamplePlan &, CollectiveT &c) {
              c.kind = CollectiveKind::AllToAll;
              c.shape = {4, 6};
              c.dim2 = 0;
            }),
            where + "all_to_all needs dim != dim2 (both are 0)");
  EXPECT_EQ(collectiveError([](SamplePlan &, CollectiveT &c) {
              c.kind = CollectiveKind::Send;
              c.peer = 0;
            }),
            where + "rank 0 would send to itself (peer 0)");
  EXPECT_EQ(collectiveError([](SamplePlan &s, CollectiveT &) {
              s.plan.world_size = 1;
            }),
            "program 'main' runs rank 1, but the plan's world size is 1");
}

/// Edits a fresh 2-rank plan whose input x is f32 [4, 6] S(0) (local
/// [2, 6]) and returns the loader's error.
std::string distError(void (*edit)(SamplePlan &, ProgramT &)) {
  SamplePlan sample;
  sample.plan.world_size = 2;
  auto program = makeProgram("main", 64);
  program->ranks = {0, 1};
  uint32_t x = addInput(*program, "x", DType::F32, {2, 6});
  setDist(*program, x, makeDist({4, 6}, {2}, {0, 1}, {0}));
  addOutputWithDist(*program, "y", x, makeDist({4, 6}, {2}, {0, 1}, {0}));
  sample.plan.programs.push_back(std::move(program));
  EXPECT_EQ(openError(sample.write()), "");
  edit(sample, *sample.plan.programs[0]);
  return openError(sample.write());
}

TEST(PlanErrors, Distributions) {
  const std::string input = "program 'main': input buffer 'x'";
  EXPECT_EQ(distError([](SamplePlan &, ProgramT &p) {
              p.buffers[0]->dist->global_shape = {5, 6};
            }),
            input + " is [2, 6] on rank 0, but its distribution (global [5, "
                    "6] over mesh [2] ranks [0, 1] sbp [S(0)]) gives rank 0 "
                    "the part [3, 6]");
  EXPECT_EQ(distError([](SamplePlan &, ProgramT &p) {
              p.buffers[0]->dist->sbp = {0, -1};
            }),
            input + ": the distribution has 2 sbp entries for the 1-axis mesh "
                    "[2] (one per axis)");
  EXPECT_EQ(distError([](SamplePlan &, ProgramT &p) {
              p.buffers[0]->dist->sbp = {2};
            }),
            input + ": the distribution's sbp entry S(2) is invalid for the "
                    "global shape [4, 6] (S(d) needs d < rank)");
  EXPECT_EQ(distError([](SamplePlan &, ProgramT &p) {
              p.buffers[0]->dist->mesh = {4};
            }),
            input + ": the distribution's mesh [4] has 4 positions, but "
                    "mesh_ranks lists 2 ranks");
  EXPECT_EQ(distError([](SamplePlan &, ProgramT &p) {
              p.buffers[0]->dist->mesh_ranks = {0, 0};
            }),
            input + ": the distribution's mesh_ranks [0, 0] name rank 0 "
                    "twice");
  EXPECT_EQ(distError([](SamplePlan &, ProgramT &p) {
              p.buffers[0]->dist->mesh = {1, 2};
              p.buffers[0]->dist->sbp = {-2, -3};
            }),
            input + ": the distribution (global [4, 6] over mesh [1, 2] ranks "
                    "[0, 1] sbp [P, P(max)]) mixes P (sum) and P(max)");
  EXPECT_EQ(distError([](SamplePlan &, ProgramT &p) {
              p.steps[0]->detail.AsOutput()->dist->sbp = {1};
            }),
            "program 'main' step 0 (output): output 'y' is [2, 6] on rank 0, "
            "but its distribution (global [4, 6] over mesh [2] ranks [0, 1] "
            "sbp [S(1)]) gives rank 0 the part [4, 3]");
  EXPECT_EQ(distError([](SamplePlan &s, ProgramT &p) {
              auto other = std::make_unique<ProgramT>();
              flatbuffers::FlatBufferBuilder builder;
              builder.Finish(Program::Pack(builder, &p));
              flatbuffers::GetRoot<Program>(builder.GetBufferPointer())
                  ->UnPackTo(
                  other.get());
              p.ranks = {0};
              other->ranks = {1};
              other->buffers[0]->dist->sbp = {-1};
              other->buffers[0]->shape = {4, 6};
              other->buffers[0]->size = 96;
              other->steps.clear();
              addOutputWithDist(*other, "y", 0,
                                makeDist({4, 6}, {2}, {0, 1}, {-1}));
              s.plan.programs.push_back(std::move(other));
            }),
            "entry 'main': the input 'x' is f32 global [4, 6] over mesh [2] "
            "ranks [0, 1] sbp [B] in the program of ranks [1] but f32 global "
            "[4, 6] over mesh [2] ranks [0, 1] sbp [S(0)] in the program of "
            "ranks [0]");
}

//===----------------------------------------------------------------------===//
// Corrupt files
//===----------------------------------------------------------------------===//

TEST(PlanErrors, FlippedByteFailsTheChecksum) {
  Bytes file = makeSamplePlan(kernelObject()).write();
  file[file.size() / 2] ^= 0x10;
  EXPECT_NE(openError(file).find("plan checksum mismatch"), std::string::npos)
      << openError(file);
}

TEST(PlanErrors, TruncatedFile) {
  Bytes file = makeSamplePlan(kernelObject()).write();
  size_t size = file.size();
  file.resize(size - 100);
  EXPECT_EQ(openError(file),
            "truncated plan: the file is " + std::to_string(size - 100) +
                " bytes, its header says " + std::to_string(size));
  file.resize(40);
  EXPECT_EQ(openError(file), "truncated plan: the file is 40 bytes, shorter "
                             "than the 64-byte header");
  file.resize(size + 100, 0);
  EXPECT_NE(openError(file).find("plan has trailing bytes"), std::string::npos);
}

TEST(PlanErrors, WrongMagic) {
  Bytes file = makeSamplePlan(kernelObject()).write();
  file[1] = 'X';
  EXPECT_EQ(openError(file),
            "not an OF plan: the file does not start with the .ofp magic");
  EXPECT_EQ(openError(Bytes{}),
            "not an OF plan: the file does not start with the .ofp magic");
}

TEST(PlanErrors, WrongVersion) {
  Bytes file = makeSamplePlan(kernelObject()).write();
  uint32_t version = 7;
  std::memcpy(file.data() + 8, &version, 4);
  EXPECT_EQ(openError(file),
            "plan format version 7, this runtime reads version 3");
}

TEST(PlanErrors, GarbageMetadataWithValidChecksum) {
  Bytes file = makeSamplePlan(kernelObject()).write();
  // Keep the identifier, scramble the root table offset.
  file[64] = 0xff;
  file[65] = 0xff;
  rewriteChecksum(file);
  EXPECT_EQ(openError(file), "plan metadata fails the FlatBuffers verifier "
                             "(corrupt, or not a version 3 plan)");
  file[68] = 'X';
  rewriteChecksum(file);
  EXPECT_EQ(openError(file),
            "plan metadata does not carry the file identifier \"OFPM\"");
}

TEST(PlanErrors, FileThatDoesNotExist) {
  PlanHandle plan;
  std::string error =
      take(ofrt_plan_open_file("/nonexistent/plan.ofp", &plan.plan));
  EXPECT_EQ(error, "cannot open plan '/nonexistent/plan.ofp': No such file or "
                   "directory");
}

//===----------------------------------------------------------------------===//
// Semantic errors (valid checksum, valid FlatBuffer)
//===----------------------------------------------------------------------===//

TEST(PlanErrors, ArenaBufferOutOfRange) {
  SamplePlan sample = makeSamplePlan(kernelObject());
  mainProgram(sample).buffers[3]->offset = 4096;
  EXPECT_EQ(openError(sample.write()),
            "program 'main': arena buffer 's' (64 bytes at offset 4096) "
            "exceeds the arena of 192 bytes");
}

TEST(PlanErrors, BufferSizeDisagreesWithShape) {
  SamplePlan sample = makeSamplePlan(kernelObject());
  mainProgram(sample).buffers[0]->size = 60;
  EXPECT_EQ(openError(sample.write()),
            "program 'main': buffer 'x' is 60 bytes, but f32 [16] takes 64");
  mainProgram(sample).buffers[0]->size = 64;
  mainProgram(sample).buffers[0]->shape = {INT64_C(1) << 40, INT64_C(1) << 30};
  EXPECT_EQ(openError(sample.write()),
            "program 'main': buffer 'x' of shape [1099511627776, 1073741824] "
            "overflows 64 bits of bytes");
}

TEST(PlanErrors, ConstantBlobMismatch) {
  SamplePlan sample = makeSamplePlan(kernelObject());
  sample.blobs[1].resize(32);
  EXPECT_EQ(openError(sample.write()),
            "program 'main': constant buffer 'w' is 64 bytes, but blob 1 "
            "holds 32");
  SamplePlan other = makeSamplePlan(kernelObject());
  mainProgram(other).buffers[2]->blob = 9;
  EXPECT_EQ(openError(other.write()),
            "program 'main': constant buffer 'w' refers to blob 9, but the "
            "plan has 2 blobs");
}

TEST(PlanErrors, BlobOutsideTheBlobSection) {
  SamplePlan sample = makeSamplePlan(kernelObject());
  Bytes good = sample.write();
  sample.plan.blobs.clear();
  auto blob = std::make_unique<BlobT>();
  blob->offset = 64;
  blob->size = 1 << 20;
  sample.plan.blobs.push_back(std::move(blob));
  EXPECT_NE(openError(writePlan(sample.plan, sample.blobs, true))
                .find("blob 0 (1048576 bytes at offset 64) exceeds the blob "
                      "section of"),
            std::string::npos);
  sample.plan.blobs[0]->offset = 8;
  sample.plan.blobs[0]->size = 8;
  EXPECT_EQ(openError(writePlan(sample.plan, sample.blobs, true)),
            "blob 0 at offset 8 is not 64-byte aligned");
}

TEST(PlanErrors, CopyOutOfRange) {
  SamplePlan sample = makeSamplePlan(kernelObject());
  sample.plan.programs[0]->steps[6]->detail.AsCopy()->bytes = 4096;
  EXPECT_EQ(openError(sample.write()),
            "program 'main' step 6 (copy): source range [0, 4096) exceeds "
            "buffer 'p' of 64 bytes");
  sample.plan.programs[0]->steps[6]->detail.AsCopy()->bytes = 32;
  sample.plan.programs[0]->steps[6]->detail.AsCopy()->dst_offset = 40;
  EXPECT_EQ(openError(sample.write()),
            "program 'main' step 6 (copy): destination range [40, 72) exceeds "
            "buffer 'q' of 64 bytes");
  sample.plan.programs[0]->steps[6]->detail.AsCopy()->dst = 2;
  EXPECT_EQ(openError(sample.write()),
            "program 'main' step 6 (copy): the destination 'w' is a constant");
}

TEST(PlanErrors, GemmAccessOutOfRange) {
  SamplePlan sample = makeSamplePlan(kernelObject());
  auto *gemm = mainProgram(sample).steps[3]->detail.AsLibraryCall();
  gemm->params[0] = 2; // batch 2 with A's batch stride 16 reads s[16..31]
  EXPECT_EQ(openError(sample.write()),
            "program 'main' step 3 (library blas.gemm): A reaches element 31 "
            "of buffer 's', which has 16 elements");
  gemm->params = {1, 4, 4, 4, 16, 4, 1, 16, 4, 1, 16, 5};
  EXPECT_EQ(openError(sample.write()),
            "program 'main' step 3 (library blas.gemm): C reaches element 18 "
            "of buffer 'p', which has 16 elements");
  // An outer batch of 2 over B with stride 1 reads one element too far.
  gemm->params = {1, 4, 4, 4, 0, 4, 1, 0, 4, 1, 0, 4, 2, 0, 1, 0};
  EXPECT_EQ(openError(sample.write()),
            "program 'main' step 3 (library blas.gemm): B reaches element 16 "
            "of buffer 'w', which has 16 elements");
  gemm->params = {1, 4, 4, 4, 0, 4, 1, 0, 4, 1, 0, 4, 2};
  EXPECT_NE(openError(sample.write()).find("or 16 with [outer_batch"),
            std::string::npos);
}

TEST(PlanErrors, GemmLayoutAndTypes) {
  SamplePlan sample = makeSamplePlan(kernelObject());
  auto *gemm = mainProgram(sample).steps[3]->detail.AsLibraryCall();
  gemm->params = {1, 2, 2, 2, 0, 2, 2, 0, 2, 1, 0, 2};
  EXPECT_EQ(openError(sample.write()),
            "program 'main' step 3 (library blas.gemm): blas.gemm A has no "
            "unit stride (m stride 2, k stride 2); BLAS needs one of them to "
            "be 1");
  gemm->params = {1, 4, 4, 4, 16, 3, 1, 16, 4, 1, 16, 4};
  EXPECT_EQ(openError(sample.write()),
            "program 'main' step 3 (library blas.gemm): blas.gemm A's m stride "
            "3 is below max(1, k) = 4");
  gemm->params.pop_back();
  EXPECT_NE(openError(sample.write()).find("blas.gemm takes 12 parameters"),
            std::string::npos);
  // Two batches written to the same C: executors run batches at once.
  gemm->params = {2, 4, 4, 4, 0, 4, 1, 0, 4, 1, 0, 4};
  EXPECT_EQ(openError(sample.write()),
            "program 'main' step 3 (library blas.gemm): blas.gemm's result C "
            "overlaps itself (stride 0 for an extent of 2; every element of C "
            "must be distinct)");
  gemm->params = {1, 4, 4, 4, 16, 4, 1, 16, 4, 1, 16, 4};
  mainProgram(sample).buffers[4]->dtype = DType::F64;
  mainProgram(sample).buffers[4]->size = 128;
  mainProgram(sample).arena_size = 256;
  EXPECT_EQ(openError(sample.write()),
            "program 'main' step 3 (library blas.gemm): blas.gemm needs A and "
            "B of one type (f32, f64, bf16 or f16) and C of that type or, for "
            "bf16 and f16, f32; got f32, f32, f64");
}

TEST(PlanErrors, KernelNotInExecutable) {
  SamplePlan sample = makeSamplePlan(kernelObject());
  mainProgram(sample).steps[0]->detail.AsLaunch()->kernel = "nope";
  EXPECT_EQ(openError(sample.write()),
            "program 'main' step 0 (launch nope): kernel 'nope' is not in "
            "executable 'test_kernels'");
}

TEST(PlanErrors, KernelMissingFromTheObject) {
  SamplePlan sample = makeSamplePlan(kernelObject());
  addKernel(*sample.plan.executables[0], "ghost",
            {{DType::F32, {16}}, {DType::F32, {16}}, {DType::F32, {16}}}, 16,
            16);
  mainProgram(sample).steps[0]->detail.AsLaunch()->kernel = "ghost";
  EXPECT_EQ(sessionError(sample.write()),
            "program 'main' step 0 (launch ghost): kernel 'ghost' is not "
            "defined by executable 'test_kernels'");
  sample.blobs[0] = Bytes(128, 0x42);
  EXPECT_EQ(sessionError(sample.write()),
            "program 'main': executable 'test_kernels' is not an ELF shared "
            "object");
}

TEST(PlanErrors, WaitOnUnrecordedEvent) {
  SamplePlan sample = makeSamplePlan(kernelObject());
  std::swap(mainProgram(sample).steps[1], mainProgram(sample).steps[2]);
  EXPECT_EQ(openError(sample.write()),
            "program 'main' step 1 (event wait): waits for event 0, which no "
            "earlier step records (the run would hang)");
  mainProgram(sample).steps[1]->detail.AsEventWait()->event = 3;
  EXPECT_EQ(openError(sample.write()),
            "program 'main' step 1 (event wait): event 3, but the program has "
            "2 events");
}

TEST(PlanErrors, StreamAndIndicesOutOfRange) {
  SamplePlan sample = makeSamplePlan(kernelObject());
  mainProgram(sample).steps[6]->stream = 2;
  EXPECT_EQ(openError(sample.write()),
            "program 'main' step 6 (copy): stream 2, but the program has 2 "
            "streams");
  mainProgram(sample).steps[6]->stream = 0;
  mainProgram(sample).steps[0]->detail.AsLaunch()->buffers[1] = 77;
  EXPECT_EQ(openError(sample.write()),
            "program 'main' step 0 (launch add_f32_16): buffer index 77 is out "
            "of range (the program has 6 buffers)");
  mainProgram(sample).steps[0]->detail.AsLaunch()->buffers[1] = 1;
  mainProgram(sample).steps[0]->detail.AsLaunch()->executable = 4;
  EXPECT_EQ(openError(sample.write()),
            "program 'main' step 0 (launch add_f32_16): executable 4, but the "
            "plan has 1 executables");
}

TEST(PlanErrors, InputsMustBeInputBuffersWithBindings) {
  SamplePlan sample = makeSamplePlan(kernelObject());
  mainProgram(sample).inputs[1] = 3;
  EXPECT_EQ(openError(sample.write()),
            "program 'main': inputs[1] is buffer 's', which is not an input "
            "buffer");
  SamplePlan other = makeSamplePlan(kernelObject());
  mainProgram(other).buffers[1]->binding = "";
  EXPECT_EQ(openError(other.write()),
            "program 'main': input buffer 'y' has no binding name");
}

TEST(PlanErrors, StepWithoutDetail) {
  SamplePlan sample = makeSamplePlan(kernelObject());
  mainProgram(sample).steps[2]->detail.Reset();
  EXPECT_EQ(openError(sample.write()),
            "program 'main' step 2 (unknown step): the step has no detail");
}

TEST(PlanErrors, UnknownLibraryFunction) {
  SamplePlan sample = makeSamplePlan(kernelObject());
  mainProgram(sample).steps[3]->detail.AsLibraryCall()->function = "blas.syrk";
  EXPECT_EQ(openError(sample.write()),
            "program 'main' step 3 (library blas.syrk): unknown library "
            "function 'blas.syrk' (this runtime knows blas.gemm, "
            "check.index_range, dnn.conv2d, dnn.conv2d_grad_input, "
            "dnn.conv2d_grad_filter, dnn.pool2d, dnn.pool2d_grad, "
            "dnn.batch_norm and dnn.batch_norm_grad)");
}

//===----------------------------------------------------------------------===//
// Session errors
//===----------------------------------------------------------------------===//

TEST(SessionErrors, EntryAndRankSelection) {
  SamplePlan sample = makeSamplePlan(kernelObject());
  Bytes file = sample.write();
  EXPECT_EQ(sessionError(file, "train"),
            "the plan has no entry 'train'; its entries are 'main', 'check'");
  EXPECT_EQ(sessionError(file, "main", 3),
            "rank 3 does not run entry 'main' (its ranks are 0)");
  sample.plan.programs[0]->entry = "forward";
  EXPECT_EQ(sessionError(sample.write()),
            "the plan has several entries ('forward', 'check') and none is "
            "'main'; name one");
  // A cuda program needs the CUDA driver, here one that cannot load.
  sample.plan.programs[0]->device = "cuda";
  setenv("OF_CUDA_DRIVER", "/nonexistent/libcuda.so.1", 1);
  std::string cudaError = sessionError(sample.write(), "forward");
  EXPECT_EQ(cudaError.rfind("program 'forward' runs on cuda: cannot load the "
                            "CUDA driver",
                            0),
            0u)
      << cudaError;
}

TEST(SessionErrors, InputsMustBeSetWithTheirExactSize) {
  Bytes file = makeSamplePlan(kernelObject()).write();
  PlanHandle plan;
  ASSERT_EQ(take(ofrt_plan_open_memory(file.data(), file.size(), &plan.plan)),
            "");
  SessionHandle session;
  ASSERT_EQ(take(ofrt_session_create(plan.plan, "main", 0, &session.session)),
            "");
  std::vector<float> x(16, 1.0f);
  EXPECT_EQ(take(ofrt_session_set_input(session.session, 0, x.data(), 60)),
            "input 'x' takes 64 bytes (f32 [16]), got 60");
  EXPECT_EQ(take(ofrt_session_set_input(session.session, 5, x.data(), 64)),
            "input index 5 is out of range (program 'main' has 2 inputs)");
  EXPECT_EQ(take(ofrt_session_run(session.session)),
            "program 'main': inputs 'x', 'y' were never set");
  ASSERT_EQ(take(ofrt_session_set_input(session.session, 0, x.data(), 64)), "");
  EXPECT_EQ(take(ofrt_session_run(session.session)),
            "program 'main': input 'y' was never set");
  ASSERT_EQ(take(ofrt_session_set_input(session.session, 1, x.data(), 64)), "");
  EXPECT_EQ(take(ofrt_session_run(session.session)), "");
  std::vector<float> out(16);
  EXPECT_EQ(take(ofrt_session_get_output(session.session, 0, out.data(), 32)),
            "output 'sum' is 64 bytes, got 32");
}

/// The byte ranges of `object` the dynamic loader reads as tables: the ELF
/// and program headers and every segment that is not code (symbols,
/// strings, hash and version tables, relocations, the dynamic section).
static std::vector<std::pair<uint64_t, uint64_t>>
loaderRanges(const Bytes &object) {
  Elf64_Ehdr header;
  std::memcpy(&header, object.data(), sizeof header);
  std::vector<std::pair<uint64_t, uint64_t>> ranges = {
      {0, header.e_phoff + header.e_phnum * sizeof(Elf64_Phdr)}};
  for (unsigned i = 0; i < header.e_phnum; ++i) {
    Elf64_Phdr segment;
    std::memcpy(&segment, object.data() + header.e_phoff + i * sizeof segment,
                sizeof segment);
    if (segment.p_type == PT_LOAD && !(segment.p_flags & PF_X) &&
        segment.p_filesz > 0)
      ranges.push_back({segment.p_offset, segment.p_offset + segment.p_filesz});
  }
  return ranges;
}

// Mutants of the kernel object's loader-visible bytes, each put in a plan
// whose session is created in a child process (the object is checked, then
// dlopen'ed and its kernels looked up): the runtime refuses it with a
// message or loads it, and the child never dies by a signal, stops at an
// ld.so assertion (which exits 127) or hangs. Run on its own (ctest
// runtime/kernel-object-fuzz) so that the forking process has no threads.
TEST(KernelObjectFuzz, MutantsAreRefusedOrLoaded) {
  const Bytes &object = kernelObject();
  ASSERT_GT(object.size(), sizeof(Elf64_Ehdr));
  std::vector<std::pair<uint64_t, uint64_t>> ranges = loaderRanges(object);
  uint64_t seed = 20261207;
  if (const char *text = std::getenv("OF_TEST_SEED"))
    seed = std::strtoull(text, nullptr, 10);
  std::mt19937_64 random(seed);
  int mutants = 1000; // $OF_KERNEL_MUTANTS for a longer run
  if (const char *text = std::getenv("OF_KERNEL_MUTANTS"))
    mutants = std::atoi(text);
  int loaded = 0, refused = 0;
  for (int mutantIndex = 0; mutantIndex < mutants; ++mutantIndex) {
    Bytes mutant = object;
    for (int edits = 1 + random() % 3; edits > 0; --edits) {
      auto [begin, end] = ranges[random() % ranges.size()];
      uint64_t at = begin + random() % (end - begin);
      uint64_t word = 0;
      size_t width = std::min<uint64_t>(size_t(1) << (random() % 4), end - at);
      switch (random() % 4) {
      case 0: // a flipped bit
        mutant[at] ^= uint8_t(1u << (random() % 8));
        continue;
      case 1: // a random byte
        mutant[at] = uint8_t(random());
        continue;
      case 2: // a word nudged by a little (off-by-one sizes and offsets)
        std::memcpy(&word, &mutant[at], width);
        word += int64_t(random() % 33) - 16;
        break;
      default: // a boundary value
        word = std::array<uint64_t, 4>{0, ~0ull, 1ull << (random() % 64),
                                       0x7fffffff}[random() % 4];
      }
      std::memcpy(&mutant[at], &word, width);
    }
    Bytes file = makeSamplePlan(mutant).write();
    pid_t child = fork();
    ASSERT_GE(child, 0);
    if (child == 0) {
      alarm(20);
      _exit(sessionError(file).empty() ? 0 : 1);
    }
    int status = 0;
    ASSERT_EQ(waitpid(child, &status, 0), child);
    bool clean = WIFEXITED(status) && WEXITSTATUS(status) <= 1;
    if (!clean) {
      std::string path = ::testing::TempDir() + "kernel-mutant-" +
                         std::to_string(mutantIndex) + ".so";
      if (FILE *out = std::fopen(path.c_str(), "wb")) {
        std::fwrite(mutant.data(), 1, mutant.size(), out);
        std::fclose(out);
      }
      FAIL() << "mutant " << mutantIndex << " (OF_TEST_SEED=" << seed
             << ", written to " << path << ") "
             << (WIFSIGNALED(status) ? "killed the child by signal " +
                                           std::to_string(WTERMSIG(status))
                                     : "ended the child with status " +
                                           std::to_string(WEXITSTATUS(status)));
    }
    (WEXITSTATUS(status) == 0 ? loaded : refused) += 1;
  }
  // Both outcomes occur: the mutations reach past the first check.
  EXPECT_GT(loaded, 0);
  EXPECT_GT(refused, 0);
  std::printf("kernel object mutants: %d loaded, %d refused (seed %llu)\n",
              loaded, refused, static_cast<unsigned long long>(seed));
}

TEST(SessionErrors, DescribingAPlanLoadsNoCodeAndAllocatesNothing) {
  // of-run --list: a kernel object that is not one (loading it would run
  // the dynamic loader on it) and a 3 GiB arena in a small plan are neither
  // loaded nor allocated by a description; the description refuses to run.
  SamplePlan sample = makeSamplePlan(kernelObject());
  sample.blobs[0] = Bytes(128, 0x42);
  mainProgram(sample).arena_size = uint64_t(3) << 30;
  Bytes file = sample.write();
  PlanHandle plan;
  ASSERT_EQ(take(ofrt_plan_open_memory(file.data(), file.size(), &plan.plan)),
            "");
  SessionHandle session;
  ASSERT_EQ(take(ofrt_session_create_description(plan.plan, "main", 0,
                                                 &session.session)),
            "");
  ASSERT_EQ(ofrt_session_num_inputs(session.session), 2u);
  ASSERT_EQ(ofrt_session_num_outputs(session.session), 3u);
  EXPECT_STREQ(ofrt_session_output_info(session.session, 1).name, "y.gemm");
  std::vector<float> x(16, 1.0f);
  EXPECT_NE(take(ofrt_session_set_input(session.session, 0, x.data(), 64))
                .find("only describes the entry"),
            std::string::npos);
  EXPECT_NE(take(ofrt_session_run(session.session)).find("only describes"),
            std::string::npos);
  // A session that runs does load the object, and refuses it.
  mainProgram(sample).arena_size = 192;
  EXPECT_EQ(sessionError(sample.write()),
            "program 'main': executable 'test_kernels' is not an ELF shared "
            "object");
}

TEST(SessionErrors, NullArgumentsAreErrorsNotCrashes) {
  EXPECT_EQ(take(ofrt_plan_open_file(nullptr, nullptr)),
            "ofrt_plan_open_file: the output pointer is NULL");
  ofrt_plan *plan = nullptr;
  EXPECT_EQ(take(ofrt_plan_open_file(nullptr, &plan)), "plan path is NULL");
  EXPECT_EQ(plan, nullptr);
  EXPECT_EQ(take(ofrt_session_run(nullptr)),
            "ofrt_session_run: the session is NULL");
  EXPECT_EQ(ofrt_plan_num_entries(nullptr), 0u);
  EXPECT_EQ(ofrt_session_input_info(nullptr, 0).name, nullptr);
  EXPECT_EQ(ofrt_session_input_is_set(nullptr, 0), 0);
  EXPECT_EQ(take(ofrt_session_save_state(nullptr, "x", 0)),
            "ofrt_session_save_state: the session or path is NULL");
  EXPECT_EQ(take(ofrt_session_load_state(nullptr, "x", nullptr)),
            "ofrt_session_load_state: the session or path is NULL");
  EXPECT_STREQ(ofrt_dtype_name(OFRT_BF16), "bf16");
  EXPECT_EQ(ofrt_dtype_size(OFRT_I1), 1u);
}

} // namespace
