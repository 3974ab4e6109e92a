//===- CpuExecutor.cpp - Steps on the host: OpenBLAS gemm, oneDNN conv ----===//
//
// Runs each step synchronously on the calling thread. The plan was verified
// at open, so every pointer and extent is in bounds and every gemm layout is
// one BLAS accepts (cblas would otherwise print through xerbla); this file
// only dispatches. Library-call failures (check.index_range) are the run's
// error.
//
//===----------------------------------------------------------------------===//

#include "Session/Executor.h"

#include "CPU/Bf16.h"
#include "CPU/KernelFaults.h"
#include "CPU/OneDnn.h"
#include "CPU/Parallel.h"
#include "Comm/Collective.h"
#include "Plan/DynamicLibrary.h"

#include <cblas.h>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <mutex>
#include <string>
#include <type_traits>
#include <vector>

using namespace of::plan;

#ifndef OF_OPENBLAS_OPENMP_DIR // set by CMake; builds without it (fuzzers)
#define OF_OPENBLAS_OPENMP_DIR "/usr/lib/x86_64-linux-gnu/openblas-openmp"
#endif

namespace of::rt {

namespace {

/// OpenBLAS, loaded with dlopen when a session first has a gemm step, for
/// three reasons. Its OpenMP build is preferred: oneDNN's convolutions run
/// on libgomp's threads, and OpenBLAS's own thread pool next to them on the
/// same cores slowed both (a plan with two convolutions and two gemms:
/// 2.4-2.6 and 5.0-5.5 ms per step with the OpenMP build, 5-15 and 8-13 ms
/// with the pthread one; docs/performance.md). A plan without gemm steps
/// loads no BLAS. And OpenBLAS picks its kernels for the CPU once, when it
/// is loaded, so the runtime can correct that choice first: Debian's 0.3.21
/// does not know newer AVX-512 CPUs (Sapphire Rapids reads as "Prescott",
/// SSE3 kernels); unless $OPENBLAS_CORETYPE is set, the runtime sets it to
/// SkylakeX (AVX-512 kernels) on a CPU with AVX-512 F/BW/DQ/VL for the
/// duration of the load. `bench/cpu_bench.py` measured 1024^3 sgemm at 60
/// GFLOP/s before and 280 after.
struct OpenBlas {
  decltype(&cblas_sgemm) sgemm = nullptr;
  decltype(&cblas_dgemm) dgemm = nullptr;
  /// OpenBLAS's OpenMP build runs a call made inside a parallel region on
  /// the calling thread alone, so the executor may split a batch of small
  /// gemms among the threads itself; the pthread build would start its
  /// own threads from each.
  bool openMp = false;
  std::string loadedFrom;
};

Status loadOpenBlas(const OpenBlas *&out) {
  static OpenBlas blas;
  static std::string error;
  static std::once_flag once;
  std::call_once(once, [] {
    std::vector<std::string> candidates;
    if (const char *path = std::getenv("OF_OPENBLAS_LIBRARY"); path && *path)
      candidates.push_back(path);
    else
      candidates = {OF_OPENBLAS_OPENMP_DIR "/libopenblas.so.0",
                    "libopenblas.so.0"};
    bool setCore = !std::getenv("OPENBLAS_CORETYPE") &&
                   __builtin_cpu_supports("avx512f") &&
                   __builtin_cpu_supports("avx512bw") &&
                   __builtin_cpu_supports("avx512dq") &&
                   __builtin_cpu_supports("avx512vl");
    if (setCore)
      ::setenv("OPENBLAS_CORETYPE", "SkylakeX", 0);
    prepareOpenMp();
    std::string tried;
    void *library = openFirst(candidates, tried);
    if (setCore)
      ::unsetenv("OPENBLAS_CORETYPE");
    if (!library) {
      error = "cannot load OpenBLAS (on Debian the package "
              "libopenblas0-openmp; $OF_OPENBLAS_LIBRARY names another):" +
              tried;
      return;
    }
    blas.loadedFrom = loadedPath(library);
    blas.sgemm =
        reinterpret_cast<decltype(blas.sgemm)>(::dlsym(library, "cblas_sgemm"));
    blas.dgemm =
        reinterpret_cast<decltype(blas.dgemm)>(::dlsym(library, "cblas_dgemm"));
    if (!blas.sgemm || !blas.dgemm)
      error = "the loaded OpenBLAS has no cblas_sgemm or cblas_dgemm";
    auto parallelMode =
        reinterpret_cast<int (*)()>(::dlsym(library, "openblas_get_parallel"));
    blas.openMp = parallelMode && parallelMode() == 2; // OPENBLAS_OPENMP
  });
  if (!error.empty())
    return fail(error);
  out = &blas;
  return Status::success();
}

/// Sets the m x n matrix C (row stride ldc) of every batch to zero: the
/// result of a gemm with k == 0.
template <typename T> void zeroResult(const GemmCall &call, T *c) {
  for (int64_t o = 0; o < call.outerBatch; ++o)
    for (int64_t b = 0; b < call.batch; ++b)
      for (int64_t i = 0; i < call.m; ++i)
        std::memset(c + o * call.cOuterStride + b * call.cBatchStride +
                        i * call.cMStride,
                    0, static_cast<size_t>(call.n) * sizeof(T));
}

template <typename T> struct GemmBatch {
  const OpenBlas *blas;
  const GemmCall *call;
  const T *a, *b;
  T *c;
};

/// Runs batches [begin, end) of a gemm (outer and inner batch flattened).
template <typename T>
void gemmBatches(void *context, int64_t begin, int64_t end) {
  const auto &[blas, call, a, b, c] = *static_cast<GemmBatch<T> *>(context);
  CBLAS_TRANSPOSE transA = call->transposeA ? CblasTrans : CblasNoTrans;
  CBLAS_TRANSPOSE transB = call->transposeB ? CblasTrans : CblasNoTrans;
  auto m = static_cast<blasint>(call->m), n = static_cast<blasint>(call->n),
       k = static_cast<blasint>(call->k), lda = static_cast<blasint>(call->lda),
       ldb = static_cast<blasint>(call->ldb),
       ldc = static_cast<blasint>(call->ldc);
  for (int64_t flat = begin; flat < end; ++flat) {
    int64_t o = flat / call->batch, i = flat % call->batch;
    const T *batchA = a + o * call->aOuterStride + i * call->aBatchStride;
    const T *batchB = b + o * call->bOuterStride + i * call->bBatchStride;
    T *batchC = c + o * call->cOuterStride + i * call->cBatchStride;
    if constexpr (std::is_same_v<T, float>)
      blas->sgemm(CblasRowMajor, transA, transB, m, n, k, 1.0f, batchA, lda,
                  batchB, ldb, 0.0f, batchC, ldc);
    else
      blas->dgemm(CblasRowMajor, transA, transB, m, n, k, 1.0, batchA, lda,
                  batchB, ldb, 0.0, batchC, ldc);
  }
}

/// A batch of gemms each smaller than this many multiply-adds runs one
/// gemm per thread (OpenBLAS single-threaded inside the region) instead of
/// each gemm on all threads: attention's 32 128x128x64 products took
/// 0.71-0.75 ms one after the other, against PyTorch's 0.24-0.31
/// (bench/cpu_bench.py's transformer block, docs/performance.md).
constexpr int64_t kSmallGemmMacs = int64_t(1) << 24;

template <typename T>
void gemm(const OpenBlas &blas, const GemmCall &call, const T *a, const T *b,
          T *c) {
  if (call.outerBatch == 0 || call.batch == 0 || call.m == 0 || call.n == 0)
    return;
  if (call.k == 0)
    return zeroResult(call, c);
  GemmBatch<T> batch{&blas, &call, a, b, c};
  int64_t batches = call.outerBatch * call.batch;
  int threads = 1;
  if (blas.openMp && batches > 1 && call.m * call.n * call.k < kSmallGemmMacs)
    threads = parallelThreads();
  parallelFor(batches, threads, gemmBatches<T>, &batch);
}

/// A bf16 gemm where oneDNN has no bf16 matmul (CPUs without AVX-512's
/// bf16 support): each batch's operands widened to f32 (exact), OpenBLAS's
/// sgemm (f32 accumulation, as oneDNN's bf16 matmul), and C written as f32
/// or rounded to the nearest bf16, ties to even. One batch after another:
/// a fallback for correctness, not speed.
void gemmBf16(const OpenBlas &blas, const GemmCall &call, const uint16_t *a,
              const uint16_t *b, void *c, bool outF32) {
  if (call.outerBatch == 0 || call.batch == 0 || call.m == 0 || call.n == 0)
    return;
  if (call.k == 0)
    return outF32 ? zeroResult(call, static_cast<float *>(c))
                  : zeroResult(call, static_cast<uint16_t *>(c));
  // op(A) is m x k, stored m x k (or k x m transposed) with row stride lda;
  // op(B) is k x n, stored k x n (or n x k) with row stride ldb.
  int64_t aRows = call.transposeA ? call.k : call.m;
  int64_t aCols = call.transposeA ? call.m : call.k;
  int64_t bRows = call.transposeB ? call.n : call.k;
  int64_t bCols = call.transposeB ? call.k : call.n;
  std::vector<float> fa(aRows * aCols), fb(bRows * bCols), fc(call.m * call.n);
  CBLAS_TRANSPOSE transA = call.transposeA ? CblasTrans : CblasNoTrans;
  CBLAS_TRANSPOSE transB = call.transposeB ? CblasTrans : CblasNoTrans;
  for (int64_t o = 0; o < call.outerBatch; ++o)
    for (int64_t i = 0; i < call.batch; ++i) {
      const uint16_t *batchA =
          a + o * call.aOuterStride + i * call.aBatchStride;
      const uint16_t *batchB =
          b + o * call.bOuterStride + i * call.bBatchStride;
      for (int64_t r = 0; r < aRows; ++r)
        for (int64_t col = 0; col < aCols; ++col)
          fa[r * aCols + col] = bf16ToFloat(batchA[r * call.lda + col]);
      for (int64_t r = 0; r < bRows; ++r)
        for (int64_t col = 0; col < bCols; ++col)
          fb[r * bCols + col] = bf16ToFloat(batchB[r * call.ldb + col]);
      blas.sgemm(CblasRowMajor, transA, transB, static_cast<blasint>(call.m),
                 static_cast<blasint>(call.n), static_cast<blasint>(call.k),
                 1.0f, fa.data(), static_cast<blasint>(aCols), fb.data(),
                 static_cast<blasint>(bCols), 0.0f, fc.data(),
                 static_cast<blasint>(call.n));
      int64_t offset = o * call.cOuterStride + i * call.cBatchStride;
      for (int64_t r = 0; r < call.m; ++r)
        for (int64_t col = 0; col < call.n; ++col) {
          float value = fc[r * call.n + col];
          int64_t at = offset + r * call.ldc + col;
          if (outF32)
            static_cast<float *>(c)[at] = value;
          else
            static_cast<uint16_t *>(c)[at] = floatToBf16(value);
        }
    }
}

template <typename T>
Status checkIndices(const PreparedStep &step, const void *indices) {
  const auto *bytes = static_cast<const unsigned char *>(indices);
  for (uint64_t i = 0; i < step.indexCount; ++i) {
    T value;
    // Arena offsets need not be aligned to the element type.
    std::memcpy(&value, bytes + i * sizeof(T), sizeof(T));
    if (value < step.lo || value >= step.hi)
      return fail("index ", static_cast<int64_t>(value), " out of range [",
                  step.lo, ", ", step.hi, ") in ", step.indicesLabel,
                  " at element ", i);
  }
  return Status::success();
}

/// Runs iterations [begin, end) of a launch's kernel.
void kernelSlice(void *context, int64_t begin, int64_t end) {
  const auto &step = *static_cast<const PreparedStep *>(context);
  step.kernel(const_cast<void **>(step.args.data()), begin, end);
}

/// A kernel with a range runs on as many threads as its work pays for,
/// each on a contiguous slice of the range.
void runKernel(const PreparedStep &step) {
  RunningKernel running(step.label.c_str());
  if (step.range == 0) // the whole loop (a kernel clamps its slice)
    return step.kernel(const_cast<void **>(step.args.data()), 0,
                       std::numeric_limits<int64_t>::max());
  parallelFor(step.range, threadsFor(step.range, step.work), kernelSlice,
              const_cast<PreparedStep *>(&step));
}

class CpuExecutor final : public Executor {
public:
  Status check(const PreparedStep &step) override {
    if (step.kind == StepKind::Gemm) {
      bool bf16 =
          step.gemmType == DType::BF16 &&
          (step.gemmOutType == DType::BF16 || step.gemmOutType == DType::F32);
      if (!bf16 &&
          ((step.gemmType != DType::F32 && step.gemmType != DType::F64) ||
           step.gemmOutType != step.gemmType))
        return fail(step.name, ": the CPU has no gemm of ",
                    dtypeName(step.gemmType), " into ",
                    dtypeName(step.gemmOutType),
                    " (f32 and f64; bf16 into bf16 or f32)");
      const GemmCall &g = step.gemm;
      bool empty =
          g.m == 0 || g.n == 0 || g.k == 0 || g.batch == 0 || g.outerBatch == 0;
      if ((step.gemmType == DType::F32 || bf16) && !empty) {
        Status dnn = dnn_.prepareGemm(step);
        if (!dnn.failed())
          return Status::success();
        // OpenBLAS runs an f32 gemm that oneDNN will not, and a bf16 one
        // through f32 (gemmBf16) where oneDNN has no bf16 matmul.
      }
      if (!blas_)
        if (Status status = loadOpenBlas(blas_); status.failed())
          return fail(step.name, ": ", status.message());
    }
    if (step.kind == StepKind::Conv)
      return dnn_.prepare(step);
    if (step.kind == StepKind::Pool)
      return dnn_.preparePooling(step);
    if (step.kind == StepKind::BatchNorm)
      return dnn_.prepareBatchNorm(step);
    return Status::success();
  }

