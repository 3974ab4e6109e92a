//===- collective_bench.cpp - The runtime's communicator against raw MPI --===//
//
// Measures all_reduce, all_gather, reduce_scatter, all_to_all and the
// send/recv of pipeline stage boundaries through the runtime's MPI
// communicator (lib/Runtime/Comm/MpiCommunicator.cpp: non-blocking MPI calls
// polled under a deadline, the v-variants the plans need) and through the
// plain blocking MPI calls of the same operation (MPI_Allreduce,
// MPI_Allgather, MPI_Reduce_scatter_block, MPI_Alltoall, MPI_Send/MPI_Recv)
// in the same run,
// on f32 buffers from 8 B to 64 MiB, and prints one table: mean time per
// call (the slowest rank's), bandwidth (bytes / time), and the ratio
// runtime / MPI. A third column times MPI's own non-blocking call waited
// with MPI_Wait, which separates the cost of the non-blocking algorithms
// from the runtime's polling.
//
//   mpirun -n 2 build/bench/collective_bench [--max-bytes N] [--seconds S]
//                                            [--only OP]
//
// `bytes` is the buffer each rank holds whole: all_reduce's buffer,
// all_gather's output, reduce_scatter's input, all_to_all's send buffer,
// send/recv's message. send/recv is a ping-pong between ranks 2k and 2k+1
// (osu_latency's pattern): its time is one round trip, its bandwidth counts
// both directions.
//
//===----------------------------------------------------------------------===//

#include "Comm/Communicator.h"

#define OMPI_SKIP_MPICXX 1
#include <mpi.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <vector>

using namespace of::rt;

