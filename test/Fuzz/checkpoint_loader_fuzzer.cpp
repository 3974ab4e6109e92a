//===- checkpoint_loader_fuzzer.cpp - libFuzzer target for checkpoints ----===//
//
// Feeds arbitrary bytes, as a safetensors file, to ofrt_session_load_state
// on a session of the plan named by $OF_FUZZ_PLAN (scripts/fuzz.sh uses the
// test plan with one input of every element type). The bytes go through a
// memfd, so the loader opens and maps a real file as it does in use. A
// load may fail with a message; it must never crash, read out of bounds or
// leak.
//
//===----------------------------------------------------------------------===//

#include "OF/Runtime/ofrt.h"

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <sys/mman.h>
#include <unistd.h>

namespace {
ofrt_plan *plan = nullptr;
ofrt_session *session = nullptr;
} // namespace

extern "C" int LLVMFuzzerInitialize(int *, char ***) {
  const char *path = std::getenv("OF_FUZZ_PLAN");
  if (!path) {
    std::fprintf(stderr, "set OF_FUZZ_PLAN to a plan (.ofp)\n");
    std::exit(2);
  }
  ofrt_error *err = ofrt_plan_open_file(path, &plan);
  if (!err)
    err = ofrt_session_create(plan, nullptr, 0, &session);
  if (err) {
    std::fprintf(stderr, "%s: %s\n", path, ofrt_error_message(err));
    std::exit(2);
  }
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  int fd = memfd_create("checkpoint", MFD_CLOEXEC);
  if (fd < 0)
    return 0;
  size_t written = 0;
  while (written < size) {
    ssize_t n = write(fd, data + written, size - written);
    if (n <= 0)
      break;
    written += static_cast<size_t>(n);
  }
  std::string path = "/proc/self/fd/" + std::to_string(fd);
  int64_t step = 0;
  if (ofrt_error *err = ofrt_session_load_state(session, path.c_str(), &step))
    ofrt_error_free(err);
  close(fd);
  return 0;
}
