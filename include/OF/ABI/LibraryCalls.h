//===- LibraryCalls.h - Parameters of the plan's dnn library steps --------===//
//
// A convolution library step (`dnn.conv2d`, `dnn.conv2d_grad_input`,
// `dnn.conv2d_grad_filter`) carries its geometry as 18 integers, a pooling
// step (`dnn.pool2d`, `dnn.pool2d_grad`) as 15, a batch-normalization step
// (`dnn.batch_norm`, `dnn.batch_norm_grad`) as 4. The compiler (the
// `of.library_call` verifier and the plan builder) and the runtime (the
// plan loader and the executors) both read them through this header, so the
// layout and its checks have one definition. Header-only, no MLIR: libofrt
// includes it.
//
// Buffers, all NCHW / OIHW (weights [F, C / groups, KH, KW]), dense:
//   dnn.conv2d             [x, w, y] or [x, w, bias, y]   y = conv(x, w) + bias
//   dnn.conv2d_grad_input  [dy, w, dx]                    dx = d conv / dx
//   dnn.conv2d_grad_filter [x, dy, dw]                    dw = d conv / dw
//   dnn.pool2d             [x, y]                         y = pool(x)
//   dnn.pool2d_grad        [x, dy, dx]                    dx = d pool / dx
//   dnn.batch_norm         [x, scale, shift, y, mean, var]
//   dnn.batch_norm_grad    [x, dy, scale, mean, var, dx, dscale, dshift]
//
// A step writes its last outputCount(function) buffers and reads the others.
//
//===----------------------------------------------------------------------===//

#ifndef OF_RUNTIME_LIBRARYCALLS_H
#define OF_RUNTIME_LIBRARYCALLS_H

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <string_view>

