//===- OneDnn.cpp - Convolution and gemm steps through oneDNN -------------===//
//
// Forward, data-gradient and weight-gradient convolutions (training
// propagation, so the gradients' primitives take the forward one as their
// hint). Each operand of a primitive is either used in place, when oneDNN's
// chosen layout is the plan's dense one, or goes through a reorder and a
// scratch buffer; scratch is per operand position and shared by every
// primitive, since the CPU executor runs one step at a time. Measured with
// bench/cpu_bench.py (see docs/performance.md): the blocked layouts with
// reorders beat oneDNN's own dense-layout (gemm) convolution.
//
//===----------------------------------------------------------------------===//

#include "CPU/OneDnn.h"
#include "CPU/Bf16.h"

#include "Plan/DynamicLibrary.h"

#include <oneapi/dnnl/dnnl.h>
#include <oneapi/dnnl/dnnl_debug.h>

#include <algorithm>
#include <cstdlib>
#include <map>
#include <mutex>
#include <string>
#include <vector>

using namespace of::plan;

namespace of::rt {

namespace {

/// oneDNN's C API, loaded with dlopen when a session first has a
/// convolution or gemm step ($OF_DNNL_LIBRARY, else Debian's libdnnl.so.2):
/// libofrt
/// then runs its other steps where oneDNN is not installed, and OpenMP
/// (which oneDNN brings) starts only in processes that need it, after
/// prepareOpenMp.
#define OF_DNNL_FUNCTIONS(X)                                                   \
  X(dnnl_batch_normalization_backward_desc_init)                               \
  X(dnnl_batch_normalization_forward_desc_init)                                \
  X(dnnl_dilated_convolution_backward_data_desc_init)                          \
  X(dnnl_dilated_convolution_backward_weights_desc_init)                       \
  X(dnnl_dilated_convolution_forward_desc_init)                                \
  X(dnnl_engine_create)                                                        \
  X(dnnl_engine_destroy)                                                       \
  X(dnnl_matmul_desc_init)                                                     \
  X(dnnl_memory_create)                                                        \
  X(dnnl_memory_desc_equal)                                                    \
  X(dnnl_memory_desc_get_size)                                                 \
  X(dnnl_memory_desc_init_by_strides)                                          \
  X(dnnl_memory_desc_init_by_tag)                                              \
  X(dnnl_memory_destroy)                                                       \
  X(dnnl_memory_set_data_handle)                                               \
  X(dnnl_pooling_backward_desc_init)                                           \
  X(dnnl_pooling_forward_desc_init)                                            \
  X(dnnl_primitive_create)                                                     \
  X(dnnl_primitive_desc_create)                                                \
  X(dnnl_primitive_desc_destroy)                                               \
  X(dnnl_primitive_desc_query)                                                 \
  X(dnnl_primitive_desc_query_md)                                              \
  X(dnnl_primitive_destroy)                                                    \
  X(dnnl_primitive_execute)                                                    \
  X(dnnl_reorder_primitive_desc_create)                                        \
  X(dnnl_status2str)                                                           \
  X(dnnl_stream_create)                                                        \
  X(dnnl_stream_destroy)                                                       \
  X(dnnl_stream_wait)

struct DnnlApi {
  OF_LIBRARY_TABLE(OF_DNNL_FUNCTIONS)
};

LibrarySource dnnlSource() {
  return {"oneDNN",
          "OF_DNNL_LIBRARY",
          {"libdnnl.so.2"},
          "cannot load oneDNN (libdnnl.so.2, on Debian the package libdnnl2; "
          "$OF_DNNL_LIBRARY names another):",
          "OF needs oneDNN 2.x (3.0 changed its C API)",
          prepareOpenMp};
}

Status loadDnnl(const DnnlApi *&out) { return loadLibrary(dnnlSource, out); }

/// One operand of a convolution primitive.
struct Operand {
  int arg = 0;                   // DNNL_ARG_*
  unsigned buffer = 0;           // index into the step's args
  bool output = false;           // written by the primitive
  dnnl_memory_t user = nullptr;  // the plan's dense buffer
  dnnl_memory_t inner = nullptr; // oneDNN's layout, in scratch; or null
  dnnl_primitive_t reorder = nullptr;
  size_t bytes = 0; // of the inner layout
  /// A widened bf16 operand's f32 copy in the plan's layout: `user` views
  /// it, so oneDNN's reorder only changes the layout (its bf16 <-> f32
  /// reorders on CPUs without AVX-512 are the reference ones, 40 ns an
  /// element).
  std::vector<float> wide;
  /// A widened output that is a strided view (a matmul's C): the elements
  /// written, so only those are rounded back (not the gaps between rows,
  /// which hold other values). Empty for a dense operand.
  std::vector<int64_t> dims, strides;
};

/// A primitive (a convolution or a matmul) and its operands.
struct Primitive {
  dnnl_primitive_t primitive = nullptr;
  std::vector<Operand> operands;
};

/// A pooling step's primitives on the plan's dense NCHW buffers. A
/// forward step is `forward` (inference: no workspace). A max gradient
/// recomputes the forward pass (training, into `y` and `workspace`, memory
/// oneDNN allocates) for the positions of the largest elements, which
/// `backward` then reads; an average's gradient is `backward` alone.
///
/// Where oneDNN has no bf16 pooling (CPUs without AVX-512), a bf16 step runs
/// the f32 primitives on widened copies (`widened`): its inputs are widened
/// exactly, and its outputs rounded to the nearest bf16, as oneDNN's bf16
/// kernels round their f32 accumulators.
struct Pooling {
  dnnl_primitive_t forward = nullptr, backward = nullptr;
  dnnl_memory_t x = nullptr, y = nullptr, dy = nullptr, dx = nullptr;
  dnnl_memory_t workspace = nullptr;
  bool widened = false;
  std::vector<float> xWide, yWide; // the step's x and y (or dy and dx)
};

void widenBf16(const void *from, float *to, size_t count) {
  const auto *bits = static_cast<const uint16_t *>(from);
  for (size_t i = 0; i < count; ++i)
    to[i] = bf16ToFloat(bits[i]);
}

void narrowToBf16(const float *from, void *to, size_t count) {
  auto *bits = static_cast<uint16_t *>(to);
  for (size_t i = 0; i < count; ++i)
    bits[i] = floatToBf16(from[i]);
}

/// narrowToBf16 of the elements of a strided view: dims[d] elements
/// strides[d] apart on each dimension, from `offset`.
void narrowStrided(const float *from, uint16_t *to, const int64_t *dims,
                   const int64_t *strides, size_t rank, int64_t offset) {
  if (rank == 1) {
    for (int64_t i = 0; i < dims[0]; ++i)
      to[offset + i * strides[0]] = floatToBf16(from[offset + i * strides[0]]);
    return;
  }
  for (int64_t i = 0; i < dims[0]; ++i)
    narrowStrided(from, to, dims + 1, strides + 1, rank - 1,
                  offset + i * strides[0]);
}

/// A batch-normalization step's primitive and a memory per buffer of the
/// step (`args`, in the step's buffer order: DNNL_ARG_* and its memory).
struct BatchNorm {
  dnnl_primitive_t primitive = nullptr;
  std::vector<dnnl_exec_arg_t> args;
};

/// The layout of one gemm operand as a oneDNN memory descriptor: dims
/// [outer, batch, rows, cols] with the plan's element strides, leading
/// batch levels of extent 1 dropped (the matmul's rank is 2 to 4). A batch
/// stride of 0 (an operand broadcast over the batch) becomes extent 1,
/// which oneDNN broadcasts, with the stride of the level inside it (2.6
/// has only its reference kernel for a stride of 0). The two batch levels are
/// interchangeable, and are ordered so that C's strides decrease: oneDNN's
/// optimised kernels want C row-major (an einsum "btc,hcd->bhtd" has C's outer
/// level, h, inside its batch level, b).
struct GemmLayout {
  int rank = 0;
  dnnl_dims_t dims = {}, strides = {};
};

GemmLayout gemmLayout(const GemmCall &g, int64_t outerStride,
                      int64_t batchStride, int64_t rows, int64_t cols,
                      int64_t rowStride, int64_t colStride) {
  GemmLayout layout;
  auto add = [&](int64_t extent, int64_t stride) {
    layout.dims[layout.rank] = extent;
    layout.strides[layout.rank++] = stride;
  };
  bool swap = g.outerBatch > 1 && g.cOuterStride < g.cBatchStride;
  // The stride of a broadcast level: that of the level inside it, times its
  // extent (rows * cols for the innermost batch level).
  int64_t matrix = std::max(rows * rowStride, cols * colStride);
  auto level = [&](int64_t extent, int64_t stride, int64_t inside) {
    if (stride == 0)
      add(1, inside);
    else
      add(extent, stride);
  };
  auto inner = [&] {
    int64_t inside =
        swap ? (outerStride ? outerStride * g.outerBatch : matrix) : matrix;
    level(g.batch, batchStride, inside);
  };
  auto outer = [&] {
    int64_t inside =
        swap ? matrix : (batchStride ? batchStride * g.batch : matrix);
    level(g.outerBatch, outerStride, inside);
  };
  if (g.outerBatch > 1 && !swap)
    outer();
  if (g.outerBatch > 1 || g.batch > 1)
    inner();
  if (swap)
    outer();
  add(rows, rowStride);
  add(cols, colStride);
  return layout;
}

dnnl_data_type_t dnnlType(DType type) {
  switch (type) {
  case DType::F32:
    return dnnl_f32;
  case DType::BF16:
    return dnnl_bf16;
  case DType::F16:
    return dnnl_f16;
  default:
    return dnnl_data_type_undef;
  }
}

} // namespace

Status checkOneDnn(const std::string *&path) {
  return loadAndLocate(loadDnnl, path);
}

struct OneDnnPrimitives::Impl {
  const DnnlApi *dnnl = nullptr;
  dnnl_engine_t engine = nullptr;
  dnnl_stream_t stream = nullptr;
  std::map<std::vector<int64_t>, Primitive> convolutions;
  std::map<std::vector<int64_t>, Primitive> matmuls;
  std::map<std::vector<int64_t>, Pooling> poolings;
  std::map<std::vector<int64_t>, BatchNorm> batchNorms;
  /// Scratch per operand position, grown to the largest inner layout.
  std::vector<void *> scratch;
  std::vector<size_t> scratchBytes;

