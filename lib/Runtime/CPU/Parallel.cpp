//===- Parallel.cpp - Steps split among OpenMP threads --------------------===//
//
// libgomp's GOMP_parallel starts a parallel region without the compiler's
// OpenMP lowering: it runs fn(data) on every thread of the team, the
// calling thread included, and returns when all have. The team persists
// between regions (and between the OpenBLAS and oneDNN calls that use it),
// so a region costs a wake-up, not thread creation.
//
//===----------------------------------------------------------------------===//

#include "CPU/Parallel.h"

#include "Plan/DynamicLibrary.h"

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <mutex>
#include <sched.h>
#include <string>

namespace of::rt {

namespace {
/// The CPUs this process may run on.
int availableCpus() {
  cpu_set_t cpus;
  if (::sched_getaffinity(0, sizeof(cpus), &cpus) == 0)
    return std::max(CPU_COUNT(&cpus), 1);
  return 1;
}
} // namespace

void prepareOpenMp() {
  static std::once_flag once;
  std::call_once(once, [] {
    int ranks = localRanks();
    if (ranks <= 1)
      return;
    ::setenv("OMP_WAIT_POLICY", "passive", /*overwrite=*/0);
    // oneDNN and OpenBLAS size their teams by omp_get_max_threads(): left
    // at every CPU, each rank's team oversubscribes the machine.
    std::string share = std::to_string(std::max(availableCpus() / ranks, 1));
    ::setenv("OMP_NUM_THREADS", share.c_str(), /*overwrite=*/0);
  });
}

int localRanks() {
  const char *local = std::getenv("OMPI_COMM_WORLD_LOCAL_SIZE");
  if (!local)
    local = std::getenv("MPI_LOCALNRANKS");
  int ranks = local ? std::atoi(local) : 1;
  return std::max(ranks, 1);
}

namespace {

struct Gomp {
  void (*parallel)(void (*fn)(void *), void *data, unsigned threads,
                   unsigned flags) = nullptr;
  int (*threadNum)() = nullptr;
  int (*numThreads)() = nullptr;
  void (*setThreads)(int) = nullptr;
  std::atomic<int> threads{1}; // what parallelThreads() returns
};

Gomp &gomp() {
  static Gomp g;
  static std::once_flag once;
  std::call_once(once, [] {
    prepareOpenMp();
    std::string ignored;
    void *library = openFirst({"libgomp.so.1"}, ignored);
    if (!library)
      return;
    g.parallel = reinterpret_cast<decltype(g.parallel)>(
        ::dlsym(library, "GOMP_parallel"));
    g.threadNum = reinterpret_cast<decltype(g.threadNum)>(
        ::dlsym(library, "omp_get_thread_num"));
    g.numThreads = reinterpret_cast<decltype(g.numThreads)>(
        ::dlsym(library, "omp_get_num_threads"));
    auto maxThreads =
        reinterpret_cast<int (*)()>(::dlsym(library, "omp_get_max_threads"));
    if (!g.parallel || !g.threadNum || !g.numThreads || !maxThreads) {
      g.parallel = nullptr;
      return;
    }
    int threads = 1;
    if (const char *set = std::getenv("OMP_NUM_THREADS"); set && *set)
      threads = maxThreads();
    else
      threads = availableCpus() / localRanks();
    g.threads = std::max(threads, 1);
    // Where libgomp was loaded before prepareOpenMp (a Python process that
    // imported another OpenMP user first), its default team is every CPU:
    // this thread's regions, oneDNN's and OpenBLAS's included, take the
    // share instead.
    g.setThreads = reinterpret_cast<void (*)(int)>(
        ::dlsym(library, "omp_set_num_threads"));
    if (g.setThreads)
      g.setThreads(g.threads);
  });
  return g;
}

struct Region {
  int64_t count;
  void (*body)(void *, int64_t, int64_t);
  void *context;
};

void runSlice(void *data) {
  const auto &region = *static_cast<Region *>(data);
  const Gomp &g = gomp();
  // The team may be smaller than asked for (OMP_THREAD_LIMIT, nesting).
  int64_t t = g.threadNum(), n = g.numThreads();
  int64_t begin = region.count * t / n, end = region.count * (t + 1) / n;
  if (begin < end)
    region.body(region.context, begin, end);
}

} // namespace

int parallelThreads() { return gomp().threads; }

void setParallelThreads(int threads) {
  Gomp &g = gomp();
  // (without libgomp parallelFor runs every step on the calling thread)
  g.threads = std::max(threads, 1);
  if (g.setThreads)
    g.setThreads(g.threads);
}

void parallelFor(int64_t count, int threads,
                 void (*body)(void *context, int64_t begin, int64_t end),
                 void *context) {
  const Gomp &g = gomp();
  threads = static_cast<int>(std::min<int64_t>(threads, count));
  if (threads < 2 || !g.parallel) {
    if (count > 0)
      body(context, 0, count);
    return;
  }
  Region region{count, body, context};
  g.parallel(runSlice, &region, static_cast<unsigned>(threads), 0);
}

int threadsFor(int64_t range, int64_t work) {
  int64_t byWork = work / kMinWorkPerThread;
  return static_cast<int>(std::max<int64_t>(
      1, std::min<int64_t>({parallelThreads(), range, byWork})));
}

} // namespace of::rt
