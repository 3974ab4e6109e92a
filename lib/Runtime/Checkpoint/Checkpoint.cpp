//===- Checkpoint.cpp - Saving and loading a session's state --------------===//
//
// The safetensors format: an 8-byte little-endian header length N, N bytes
// of JSON (an object mapping each tensor name to {"dtype", "shape",
// "data_offsets": [begin, end]} relative to the data, plus an optional
// "__metadata__" object of strings; padded with spaces), then the data.
// The reader here accepts exactly that subset of JSON (objects, arrays,
// strings, non-negative integers) and checks every size and offset against
// the file before it reads a byte of data.
//
//===----------------------------------------------------------------------===//

#include "Checkpoint/Checkpoint.h"
#include "OF/ABI/StateNames.h"
#include "OF/Runtime/Files.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <map>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

using namespace of::plan;

namespace of::rt {

namespace {

/// The safetensors spelling of each plan dtype.
const char *safetensorsDtype(DType dtype) {
  switch (dtype) {
  case DType::F32:
    return "F32";
  case DType::F64:
    return "F64";
  case DType::F16:
    return "F16";
  case DType::BF16:
    return "BF16";
  case DType::I64:
    return "I64";
  case DType::I32:
    return "I32";
  case DType::I8:
    return "I8";
  case DType::I1:
    return "BOOL";
  }
  return "?";
}

bool dtypeFromSafetensors(const std::string &name, DType &out) {
  for (DType dtype : {DType::F32, DType::F64, DType::F16, DType::BF16,
                      DType::I64, DType::I32, DType::I8, DType::I1})
    if (name == safetensorsDtype(dtype)) {
      out = dtype;
      return true;
    }
  return false;
}

void appendJsonString(std::string &out, const std::string &text) {
  out += '"';
  for (unsigned char c : text) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c < 0x20) {
      char escaped[8];
      std::snprintf(escaped, sizeof escaped, "\\u%04x", c);
      out += escaped;
    } else {
      out += static_cast<char>(c);
    }
  }
  out += '"';
}

//===----------------------------------------------------------------------===//
// Reading the header
//===----------------------------------------------------------------------===//

/// A JSON value of the subset safetensors headers use.
struct Json {
  enum Kind { Object, Array, String, Integer } kind = Integer;
  std::vector<std::pair<std::string, Json>> members; // Object
  std::vector<Json> elements;                        // Array
  std::string text;                                  // String
  uint64_t integer = 0;                              // Integer

  const Json *find(const std::string &key) const {
    for (const auto &[name, value] : members)
      if (name == key)
        return &value;
    return nullptr;
  }
};

class JsonParser {
public:
  JsonParser(const char *begin, const char *end) : pos_(begin), end_(end) {}

  Status parseDocument(Json &out) {
    skipSpace();
    if (pos_ == end_ || *pos_ != '{')
      return error("the header is not a JSON object");
    if (Status status = parseValue(out, 0); status.failed())
      return status;
    skipSpace();
    if (pos_ != end_)
      return error("unexpected text after the header object");
    return Status::success();
  }

private:
  Status error(const std::string &what) const {
    return fail("malformed safetensors header: ", what);
  }
  void skipSpace() {
    while (pos_ != end_ &&
           (*pos_ == ' ' || *pos_ == '\n' || *pos_ == '\r' || *pos_ == '\t'))
      ++pos_;
  }
  bool consume(char c) {
    skipSpace();
    if (pos_ != end_ && *pos_ == c) {
      ++pos_;
      return true;
    }
    return false;
  }

  Status parseValue(Json &out, int depth) {
    if (depth > 4)
      return error("nested too deeply");
    skipSpace();
    if (pos_ == end_)
      return error("it ends early");
    char c = *pos_;
    if (c == '{')
      return parseObject(out, depth);
    if (c == '[')
      return parseArray(out, depth);
    if (c == '"') {
      out.kind = Json::String;
      return parseString(out.text);
    }
    if (c >= '0' && c <= '9')
      return parseInteger(out);
    return error(formatMessage("unexpected character '", c,
                               "' (only objects, arrays, strings and "
                               "non-negative integers are expected)"));
  }