  void destroy(Operand &operand) {
    if (operand.reorder)
      dnnl->dnnl_primitive_destroy(operand.reorder);
    if (operand.inner)
      dnnl->dnnl_memory_destroy(operand.inner);
    if (operand.user)
      dnnl->dnnl_memory_destroy(operand.user);
  }
  void destroy(Primitive &conv) {
    for (Operand &operand : conv.operands)
      destroy(operand);
    if (conv.primitive)
      dnnl->dnnl_primitive_destroy(conv.primitive);
  }

  /// Makes the primitive of `key` in `cache` with `create`, unless a step
  /// of the same key already did; what a failed `create` made is freed.
  template <typename T, typename Create>
  Status prepareOnce(std::map<std::vector<int64_t>, T> &cache,
                     std::vector<int64_t> key, Create create) {
    if (cache.count(key))
      return Status::success();
    T primitive;
    if (Status status = create(primitive); status.failed()) {
      destroy(primitive);
      return status;
    }
    cache.emplace(std::move(key), primitive);
    return Status::success();
  }

  void destroy(Pooling &pooling) {
    for (dnnl_primitive_t p : {pooling.forward, pooling.backward})
      if (p)
        dnnl->dnnl_primitive_destroy(p);
    for (dnnl_memory_t m :
         {pooling.x, pooling.y, pooling.dy, pooling.dx, pooling.workspace})
      if (m)
        dnnl->dnnl_memory_destroy(m);
  }

  void destroy(BatchNorm &norm) {
    if (norm.primitive)
      dnnl->dnnl_primitive_destroy(norm.primitive);
    for (dnnl_exec_arg_t &arg : norm.args)
      if (arg.memory)
        dnnl->dnnl_memory_destroy(arg.memory);
  }