namespace {

/// Mean seconds per call of `op` over the slowest rank: a few warm-up calls,
/// then as many calls as fit in about `seconds` (decided on rank 0 and
/// shared, so every rank makes the same number of calls).
double timeCalls(const std::function<void()> &op, double seconds) {
  for (int i = 0; i < 3; ++i)
    op();
  MPI_Barrier(MPI_COMM_WORLD);
  double start = MPI_Wtime();
  op();
  double once = MPI_Wtime() - start;
  MPI_Allreduce(MPI_IN_PLACE, &once, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  long calls = std::clamp(static_cast<long>(seconds / std::max(once, 1e-7)),
                          5L, 20000L);
  MPI_Barrier(MPI_COMM_WORLD);
  start = MPI_Wtime();
  for (long i = 0; i < calls; ++i)
    op();
  double elapsed = (MPI_Wtime() - start) / static_cast<double>(calls);
  MPI_Allreduce(MPI_IN_PLACE, &elapsed, 1, MPI_DOUBLE, MPI_MAX,
                MPI_COMM_WORLD);
  return elapsed;
}

void check(const Status &status) {
  if (status.failed()) {
    std::fprintf(stderr, "collective_bench: %s\n", status.message().c_str());
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
}

std::string formatBytes(uint64_t bytes) {
  const char *units[] = {"B", "KiB", "MiB", "GiB"};
  int unit = 0;
  while (bytes >= 1024 && bytes % 1024 == 0 && unit < 3) {
    bytes /= 1024;
    ++unit;
  }
  return std::to_string(bytes) + " " + units[unit];
}

} // namespace

int main(int argc, char **argv) {
  uint64_t maxBytes = 64ull << 20;
  double seconds = 0.25;
  std::string only;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--max-bytes" && i + 1 < argc)
      maxBytes = std::strtoull(argv[++i], nullptr, 10);
    else if (arg == "--seconds" && i + 1 < argc)
      seconds = std::strtod(argv[++i], nullptr);
    else if (arg == "--only" && i + 1 < argc)
      only = argv[++i];
    else {
      std::fprintf(stderr, "usage: collective_bench [--max-bytes N] "
                           "[--seconds S] [--only OP]\n");
      return 2;
    }
  }
  std::unique_ptr<Communicator> comm;
  check(createMpiCommunicator(&argc, &argv, comm));
  int rank = comm->rank(), size = comm->size();
  auto p = static_cast<uint64_t>(size);

  std::vector<uint64_t> sizes;
  for (uint64_t bytes = 8; bytes < maxBytes; bytes *= 8)
    sizes.push_back(bytes);
  sizes.push_back(maxBytes);

  std::vector<float> a(maxBytes / 4 + 16), b(maxBytes / 4 + 16);
  for (size_t i = 0; i < a.size(); ++i)
    a[i] = static_cast<float>(i % 97) * 0.5f + static_cast<float>(rank);

  if (rank == 0) {
    std::printf("collective_bench: %d ranks, f32, mean time per call "
                "(slowest rank), bandwidth = bytes / time\n",
                size);
    std::printf("%-15s %9s %12s %12s %12s %7s %11s %11s\n", "op", "bytes",
                "runtime us", "MPI us", "MPI-nb us", "ratio", "rt GB/s",
                "MPI GB/s");
  }
  const char *names[] = {"all_reduce", "all_gather", "reduce_scatter",
                         "all_to_all", "send/recv"};
  if (!only.empty() &&
      std::find(std::begin(names), std::end(names), only) == std::end(names)) {
    if (rank == 0)
      std::fprintf(stderr,
                   "collective_bench: --only takes all_reduce, "
                   "all_gather, reduce_scatter, all_to_all or "
                   "send/recv, not '%s'\n",
                   only.c_str());
    comm.reset();
    finalizeMpi(1.0);
    return 2;
  }
  int peer = rank ^ 1;
  bool paired = peer < size, first = rank % 2 == 0;
  constexpr int kTag = 11;
  for (int op = 0; op < 5; ++op) {
    if (!only.empty() && only != names[op])
      continue;
    for (uint64_t bytes : sizes) {
      // Every rank's share must be whole elements.
      uint64_t count = bytes / 4;
      if (op != 0)
        count = std::max<uint64_t>(p, count / p * p);
      uint64_t share = count / p; // elements per rank (op != 0)
      int intCount = static_cast<int>(count), intShare =
                                                   static_cast<int>(share);
      std::function<void()> runtime, raw, rawNonBlocking;
      std::vector<uint64_t> shareBytes(p, share * 4), shareCounts(p, share);
      std::string what = names[op];
      switch (op) {
      case 0:
        runtime = [&] {
          check(comm->allReduce(a.data(), b.data(), count, of::plan::DType::F32,
                                of::plan::ReduceOp::Sum, what));
        };
        raw = [&] {
          MPI_Allreduce(a.data(), b.data(), intCount, MPI_FLOAT, MPI_SUM,
                        MPI_COMM_WORLD);
        };
        rawNonBlocking = [&] {
          MPI_Request request;
          MPI_Iallreduce(a.data(), b.data(), intCount, MPI_FLOAT, MPI_SUM,
                         MPI_COMM_WORLD, &request);
          MPI_Wait(&request, MPI_STATUS_IGNORE);
        };
        break;
      case 1:
        runtime = [&] {
          check(comm->allGatherV(a.data(), b.data(), shareBytes, what));
        };
        raw = [&] {
          MPI_Allgather(a.data(), intShare, MPI_FLOAT, b.data(), intShare,
                        MPI_FLOAT, MPI_COMM_WORLD);
        };
        rawNonBlocking = [&] {
          MPI_Request request;
          MPI_Iallgather(a.data(), intShare, MPI_FLOAT, b.data(), intShare,
                         MPI_FLOAT, MPI_COMM_WORLD, &request);
          MPI_Wait(&request, MPI_STATUS_IGNORE);
        };
        break;
      case 2:
        runtime = [&] {
          check(comm->reduceScatterV(a.data(), b.data(), shareCounts,
                                     of::plan::DType::F32,
                                     of::plan::ReduceOp::Sum, what));
        };
        raw = [&] {
          MPI_Reduce_scatter_block(a.data(), b.data(), intShare, MPI_FLOAT,
                                   MPI_SUM, MPI_COMM_WORLD);
        };
        rawNonBlocking = [&] {
          MPI_Request request;
          MPI_Ireduce_scatter_block(a.data(), b.data(), intShare, MPI_FLOAT,
                                    MPI_SUM, MPI_COMM_WORLD, &request);
          MPI_Wait(&request, MPI_STATUS_IGNORE);
        };
        break;
      case 3:
        runtime = [&] {
          check(comm->allToAllV(a.data(), shareBytes, b.data(), shareBytes,
                                what));
        };
        raw = [&] {
          MPI_Alltoall(a.data(), intShare, MPI_FLOAT, b.data(), intShare,
                       MPI_FLOAT, MPI_COMM_WORLD);
        };
        rawNonBlocking = [&] {
          MPI_Request request;
          MPI_Ialltoall(a.data(), intShare, MPI_FLOAT, b.data(), intShare,
                        MPI_FLOAT, MPI_COMM_WORLD, &request);
          MPI_Wait(&request, MPI_STATUS_IGNORE);
        };
        break;
      case 4: {
        uint64_t bytes = count * 4;
        runtime = [&, bytes] {
          if (!paired)
            return;
          for (int turn = 0; turn < 2; ++turn)
            check((turn == 0) == first
                      ? comm->send(a.data(), bytes, peer, kTag, what)
                      : comm->recv(b.data(), bytes, peer, kTag, what));
        };
        raw = [&] {
          if (!paired)
            return;
          for (int turn = 0; turn < 2; ++turn)
            if ((turn == 0) == first)
              MPI_Send(a.data(), intCount, MPI_FLOAT, peer, kTag,
                       MPI_COMM_WORLD);
            else
              MPI_Recv(b.data(), intCount, MPI_FLOAT, peer, kTag,
                       MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        };
        rawNonBlocking = [&] {
          if (!paired)
            return;
          for (int turn = 0; turn < 2; ++turn) {
            MPI_Request request;
            if ((turn == 0) == first)
              MPI_Isend(a.data(), intCount, MPI_FLOAT, peer, kTag,
                        MPI_COMM_WORLD, &request);
            else
              MPI_Irecv(b.data(), intCount, MPI_FLOAT, peer, kTag,
                        MPI_COMM_WORLD, &request);
            MPI_Wait(&request, MPI_STATUS_IGNORE);
          }
        };
        break;
      }
      }
      uint64_t moved = count * 4;
      double carried = static_cast<double>(op == 4 ? 2 * moved : moved);
      // Interleaved, so that drift affects both alike.
      double rt = timeCalls(runtime, seconds / 2);
      double mpi = timeCalls(raw, seconds / 2);
      double nb = timeCalls(rawNonBlocking, seconds / 2);
      rt = std::min(rt, timeCalls(runtime, seconds / 2));
      mpi = std::min(mpi, timeCalls(raw, seconds / 2));
      if (rank == 0)
        std::printf("%-15s %9s %12.2f %12.2f %12.2f %7.2f %11.3f %11.3f\n",
                    names[op], formatBytes(moved).c_str(), rt * 1e6, mpi * 1e6,
                    nb * 1e6, rt / mpi, carried / rt / 1e9,
                    carried / mpi / 1e9);
      std::fflush(stdout);
    }
  }
  double timeout = comm->timeout();
  comm.reset();
  check(finalizeMpi(timeout));
  return 0;
}