  Status parseObject(Json &out, int depth) {
    out.kind = Json::Object;
    ++pos_;
    if (consume('}'))
      return Status::success();
    do {
      skipSpace();
      std::string key;
      if (pos_ == end_ || *pos_ != '"')
        return error("expected a quoted key");
      if (Status status = parseString(key); status.failed())
        return status;
      for (const auto &member : out.members)
        if (member.first == key)
          return error("the key '" + key + "' appears twice");
      if (!consume(':'))
        return error("expected ':' after the key '" + key + "'");
      Json value;
      if (Status status = parseValue(value, depth + 1); status.failed())
        return status;
      out.members.emplace_back(std::move(key), std::move(value));
    } while (consume(','));
    if (!consume('}'))
      return error("expected ',' or '}' in an object");
    return Status::success();
  }

  Status parseArray(Json &out, int depth) {
    out.kind = Json::Array;
    ++pos_;
    if (consume(']'))
      return Status::success();
    do {
      Json value;
      if (Status status = parseValue(value, depth + 1); status.failed())
        return status;
      out.elements.push_back(std::move(value));
    } while (consume(','));
    if (!consume(']'))
      return error("expected ',' or ']' in an array");
    return Status::success();
  }

  Status parseInteger(Json &out) {
    out.kind = Json::Integer;
    uint64_t value = 0;
    const char *start = pos_;
    while (pos_ != end_ && *pos_ >= '0' && *pos_ <= '9') {
      if (value > (UINT64_MAX - 9) / 10)
        return error("an integer is too large");
      value = value * 10 + static_cast<uint64_t>(*pos_ - '0');
      ++pos_;
    }
    if (pos_ - start > 1 && *start == '0')
      return error("an integer has a leading zero");
    if (pos_ != end_ && (*pos_ == '.' || *pos_ == 'e' || *pos_ == 'E'))
      return error("a number is not an integer");
    out.integer = value;
    return Status::success();
  }

  static int hexValue(char c) {
    if (c >= '0' && c <= '9')
      return c - '0';
    if (c >= 'a' && c <= 'f')
      return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
      return c - 'A' + 10;
    return -1;
  }