  ~Impl() {
    for (auto &[key, conv] : convolutions)
      destroy(conv);
    for (auto &[key, norm] : batchNorms)
      destroy(norm);
    for (auto &[key, pooling] : poolings)
      destroy(pooling);
    for (auto &[key, matmul] : matmuls)
      destroy(matmul);
    for (void *p : scratch)
      std::free(p);
    if (stream)
      dnnl->dnnl_stream_destroy(stream);
    if (engine)
      dnnl->dnnl_engine_destroy(engine);
  }

  Status check(const PreparedStep &step, dnnl_status_t status,
               const char *what) {
    if (status == dnnl_success)
      return Status::success();
    return fail(step.name, ": oneDNN ", what,
                " failed: ", dnnl->dnnl_status2str(status));
  }

  /// Adds an operand: `user` the plan's dense layout, `chosen` the layout
  /// of the primitive (queried from its descriptor).
  Status addOperand(const PreparedStep &step, Primitive &conv, int arg,
                    unsigned buffer, bool output,
                    const dnnl_memory_desc_t &user,
                    const dnnl_memory_desc_t *chosen) {
    if (!chosen)
      return fail(step.name, ": oneDNN gave no memory layout for an operand");
    // The operand belongs to `conv` from here on: on a failure below,
    // destroy(conv) frees what was made.
    Operand operand;
    operand.arg = arg;
    operand.buffer = buffer;
    operand.output = output;
    conv.operands.push_back(operand);
    Operand &added = conv.operands.back();
    if (Status status = check(step,
                              dnnl->dnnl_memory_create(
                                  &added.user, &user, engine, DNNL_MEMORY_NONE),
                              "memory creation");
        status.failed())
      return status;
    if (!dnnl->dnnl_memory_desc_equal(&user, chosen)) {
      added.bytes = dnnl->dnnl_memory_desc_get_size(chosen);
      dnnl_primitive_desc_t reorder;
      const dnnl_memory_desc_t *from = output ? chosen : &user;
      const dnnl_memory_desc_t *to = output ? &user : chosen;
      if (Status status =
              check(step,
                    dnnl->dnnl_reorder_primitive_desc_create(
                        &reorder, from, engine, to, engine, nullptr),
                    "reorder creation");
          status.failed())
        return status;
      dnnl_status_t made = dnnl->dnnl_primitive_create(&added.reorder, reorder);
      dnnl->dnnl_primitive_desc_destroy(reorder);
      if (Status status = check(step, made, "reorder creation");
          status.failed())
        return status;
      if (Status status =
              check(step,
                    dnnl->dnnl_memory_create(&added.inner, chosen, engine,
                                             DNNL_MEMORY_NONE),
                    "memory creation");
          status.failed())
        return status;
      size_t slot = conv.operands.size() - 1;
      if (scratch.size() <= slot) {
        scratch.resize(slot + 1, nullptr);
        scratchBytes.resize(slot + 1, 0);
      }
      if (scratchBytes[slot] < added.bytes) {
        std::free(scratch[slot]);
        size_t bytes = (added.bytes + 63) / 64 * 64;
        scratch[slot] = std::aligned_alloc(64, bytes);
        if (!scratch[slot]) {
          scratchBytes[slot] = 0;
          return fail(step.name, ": out of memory for ", bytes,
                      " bytes of convolution scratch");
        }
        scratchBytes[slot] = bytes;
      }
    }
    return Status::success();
  }

  /// Loads oneDNN and makes the engine and stream, once.
  Status start(const PreparedStep &step) {
    if (!dnnl)
      if (Status status = loadDnnl(dnnl); status.failed())
        return fail(step.name, ": ", status.message());
    if (!engine) {
      if (Status status =
              check(step, dnnl->dnnl_engine_create(&engine, dnnl_cpu, 0),
                    "engine creation");
          status.failed())
        return status;
      if (Status status = check(step,
                                dnnl->dnnl_stream_create(
                                    &stream, engine, dnnl_stream_default_flags),
                                "stream creation");
          status.failed())
        return status;
    }
    return Status::success();
  }

  /// A matmul primitive of the given operand layouts, or failure when
  /// oneDNN rejects them or has only its reference kernel for them (a bf16
  /// one is then tried widened to f32, and OpenBLAS runs what remains).
  Status matmulDesc(const PreparedStep &step, const dnnl_memory_desc_t *mds,
                    dnnl_primitive_desc_t &pd) {
    dnnl_matmul_desc_t desc;
    if (Status status = check(step,
                              dnnl->dnnl_matmul_desc_init(
                                  &desc, &mds[0], &mds[1], nullptr, &mds[2]),
                              "matmul descriptor");
        status.failed())
      return status;
    if (Status status = check(step,
                              dnnl->dnnl_primitive_desc_create(
                                  &pd, &desc, nullptr, engine, nullptr),
                              "matmul descriptor");
        status.failed())
      return status;
    const char *impl = nullptr;
    dnnl->dnnl_primitive_desc_query(pd, dnnl_query_impl_info_str, 0, &impl);
    if (impl && std::string(impl).rfind("ref", 0) != 0)
      return Status::success();
    dnnl->dnnl_primitive_desc_destroy(pd);
    pd = nullptr;
    return fail(step.name, ": oneDNN has only its reference matmul (",
                impl ? impl : "?", ") for this layout");
  }

  /// A matmul primitive for `step`, on the plan's layouts (no reorders).
  /// An f32 one fails where oneDNN has only its reference kernel for them
  /// (oneDNN 2.6 on AVX-512 has a JIT kernel for every layout blas.gemm
  /// admits, once broadcast levels have a stride): OpenBLAS then runs it.
  /// Where oneDNN has no bf16 matmul (CPUs without AVX-512), a bf16 one is
  /// the f32 matmul of widened copies in the same layouts, its bf16 result
  /// rounded back (as oneDNN's bf16 kernels round their f32 accumulators);
  /// before, OpenBLAS ran it one batch after another on single-threaded
  /// conversions (gemmBf16), which remains the fallback.
  Status createMatmul(const PreparedStep &step, Primitive &matmul) {
    Status status = createMatmul(step, matmul, /*widen=*/false);
    if (!status.failed() || step.gemmType != DType::BF16)
      return status;
    destroy(matmul);
    matmul = Primitive();
    if (createMatmul(step, matmul, /*widen=*/true).failed())
      return status;
    return Status::success();
  }

