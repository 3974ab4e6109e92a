//===- Parallel.h - Steps split among OpenMP threads ------------*- C++ -*-===//
//
// The CPU executor splits a kernel's independent iterations, and a batched
// gemm's batches, among threads. The threads are libgomp's, loaded with
// dlopen (so libofrt keeps no NEEDED entry on it): OpenBLAS's OpenMP build
// and oneDNN run on that same team, so a plan's kernels, gemms and
// convolutions take turns on one set of threads instead of three pools
// competing for the cores. Where libgomp is missing every step runs on the
// calling thread.
//
//===----------------------------------------------------------------------===//

#ifndef OF_LIB_RUNTIME_PARALLEL_H
#define OF_LIB_RUNTIME_PARALLEL_H

#include <cstdint>

namespace of::rt {

/// Called before a library that brings OpenMP (oneDNN, OpenBLAS's OpenMP
/// build, libgomp itself) is loaded, since libgomp reads its settings then:
/// when several ranks of the job share this machine, their OpenMP threads
/// must not spin while they wait (libgomp's default), which starves the
/// other ranks' cores, so OMP_WAIT_POLICY becomes passive unless it is set;
/// and OMP_NUM_THREADS, unless set, becomes the CPUs divided among those
/// ranks, since oneDNN's and OpenBLAS's teams take every CPU otherwise
/// (ResNet-50 on 2 ranks of this 2-core VM: 210 -> 125 ms per step, the
/// weight-gradient convolutions 102 -> 24 ms).
/// The 2-rank main job trained at 4.6-4.9k tokens/s with spinning threads,
/// 64-67k with passive ones.
void prepareOpenMp();

/// The job's ranks on this machine (Open MPI's or MPICH's local size), 1
/// outside MPI.
int localRanks();

/// How many threads a step may use: $OMP_NUM_THREADS when set, else the
/// CPUs this process may run on divided among the job's ranks on this
/// machine (Open MPI's or MPICH's local size); 1 without libgomp.
int parallelThreads();

/// Sets what parallelThreads() returns (at least 1), and OpenMP's team
/// size for oneDNN and OpenBLAS, for the steps that start after the call.
void setParallelThreads(int threads);

/// Calls `body(context, begin, end)` on `threads` contiguous, nearly equal
/// slices of [0, count) at once, one per thread, and returns when all are
/// done; on the calling thread alone when `threads` < 2 or libgomp is
/// missing. `body` must not throw.
void parallelFor(int64_t count, int threads,
                 void (*body)(void *context, int64_t begin, int64_t end),
                 void *context);

/// The threads worth giving a step of `work` innermost iterations that
/// splits into `range` independent parts: at most parallelThreads(), at
/// most `range`, and at least kMinWorkPerThread iterations each.
int threadsFor(int64_t range, int64_t work);

/// Below this many innermost iterations per thread, starting the threads
/// costs more than they save. The small GPT's training step (of-run
/// --warmup 3 --repeat 100, docs/performance.md) took 3.6 ms with 8K or
/// 16K, 4.2 ms with 32K or 64K.
inline constexpr int64_t kMinWorkPerThread = 16384;

} // namespace of::rt

#endif // OF_LIB_RUNTIME_PARALLEL_H
