//===- plan_loader_fuzzer.cpp - libFuzzer target for the plan loader ------===//
//
// Feeds arbitrary bytes to ofrt_plan_open_memory and, for a plan that opens,
// creates (and destroys) a session of every entry as the entry's first
// rank. Kernels never run. Built by scripts/fuzz.sh from the runtime sources
// with FUZZING_BUILD_MODE_UNSAFE_FOR_PRODUCTION, so executables are checked
// but not dlopen'ed (a mutated ELF would fuzz the system's loader), and no
// library is loaded either (DynamicLibrary.h): a session of a plan with a
// gemm fails to prepare it, as where OpenBLAS and oneDNN are missing.
//
// The harness rewrites the header's file size and checksum to match the
// input: a mutation would otherwise almost always stop at the checksum, and
// the checksum and truncation paths are covered by the unit tests. Sessions
// whose storage would exceed a few MiB are skipped, so that the fuzzer
// looks for crashes rather than for large allocations.
//
//===----------------------------------------------------------------------===//

#include "OF/ABI/PlanFormat.h"
#include "OF/ABI/PlanFormat_generated.h"
#include "OF/Runtime/ofrt.h"

#include <cstdint>
#include <cstring>
#include <vector>

namespace {

constexpr uint64_t kMaxSessionBytes = 16 << 20;

/// The bytes a session of `program` allocates (arena, inputs, outputs), or
/// UINT64_MAX when that overflows.
uint64_t sessionBytes(const of::plan::Program &program) {
  uint64_t total = program.arena_size();
  auto add = [&](uint64_t bytes) {
    if (__builtin_add_overflow(total, bytes, &total))
      total = UINT64_MAX;
  };
  if (program.buffers()) {
    for (const of::plan::Buffer *buffer : *program.buffers())
      if (buffer->kind() == of::plan::BufferKind::Input)
        add(buffer->size());
    if (program.steps())
      for (const of::plan::Step *step : *program.steps())
        if (const of::plan::Output *output = step->detail_as_Output())
          add(program.buffers()->Get(output->buffer())->size());
  }
  return total;
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  std::vector<uint8_t> bytes(data, data + size);
  of::plan::FileHeader header;
  if (size >= sizeof header) {
    std::memcpy(&header, bytes.data(), sizeof header);
    header.fileSize = size;
    header.checksum =
        of::plan::checksum(bytes.data() + sizeof header, size - sizeof header);
    std::memcpy(bytes.data(), &header, sizeof header);
  }

  ofrt_plan *plan = nullptr;
  if (ofrt_error *error =
          ofrt_plan_open_memory(bytes.data(), bytes.size(), &plan)) {
    ofrt_error_free(error);
    return 0;
  }
  // The plan verified, so its metadata can be read in place here too.
  const of::plan::Plan *metadata =
      of::plan::GetPlan(bytes.data() + header.metadataOffset);
  for (size_t e = 0; e < ofrt_plan_num_entries(plan); ++e) {
    const char *entry = ofrt_plan_entry_name(plan, e);
    for (const of::plan::Program *program : *metadata->programs()) {
      if (program->entry()->str() != entry)
        continue;
      if (sessionBytes(*program) <= kMaxSessionBytes) {
        ofrt_session *session = nullptr;
        if (ofrt_error *error = ofrt_session_create(
                plan, entry, program->ranks()->Get(0), &session))
          ofrt_error_free(error);
        ofrt_session_destroy(session);
      }
      break; // The first program of the entry only.
    }
  }
  ofrt_plan_close(plan);
  return 0;
}