  Status createMatmul(const PreparedStep &step, Primitive &matmul, bool widen) {
    if (Status status = start(step); status.failed())
      return status;
    const GemmCall &g = step.gemm;
    GemmLayout layouts[3] = {
        gemmLayout(g, g.aOuterStride, g.aBatchStride, g.m, g.k, g.aMStride,
                   g.aKStride),
        gemmLayout(g, g.bOuterStride, g.bBatchStride, g.k, g.n, g.bKStride,
                   g.bNStride),
        gemmLayout(g, g.cOuterStride, g.cBatchStride, g.m, g.n, g.cMStride, 1)};
    dnnl_data_type_t types[3] = {dnnlType(step.gemmType),
                                 dnnlType(step.gemmType),
                                 dnnlType(step.gemmOutType)};
    bool widened[3] = {false, false, false};
    for (int i = 0; i < 3 && widen; ++i)
      if (types[i] == dnnl_bf16) {
        types[i] = dnnl_f32;
        widened[i] = true;
      }
    dnnl_memory_desc_t user[3];
    for (int i = 0; i < 3; ++i)
      if (Status status = check(step,
                                dnnl->dnnl_memory_desc_init_by_strides(
                                    &user[i], layouts[i].rank, layouts[i].dims,
                                    types[i], layouts[i].strides),
                                "matmul layout");
          status.failed())
        return status;
    dnnl_primitive_desc_t pd = nullptr;
    Status status = matmulDesc(step, user, pd);
    if (status.failed())
      return status;
    int args[3] = {DNNL_ARG_SRC, DNNL_ARG_WEIGHTS, DNNL_ARG_DST};
    for (unsigned i = 0; i < 3 && !status.failed(); ++i) {
      status = addOperand(step, matmul, args[i], i, /*output=*/i == 2, user[i],
                          &user[i]);
      if (status.failed() || !widened[i])
        continue;
      // The copy spans the view, gaps included (an input's are read, not
      // used); an output rounds back the elements of the view only.
      Operand &operand = matmul.operands.back();
      operand.wide.resize(dnnl->dnnl_memory_desc_get_size(&user[i]) /
                          sizeof(float));
      if (i == 2) {
        operand.dims.assign(layouts[i].dims, layouts[i].dims + layouts[i].rank);
        operand.strides.assign(layouts[i].strides,
                               layouts[i].strides + layouts[i].rank);
      }
    }
    if (!status.failed())
      status = check(step, dnnl->dnnl_primitive_create(&matmul.primitive, pd),
                     "matmul creation");
    dnnl->dnnl_primitive_desc_destroy(pd);
    return status;
  }

  static std::vector<int64_t> gemmKey(const PreparedStep &step) {
    const GemmCall &g = step.gemm;
    return {static_cast<int64_t>(step.gemmType),
            static_cast<int64_t>(step.gemmOutType),
            g.outerBatch,
            g.batch,
            g.m,
            g.n,
            g.k,
            g.aOuterStride,
            g.aBatchStride,
            g.aMStride,
            g.aKStride,
            g.bOuterStride,
            g.bBatchStride,
            g.bKStride,
            g.bNStride,
            g.cOuterStride,
            g.cBatchStride,
            g.cMStride};
  }

  /// Creates `object` by `create(object, type)` in the step's type. Where
  /// oneDNN has no bf16 kernels (CPUs without AVX-512) a bf16 step is
  /// created again in f32 and `widened` says so; if that fails too, the
  /// bf16 failure is the one reported.
  template <typename T, typename Create>
  Status createWidening(const PreparedStep &step, T &object, bool &widened,
                        Create create) {
    widened = false;
    Status status = create(object, dnnlType(step.dnnType));
    if (!status.failed() || step.dnnType != DType::BF16)
      return status;
    destroy(object);
    object = T();
    if (create(object, dnnl_f32).failed())
      return status;
    widened = true;
    return Status::success();
  }

  /// Where oneDNN has no bf16 convolution (CPUs without AVX-512), a bf16
  /// step computes in f32: the reorders between the plan's buffers and the
  /// primitive's layouts also convert (bf16 widened exactly, results
  /// rounded to nearest even), as oneDNN's bf16 kernels accumulate in f32.
  Status create(const PreparedStep &step, Primitive &conv) {
    bool widened;
    return createWidening(step, conv, widened,
                          [&](Primitive &out, dnnl_data_type_t compute) {
                            return create(step, out, compute);
                          });
  }