  Status parseString(std::string &out) {
    ++pos_; // the opening quote
    while (true) {
      if (pos_ == end_)
        return error("a string is not terminated");
      unsigned char c = static_cast<unsigned char>(*pos_++);
      if (c == '"')
        return Status::success();
      if (c < 0x20)
        return error("a string holds a control character");
      if (c != '\\') {
        out += static_cast<char>(c);
        continue;
      }
      if (pos_ == end_)
        return error("a string is not terminated");
      char escape = *pos_++;
      switch (escape) {
      case '"':
      case '\\':
      case '/':
        out += escape;
        break;
      case 'b':
        out += '\b';
        break;
      case 'f':
        out += '\f';
        break;
      case 'n':
        out += '\n';
        break;
      case 'r':
        out += '\r';
        break;
      case 't':
        out += '\t';
        break;
      case 'u': {
        uint32_t code = 0;
        if (Status status = parseHex4(code); status.failed())
          return status;
        if (code >= 0xD800 && code < 0xDC00) { // a surrogate pair
          uint32_t low = 0;
          if (end_ - pos_ < 2 || pos_[0] != '\\' || pos_[1] != 'u')
            return error("a lone surrogate in a \\u escape");
          pos_ += 2;
          if (Status status = parseHex4(low); status.failed())
            return status;
          if (low < 0xDC00 || low >= 0xE000)
            return error("a lone surrogate in a \\u escape");
          code = 0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00);
        } else if (code >= 0xDC00 && code < 0xE000) {
          return error("a lone surrogate in a \\u escape");
        }
        appendUtf8(out, code);
        break;
      }
      default:
        return error(formatMessage("unknown escape '\\", escape, "'"));
      }
    }
  }

  Status parseHex4(uint32_t &code) {
    if (end_ - pos_ < 4)
      return error("a \\u escape is cut short");
    for (int i = 0; i < 4; ++i) {
      int digit = hexValue(*pos_++);
      if (digit < 0)
        return error("a \\u escape has a non-hex digit");
      code = code * 16 + static_cast<uint32_t>(digit);
    }
    return Status::success();
  }

  static void appendUtf8(std::string &out, uint32_t code) {
    if (code < 0x80) {
      out += static_cast<char>(code);
    } else if (code < 0x800) {
      out += static_cast<char>(0xC0 | (code >> 6));
      out += static_cast<char>(0x80 | (code & 0x3F));
    } else if (code < 0x10000) {
      out += static_cast<char>(0xE0 | (code >> 12));
      out += static_cast<char>(0x80 | ((code >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (code & 0x3F));
    } else {
      out += static_cast<char>(0xF0 | (code >> 18));
      out += static_cast<char>(0x80 | ((code >> 12) & 0x3F));
      out += static_cast<char>(0x80 | ((code >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (code & 0x3F));
    }
  }

  const char *pos_;
  const char *end_;
};

/// A tensor of a safetensors file, checked against the file's size.
struct StoredTensor {
  DType dtype;
  std::vector<int64_t> shape;
  uint64_t begin = 0; // offset into the data
  uint64_t bytes = 0;
};

/// The largest header the format allows (safetensors limits it to 100 MB).
constexpr uint64_t kMaxHeaderBytes = 100u << 20;

/// A file mapped read-only; unmapped and closed on destruction.
class MappedFile {
public:
  ~MappedFile() {
    if (data_ && size_)
      ::munmap(data_, size_);
  }
  Status open(const std::string &path) {
    std::string error;
    int fd = ::of::files::openRegular(path, error, "the checkpoint ");
    if (fd < 0)
      return fail(error);
    struct stat info;
    if (::fstat(fd, &info) != 0) {
      ::close(fd);
      return fail("cannot stat the checkpoint '", path,
                  "': ", std::strerror(errno));
    }
    size_ = static_cast<size_t>(info.st_size);
    if (size_) {
      void *data = ::mmap(nullptr, size_, PROT_READ, MAP_PRIVATE, fd, 0);
      if (data == MAP_FAILED) {
        int saved = errno;
        ::close(fd);
        size_ = 0;
        return fail("cannot map the checkpoint '", path,
                    "': ", std::strerror(saved));
      }
      data_ = data;
    }
    ::close(fd);
    return Status::success();
  }
  const uint8_t *data() const { return static_cast<const uint8_t *>(data_); }
  size_t size() const { return size_; }

private:
  void *data_ = nullptr;
  size_t size_ = 0;
};

/// Parses and checks the header of a mapped safetensors file.
/// The offset of the first byte of `bytes` that is not well-formed UTF-8
/// (no overlong forms, surrogates or code points past U+10FFFF); -1 if all
/// of it is.
int64_t invalidUtf8(const uint8_t *bytes, uint64_t size) {
  for (uint64_t i = 0; i < size;) {
    uint8_t c = bytes[i];
    uint64_t length = c < 0x80         ? 1
                      : (c >> 5) == 6  ? 2
                      : (c >> 4) == 14 ? 3
                      : (c >> 3) == 30 ? 4
                                       : 0;
    if (length == 0 || length > size - i)
      return static_cast<int64_t>(i);
    uint32_t code = length == 1 ? c : c & (0x7f >> length);
    for (uint64_t k = 1; k < length; ++k) {
      if ((bytes[i + k] & 0xc0) != 0x80)
        return static_cast<int64_t>(i);
      code = (code << 6) | (bytes[i + k] & 0x3f);
    }
    static const uint32_t smallest[] = {0, 0, 0x80, 0x800, 0x10000};
    if (code < smallest[length] || code > 0x10ffff ||
        (code >= 0xd800 && code <= 0xdfff))
      return static_cast<int64_t>(i);
    i += length;
  }
  return -1;
}

Status readHeader(const MappedFile &file, const std::string &path,
                  std::map<std::string, StoredTensor> &tensors,
                  uint64_t &dataOffset, int64_t &step) {
  auto bad = [&](const std::string &what) {
    return fail("the checkpoint '", path,
                "' is not a valid safetensors file: ", what);
  };
  if (file.size() < 8)
    return bad(formatMessage("it is ", file.size(),
                             " bytes, shorter than the 8-byte header length"));
  uint64_t headerBytes = 0;
  for (int i = 7; i >= 0; --i)
    headerBytes = (headerBytes << 8) | file.data()[i];
  if (headerBytes > kMaxHeaderBytes || headerBytes > file.size() - 8)
    return bad(formatMessage("the header length ", headerBytes,
                             " exceeds the file (", file.size(), " bytes)"));
  const char *json = reinterpret_cast<const char *>(file.data() + 8);
  // JSON text is UTF-8 (the safetensors package refuses anything else).
  if (int64_t at = invalidUtf8(file.data() + 8, headerBytes); at >= 0)
    return bad(formatMessage("the header is not UTF-8 (byte ", at, ")"));
  Json header;
  if (Status status =
          JsonParser(json, json + headerBytes).parseDocument(header);
      status.failed())
    return bad(status.message());
  dataOffset = 8 + headerBytes;
  uint64_t dataBytes = file.size() - dataOffset;
  step = -1; // none recorded
  for (const auto &[name, value] : header.members) {
    if (name == "__metadata__") {
      if (value.kind != Json::Object)
        return bad("__metadata__ is not an object");
      for (const auto &[key, entry] : value.members)
        if (entry.kind != Json::String)
          return bad("__metadata__ entry '" + key + "' is not a string");
      if (const Json *stepText = value.find("of.step")) {
        const std::string &text = stepText->text;
        char *end = nullptr;
        errno = 0;
        long long parsed = std::strtoll(text.c_str(), &end, 10);
        if (text.empty() || *end || errno || parsed < 0)
          return bad("of.step '" + text + "' is not a step count");
        step = parsed;
      }
      continue;
    }
    const Json *dtype = value.kind == Json::Object ? value.find("dtype") : 0;
    const Json *shape = value.kind == Json::Object ? value.find("shape") : 0;
    const Json *offsets =
        value.kind == Json::Object ? value.find("data_offsets") : 0;
    if (!dtype || !shape || !offsets || dtype->kind != Json::String ||
        shape->kind != Json::Array || offsets->kind != Json::Array ||
        offsets->elements.size() != 2)
      return bad("tensor '" + name +
                 "' lacks a dtype string, a shape array or a data_offsets "
                 "pair");
    StoredTensor tensor;
    if (!dtypeFromSafetensors(dtype->text, tensor.dtype))
      return bad("tensor '" + name + "' has the dtype '" + dtype->text +
                 "', which OF plans do not use");
    uint64_t elements = 1;
    for (const Json &dim : shape->elements) {
      if (dim.kind != Json::Integer || dim.integer > (1ull << 48))
        return bad("tensor '" + name + "' has a bad shape entry");
      tensor.shape.push_back(static_cast<int64_t>(dim.integer));
      if (dim.integer && elements > UINT64_MAX / dim.integer)
        return bad("tensor '" + name + "' is impossibly large");
      elements *= dim.integer;
    }
    const Json &begin = offsets->elements[0], &end = offsets->elements[1];
    if (begin.kind != Json::Integer || end.kind != Json::Integer ||
        begin.integer > end.integer || end.integer > dataBytes)
      return bad(formatMessage(
          "tensor '", name, "' has data_offsets outside the data (", dataBytes,
          " bytes; the file may be cut "
          "short)"));
    size_t elementSize = dtypeSize(tensor.dtype);
    if (elements > UINT64_MAX / elementSize ||
        end.integer - begin.integer != elements * elementSize)
      return bad(formatMessage("tensor '", name, "' has ",
                               end.integer - begin.integer,
                               " bytes of data, but its dtype and shape need ",
                               elements * elementSize));
    tensor.begin = begin.integer;
    tensor.bytes = end.integer - begin.integer;
    tensors.emplace(name, std::move(tensor));
  }
  // As the safetensors format: the tensors' data, in offset order, covers
  // the data exactly (no tensor aliasing another, no gap, no trailing
  // bytes).
  std::vector<std::pair<uint64_t, const std::string *>> order;
  for (const auto &[name, tensor] : tensors)
    order.push_back({tensor.begin, &name});
  std::sort(order.begin(), order.end(), [&](const auto &a, const auto &b) {
    const StoredTensor &x = tensors.at(*a.second), &y = tensors.at(*b.second);
    return x.begin != y.begin ? x.begin < y.begin : x.bytes < y.bytes;
  });
  uint64_t covered = 0;
  for (const auto &[begin, name] : order) {
    const StoredTensor &tensor = tensors.at(*name);
    if (begin < covered)
      return bad(formatMessage("tensor '", *name, "' (data_offsets [", begin,
                               ", ", begin + tensor.bytes,
                               "]) overlaps the tensor before it"));
    if (begin > covered)
      return bad(formatMessage("the bytes [", covered, ", ", begin,
                               ") before tensor '", *name,
                               "' belong to no tensor"));
    covered = begin + tensor.bytes;
  }
  if (covered != dataBytes)
    return bad(formatMessage(dataBytes - covered,
                             " trailing bytes after the last tensor"));
  return Status::success();
}

//===----------------------------------------------------------------------===//
// Writing
//===----------------------------------------------------------------------===//

Status writeAll(int fd, const void *data, size_t bytes,
                const std::string &path) {
  const uint8_t *at = static_cast<const uint8_t *>(data);
  while (bytes) {
    ssize_t written = ::write(fd, at, bytes);
    if (written < 0 && errno == EINTR)
      continue;
    if (written <= 0)
      return fail("cannot write '", path, "': ", std::strerror(errno));
    at += written;
    bytes -= static_cast<size_t>(written);
  }
  return Status::success();
}

/// The directory part of `path` ("." if none), to make a rename durable.
std::string directoryOf(const std::string &path) {
  size_t slash = path.rfind('/');
  if (slash == std::string::npos)
    return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

/// The indices of the inputs an output updates, in input order.
std::vector<size_t> stateInputs(const Session &session) {
  std::vector<bool> updated(session.inputs().size(), false);
  for (const TensorInfo &output : session.outputs())
    if (output.updates >= 0)
      updated[static_cast<size_t>(output.updates)] = true;
  std::vector<size_t> indices;
  for (size_t i = 0; i < updated.size(); ++i)
    if (updated[i])
      indices.push_back(i);
  return indices;
}

const std::vector<int64_t> &globalShape(const TensorInfo &info) {
  return info.distributed ? info.dist.globalShape : info.dims;
}

} // namespace

Status saveState(const Session &session, const std::string &path,
                 int64_t step) {
  std::vector<size_t> state = stateInputs(session);
  if (state.empty())
    return fail("nothing to save to '", path,
                "': the entry has no state (no output updates an input; "
                "save the state of a training step)");
  if (path.empty())
    return fail("the checkpoint path is empty");
  for (size_t index : state)
    if (!session.inputIsSet(index))
      return fail("cannot save the state to '", path, "': input '",
                  session.inputs()[index].name, "' was never set");

  // The header: tensors in input order, laid out back to back.
  std::string json = "{\"__metadata__\":{\"of.entry\":";
  appendJsonString(json, session.entryName());
  json += ",\"of.step\":\"" + std::to_string(step) + "\"}";
  uint64_t offset = 0;
  for (size_t index : state) {
    const TensorInfo &info = session.inputs()[index];
    json += ",";
    appendJsonString(json, info.name);
    json += ":{\"dtype\":\"";
    json += safetensorsDtype(info.dtype);
    json += "\",\"shape\":[";
    const std::vector<int64_t> &shape = globalShape(info);
    for (size_t d = 0; d < shape.size(); ++d)
      json += (d ? "," : "") + std::to_string(shape[d]);
    json += "],\"data_offsets\":[" + std::to_string(offset) + "," +
            std::to_string(offset + info.globalBytes) + "]}";
    offset += info.globalBytes;
  }
  json += "}";
  json.append((8 - json.size() % 8) % 8, ' '); // the data 8-byte aligned

  // Rank 0 writes; every rank takes part in every gather whatever happens
  // to the file, so no rank is left waiting.
  bool root = session.isRoot();
  // One buffer for the largest tensor, allocated before the file is made.
  AlignedBytes buffer;
  if (root) {
    uint64_t largest = 0;
    for (size_t index : state)
      largest = std::max(largest, session.inputs()[index].globalBytes);
    if (Status status = buffer.allocate(largest, "a checkpoint tensor");
        status.failed())
      return status;
  }
  std::string temp = ::of::files::temporaryOf(path);
  Status writeStatus = Status::success();
  int fd = -1;
  if (root) {
    ::of::files::removeStaleTemporaries(path);
    std::string error;
    fd = ::of::files::createTemporary(temp, error);
    if (fd < 0) {
      writeStatus = fail(error, " to save the state to '", path, "'");
    } else {
      uint8_t length[8];
      for (int i = 0; i < 8; ++i)
        length[i] = static_cast<uint8_t>(uint64_t(json.size()) >> (8 * i));
      writeStatus = writeAll(fd, length, 8, temp);
      if (writeStatus.succeeded())
        writeStatus = writeAll(fd, json.data(), json.size(), temp);
    }
  }
  for (size_t index : state) {
    const TensorInfo &info = session.inputs()[index];
    bool isRoot = false;
    if (Status status =
            session.gatherInput(index, root ? buffer.data() : nullptr,
                                root ? info.globalBytes : 0, isRoot);
        status.failed()) {
      if (fd >= 0) {
        ::close(fd);
        ::unlink(temp.c_str());
      }
      return status;
    }
    if (root && fd >= 0 && writeStatus.succeeded())
      writeStatus = writeAll(fd, buffer.data(), info.globalBytes, temp);
  }
  if (!root)
    return Status::success();
  if (writeStatus.succeeded() && ::fsync(fd) != 0)
    writeStatus =
        fail("cannot flush '", temp, "' to disk: ", std::strerror(errno));
  if (fd >= 0 && ::close(fd) != 0 && writeStatus.succeeded())
    writeStatus = fail("cannot close '", temp, "': ", std::strerror(errno));
  if (writeStatus.succeeded() && ::rename(temp.c_str(), path.c_str()) != 0)
    writeStatus = fail("cannot rename '", temp, "' to '", path,
                       "': ", std::strerror(errno));
  if (writeStatus.failed()) {
    if (fd >= 0)
      ::unlink(temp.c_str());
    return writeStatus;
  }
  // Make the rename itself durable.
  int dir = ::open(directoryOf(path).c_str(), O_RDONLY | O_DIRECTORY);
  if (dir >= 0) {
    ::fsync(dir);
    ::close(dir);
  }
  return Status::success();
}

Status loadState(Session &session, const std::string &path, int64_t &step,
                 bool weightsOnly) {
  MappedFile file;
  if (Status status = file.open(path); status.failed())
    return status;
  std::map<std::string, StoredTensor> tensors;
  uint64_t dataOffset = 0;
  if (Status status = readHeader(file, path, tensors, dataOffset, step);
      status.failed())
    return status;

  // A training step continues from the checkpoint's step: its optimizer
  // state (Adam's bias correction, a schedule) means nothing at another.
  bool training = false;
  for (size_t index : stateInputs(session))
    training =
        training || ::of::state::isOptimizerState(session.inputs()[index].name);
  if (step < 0 && training && !weightsOnly)
    return fail("the checkpoint '", path,
                "' records no step count (\"of.step\" in its __metadata__), "
                "which entry '",
                session.entryName(),
                "' continues from; start afresh from its weights with "
                "--init-state");
  step = std::max<int64_t>(step, 0);

  std::string missing;
  for (size_t index : stateInputs(session)) {
    const std::string &name = session.inputs()[index].name;
    if (!tensors.count(name) &&
        !(weightsOnly && ::of::state::isOptimizerState(name)))
      missing += (missing.empty() ? "'" : ", '") + name + "'";
  }
  if (!missing.empty())
    return fail(weightsOnly ? "the weights file '" : "the checkpoint '", path,
                "' lacks the ", weightsOnly ? "parameters " : "state ", missing,
                " of entry '", session.entryName(), "'");
  size_t loaded = 0;
  for (size_t index = 0; index < session.inputs().size(); ++index) {
    const TensorInfo &info = session.inputs()[index];
    if (weightsOnly && ::of::state::isOptimizerState(info.name))
      continue; // starts afresh, even where the file is a checkpoint
    auto found = tensors.find(info.name);
    if (found == tensors.end())
      continue;
    const StoredTensor &tensor = found->second;
    if (tensor.dtype != info.dtype || tensor.shape != globalShape(info))
      return fail("the checkpoint '", path, "' holds '", info.name, "' as ",
                  dtypeName(tensor.dtype), " ", formatDims(tensor.shape),
                  ", but entry '", session.entryName(), "' takes ",
                  dtypeName(info.dtype), " ", formatDims(globalShape(info)));
    if (Status status = session.setInputGlobal(
            index, file.data() + dataOffset + tensor.begin, tensor.bytes);
        status.failed())
      return status;
    ++loaded;
  }
  if (!loaded)
    return fail("the checkpoint '", path, "' has none of the inputs of entry '",
                session.entryName(), "'");
  return Status::success();
}

} // namespace of::rt
