//===- of-sign.cpp - Ed25519 keys and signatures for plans ----------------===//
//
// Makes keys, signs plans and checks signatures in the format of
// lib/Runtime/Plan/PlanSignature.h (detached PLAN.ofp.sig files), with
// libsodium's Ed25519. Checking goes through libofrt's
// ofrt_plan_open_file_trusted, the same code of-run --trusted-keys runs.
//
//===----------------------------------------------------------------------===//

#include "OF/Runtime/ofrt.h"

#include <sodium.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <fstream>
#include <sstream>
#include <string>
#include <sys/stat.h>
#include <unistd.h>
#include <vector>

namespace {

constexpr const char *kUsage = R"(OF plan signatures (Ed25519)

USAGE: of-sign keygen NAME [--comment TEXT]
       of-sign sign --key NAME.key PLAN.ofp...
       of-sign verify --trusted-keys FILE PLAN.ofp...

keygen   Writes the secret key NAME.key (mode 0600, never overwritten) and
         the public key NAME.pub, one line 'of-plan-key ed25519 <hex>
         [comment]'. Trusted-keys files are such lines, one per key.
sign     Checks that each plan opens, then writes PLAN.ofp.sig, a signature
         of every byte of the plan by the key.
verify   Opens each plan as `of-run --trusted-keys FILE` would: it must be
         signed by one of the keys in FILE and unchanged since.

A plan is native code; docs/security.md says what signing one vouches for.
)";

int fail(const std::string &message) {
  std::fprintf(stderr, "of-sign: error: %s\n", message.c_str());
  return 1;
}

int usage(const std::string &message) {
  std::fprintf(stderr, "of-sign: error: %s (see --help)\n", message.c_str());
  return 2;
}

std::string hex(const unsigned char *bytes, size_t size) {
  std::string text(2 * size + 1, '\0');
  sodium_bin2hex(text.data(), text.size(), bytes, size);
  text.pop_back();
  return text;
}

/// Writes `text` to a new file `path` (never following or replacing one).
bool writeNew(const std::string &path, const std::string &text, mode_t mode,
              std::string &error) {
  int fd = ::open(path.c_str(),
                  O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode);
  if (fd < 0) {
    error = "cannot create '" + path + "': " + std::strerror(errno);
    return false;
  }
  bool ok = ::write(fd, text.data(), text.size()) ==
            static_cast<ssize_t>(text.size());
  ok = ::close(fd) == 0 && ok;
  if (!ok)
    error = "cannot write '" + path + "'";
  return ok;
}

/// Replaces `path` with `text` through a new temporary file and a rename.
bool replace(const std::string &path, const std::string &text,
             std::string &error) {
  std::string temporary = path + ".tmp." + std::to_string(::getpid());
  if (!writeNew(temporary, text, 0644, error))
    return false;
  if (std::rename(temporary.c_str(), path.c_str()) != 0) {
    error = "cannot rename '" + temporary + "' to '" + path +
            "': " + std::strerror(errno);
    std::remove(temporary.c_str());
    return false;
  }
  return true;
}

bool readRegular(const std::string &path, std::string &out,
                 std::string &error) {
  struct stat info;
  if (::stat(path.c_str(), &info) != 0 || !S_ISREG(info.st_mode)) {
    error = "'" + path + "' is not a regular file";
    return false;
  }
  std::ifstream file(path, std::ios::binary);
  std::ostringstream bytes;
  bytes << file.rdbuf();
  if (!file) {
    error = "cannot read '" + path + "'";
    return false;
  }
  out = bytes.str();
  return true;
}

int keygen(const std::string &name, const std::string &comment) {
  unsigned char pk[crypto_sign_PUBLICKEYBYTES], sk[crypto_sign_SECRETKEYBYTES];
  crypto_sign_keypair(pk, sk);
  std::string error;
  std::string secret =
      "of-plan-secret-key ed25519 " + hex(sk, sizeof sk) + "\n";
  sodium_memzero(sk, sizeof sk);
  if (!writeNew(name + ".key", secret, 0600, error))
    return fail(error);
  sodium_memzero(secret.data(), secret.size());
  std::string line = "of-plan-key ed25519 " + hex(pk, sizeof pk);
  if (!comment.empty())
    line += " " + comment;
  if (!writeNew(name + ".pub", line + "\n", 0644, error))
    return fail(error);
  std::printf("of-sign: wrote %s.key (secret) and %s.pub\n", name.c_str(),
              name.c_str());
  return 0;
}

