//===- comm-check.cpp - Every communicator operation, checked exactly -----===//
//
// ofrt-comm-check runs each operation of the runtime's Communicator
// interface (Communicator.h) on one backend and compares every result, byte
// for byte, with the value computed on the host:
//
//   mpirun -n N ofrt-comm-check --backend mpi    host buffers, MPI
//   mpirun -n N ofrt-comm-check --backend nccl   GPU buffers, NCCL
//   ofrt-comm-check --backend nccl               one rank, no MPI
//
// Cases: all_reduce (sum and max of every reducible dtype, in and out of
// place), all_gather and reduce_scatter with even and uneven blocks,
// all_to_all with uneven blocks, broadcast from every root, send/recv
// between pairs of ranks, sub-groups (all ranks reordered, and the even
// ranks), and the collective memory a device executor gives plan
// collectives (fills of each element size, strided row copies). Values are
// small integers, exact in every dtype.
//
// Rank 0 prints one line per case and a closing "N passed, M failed" over
// all ranks; any rank prints the cases it failed. `--corrupt` perturbs one
// result on rank 0 before it is checked, to show that a wrong value fails.
// The exit code is 1 when a case failed, 2 when the backend cannot start.
//
//===----------------------------------------------------------------------===//

#include "Comm/Collective.h"
#include "Comm/Communicator.h"
#include "Comm/Distribution.h"
#include "Session/Executor.h"
#include "Plan/PlanFile.h"
#include "CPU/Reduce.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <vector>

using namespace of::rt;
using of::plan::DType;
using of::plan::ReduceOp;
using Bytes = std::vector<unsigned char>;

namespace {

[[noreturn]] void die(const std::string &message) {
  std::fprintf(stderr, "ofrt-comm-check: %s\n", message.c_str());
  std::exit(2);
}

void check(Status status) {
  if (status.failed())
    die(status.message());
}

/// Buffers where the backend wants them: host memory, or the GPU's.
class Memory {
public:
  explicit Memory(Executor *device) : device_(device) {}
  void *make(uint64_t bytes) {
    if (!device_) {
      host_.emplace_back(bytes ? bytes : 1);
      return host_.back().data();
    }
    void *out = nullptr;
    check(device_->allocate(bytes ? bytes : 1, "a test buffer", out));
    return out;
  }
  void *make(const Bytes &contents) {
    void *out = make(contents.size());
    put(out, contents);
    return out;
  }
  void put(void *where, const Bytes &contents) {
    if (!device_)
      std::memcpy(where, contents.data(), contents.size());
    else
      check(device_->upload(where, contents.data(), contents.size()));
  }
  Bytes get(const void *where, uint64_t bytes) {
    Bytes out(bytes);
    if (!device_) {
      std::memcpy(out.data(), where, bytes);
    } else {
      check(device_->synchronize());
      check(device_->download(out.data(), where, bytes));
    }
    return out;
  }

private:
  Executor *device_;
  std::vector<Bytes> host_;
};

/// A small integer, exact in every dtype, as `dtype`'s bytes.
void store(DType dtype, unsigned char *at, int value) {
  switch (dtype) {
  case DType::F32: {
    float v = static_cast<float>(value);
    std::memcpy(at, &v, 4);
    return;
  }
  case DType::F64: {
    double v = value;
    std::memcpy(at, &v, 8);
    return;
  }
  case DType::F16: {
    uint16_t v = floatToHalf(static_cast<float>(value));
    std::memcpy(at, &v, 2);
    return;
  }
  case DType::BF16: {
    uint16_t v = floatToBfloat16(static_cast<float>(value));
    std::memcpy(at, &v, 2);
    return;
  }
  case DType::I64: {
    int64_t v = value;
    std::memcpy(at, &v, 8);
    return;
  }
  case DType::I32: {
    int32_t v = value;
    std::memcpy(at, &v, 4);
    return;
  }
  default: {
    auto v = static_cast<int8_t>(value);
    std::memcpy(at, &v, 1);
    return;
  }
  }
}

Bytes valuesOf(DType dtype, const std::vector<int> &values) {
  Bytes out(values.size() * dtypeSize(dtype));
  for (size_t i = 0; i < values.size(); ++i)
    store(dtype, out.data() + i * dtypeSize(dtype), values[i]);
  return out;
}

int valueAt(int rank, uint64_t i) {
  return static_cast<int>((rank * 7 + i * 3) % 11) - 5;
}

unsigned char byteAt(int a, int b, uint64_t k) {
  return static_cast<unsigned char>(a * 31 + b * 5 + k);
}

class Checker {
public:
  Checker(Communicator &comm, Memory &memory, bool corrupt)
      : comm_(comm), memory_(memory), corrupt_(corrupt) {}