  /// The convolution of `step` computing in `compute` (the plan's type, or
  /// f32 for a widened bf16 step) on buffers of the plan's type.
  Status create(const PreparedStep &step, Primitive &conv,
                dnnl_data_type_t compute) {
    if (Status status = start(step); status.failed())
      return status;
    const ConvGeometry &g = step.conv;
    dnnl_data_type_t type = dnnlType(step.dnnType);
    if (type == dnnl_data_type_undef)
      return fail(step.name, ": oneDNN has no ", dtypeName(step.dnnType),
                  " convolution (f32, bf16 and f16 only)");
    bool grouped = g.groups != 1;
    // A widened step's operands are f32 copies of the plan's bf16 buffers.
    bool widen = compute != type;
    dnnl_data_type_t userType = widen ? compute : type;
    dnnl_dims_t x = {g.n, g.c, g.h, g.w}, y = {g.n, g.f, g.oh, g.ow},
                bias = {g.f};
    dnnl_dims_t w = {g.f, g.c / g.groups, g.kh, g.kw};
    if (grouped) {
      w[0] = g.groups;
      w[1] = g.f / g.groups;
      w[2] = g.c / g.groups;
      w[3] = g.kh;
      w[4] = g.kw;
    }
    int wRank = grouped ? 5 : 4;
    dnnl_format_tag_t wTag = grouped ? dnnl_goihw : dnnl_oihw;
    // oneDNN counts dilation from 0 (no gaps).
    dnnl_dims_t strides = {g.strideH, g.strideW},
                dilates = {g.dilationH - 1, g.dilationW - 1},
                padL = {g.padTop, g.padLeft}, padR = {g.padBottom, g.padRight};
    dnnl_memory_desc_t xUser, wUser, yUser, bUser, bCompute, xAny, wAny, yAny;
    dnnl->dnnl_memory_desc_init_by_tag(&xUser, 4, x, userType, dnnl_nchw);
    dnnl->dnnl_memory_desc_init_by_tag(&wUser, wRank, w, userType, wTag);
    dnnl->dnnl_memory_desc_init_by_tag(&yUser, 4, y, userType, dnnl_nchw);
    dnnl->dnnl_memory_desc_init_by_tag(&bUser, 1, bias, userType, dnnl_x);
    dnnl->dnnl_memory_desc_init_by_tag(&bCompute, 1, bias, compute, dnnl_x);
    dnnl->dnnl_memory_desc_init_by_tag(&xAny, 4, x, compute,
                                       dnnl_format_tag_any);
    dnnl->dnnl_memory_desc_init_by_tag(&wAny, wRank, w, compute,
                                       dnnl_format_tag_any);
    dnnl->dnnl_memory_desc_init_by_tag(&yAny, 4, y, compute,
                                       dnnl_format_tag_any);
    bool hasBias =
        step.function == kConvForwardFunction && step.args.size() == 4;

    // The forward descriptor: the primitive itself, or the gradients' hint.
    dnnl_convolution_desc_t forwardDesc;
    if (Status status = check(step,
                              dnnl->dnnl_dilated_convolution_forward_desc_init(
                                  &forwardDesc, dnnl_forward_training,
                                  dnnl_convolution_direct, &xAny, &wAny,
                                  hasBias ? &bCompute : nullptr, &yAny, strides,
                                  dilates, padL, padR),
                              "convolution descriptor");
        status.failed())
      return status;
    dnnl_primitive_desc_t forward;
    if (Status status =
            check(step,
                  dnnl->dnnl_primitive_desc_create(&forward, &forwardDesc,
                                                   nullptr, engine, nullptr),
                  "convolution descriptor");
        status.failed())
      return status;
    dnnl_primitive_desc_t chosen = forward;
    Status status = Status::success();
    if (step.function != kConvForwardFunction) {
      // The gradients' primitives take the forward one as their hint.
      bool data = step.function == kConvGradInputFunction;
      const char *what =
          data ? "data-gradient descriptor" : "weight-gradient descriptor";
      dnnl_convolution_desc_t desc;
      status = check(
          step,
          data ? dnnl->dnnl_dilated_convolution_backward_data_desc_init(
                     &desc, dnnl_convolution_direct, &xAny, &wAny, &yAny,
                     strides, dilates, padL, padR)
               : dnnl->dnnl_dilated_convolution_backward_weights_desc_init(
                     &desc, dnnl_convolution_direct, &xAny, &wAny, nullptr,
                     &yAny, strides, dilates, padL, padR),
          what);
      if (!status.failed())
        status = check(step,
                       dnnl->dnnl_primitive_desc_create(&chosen, &desc, nullptr,
                                                        engine, forward),
                       what);
    }
    if (!status.failed()) {
      // The operands in the step's buffer order: oneDNN's argument, the
      // plan's layout, and the query for the primitive's layout (none: the
      // plan's layout in the compute type, for the bias).
      struct Spec {
        int arg;
        const dnnl_memory_desc_t *user;
        dnnl_query_t query;
      };
      std::vector<Spec> specs;
      if (step.function == kConvForwardFunction) {
        specs = {{DNNL_ARG_SRC, &xUser, dnnl_query_src_md},
                 {DNNL_ARG_WEIGHTS, &wUser, dnnl_query_weights_md}};
        if (hasBias)
          specs.push_back({DNNL_ARG_BIAS, &bUser, dnnl_query_undef});
        specs.push_back({DNNL_ARG_DST, &yUser, dnnl_query_dst_md});
      } else if (step.function == kConvGradInputFunction) {
        specs = {{DNNL_ARG_DIFF_DST, &yUser, dnnl_query_diff_dst_md},
                 {DNNL_ARG_WEIGHTS, &wUser, dnnl_query_weights_md},
                 {DNNL_ARG_DIFF_SRC, &xUser, dnnl_query_diff_src_md}};
      } else {
        specs = {{DNNL_ARG_SRC, &xUser, dnnl_query_src_md},
                 {DNNL_ARG_DIFF_DST, &yUser, dnnl_query_diff_dst_md},
                 {DNNL_ARG_DIFF_WEIGHTS, &wUser, dnnl_query_diff_weights_md}};
      }
      for (unsigned i = 0; i < specs.size() && !status.failed(); ++i) {
        const Spec &spec = specs[i];
        const dnnl_memory_desc_t *layout =
            spec.query == dnnl_query_undef
                ? &bCompute
                : dnnl->dnnl_primitive_desc_query_md(chosen, spec.query, 0);
        status =
            addOperand(step, conv, spec.arg, i,
                       /*output=*/i + 1 == specs.size(), *spec.user, layout);
        if (!status.failed() && widen)
          conv.operands.back().wide.resize(
              dnnl->dnnl_memory_desc_get_size(spec.user) / sizeof(float));
      }
    }
    if (!status.failed())
      status = check(step, dnnl->dnnl_primitive_create(&conv.primitive, chosen),
                     "convolution creation");
    if (chosen != forward)
      dnnl->dnnl_primitive_desc_destroy(chosen);
    dnnl->dnnl_primitive_desc_destroy(forward);
    return status;
  }

  /// The primitives of the Pool `step`, on NCHW buffers: oneDNN's JIT
  /// pooling kernels take the plain layout, so nothing is reordered.
  Status createPooling(const PreparedStep &step, Pooling &pooling) {
    Status status = createWidening(step, pooling, pooling.widened,
                                   [&](Pooling &out, dnnl_data_type_t type) {
                                     return createPooling(step, out, type);
                                   });
    if (!status.failed() && pooling.widened) {
      const PoolGeometry &g = step.pool;
      pooling.xWide.resize(size_t(g.n * g.c * g.h * g.w));
      pooling.yWide.resize(size_t(g.n * g.c * g.oh * g.ow));
    }
    return status;
  }