  Status execute(const PreparedStep &step) override {
    switch (step.kind) {
    case StepKind::Launch:
      if (!step.kernel)
        return fail(step.name, ": the kernel is not loaded (fuzzing build)");
      runKernel(step);
      return Status::success();
    case StepKind::Gemm:
      if (step.gemmType != DType::F64) {
        bool ran = false;
        if (Status status = dnn_.runGemm(step, ran); status.failed() || ran)
          return status;
      }
      if (step.gemmType == DType::BF16) {
        gemmBf16(*blas_, step.gemm, static_cast<const uint16_t *>(step.gemmA),
                 static_cast<const uint16_t *>(step.gemmB), step.gemmC,
                 step.gemmOutType == DType::F32);
        return Status::success();
      }
      if (step.gemmType == DType::F32)
        gemm(*blas_, step.gemm, static_cast<const float *>(step.gemmA),
             static_cast<const float *>(step.gemmB),
             static_cast<float *>(step.gemmC));
      else
        gemm(*blas_, step.gemm, static_cast<const double *>(step.gemmA),
             static_cast<const double *>(step.gemmB),
             static_cast<double *>(step.gemmC));
      return Status::success();
    case StepKind::Conv:
      return dnn_.run(step);
    case StepKind::Pool:
      return dnn_.runPooling(step);
    case StepKind::BatchNorm:
      return dnn_.runBatchNorm(step);
    case StepKind::IndexRangeCheck:
      return checkIndexRange(step, step.indices);
    case StepKind::Copy:
      // An output whose buffer is the storage it updates copies nothing.
      if (step.bytes && step.dst != step.src)
        std::memmove(step.dst, step.src, static_cast<size_t>(step.bytes));
      return Status::success();
    case StepKind::Collective:
      return step.collective->run();
    case StepKind::EventRecord:
    case StepKind::EventWait:
      // One thread runs every stream in program order: a recorded event has
      // always completed by the time a later step waits for it.
      return Status::success();
    }
    return fail(step.name, ": unknown step kind");
  }

