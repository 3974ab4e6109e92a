//===- Npy.h - NumPy .npy files for of-run --------------------------------===//
//
// Reads and writes the .npy format (versions 1.0, 2.0 and 3.0) for the
// element types of OF plans. The header dictionary is parsed strictly: the
// keys descr, fortran_order and shape exactly once each, nothing else.
// Fortran order and big-endian data are rejected, and the data must be
// exactly as long as the shape says. bf16 has no NumPy dtype: it is read
// from '<u2' (raw bits) or '<V2' (what np.save writes for an
// ml_dtypes.bfloat16 array) and written as '<u2'.
//
//===----------------------------------------------------------------------===//

#ifndef OF_TOOLS_OFRUN_NPY_H
#define OF_TOOLS_OFRUN_NPY_H

#include "OF/Runtime/ofrt.h"

#include <cstdint>
#include <string>
#include <vector>

namespace ofrun {

/// An array read from a .npy file.
struct NpyArray {
  ofrt_dtype dtype = OFRT_F32;
  std::vector<int64_t> shape;
  std::vector<unsigned char> data;
};

/// Reads `path`; on failure returns false and sets `error` to a message
/// naming the file. Without `withData` only the header is read (and the
/// file's size checked against it): `array.data` stays empty.
bool readNpy(const std::string &path, NpyArray &array, std::string &error,
             bool withData = true);

/// Writes a C-order array of `dtype` and `shape` to `path` (version 1.0, or
/// 2.0 for a header too long for 1.0).
bool writeNpy(const std::string &path, ofrt_dtype dtype,
              const std::vector<int64_t> &shape, const void *data, size_t bytes,
              std::string &error);

/// The descr written for `dtype` ("<f4", ..., "<u2" for bf16).
const char *npyDescr(ofrt_dtype dtype);

/// "f32 [64, 128]".
std::string describeTensor(ofrt_dtype dtype, const std::vector<int64_t> &shape);

/// The number `text` (a --set value) as one element of `dtype` (f32, f64,
/// i32, i64) in `bytes`: integers take integral text within their range,
/// floats finite values within theirs. False with `why` otherwise (or for
/// another dtype).
bool storeScalar(const std::string &text, ofrt_dtype dtype,
                 std::vector<unsigned char> &bytes, std::string &why);
/// Reads one element of `dtype` (f32, f64, i32, i64) from `bytes`; false for
/// another dtype or too few bytes.
bool loadScalar(const std::vector<unsigned char> &bytes, ofrt_dtype dtype,
                double &value);

} // namespace ofrun

#endif // OF_TOOLS_OFRUN_NPY_H