  Status createPooling(const PreparedStep &step, Pooling &pooling,
                       dnnl_data_type_t type) {
    if (Status status = start(step); status.failed())
      return status;
    const PoolGeometry &g = step.pool;
    if (type == dnnl_data_type_undef)
      return fail(step.name, ": oneDNN has no ", dtypeName(step.dnnType),
                  " pooling (f32, bf16 and f16 only)");
    dnnl_alg_kind_t algorithm = g.mode == PoolMode::Max ? dnnl_pooling_max
                                : g.mode == PoolMode::AvgIncludePad
                                    ? dnnl_pooling_avg_include_padding
                                    : dnnl_pooling_avg_exclude_padding;
    dnnl_dims_t xDims = {g.n, g.c, g.h, g.w}, yDims = {g.n, g.c, g.oh, g.ow};
    dnnl_dims_t strides = {g.strideH, g.strideW}, kernel = {g.kh, g.kw},
                padL = {g.padTop, g.padLeft}, padR = {g.padBottom, g.padRight};
    dnnl_memory_desc_t xMd, yMd;
    dnnl->dnnl_memory_desc_init_by_tag(&xMd, 4, xDims, type, dnnl_nchw);
    dnnl->dnnl_memory_desc_init_by_tag(&yMd, 4, yDims, type, dnnl_nchw);
    bool gradient = step.function == kPoolGradFunction;
    auto memory = [&](dnnl_memory_t &out, const dnnl_memory_desc_t *md,
                      void *handle) {
      return check(step, dnnl->dnnl_memory_create(&out, md, engine, handle),
                   "memory creation");
    };
    auto primitive = [&](dnnl_primitive_t &out, const void *desc,
                         dnnl_primitive_desc_t hint, dnnl_primitive_desc_t &pd,
                         const char *what) {
      if (Status status = check(step,
                                dnnl->dnnl_primitive_desc_create(
                                    &pd, desc, nullptr, engine, hint),
                                what);
          status.failed())
        return status;
      return check(step, dnnl->dnnl_primitive_create(&out, pd), what);
    };

    // The forward pass: the step, or a max gradient's recomputation.
    dnnl_primitive_desc_t forwardPd = nullptr;
    Status status = Status::success();
    if (!gradient || g.mode == PoolMode::Max) {
      dnnl_pooling_desc_t desc;
      status = check(
          step,
          dnnl->dnnl_pooling_forward_desc_init(
              &desc, gradient ? dnnl_forward_training : dnnl_forward_inference,
              algorithm, &xMd, &yMd, strides, kernel, padL, padR),
          "pooling descriptor");
      if (!status.failed())
        status = primitive(pooling.forward, &desc, nullptr, forwardPd,
                           "pooling creation");
      if (!status.failed())
        status = memory(pooling.x, &xMd, DNNL_MEMORY_NONE);
      if (!status.failed())
        status = memory(pooling.y, &yMd,
                        gradient ? DNNL_MEMORY_ALLOCATE : DNNL_MEMORY_NONE);
      if (!status.failed() && gradient) {
        const dnnl_memory_desc_t *workspace =
            dnnl->dnnl_primitive_desc_query_md(forwardPd,
                                               dnnl_query_workspace_md, 0);
        status =
            workspace
                ? memory(pooling.workspace, workspace, DNNL_MEMORY_ALLOCATE)
                : fail(step.name, ": oneDNN gave no max-pooling workspace");
      }
    }
    if (!status.failed() && gradient) {
      // An average's backward pass needs a forward descriptor as its hint.
      if (!forwardPd) {
        dnnl_pooling_desc_t desc;
        status = check(step,
                       dnnl->dnnl_pooling_forward_desc_init(
                           &desc, dnnl_forward_training, algorithm, &xMd, &yMd,
                           strides, kernel, padL, padR),
                       "pooling descriptor");
        if (!status.failed())
          status = check(step,
                         dnnl->dnnl_primitive_desc_create(
                             &forwardPd, &desc, nullptr, engine, nullptr),
                         "pooling descriptor");
      }
      dnnl_pooling_desc_t desc;
      if (!status.failed())
        status = check(
            step,
            dnnl->dnnl_pooling_backward_desc_init(&desc, algorithm, &xMd, &yMd,
                                                  strides, kernel, padL, padR),
            "pooling gradient descriptor");
      dnnl_primitive_desc_t backwardPd = nullptr;
      if (!status.failed())
        status = primitive(pooling.backward, &desc, forwardPd, backwardPd,
                           "pooling gradient creation");
      if (backwardPd)
        dnnl->dnnl_primitive_desc_destroy(backwardPd);
      if (!status.failed())
        status = memory(pooling.dy, &yMd, DNNL_MEMORY_NONE);
      if (!status.failed())
        status = memory(pooling.dx, &xMd, DNNL_MEMORY_NONE);
    }
    if (forwardPd)
      dnnl->dnnl_primitive_desc_destroy(forwardPd);
    return status;
  }