  /// Runs `body`, which returns what it computed and what was expected.
  void run(const std::string &name,
           const std::function<Status(Bytes &got, Bytes &expected)> &body) {
    Bytes got, expected;
    Status status = body(got, expected);
    if (status.succeeded() && corrupt_ && comm_.rank() == 0 && !got.empty()) {
      got[0] ^= 1;
      corrupt_ = false;
    }
    std::string problem;
    if (status.failed())
      problem = status.message();
    else if (got.size() != expected.size())
      problem = formatMessage(got.size(), " bytes, expected ", expected.size());
    else
      for (size_t i = 0; i < got.size() && problem.empty(); ++i)
        if (got[i] != expected[i])
          problem = formatMessage("byte ", i, " is ", int(got[i]),
                                  ", expected ", int(expected[i]));
    if (!problem.empty()) {
      ++failed_;
      std::printf("FAIL %s on rank %d: %s\n", name.c_str(), comm_.rank(),
                  problem.c_str());
    } else {
      ++passed_;
      if (comm_.rank() == 0)
        std::printf("PASS %s\n", name.c_str());
    }
    std::fflush(stdout);
  }

  int passed() const { return passed_; }
  int failed() const { return failed_; }

private:
  Communicator &comm_;
  Memory &memory_;
  bool corrupt_;
  int passed_ = 0, failed_ = 0;
};

void runCases(Communicator &comm, Memory &mem, CollectiveMemory *collective,
              Checker &checker) {
  int p = comm.size(), r = comm.rank();
  const uint64_t count = 1003;
  for (DType dtype : {DType::F32, DType::F64, DType::F16, DType::BF16,
                      DType::I64, DType::I32, DType::I8})
    for (ReduceOp op : {ReduceOp::Sum, ReduceOp::Max})
      for (bool inPlace : {false, true}) {
        std::string name =
            formatMessage("all_reduce ", op == ReduceOp::Sum ? "sum " : "max ",
                          dtypeName(dtype), inPlace ? " in place" : "");
        checker.run(name, [&](Bytes &got, Bytes &expected) {
          std::vector<int> mine(count), want(count);
          for (uint64_t i = 0; i < count; ++i) {
            mine[i] = valueAt(r, i);
            want[i] = op == ReduceOp::Sum ? 0 : -1000;
            for (int k = 0; k < p; ++k)
              want[i] = op == ReduceOp::Sum ? want[i] + valueAt(k, i)
                                            : std::max(want[i], valueAt(k, i));
          }
          Bytes in = valuesOf(dtype, mine);
          void *src = mem.make(in);
          void *dst = inPlace ? src : mem.make(in.size());
          if (Status s = comm.allReduce(src, dst, count, dtype, op, name);
              s.failed())
            return s;
          got = mem.get(dst, in.size());
          expected = valuesOf(dtype, want);
          return Status::success();
        });
      }

  for (bool even : {true, false}) {
    std::string name = even ? "all_gather even" : "all_gather uneven";
    checker.run(name, [&](Bytes &got, Bytes &expected) {
      std::vector<uint64_t> bytes;
      for (int j = 0; j < p; ++j)
        bytes.push_back(even ? 24 : 8 * (j + 1) + 1);
      Bytes mine(bytes[r]);
      for (uint64_t k = 0; k < mine.size(); ++k)
        mine[k] = byteAt(r, 0, k);
      for (int j = 0; j < p; ++j)
        for (uint64_t k = 0; k < bytes[j]; ++k)
          expected.push_back(byteAt(j, 0, k));
      void *src = mem.make(mine);
      void *dst = mem.make(expected.size());
      if (Status s = comm.allGatherV(src, dst, bytes, name); s.failed())
        return s;
      got = mem.get(dst, expected.size());
      return Status::success();
    });
  }

  for (bool even : {true, false}) {
    std::string name = even ? "reduce_scatter even" : "reduce_scatter uneven";
    checker.run(name, [&](Bytes &got, Bytes &expected) {
      std::vector<uint64_t> counts;
      uint64_t total = 0, offset = 0;
      for (int j = 0; j < p; ++j) {
        counts.push_back(even ? 5 : j + 2);
        if (j < r)
          offset += counts.back();
        total += counts.back();
      }
      std::vector<int> mine(total), want(counts[r], 0);
      for (uint64_t i = 0; i < total; ++i)
        mine[i] = valueAt(r, i);
      for (uint64_t i = 0; i < counts[r]; ++i)
        for (int k = 0; k < p; ++k)
          want[i] += valueAt(k, offset + i);
      void *src = mem.make(valuesOf(DType::F32, mine));
      void *dst = mem.make(counts[r] * 4);
      if (Status s = comm.reduceScatterV(src, dst, counts, DType::F32,
                                         ReduceOp::Sum, name);
          s.failed())
        return s;
      got = mem.get(dst, counts[r] * 4);
      expected = valuesOf(DType::F32, want);
      return Status::success();
    });
  }

  checker.run("all_to_all uneven", [&](Bytes &got, Bytes &expected) {
    std::vector<uint64_t> sendBytes, recvBytes;
    Bytes out;
    for (int j = 0; j < p; ++j) {
      sendBytes.push_back(4 * (r + 1) + j);
      recvBytes.push_back(4 * (j + 1) + r);
      for (uint64_t k = 0; k < sendBytes.back(); ++k)
        out.push_back(byteAt(r, j, k));
      for (uint64_t k = 0; k < recvBytes.back(); ++k)
        expected.push_back(byteAt(j, r, k));
    }
    void *src = mem.make(out);
    void *dst = mem.make(expected.size());
    if (Status s =
            comm.allToAllV(src, sendBytes, dst, recvBytes, "all_to_all uneven");
        s.failed())
      return s;
    got = mem.get(dst, expected.size());
    return Status::success();
  });

  for (int root = 0; root < p; ++root) {
    std::string name = formatMessage("broadcast from ", root);
    checker.run(name, [&](Bytes &got, Bytes &expected) {
      Bytes mine(100);
      for (uint64_t k = 0; k < mine.size(); ++k) {
        mine[k] = byteAt(r, 1, k);
        expected.push_back(byteAt(root, 1, k));
      }
      void *data = mem.make(mine);
      if (Status s = comm.broadcast(data, mine.size(), root, name); s.failed())
        return s;
      got = mem.get(data, mine.size());
      return Status::success();
    });
  }

  if (p >= 2) {
    int peer = r % 2 == 0 ? r + 1 : r - 1;
    if (peer < p) {
      std::string name = "send/recv between pairs";
      checker.run(name, [&](Bytes &got, Bytes &expected) {
        Bytes mine(1000);
        for (uint64_t k = 0; k < mine.size(); ++k) {
          mine[k] = byteAt(r, 2, k);
          expected.push_back(byteAt(peer, 2, k));
        }
        void *out = mem.make(mine);
        void *in = mem.make(mine.size());
        Status first = r % 2 == 0 ? comm.send(out, mine.size(), peer, 7, name)
                                  : comm.recv(in, mine.size(), peer, 7, name);
        if (first.failed())
          return first;
        Status second = r % 2 == 0 ? comm.recv(in, mine.size(), peer, 7, name)
                                   : comm.send(out, mine.size(), peer, 7, name);
        if (second.failed())
          return second;
        got = mem.get(in, mine.size());
        return Status::success();
      });
    }
  }

  // Sub-groups: every rank in reverse order, then the even ranks.
  std::vector<std::vector<int>> groups;
  if (p >= 2) {
    std::vector<int> reversed;
    for (int j = p - 1; j >= 0; --j)
      reversed.push_back(comm.worldRanks()[j]);
    groups.push_back(reversed);
  }
  if (p >= 3) {
    std::vector<int> evens;
    for (int j = 0; j < p; j += 2)
      evens.push_back(comm.worldRanks()[j]);
    groups.push_back(evens);
  }
  for (const std::vector<int> &members : groups) {
    int position = -1;
    for (size_t j = 0; j < members.size(); ++j)
      if (members[j] == comm.worldRank())
        position = static_cast<int>(j);
    std::string name =
        formatMessage("all_reduce in the group ", formatRanks(members));
    if (position < 0)
      continue;
    checker.run(name, [&](Bytes &got, Bytes &expected) {
      Communicator *group = nullptr;
      if (Status s = comm.subGroup(members, group, name); s.failed())
        return s;
      if (group->rank() != position || group->size() != int(members.size()))
        return fail("the group says rank ", group->rank(), " of ",
                    group->size(), ", expected ", position, " of ",
                    members.size());
      std::vector<int> mine(64), want(64, 0);
      for (uint64_t i = 0; i < 64; ++i) {
        mine[i] = valueAt(comm.worldRank(), i);
        for (int member : members)
          want[i] += valueAt(member, i);
      }
      void *data = mem.make(valuesOf(DType::I32, mine));
      if (Status s =
              group->allReduce(data, data, 64, DType::I32, ReduceOp::Sum, name);
          s.failed())
        return s;
      got = mem.get(data, 64 * 4);
      expected = valuesOf(DType::I32, want);
      return Status::success();
    });
  }

  checker.run("barrier",
              [&](Bytes &, Bytes &) { return comm.barrier("barrier"); });

  // The collective memory of plan collectives on this backend's buffers.
  for (size_t size : {1, 2, 4, 8}) {
    std::string name =
        formatMessage("collective memory: fill ", size, "-byte elements");
    checker.run(name, [&](Bytes &got, Bytes &expected) {
      unsigned char element[8];
      for (size_t k = 0; k < size; ++k)
        element[k] = static_cast<unsigned char>(0xA0 + k);
      const uint64_t n = 37;
      Bytes before(n * size + 8, 0x11);
      void *data = mem.make(before);
      if (Status s = collective->fill(data, n, element, size); s.failed())
        return s;
      got = mem.get(data, before.size());
      expected = before;
      for (uint64_t i = 0; i < n; ++i)
        std::memcpy(expected.data() + i * size, element, size);
      return Status::success();
    });
  }
  checker.run("collective memory: strided rows", [&](Bytes &got,
                                                     Bytes &expected) {
    Bytes source(5 * 40);
    for (size_t k = 0; k < source.size(); ++k)
      source[k] = byteAt(3, 3, k);
    void *src = mem.make(source);
    void *dst = mem.make(Bytes(5 * 24, 0x22));
    if (Status s = collective->copyRows(
            dst, 24, static_cast<unsigned char *>(src) + 8, 40, 16, 5);
        s.failed())
      return s;
    got = mem.get(dst, 5 * 24);
    expected.assign(5 * 24, 0x22);
    for (int row = 0; row < 5; ++row)
      std::memcpy(expected.data() + row * 24, source.data() + row * 40 + 8, 16);
    return Status::success();
  });
}

} // namespace

