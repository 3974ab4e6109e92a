//===- Npy.cpp - Strict .npy reading and writing --------------------------===//
//
// The header is a Python dict literal; rather than accept "anything Python
// would", this parser accepts what NumPy writes (single- or double-quoted
// keys and descr, True/False, a tuple of non-negative integers with the
// 1-tuple comma), in any key order, with the trailing comma NumPy emits,
// followed by space padding and a newline. Anything else is an error that
// quotes the header.
//
//===----------------------------------------------------------------------===//

#include "Npy.h"
#include "OF/Runtime/Files.h"

#include <algorithm>
#include <cerrno>
#include <cfloat>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <unistd.h>

namespace ofrun {

namespace {

constexpr char kNpyMagic[6] = {'\x93', 'N', 'U', 'M', 'P', 'Y'};

struct DescrEntry {
  const char *descr;
  ofrt_dtype dtype;
};

// The spellings accepted on reading; the first for a dtype is written.
constexpr DescrEntry kDescrs[] = {
    {"<f4", OFRT_F32},  {"<f8", OFRT_F64},  {"<f2", OFRT_F16},
    {"<u2", OFRT_BF16}, {"<V2", OFRT_BF16}, {"|V2", OFRT_BF16},
    {"<i8", OFRT_I64},  {"<i4", OFRT_I32},  {"|i1", OFRT_I8},
    {"|b1", OFRT_I1},
};

/// A cursor over the header dictionary.
class HeaderParser {
public:
  explicit HeaderParser(const std::string &text) : text_(text) {}

  bool parse(std::string &descr, bool &fortranOrder,
             std::vector<int64_t> &shape, std::string &error) {
    bool sawDescr = false, sawFortran = false, sawShape = false;
    skipSpaces();
    if (!consume('{'))
      return fail("the header is not a dict", error);
    skipSpaces();
    while (!peek('}')) {
      std::string key;
      if (!parseString(key))
        return fail("expected a quoted key", error);
      skipSpaces();
      if (!consume(':'))
        return fail("expected ':' after '" + key + "'", error);
      skipSpaces();
      if (key == "descr") {
        if (sawDescr || !parseString(descr))
          return fail("bad or repeated 'descr'", error);
        sawDescr = true;
      } else if (key == "fortran_order") {
        if (sawFortran || !parseBool(fortranOrder))
          return fail("bad or repeated 'fortran_order'", error);
        sawFortran = true;
      } else if (key == "shape") {
        if (sawShape || !parseShape(shape))
          return fail("bad or repeated 'shape' (a tuple of sizes)", error);
        sawShape = true;
      } else {
        return fail("unknown key '" + key + "'", error);
      }
      skipSpaces();
      if (!consume(',')) {
        if (!peek('}'))
          return fail("expected ',' or '}'", error);
        break;
      }
      skipSpaces();
    }
    if (!consume('}'))
      return fail("expected '}'", error);
    skipSpaces();
    if (position_ + 1 != text_.size() || text_[position_] != '\n')
      return fail("the header does not end in spaces and a newline", error);
    if (!sawDescr || !sawFortran || !sawShape)
      return fail("the header lacks one of 'descr', 'fortran_order', 'shape'",
                  error);
    return true;
  }

private:
  bool fail(const std::string &what, std::string &error) {
    error = "malformed header (" + what + "): " + text_;
    while (!error.empty() && (error.back() == '\n' || error.back() == ' '))
      error.pop_back();
    return false;
  }
  bool peek(char c) const {
    return position_ < text_.size() && text_[position_] == c;
  }
  bool consume(char c) {
    if (!peek(c))
      return false;
    ++position_;
    return true;
  }
  void skipSpaces() {
    while (position_ < text_.size() && text_[position_] == ' ')
      ++position_;
  }
  bool parseString(std::string &out) {
    if (!peek('\'') && !peek('"'))
      return false;
    char quote = text_[position_++];
    size_t end = text_.find(quote, position_);
    if (end == std::string::npos)
      return false;
    out = text_.substr(position_, end - position_);
    if (out.find('\\') != std::string::npos)
      return false;
    position_ = end + 1;
    return true;
  }
  bool parseBool(bool &out) {
    if (text_.compare(position_, 4, "True") == 0) {
      position_ += 4;
      out = true;
      return true;
    }
    if (text_.compare(position_, 5, "False") == 0) {
      position_ += 5;
      out = false;
      return true;
    }
    return false;
  }
  bool parseInteger(int64_t &out) {
    size_t start = position_;
    out = 0;
    while (position_ < text_.size() && text_[position_] >= '0' &&
           text_[position_] <= '9') {
      if (__builtin_mul_overflow(out, 10, &out) ||
          __builtin_add_overflow(out, text_[position_] - '0', &out))
        return false;
      ++position_;
    }
    return position_ > start;
  }
  bool parseShape(std::vector<int64_t> &shape) {
    shape.clear();
    if (!consume('('))
      return false;
    skipSpaces();
    if (consume(')'))
      return true;
    while (true) {
      int64_t dim;
      if (!parseInteger(dim))
        return false;
      shape.push_back(dim);
      skipSpaces();
      bool comma = consume(',');
      skipSpaces();
      if (consume(')'))
        return shape.size() > 1 || comma; // (5) is not a tuple
      if (!comma)
        return false;
    }
  }