  /// The primitive of the BatchNorm `step` on its dense [N, C, S] and [C]
  /// f32 buffers (oneDNN's batch norm takes the plain layout, and keeps
  /// statistics, scale and shift in f32): forward training with scale and
  /// shift (mean and biased variance written), or the backward pass that
  /// also gives the gradients of scale and shift.
  Status createBatchNorm(const PreparedStep &step, BatchNorm &norm) {
    if (Status status = start(step); status.failed())
      return status;
    if (step.dnnType != DType::F32)
      return fail(step.name, ": the batch norm step is f32 only, got ",
                  dtypeName(step.dnnType));
    const BatchNormGeometry &g = step.norm;
    // As [N, C, S, 1] NCHW: oneDNN 2.6 has only its reference batch norm
    // for 3-D tensors (56 ms where the 4-D JIT kernel takes 1.x on the
    // convnet benchmark's 32x64x1024).
    dnnl_dims_t dataDims = {g.n, g.c, g.s, 1}, channelDims = {g.c};
    dnnl_memory_desc_t dataMd, channelMd;
    dnnl->dnnl_memory_desc_init_by_tag(&dataMd, 4, dataDims, dnnl_f32,
                                       dnnl_nchw);
    dnnl->dnnl_memory_desc_init_by_tag(&channelMd, 1, channelDims, dnnl_f32,
                                       dnnl_a);
    unsigned flags = dnnl_use_scale | dnnl_use_shift;
    float epsilon = static_cast<float>(g.epsilon);
    bool gradient = step.function == kBatchNormGradFunction;
    dnnl_batch_normalization_desc_t forward, backward;
    dnnl_primitive_desc_t forwardPd = nullptr, pd = nullptr;
    Status status =
        check(step,
              dnnl->dnnl_batch_normalization_forward_desc_init(
                  &forward, dnnl_forward_training, &dataMd, epsilon, flags),
              "batch norm descriptor");
    if (!status.failed())
      status = check(step,
                     dnnl->dnnl_primitive_desc_create(&forwardPd, &forward,
                                                      nullptr, engine, nullptr),
                     "batch norm descriptor");
    if (!status.failed() && gradient) {
      status =
          check(step,
                dnnl->dnnl_batch_normalization_backward_desc_init(
                    &backward, dnnl_backward, &dataMd, &dataMd, epsilon, flags),
                "batch norm gradient descriptor");
      if (!status.failed())
        status = check(step,
                       dnnl->dnnl_primitive_desc_create(&pd, &backward, nullptr,
                                                        engine, forwardPd),
                       "batch norm gradient descriptor");
    }
    if (!status.failed())
      status = check(step,
                     dnnl->dnnl_primitive_create(&norm.primitive,
                                                 gradient ? pd : forwardPd),
                     "batch norm creation");
    for (dnnl_primitive_desc_t made : {forwardPd, pd})
      if (made)
        dnnl->dnnl_primitive_desc_destroy(made);
    if (status.failed())
      return status;
    // The step's buffers in order: which argument each is, and its shape.
    static const int forwardArgs[] = {DNNL_ARG_SRC,   DNNL_ARG_SCALE,
                                      DNNL_ARG_SHIFT, DNNL_ARG_DST,
                                      DNNL_ARG_MEAN,  DNNL_ARG_VARIANCE};
    static const int gradientArgs[] = {
        DNNL_ARG_SRC,        DNNL_ARG_DIFF_DST,  DNNL_ARG_SCALE,
        DNNL_ARG_MEAN,       DNNL_ARG_VARIANCE,  DNNL_ARG_DIFF_SRC,
        DNNL_ARG_DIFF_SCALE, DNNL_ARG_DIFF_SHIFT};
    std::vector<int> args(
        gradient ? std::begin(gradientArgs) : std::begin(forwardArgs),
        gradient ? std::end(gradientArgs) : std::end(forwardArgs));
    // oneDNN 2.x counts the shift among the backward pass's inputs (with
    // dnnl_use_shift, which gives the shift's gradient) but does not read
    // it: the scale's buffer stands in (runBatchNorm binds it).
    if (gradient)
      args.push_back(DNNL_ARG_SHIFT);
    for (int arg : args) {
      bool data = arg == DNNL_ARG_SRC || arg == DNNL_ARG_DST ||
                  arg == DNNL_ARG_DIFF_DST || arg == DNNL_ARG_DIFF_SRC;
      norm.args.push_back({arg, nullptr});
      if (Status made =
              check(step,
                    dnnl->dnnl_memory_create(&norm.args.back().memory,
                                             data ? &dataMd : &channelMd,
                                             engine, DNNL_MEMORY_NONE),
                    "memory creation");
          made.failed())
        return made;
    }
    return Status::success();
  }

  Status runBatchNorm(const PreparedStep &step, BatchNorm &norm) {
    for (size_t i = 0; i < norm.args.size(); ++i) {
      // The step's buffers, then the gradient's stand-in shift (the scale).
      void *data = i < step.args.size() ? step.args[i] : step.args[2];
      if (Status status = check(
              step,
              dnnl->dnnl_memory_set_data_handle(norm.args[i].memory, data),
              "memory binding");
          status.failed())
        return status;
    }
    if (Status status =
            check(step,
                  dnnl->dnnl_primitive_execute(
                      norm.primitive, stream,
                      static_cast<int>(norm.args.size()), norm.args.data()),
                  "batch norm");
        status.failed())
      return status;
    return check(step, dnnl->dnnl_stream_wait(stream), "stream wait");
  }

  Status runPooling(const PreparedStep &step, Pooling &pooling) {
    auto bind = [&](dnnl_memory_t memory, void *data) {
      return check(step, dnnl->dnnl_memory_set_data_handle(memory, data),
                   "memory binding");
    };
    auto execute = [&](dnnl_primitive_t primitive,
                       std::vector<dnnl_exec_arg_t> args, const char *what) {
      return check(step,
                   dnnl->dnnl_primitive_execute(primitive, stream,
                                                static_cast<int>(args.size()),
                                                args.data()),
                   what);
    };
    Status status = Status::success();
    // The step's buffers, or the f32 copies of a widened bf16 step (x and y
    // forward; x, dy and dx for a gradient, dy and dx in yWide and xWide).
    void *x = step.args[0], *y = step.args[1];
    void *dy = step.args[1], *dx = step.args[2];
    if (pooling.widened) {
      widenBf16(step.args[0], pooling.xWide.data(), pooling.xWide.size());
      x = pooling.xWide.data();
      y = pooling.yWide.data();
    }
    if (step.function == kPoolForwardFunction) {
      if (!(status = bind(pooling.x, x)).failed() &&
          !(status = bind(pooling.y, y)).failed())
        status = execute(pooling.forward,
                         {{DNNL_ARG_SRC, pooling.x}, {DNNL_ARG_DST, pooling.y}},
                         "pooling");
      if (!status.failed() && pooling.widened &&
          !(status = check(step, dnnl->dnnl_stream_wait(stream), "stream wait"))
               .failed())
        narrowToBf16(pooling.yWide.data(), step.args[1], pooling.yWide.size());
    } else {
      std::vector<dnnl_exec_arg_t> args = {{DNNL_ARG_DIFF_DST, pooling.dy},
                                           {DNNL_ARG_DIFF_SRC, pooling.dx}};
      if (pooling.forward) {
        if (!(status = bind(pooling.x, x)).failed())
          status = execute(pooling.forward,
                           {{DNNL_ARG_SRC, pooling.x},
                            {DNNL_ARG_DST, pooling.y},
                            {DNNL_ARG_WORKSPACE, pooling.workspace}},
                           "pooling");
        args.push_back({DNNL_ARG_WORKSPACE, pooling.workspace});
      }
      if (pooling.widened) {
        // The forward recomputation read x already; its buffer is dx's now.
        if (!status.failed())
          status = check(step, dnnl->dnnl_stream_wait(stream), "stream wait");
        widenBf16(step.args[1], pooling.yWide.data(), pooling.yWide.size());
        dy = pooling.yWide.data();
        dx = pooling.xWide.data();
      }
      if (!status.failed() && !(status = bind(pooling.dy, dy)).failed() &&
          !(status = bind(pooling.dx, dx)).failed())
        status = execute(pooling.backward, args, "pooling gradient");
      if (!status.failed() && pooling.widened &&
          !(status = check(step, dnnl->dnnl_stream_wait(stream), "stream wait"))
               .failed())
        narrowToBf16(pooling.xWide.data(), step.args[2], pooling.xWide.size());
    }
    if (status.failed())
      return status;
    return check(step, dnnl->dnnl_stream_wait(stream), "stream wait");
  }

