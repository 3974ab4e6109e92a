//===- PlanSignature.cpp - Checking a plan's detached signature -----------===//
//
// See PlanSignature.h. libsodium is loaded like the runtime's other optional
// libraries (DynamicLibrary.h); its two functions are declared here with
// libsodium's prototypes, so that building libofrt needs no sodium.h.
//
//===----------------------------------------------------------------------===//

#include "Plan/PlanSignature.h"
#include "Plan/DynamicLibrary.h"

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <sstream>
#include <sys/stat.h>
#include <unistd.h>

extern "C" {
int sodium_init(void);
int crypto_sign_verify_detached(const unsigned char *sig,
                                const unsigned char *m, unsigned long long mlen,
                                const unsigned char *pk);
}

namespace of::rt {

namespace {

#define OF_SODIUM_FUNCTIONS(X) X(sodium_init) X(crypto_sign_verify_detached)
struct SodiumTable {
  OF_LIBRARY_TABLE(OF_SODIUM_FUNCTIONS)
};

LibrarySource describeSodium() {
  return {"libsodium",
          "OF_SODIUM_LIBRARY",
          {"libsodium.so.23", "libsodium.so"},
          "checking plan signatures needs libsodium, which cannot be loaded "
          "(libsodium.so.23, Debian's libsodium23; $OF_SODIUM_LIBRARY names "
          "another):",
          "OF needs libsodium 1.0.12 or later"};
}

Status loadSodium(const SodiumTable *&out) {
  if (Status status = loadLibrary(describeSodium, out); status.failed())
    return status;
  if (out->sodium_init() < 0)
    return fail("libsodium (", out->loadedFrom, ") failed to initialise");
  return Status::success();
}

int hexDigit(char c) {
  if (c >= '0' && c <= '9')
    return c - '0';
  if (c >= 'a' && c <= 'f')
    return c - 'a' + 10;
  if (c >= 'A' && c <= 'F')
    return c - 'A' + 10;
  return -1;
}

/// The whitespace-separated words of `line`.
std::vector<std::string> words(const std::string &line) {
  std::istringstream stream(line);
  std::vector<std::string> out;
  for (std::string word; stream >> word;)
    out.push_back(word);
  return out;
}

} // namespace

std::string toHex(const uint8_t *bytes, size_t size) {
  static const char digits[] = "0123456789abcdef";
  std::string text(2 * size, '0');
  for (size_t i = 0; i < size; ++i) {
    text[2 * i] = digits[bytes[i] >> 4];
    text[2 * i + 1] = digits[bytes[i] & 15];
  }
  return text;
}

bool fromHex(const std::string &text, uint8_t *bytes, size_t size) {
  if (text.size() != 2 * size)
    return false;
  for (size_t i = 0; i < size; ++i) {
    int high = hexDigit(text[2 * i]), low = hexDigit(text[2 * i + 1]);
    if (high < 0 || low < 0)
      return false;
    bytes[i] = static_cast<uint8_t>(high * 16 + low);
  }
  return true;
}

Status readSmallFile(const std::string &path, const char *what, uint64_t limit,
                     std::string &out) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0)
    return fail("cannot open the ", what, " '", path,
                "': ", std::strerror(errno));
  struct Closer {
    int fd;
    ~Closer() { ::close(fd); }
  } closer{fd};
  struct stat info;
  if (::fstat(fd, &info) != 0 || !S_ISREG(info.st_mode))
    return fail("the ", what, " '", path, "' is not a regular file");
  if (static_cast<uint64_t>(info.st_size) > limit)
    return fail("the ", what, " '", path, "' is larger than ", limit, " bytes");
  out.assign(static_cast<size_t>(info.st_size), '\0');
  size_t done = 0;
  while (done < out.size()) {
    ssize_t got = ::read(fd, out.data() + done, out.size() - done);
    if (got < 0 && errno == EINTR)
      continue;
    if (got <= 0)
      return fail("cannot read the ", what, " '", path, "'");
    done += static_cast<size_t>(got);
  }
  return Status::success();
}

Status readTrustedKeys(const std::string &path, std::vector<TrustedKey> &out) {
  std::string text;
  if (Status status = readSmallFile(path, "trusted keys", 1 << 20, text);
      status.failed())
    return status;
  std::istringstream lines(text);
  int number = 0;
  for (std::string line; std::getline(lines, line);) {
    ++number;
    std::vector<std::string> parts = words(line);
    if (parts.empty() || parts[0][0] == '#')
      continue;
    TrustedKey key;
    if (parts.size() < 3 || parts[0] != kPublicKeyTag ||
        parts[1] != kAlgorithm ||
        !fromHex(parts[2], key.key.data(), key.key.size()))
      return fail("trusted keys '", path, "' line ", number, ": expected '",
                  kPublicKeyTag, " ", kAlgorithm,
                  " <64 hex digits> [comment]'");
    for (size_t i = 3; i < parts.size(); ++i)
      key.comment += (i > 3 ? " " : "") + parts[i];
    out.push_back(key);
  }
  if (out.empty())
    return fail("trusted keys '", path, "' lists no key");
  return Status::success();
}

Status verifyPlanSignature(const uint8_t *data, uint64_t size,
                           const std::string &path,
                           const std::string &trustedKeys) {
  std::vector<TrustedKey> keys;
  if (Status status = readTrustedKeys(trustedKeys, keys); status.failed())
    return status;
  std::string sigPath = path + kSignatureSuffix, text;
  if (::access(sigPath.c_str(), F_OK) != 0)
    return fail("plan '", path, "' is not signed (no '", sigPath,
                "'), and only plans signed by a key of '", trustedKeys,
                "' may be opened");
  if (Status status = readSmallFile(sigPath, "signature", 4096, text);
      status.failed())
    return status;
  std::vector<std::string> parts = words(text);
  PublicKey signer;
  Signature signature;
  if (parts.size() != 4 || parts[0] != kSignatureTag ||
      parts[1] != kAlgorithm ||
      !fromHex(parts[2], signer.data(), signer.size()) ||
      !fromHex(parts[3], signature.data(), signature.size()))
    return fail("signature '", sigPath, "' is malformed (expected '",
                kSignatureTag, " ", kAlgorithm,
                " <key: 64 hex digits> <signature: 128 hex digits>')");
  const TrustedKey *trusted = nullptr;
  for (const TrustedKey &key : keys)
    if (key.key == signer)
      trusted = &key;
  if (!trusted)
    return fail("plan '", path, "' is signed by key ",
                toHex(signer.data(), signer.size()),
                ", which is not in the trusted keys '", trustedKeys, "'");
  const SodiumTable *sodium = nullptr;
  if (Status status = loadSodium(sodium); status.failed())
    return status;
  if (sodium->crypto_sign_verify_detached(signature.data(), data, size,
                                          signer.data()) != 0)
    return fail("plan '", path, "' does not match its signature '", sigPath,
                "' (the plan or the signature was changed after signing)");
  return Status::success();
}

} // namespace of::rt