namespace of::plan {

/// A matrix product (parameters in PlanFormat.fbs) and the bounds check of
/// the indices an embedding or a cross-entropy reads.
inline constexpr std::string_view kGemmFunction = "blas.gemm";
inline constexpr std::string_view kIndexRangeFunction = "check.index_range";

inline constexpr std::string_view kConvForwardFunction = "dnn.conv2d";
inline constexpr std::string_view kConvGradInputFunction =
    "dnn.conv2d_grad_input";
inline constexpr std::string_view kConvGradFilterFunction =
    "dnn.conv2d_grad_filter";

inline bool isConvFunction(std::string_view name) {
  return name == kConvForwardFunction || name == kConvGradInputFunction ||
         name == kConvGradFilterFunction;
}

/// The geometry of a 2-D convolution: input [n, c, h, w], weight
/// [f, c / groups, kh, kw], output [n, f, oh, ow].
struct ConvGeometry {
  int64_t n, c, h, w, f, kh, kw, oh, ow;
  int64_t strideH, strideW, dilationH, dilationW;
  int64_t padTop, padBottom, padLeft, padRight;
  int64_t groups;
};

/// The parameter vector is the fields of ConvGeometry in order.
inline constexpr size_t kConvParamCount = 18;

inline ConvGeometry decodeConvGeometry(const int64_t *p) {
  return {p[0], p[1],  p[2],  p[3],  p[4],  p[5],  p[6],  p[7],  p[8],
          p[9], p[10], p[11], p[12], p[13], p[14], p[15], p[16], p[17]};
}

/// Why `g` is not a convolution, or null when it is one: every extent
/// positive, strides and dilations positive, paddings non-negative, groups
/// dividing both channel counts, and the output extent the one the input,
/// padding, dilation and stride give (floor division, as PyTorch). Bounds
/// every extent so that element counts stay far from overflow.
inline const char *checkConvGeometry(const ConvGeometry &g) {
  constexpr int64_t kMaxExtent = int64_t(1) << 31;
  for (int64_t v : {g.n, g.c, g.h, g.w, g.f, g.kh, g.kw, g.oh, g.ow})
    if (v <= 0 || v > kMaxExtent)
      return "every extent must be in [1, 2^31]";
  for (int64_t v : {g.strideH, g.strideW, g.dilationH, g.dilationW})
    if (v <= 0 || v > kMaxExtent)
      return "strides and dilations must be in [1, 2^31]";
  for (int64_t v : {g.padTop, g.padBottom, g.padLeft, g.padRight})
    if (v < 0 || v > kMaxExtent)
      return "paddings must be in [0, 2^31]";
  if (g.groups <= 0 || g.c % g.groups || g.f % g.groups)
    return "groups must divide the input and output channels";
  auto outExtent = [](int64_t in, int64_t lo, int64_t hi, int64_t k,
                      int64_t dilation, int64_t stride) {
    int64_t span = in + lo + hi - (k - 1) * dilation - 1;
    return span < 0 ? int64_t(0) : span / stride + 1;
  };
  if (g.oh !=
          outExtent(g.h, g.padTop, g.padBottom, g.kh, g.dilationH, g.strideH) ||
      g.ow !=
          outExtent(g.w, g.padLeft, g.padRight, g.kw, g.dilationW, g.strideW))
    return "the output extent does not follow from the input, kernel, "
           "padding, dilation and stride";
  auto fits = [](std::initializer_list<int64_t> extents) {
    int64_t product = 1;
    for (int64_t v : extents)
      if (__builtin_mul_overflow(product, v, &product) ||
          product > (int64_t(1) << 48))
        return false;
    return true;
  };
  if (!fits({g.n, g.c, g.h, g.w}) || !fits({g.f, g.c / g.groups, g.kh, g.kw}) ||
      !fits({g.n, g.f, g.oh, g.ow}))
    return "a tensor of the convolution has more than 2^48 elements";
  return nullptr;
}

/// Element counts of the convolution's tensors.
inline int64_t convInputElements(const ConvGeometry &g) {
  return g.n * g.c * g.h * g.w;
}
inline int64_t convWeightElements(const ConvGeometry &g) {
  return g.f * (g.c / g.groups) * g.kh * g.kw;
}
inline int64_t convOutputElements(const ConvGeometry &g) {
  return g.n * g.f * g.oh * g.ow;
}

inline constexpr std::string_view kPoolForwardFunction = "dnn.pool2d";
inline constexpr std::string_view kPoolGradFunction = "dnn.pool2d_grad";

inline bool isPoolFunction(std::string_view name) {
  return name == kPoolForwardFunction || name == kPoolGradFunction;
}

/// What a pooling computes: the largest element of each window (padding
/// counts as -inf; a gradient goes to the first largest in row-major window
/// order, as PyTorch), or the window's mean over kh * kw elements
/// (AvgIncludePad) or over those inside the unpadded input (AvgExcludePad).
enum class PoolMode : int64_t { Max = 0, AvgIncludePad = 1, AvgExcludePad = 2 };

/// The geometry of a 2-D pooling: input [n, c, h, w], windows kh x kw,
/// output [n, c, oh, ow].
struct PoolGeometry {
  int64_t n, c, h, w, kh, kw, oh, ow;
  int64_t strideH, strideW;
  int64_t padTop, padBottom, padLeft, padRight;
  PoolMode mode;
};

/// The parameter vector is the fields of PoolGeometry in order.
inline constexpr size_t kPoolParamCount = 15;

inline PoolGeometry decodePoolGeometry(const int64_t *p) {
  return {p[0],  p[1],  p[2],  p[3],  p[4],
          p[5],  p[6],  p[7],  p[8],  p[9],
          p[10], p[11], p[12], p[13], static_cast<PoolMode>(p[14])};
}

/// Why `g` is not a pooling, or null when it is one: extents, strides and
/// paddings as a convolution's (checkConvGeometry), a known mode, padding
/// smaller than the window (so that every window holds an input element),
/// and the output extent the input, window, padding and stride give.
inline const char *checkPoolGeometry(const PoolGeometry &g) {
  int64_t mode = static_cast<int64_t>(g.mode);
  if (mode < 0 || mode > 2)
    return "the mode must be 0 (max), 1 (avg counting padding) or 2 (avg "
           "not counting it)";
  if (g.padTop >= g.kh || g.padBottom >= g.kh || g.padLeft >= g.kw ||
      g.padRight >= g.kw)
    return "padding must be smaller than the window";
  // A pooling's shape checks are a depthwise convolution's.
  ConvGeometry conv{g.n,  g.c,      g.h,         g.w,       g.c,        g.kh,
                    g.kw, g.oh,     g.ow,        g.strideH, g.strideW,  1,
                    1,    g.padTop, g.padBottom, g.padLeft, g.padRight, g.c};
  return checkConvGeometry(conv);
}

inline int64_t poolInputElements(const PoolGeometry &g) {
  return g.n * g.c * g.h * g.w;
}
inline int64_t poolOutputElements(const PoolGeometry &g) {
  return g.n * g.c * g.oh * g.ow;
}

inline constexpr std::string_view kBatchNormForwardFunction = "dnn.batch_norm";
inline constexpr std::string_view kBatchNormGradFunction =
    "dnn.batch_norm_grad";

inline bool isBatchNormFunction(std::string_view name) {
  return name == kBatchNormForwardFunction || name == kBatchNormGradFunction;
}

/// How many of a dnn step's buffers, at the end of its list, it writes.
inline size_t outputCount(std::string_view function) {
  return isBatchNormFunction(function) ? 3 : 1;
}

/// The geometry of a training batch normalization: x [n, c, s] (s the
/// product of the extents after the channels: normalization is per channel,
/// over n and s, so the spatial shape does not matter), scale, shift, mean
/// and var [c]; `epsilon` is added to the variance.
///
/// dnn.batch_norm: mean and var are the batch's mean and biased variance
/// over n and s, y = (x - mean) / sqrt(var + epsilon) * scale + shift.
/// dnn.batch_norm_grad: mean and var are those of x (what dnn.batch_norm
/// gave), dy the gradient of y; dx, dscale and dshift are the gradients of
/// x, scale and shift, the statistics' dependence on x included.
struct BatchNormGeometry {
  int64_t n, c, s;
  double epsilon;
};

/// The parameter vector is [n, c, s, the IEEE-754 bits of epsilon as a
/// double]: exact, where a scaled integer would round.
inline constexpr size_t kBatchNormParamCount = 4;

inline BatchNormGeometry decodeBatchNormGeometry(const int64_t *p) {
  double epsilon;
  static_assert(sizeof(epsilon) == sizeof(p[3]));
  __builtin_memcpy(&epsilon, &p[3], sizeof(epsilon));
  return {p[0], p[1], p[2], epsilon};
}

inline int64_t encodeBatchNormEpsilon(double epsilon) {
  int64_t bits;
  __builtin_memcpy(&bits, &epsilon, sizeof(bits));
  return bits;
}

/// Why `g` is not a batch normalization, or null: extents in [1, 2^31],
/// x of at most 2^48 elements, and epsilon positive and finite (the
/// libraries divide by sqrt(var + epsilon), and var may be 0).
inline const char *checkBatchNormGeometry(const BatchNormGeometry &g) {
  constexpr int64_t kMaxExtent = int64_t(1) << 31;
  for (int64_t v : {g.n, g.c, g.s})
    if (v <= 0 || v > kMaxExtent)
      return "every extent must be in [1, 2^31]";
  int64_t elements;
  if (__builtin_mul_overflow(g.n, g.c, &elements) ||
      __builtin_mul_overflow(elements, g.s, &elements) ||
      elements > (int64_t(1) << 48))
    return "x has more than 2^48 elements";
  if (!(g.epsilon > 0.0) || g.epsilon > 1.0e300)
    return "epsilon must be positive and finite";
  return nullptr;
}

inline int64_t batchNormInputElements(const BatchNormGeometry &g) {
  return g.n * g.c * g.s;
}

} // namespace of::plan

#endif // OF_RUNTIME_LIBRARYCALLS_H