  Status run(const PreparedStep &step, Primitive &conv) {
    std::vector<dnnl_exec_arg_t> args;
    for (size_t i = 0; i < conv.operands.size(); ++i) {
      Operand &operand = conv.operands[i];
      void *data = step.args[operand.buffer];
      if (!operand.wide.empty()) {
        if (!operand.output)
          widenBf16(data, operand.wide.data(), operand.wide.size());
        data = operand.wide.data();
      }
      if (Status status =
              check(step, dnnl->dnnl_memory_set_data_handle(operand.user, data),
                    "memory binding");
          status.failed())
        return status;
      dnnl_memory_t used = operand.user;
      if (operand.inner) {
        if (Status status = check(
                step,
                dnnl->dnnl_memory_set_data_handle(operand.inner, scratch[i]),
                "memory binding");
            status.failed())
          return status;
        used = operand.inner;
        if (!operand.output) {
          dnnl_exec_arg_t reorderArgs[] = {{DNNL_ARG_FROM, operand.user},
                                           {DNNL_ARG_TO, operand.inner}};
          if (Status status =
                  check(step,
                        dnnl->dnnl_primitive_execute(operand.reorder, stream, 2,
                                                     reorderArgs),
                        "reorder");
              status.failed())
            return status;
        }
      }
      args.push_back({operand.arg, used});
    }
    if (Status status =
            check(step,
                  dnnl->dnnl_primitive_execute(conv.primitive, stream,
                                               static_cast<int>(args.size()),
                                               args.data()),
                  step.kind == StepKind::Gemm ? "matmul" : "convolution");
        status.failed())
      return status;
    for (Operand &operand : conv.operands)
      if (operand.inner && operand.output) {
        dnnl_exec_arg_t reorderArgs[] = {{DNNL_ARG_FROM, operand.inner},
                                         {DNNL_ARG_TO, operand.user}};
        if (Status status = check(step,
                                  dnnl->dnnl_primitive_execute(
                                      operand.reorder, stream, 2, reorderArgs),
                                  "reorder");
            status.failed())
          return status;
      }
    if (Status status =
            check(step, dnnl->dnnl_stream_wait(stream), "stream wait");
        status.failed())
      return status;
    for (Operand &operand : conv.operands) {
      if (!operand.output || operand.wide.empty())
        continue;
      if (operand.dims.empty())
        narrowToBf16(operand.wide.data(), step.args[operand.buffer],
                     operand.wide.size());
      else
        narrowStrided(operand.wide.data(),
                      static_cast<uint16_t *>(step.args[operand.buffer]),
                      operand.dims.data(), operand.strides.data(),
                      operand.dims.size(), 0);
    }
    return Status::success();
  }
};

OneDnnPrimitives::OneDnnPrimitives() : impl_(std::make_unique<Impl>()) {}
OneDnnPrimitives::~OneDnnPrimitives() = default;

Status OneDnnPrimitives::prepare(const PreparedStep &step) {
  return impl_->prepareOnce(
      impl_->convolutions, convolutionKey(step),
      [&](Primitive &conv) { return impl_->create(step, conv); });
}

Status OneDnnPrimitives::preparePooling(const PreparedStep &step) {
  return impl_->prepareOnce(
      impl_->poolings, poolingKey(step),
      [&](Pooling &pooling) { return impl_->createPooling(step, pooling); });
}

Status OneDnnPrimitives::runPooling(const PreparedStep &step) {
  auto found = impl_->poolings.find(poolingKey(step));
  if (found == impl_->poolings.end())
    return fail(step.name, ": the pooling was not prepared");
  return impl_->runPooling(step, found->second);
}

Status OneDnnPrimitives::prepareBatchNorm(const PreparedStep &step) {
  return impl_->prepareOnce(
      impl_->batchNorms, batchNormKey(step),
      [&](BatchNorm &norm) { return impl_->createBatchNorm(step, norm); });
}

Status OneDnnPrimitives::runBatchNorm(const PreparedStep &step) {
  auto found = impl_->batchNorms.find(batchNormKey(step));
  if (found == impl_->batchNorms.end())
    return fail(step.name, ": the batch norm was not prepared");
  return impl_->runBatchNorm(step, found->second);
}

Status OneDnnPrimitives::prepareGemm(const PreparedStep &step) {
  if (const char *choice = std::getenv("OF_CPU_GEMM");
      choice && std::string(choice) == "openblas" &&
      step.gemmType != DType::BF16)
    return fail(step.name, ": OF_CPU_GEMM=openblas asks for OpenBLAS");
  return impl_->prepareOnce(
      impl_->matmuls, Impl::gemmKey(step),
      [&](Primitive &matmul) { return impl_->createMatmul(step, matmul); });
}

Status OneDnnPrimitives::runGemm(const PreparedStep &step, bool &ran) {
  auto found = impl_->matmuls.find(Impl::gemmKey(step));
  ran = found != impl_->matmuls.end();
  return ran ? impl_->run(step, found->second) : Status::success();
}

Status OneDnnPrimitives::run(const PreparedStep &step) {
  auto found = impl_->convolutions.find(convolutionKey(step));
  if (found == impl_->convolutions.end())
    return fail(step.name, ": the convolution was not prepared");
  return impl_->run(step, found->second);
}

} // namespace of::rt
