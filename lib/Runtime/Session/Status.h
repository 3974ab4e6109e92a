//===- Status.h - Error values of the OF runtime --------------------------===//
//
// libofrt is built without exceptions and must never print or exit, so every
// operation that can fail returns a Status: success, or a message that names
// the problem and where it is. `formatMessage` builds those messages from
// pieces with an ostringstream, so call sites read like the message.
//
//===----------------------------------------------------------------------===//

#ifndef OF_LIB_RUNTIME_STATUS_H
#define OF_LIB_RUNTIME_STATUS_H

#include <sstream>
#include <string>
#include <utility>

namespace of::rt {

/// The outcome of a runtime operation: success, or failure with a message.
class [[nodiscard]] Status {
public:
  /// A successful outcome.
  static Status success() { return Status(); }
  /// A failure carrying `message`.
  static Status failure(std::string message) {
    Status status;
    status.failed_ = true;
    status.message_ = std::move(message);
    return status;
  }

  bool failed() const { return failed_; }
  bool succeeded() const { return !failed_; }
  const std::string &message() const { return message_; }

private:
  Status() = default;

  bool failed_ = false;
  std::string message_;
};

/// Concatenates the stream representations of `parts`.
template <typename... Parts> std::string formatMessage(const Parts &...parts) {
  std::ostringstream stream;
  (stream << ... << parts);
  return stream.str();
}

/// A failure whose message is the concatenation of `parts`.
template <typename... Parts> Status fail(const Parts &...parts) {
  return Status::failure(formatMessage(parts...));
}

} // namespace of::rt

#endif // OF_LIB_RUNTIME_STATUS_H
