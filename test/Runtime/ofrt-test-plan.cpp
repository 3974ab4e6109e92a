//===- ofrt-test-plan.cpp - Write the sample plans to disk ----------------===//
//
// Writes the plans of TestPlan.h as .ofp files into a directory, for the lit
// tests of of-run and as the seed corpus of the plan loader fuzzer:
//   sample.ofp     entries "main" (launch, events, gemm, copy, outputs) and
//                  "check" (check.index_range)
//   gemm-f32.ofp   batched gemm, transposed operands, broadcast B
//   gemm-f64.ofp   the same in f64
//   dtypes.ofp     one input per element type, copied to an output
// The kernel object defaults to the one built with the tests.
//
//===----------------------------------------------------------------------===//

#include "TestPlan.h"

#include <cstdio>
#include <string>

using namespace of::test;

namespace {

bool writeFile(const std::string &path, const Bytes &bytes) {
  FILE *file = std::fopen(path.c_str(), "wb");
  if (!file)
    return false;
  bool ok = std::fwrite(bytes.data(), 1, bytes.size(), file) == bytes.size();
  return std::fclose(file) == 0 && ok;
}

} // namespace

int main(int argc, char **argv) {
  std::string kernels;
#ifdef OFRT_TEST_KERNELS
  kernels = OFRT_TEST_KERNELS;
#endif
  std::string directory;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--kernels" && i + 1 < argc)
      kernels = argv[++i];
    else if (directory.empty() && !arg.empty() && arg[0] != '-')
      directory = arg;
    else {
      std::fprintf(stderr, "usage: ofrt-test-plan [--kernels LIB.so] DIR\n");
      return 2;
    }
  }
  if (directory.empty()) {
    std::fprintf(stderr, "usage: ofrt-test-plan [--kernels LIB.so] DIR\n");
    return 2;
  }
  Bytes kernelBytes = readFileBytes(kernels);
  if (kernelBytes.empty()) {
    std::fprintf(stderr, "ofrt-test-plan: cannot read the kernels '%s'\n",
                 kernels.c_str());
    return 1;
  }
  struct {
    const char *name;
    Bytes bytes;
  } plans[] = {
      {"sample.ofp", makeSamplePlan(kernelBytes).write()},
      {"gemm-f32.ofp",
       makeBatchedGemmPlan(of::plan::DType::F32, 3, 5, 7, 6).write()},
      {"gemm-f64.ofp",
       makeBatchedGemmPlan(of::plan::DType::F64, 2, 4, 3, 5).write()},
      {"dtypes.ofp", makeDtypePlan().write()},
      {"conv.ofp", ConvCase().plan().write()},
      {"pool.ofp", PoolCase().plan().write()},
      {"norm.ofp", NormCase().plan().write()},
  };
  for (const auto &plan : plans) {
    std::string path = directory + "/" + plan.name;
    if (!writeFile(path, plan.bytes)) {
      std::fprintf(stderr, "ofrt-test-plan: cannot write '%s'\n", path.c_str());
      return 1;
    }
  }
  return 0;
}