int sign(const std::string &keyPath, const std::vector<std::string> &plans) {
  std::string text, error;
  if (!readRegular(keyPath, text, error))
    return fail(error);
  std::istringstream words(text);
  std::string tag, algorithm, digits;
  words >> tag >> algorithm >> digits;
  unsigned char sk[crypto_sign_SECRETKEYBYTES];
  size_t length = 0;
  if (tag != "of-plan-secret-key" || algorithm != "ed25519" ||
      sodium_hex2bin(sk, sizeof sk, digits.c_str(), digits.size(), nullptr,
                     &length, nullptr) != 0 ||
      length != sizeof sk)
    return fail("'" + keyPath + "' is not a secret key of of-sign keygen");
  sodium_memzero(text.data(), text.size());
  sodium_memzero(digits.data(), digits.size());
  unsigned char pk[crypto_sign_PUBLICKEYBYTES];
  crypto_sign_ed25519_sk_to_pk(pk, sk);
  int status = 0;
  for (const std::string &path : plans) {
    std::string plan;
    if (!readRegular(path, plan, error)) {
      status = fail(error);
      continue;
    }
    // Sign only what opens: a plan the runtime refuses is not worth a
    // signature.
    ofrt_plan *opened = nullptr;
    if (ofrt_error *err =
            ofrt_plan_open_memory(plan.data(), plan.size(), &opened)) {
      status = fail(path + ": " + ofrt_error_message(err));
      ofrt_error_free(err);
      continue;
    }
    ofrt_plan_close(opened);
    unsigned char signature[crypto_sign_BYTES];
    crypto_sign_detached(signature, nullptr,
                         reinterpret_cast<const unsigned char *>(plan.data()),
                         plan.size(), sk);
    if (!replace(path + ".sig",
                 "of-plan-signature ed25519 " + hex(pk, sizeof pk) + " " +
                     hex(signature, sizeof signature) + "\n",
                 error)) {
      status = fail(error);
      continue;
    }
    std::printf("of-sign: signed %s (%s.sig)\n", path.c_str(), path.c_str());
  }
  sodium_memzero(sk, sizeof sk);
  return status;
}

int verify(const std::string &keys, const std::vector<std::string> &plans) {
  int status = 0;
  for (const std::string &path : plans) {
    ofrt_plan *plan = nullptr;
    if (ofrt_error *err =
            ofrt_plan_open_file_trusted(path.c_str(), keys.c_str(), &plan)) {
      status = fail(ofrt_error_message(err));
      ofrt_error_free(err);
      continue;
    }
    ofrt_plan_close(plan);
    std::printf("of-sign: %s: signed by a trusted key\n", path.c_str());
  }
  return status;
}

} // namespace

int main(int argc, char **argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  if (args.empty())
    return usage("no command given");
  if (args[0] == "--help" || args[0] == "-h") {
    std::fputs(kUsage, stdout);
    return 0;
  }
  if (sodium_init() < 0)
    return fail("libsodium failed to initialise");
  std::string command = args[0], option, comment;
  std::vector<std::string> operands;
  for (size_t i = 1; i < args.size(); ++i) {
    const std::string &arg = args[i];
    if (arg == "--key" || arg == "--trusted-keys" || arg == "--comment") {
      if (i + 1 >= args.size() || args[i + 1].empty())
        return usage("option '" + arg + "' needs a value");
      bool expected = (arg == "--key" && command == "sign") ||
                      (arg == "--trusted-keys" && command == "verify") ||
                      (arg == "--comment" && command == "keygen");
      if (!expected)
        return usage("option '" + arg + "' does not apply to '" + command +
                     "'");
      (arg == "--comment" ? comment : option) = args[++i];
    } else if (!arg.empty() && arg[0] == '-') {
      return usage("unknown option '" + arg + "'");
    } else {
      operands.push_back(arg);
    }
  }
  if (command == "keygen") {
    if (operands.size() != 1)
      return usage("keygen takes one NAME");
    return keygen(operands[0], comment);
  }
  if (command != "sign" && command != "verify")
    return usage("unknown command '" + command + "'");
  if (option.empty())
    return usage(command == "sign" ? "sign needs --key NAME.key"
                                   : "verify needs --trusted-keys FILE");
  if (operands.empty())
    return usage(command + " needs at least one plan");
  return command == "sign" ? sign(option, operands) : verify(option, operands);
}