  Status synchronize() override { return Status::success(); }

private:
  const OpenBlas *blas_ = nullptr;
  OneDnnPrimitives dnn_;
};

} // namespace

Status checkOpenBlas(const std::string *&path) {
  return loadAndLocate(loadOpenBlas, path);
}

std::vector<int64_t> convolutionKey(const PreparedStep &step) {
  const ConvGeometry &g = step.conv;
  int64_t direction = step.function == kConvForwardFunction     ? 0
                      : step.function == kConvGradInputFunction ? 1
                                                                : 2;
  return {direction,
          static_cast<int64_t>(step.args.size()),
          static_cast<int64_t>(step.dnnType),
          step.tf32,
          g.n,
          g.c,
          g.h,
          g.w,
          g.f,
          g.kh,
          g.kw,
          g.oh,
          g.ow,
          g.strideH,
          g.strideW,
          g.dilationH,
          g.dilationW,
          g.padTop,
          g.padBottom,
          g.padLeft,
          g.padRight,
          g.groups};
}

std::vector<int64_t> batchNormKey(const PreparedStep &step) {
  const BatchNormGeometry &g = step.norm;
  return {step.function == kBatchNormForwardFunction ? 0 : 1,
          static_cast<int64_t>(step.dnnType),
          g.n,
          g.c,
          g.s,
          encodeBatchNormEpsilon(g.epsilon)};
}

std::vector<int64_t> poolingKey(const PreparedStep &step) {
  const PoolGeometry &g = step.pool;
  return {step.function == kPoolForwardFunction ? 0 : 1,
          static_cast<int64_t>(step.dnnType),
          g.n,
          g.c,
          g.h,
          g.w,
          g.kh,
          g.kw,
          g.oh,
          g.ow,
          g.strideH,
          g.strideW,
          g.padTop,
          g.padBottom,
          g.padLeft,
          g.padRight,
          static_cast<int64_t>(g.mode)};
}

Status checkIndexRange(const PreparedStep &step, const void *indices) {
  return step.indexType == DType::I32 ? checkIndices<int32_t>(step, indices)
                                      : checkIndices<int64_t>(step, indices);
}

// A host executor never calls these: its session uses host memory and
// loads CPU kernels.
Status Executor::allocate(uint64_t, const std::string &what, void *&) {
  return fail(what, ": this executor has no device memory");
}
Status Executor::upload(void *, const void *, uint64_t) {
  return fail("this executor has no device memory");
}
Status Executor::download(void *, const void *, uint64_t) {
  return fail("this executor has no device memory");
}
Status Executor::copyOnDevice(void *, const void *, uint64_t) {
  return fail("this executor has no device memory");
}
Status Executor::loadGpuModule(const void *, size_t, bool,
                               const std::string &what, void *&) {
  return fail(what, ": this executor runs no GPU modules");
}
Status Executor::getGpuFunction(void *, const std::string &name, void *&) {
  return fail("GPU function '", name, "': this executor runs no GPU modules");
}
Status Executor::record(const PreparedStep *const *, size_t, size_t &) {
  return fail("this executor records no step graphs");
}
Status Executor::replay(size_t) {
  return fail("this executor records no step graphs");
}
CollectiveMemory &Executor::collectiveMemory() {
  if (!hostMemory_)
    hostMemory_ = createHostCollectiveMemory();
  return *hostMemory_;
}

std::unique_ptr<Executor> createCpuExecutor() {
  return std::make_unique<CpuExecutor>();
}

namespace {
class DescribingExecutor final : public Executor {
public:
  bool hostMemory() const override { return false; }
  Status execute(const PreparedStep &step) override {
    return fail(step.name, ": this session only describes its program");
  }
  Status synchronize() override { return Status::success(); }
  Status allocate(uint64_t, const std::string &, void *&out) override {
    // Distinct addresses that are never dereferenced.
    out = reinterpret_cast<void *>(++allocations_ * 256);
    return Status::success();
  }
  Status upload(void *, const void *, uint64_t) override {
    return Status::success();
  }
  Status download(void *, const void *, uint64_t) override {
    return fail("this session only describes its program");
  }
  Status copyOnDevice(void *, const void *, uint64_t) override {
    return fail("this session only describes its program");
  }
  Status loadGpuModule(const void *, size_t, bool, const std::string &,
                       void *&module) override {
    module = this;
    return Status::success();
  }
  Status getGpuFunction(void *, const std::string &,
                        void *&function) override {
    function = this;
    return Status::success();
  }

private:
  uintptr_t allocations_ = 0;
};
} // namespace

std::unique_ptr<Executor> createDescribingExecutor() {
  return std::make_unique<DescribingExecutor>();
}

} // namespace of::rt