int main(int argc, char **argv) {
  std::string backend;
  bool corrupt = false;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--backend" && i + 1 < argc)
      backend = argv[++i];
    else if (arg == "--corrupt")
      corrupt = true;
    else
      die("usage: ofrt-comm-check --backend mpi|nccl [--corrupt]");
  }
  if (backend != "mpi" && backend != "nccl")
    die("--backend takes mpi or nccl");

  // The job's communicator: MPI, except for NCCL on one rank without it.
  std::unique_ptr<Communicator> world;
  if (backend == "mpi" || launchedByMpi())
    check(createMpiCommunicator(&argc, &argv, world));
  int rank = world ? world->rank() : 0;

  std::unique_ptr<Executor> device;
  Communicator *comm = world.get();
  std::unique_ptr<CollectiveMemory> hostMemory;
  CollectiveMemory *collective = nullptr;
  if (backend == "nccl") {
    check(createCudaExecutor(rank, device));
    check(device->collectiveCommunicator(world.get(), comm));
    if (!comm)
      die("this libofrt was built without NCCL's header (nccl.h)");
    collective = &device->collectiveMemory();
  } else {
    hostMemory = createHostCollectiveMemory();
    collective = hostMemory.get();
  }

  int failed = 0, passed = 0;
  {
    Memory memory(device.get());
    Checker checker(*comm, memory, corrupt);
    runCases(*comm, memory, collective, checker);
    failed = checker.failed();
    passed = checker.passed();
  }
  // Every rank's counts, summed on the host.
  int64_t counts[2] = {passed, failed};
  if (world)
    check(world->allReduce(counts, counts, 2, DType::I64, ReduceOp::Sum,
                           "summing the results"));
  if (rank == 0)
    std::printf(
        "comm-check (%s, %d %s): %lld passed, %lld failed\n", backend.c_str(),
        comm->size(), comm->size() == 1 ? "rank" : "ranks",
        static_cast<long long>(counts[0]), static_cast<long long>(counts[1]));
  std::fflush(stdout);
  device.reset();
  if (world) {
    double timeout = world->timeout();
    world.reset();
    check(finalizeMpi(timeout));
  }
  return counts[1] ? 1 : 0;
}