  const std::string &text_;
  size_t position_ = 0;
};

/// Reads the first `limit` bytes of `path` (all of it by default) into
/// `bytes`; `size` is the file's size.
bool readFile(const std::string &path, std::vector<unsigned char> &bytes,
              std::string &error, uint64_t &size, uint64_t limit = UINT64_MAX) {
  int fd = ::of::files::openRegular(path, error);
  FILE *file = fd < 0 ? nullptr : ::fdopen(fd, "rb");
  if (!file) {
    if (fd >= 0) {
      error = "cannot open '" + path + "': " + std::strerror(errno);
      ::close(fd);
    }
    return false;
  }
  bytes.clear();
  unsigned char chunk[1 << 16];
  size_t got;
  while (bytes.size() < limit &&
         (got = std::fread(
              chunk, 1, std::min<uint64_t>(sizeof chunk, limit - bytes.size()),
              file)) > 0)
    bytes.insert(bytes.end(), chunk, chunk + got);
  bool failed = std::ferror(file);
  size = bytes.size();
  if (!failed && bytes.size() >= limit) {
    failed = std::fseek(file, 0, SEEK_END) != 0;
    long end = failed ? -1 : std::ftell(file);
    failed = end < 0;
    size = failed ? 0 : static_cast<uint64_t>(end);
  }
  std::fclose(file);
  if (failed) {
    error = "cannot read '" + path + "'";
    return false;
  }
  return true;
}

uint64_t readLittleEndian(const unsigned char *bytes, int count) {
  uint64_t value = 0;
  for (int i = count - 1; i >= 0; --i)
    value = value << 8 | bytes[i];
  return value;
}

} // namespace

const char *npyDescr(ofrt_dtype dtype) {
  for (const DescrEntry &entry : kDescrs)
    if (entry.dtype == dtype)
      return entry.descr;
  return "?";
}

std::string describeTensor(ofrt_dtype dtype,
                           const std::vector<int64_t> &shape) {
  std::string text = std::string(ofrt_dtype_name(dtype)) + " [";
  for (size_t i = 0; i < shape.size(); ++i)
    text += (i ? ", " : "") + std::to_string(shape[i]);
  return text + "]";
}

bool readNpy(const std::string &path, NpyArray &array, std::string &error,
             bool withData) {
  std::vector<unsigned char> bytes;
  uint64_t size;
  if (!readFile(path, bytes, error, size,
                withData ? UINT64_MAX : uint64_t(1) << 16))
    return false;
  auto fail = [&](const std::string &message) {
    error = path + ": " + message;
    return false;
  };
  if (bytes.size() < 8 || std::memcmp(bytes.data(), kNpyMagic, 6) != 0)
    return fail("not a .npy file (bad magic)");
  unsigned major = bytes[6], minor = bytes[7];
  if ((major != 1 && major != 2 && major != 3) || minor != 0)
    return fail("unsupported .npy format version " + std::to_string(major) +
                "." + std::to_string(minor) + " (1.0, 2.0 and 3.0 are read)");
  int lengthBytes = major == 1 ? 2 : 4;
  if (bytes.size() < 8u + lengthBytes)
    return fail("truncated header");
  uint64_t headerLength = readLittleEndian(bytes.data() + 8, lengthBytes);
  uint64_t dataOffset = 8 + lengthBytes + headerLength;
  if (dataOffset > size)
    return fail("truncated header: it claims " + std::to_string(headerLength) +
                " bytes, the file has " + std::to_string(size));
  if (dataOffset > bytes.size() &&
      !readFile(path, bytes, error, size, dataOffset)) // a long header
    return false;
  // Versions 1 and 2 are latin-1, 3 is UTF-8; the keys and values accepted
  // are ASCII either way.
  std::string header(bytes.begin() + 8 + lengthBytes,
                     bytes.begin() + static_cast<long>(dataOffset));

  std::string descr;
  bool fortranOrder = false;
  std::string parseError;
  if (!HeaderParser(header).parse(descr, fortranOrder, array.shape, parseError))
    return fail(parseError);
  if (fortranOrder)
    return fail("fortran_order True is not supported (save a C-order array)");
  bool known = false;
  for (const DescrEntry &entry : kDescrs)
    if (descr == entry.descr) {
      array.dtype = entry.dtype;
      known = true;
    }
  if (!known) {
    if (!descr.empty() && descr[0] == '>')
      return fail("big-endian data ('" + descr + "') is not supported");
    return fail("unsupported dtype '" + descr +
                "' (f4, f8, f2, i8, i4, i1, b1, and u2 or V2 for bf16)");
  }

  uint64_t expected = ofrt_dtype_size(array.dtype);
  for (int64_t dim : array.shape)
    if (__builtin_mul_overflow(expected, static_cast<uint64_t>(dim), &expected))
      return fail("the shape overflows 64 bits of bytes");
  uint64_t actual = size - dataOffset;
  if (actual < expected)
    return fail("truncated data: " + describeTensor(array.dtype, array.shape) +
                " needs " + std::to_string(expected) + " bytes, the file has " +
                std::to_string(actual));
  if (actual > expected)
    return fail(std::to_string(actual - expected) +
                " trailing bytes after the " + std::to_string(expected) +
                " data bytes of " + describeTensor(array.dtype, array.shape));
  array.data.clear();
  if (withData)
    array.data.assign(bytes.begin() + static_cast<long>(dataOffset),
                      bytes.end());
  return true;
}

bool writeNpy(const std::string &path, ofrt_dtype dtype,
              const std::vector<int64_t> &shape, const void *data, size_t bytes,
              std::string &error) {
  std::string dict = std::string("{'descr': '") + npyDescr(dtype) +
                     "', 'fortran_order': False, 'shape': (";
  for (size_t i = 0; i < shape.size(); ++i)
    dict += std::to_string(shape[i]) +
            (shape.size() == 1 || i + 1 < shape.size() ? "," : "") +
            (i + 1 < shape.size() ? " " : "");
  dict += "), }";
  // NumPy pads the header with spaces so that the data starts 64-aligned.
  bool version2 = dict.size() + 1 + 10 > 65535;
  size_t prefix = version2 ? 12 : 10;
  size_t total = (prefix + dict.size() + 1 + 63) / 64 * 64;
  dict.append(total - prefix - dict.size() - 1, ' ');
  dict += '\n';

  std::string head(kNpyMagic, sizeof kNpyMagic);
  head += static_cast<char>(version2 ? 2 : 1);
  head += '\0';
  uint64_t length = dict.size();
  for (size_t i = 0; i < prefix - 8; ++i)
    head += static_cast<char>((length >> (8 * i)) & 0xff);
  head += dict;

  // Written next to the target and renamed over it: a reader (or a failed
  // run) never sees a partial file.
  std::string temporary = ::of::files::temporaryOf(path);
  ::of::files::removeStaleTemporaries(path);
  int fd = ::of::files::createTemporary(temporary, error);
  FILE *file = fd < 0 ? nullptr : ::fdopen(fd, "wb");
  if (!file) {
    if (fd >= 0) {
      error = "cannot create '" + temporary + "': " + std::strerror(errno);
      ::close(fd);
      std::remove(temporary.c_str());
    }
    return false;
  }
  bool ok = std::fwrite(head.data(), 1, head.size(), file) == head.size() &&
            (bytes == 0 || std::fwrite(data, 1, bytes, file) == bytes);
  ok = (std::fclose(file) == 0) && ok;
  if (!ok) {
    error = "cannot write '" + path + "'";
    std::remove(temporary.c_str());
    return false;
  }
  if (std::rename(temporary.c_str(), path.c_str()) != 0) {
    error = "cannot rename '" + temporary + "' to '" + path +
            "': " + std::strerror(errno);
    std::remove(temporary.c_str());
    return false;
  }
  return true;
}

template <typename T>
static void store(double value, std::vector<unsigned char> &bytes) {
  T v = static_cast<T>(value);
  bytes.resize(sizeof v);
  std::memcpy(bytes.data(), &v, sizeof v);
}

bool storeScalar(const std::string &text, ofrt_dtype dtype,
                 std::vector<unsigned char> &bytes, std::string &why) {
  char *end = nullptr;
  errno = 0;
  switch (dtype) {
  case OFRT_F32:
  case OFRT_F64: {
    double value = std::strtod(text.c_str(), &end);
    // An f32 is judged after rounding: 3.4028235e38 (FLT_MAX as printed)
    // is a little above FLT_MAX and rounds to it.
    if (text.empty() || *end || !std::isfinite(value) ||
        (dtype == OFRT_F32 && !std::isfinite(static_cast<float>(value)))) {
      why = "'" + text + "' is not a finite " +
            (dtype == OFRT_F32 ? "f32" : "f64") + " number";
      return false;
    }
    if (dtype == OFRT_F32)
      store<float>(value, bytes);
    else
      store<double>(value, bytes);
    return true;
  }
  case OFRT_I32:
  case OFRT_I64: {
    long long value = std::strtoll(text.c_str(), &end, 10);
    bool fits = dtype == OFRT_I64 || (value >= INT32_MIN && value <= INT32_MAX);
    if (text.empty() || *end || errno == ERANGE || !fits) {
      why = "'" + text + "' is not an integer within " +
            (dtype == OFRT_I32 ? "i32" : "i64") + "'s range";
      return false;
    }
    if (dtype == OFRT_I32)
      store<int32_t>(static_cast<double>(value), bytes);
    else {
      int64_t v = value;
      bytes.resize(sizeof v);
      std::memcpy(bytes.data(), &v, sizeof v);
    }
    return true;
  }
  default:
    why = "not a float or integer scalar";
    return false;
  }
}

template <typename T>
static bool load(const std::vector<unsigned char> &bytes, double &value) {
  if (bytes.size() < sizeof(T))
    return false;
  T v;
  std::memcpy(&v, bytes.data(), sizeof v);
  value = static_cast<double>(v);
  return true;
}

bool loadScalar(const std::vector<unsigned char> &bytes, ofrt_dtype dtype,
                double &value) {
  switch (dtype) {
  case OFRT_F32:
    return load<float>(bytes, value);
  case OFRT_F64:
    return load<double>(bytes, value);
  case OFRT_I32:
    return load<int32_t>(bytes, value);
  case OFRT_I64:
    return load<int64_t>(bytes, value);
  default:
    return false;
  }
}

} // namespace ofrun
