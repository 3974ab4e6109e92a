//===- Session.h - One program of a plan, ready to run --------------------===//
//
// A session is one entry function run as one rank: the program's arena
// (64-byte aligned, zeroed), session-owned storage for every input and
// output, the kernels of its launches loaded and resolved, and every step
// prepared with data pointers. Creation fails cleanly for what this runtime
// cannot run; running needs every input set. The session shares ownership
// of its plan, whose constant blobs it reads in place.
//
// A CUDA program's buffers live in device memory (its executor's): the
// arena, the constants (uploaded at creation) and a device copy of every
// input. Inputs and outputs keep their host storage, so the API is the same
// on both devices: an input set on the host is uploaded before the next
// run, an output is downloaded when the host reads it, and a training step's
// state is updated on the device (its host copy downloaded only when read or
// saved).
//
// A rank of a multi-rank plan runs with a communicator (the job's world):
// creating the session then makes the sub-group communicators of its
// collectives, which is collective over each sub-group, so every rank
// creates its session at the same point. Without a communicator a session
// still prepares (for listing) but refuses to run a collective over several
// ranks. Inputs and outputs with a distribution can be set from and
// gathered into their global values (setInputGlobal, gatherOutput).
//
//===----------------------------------------------------------------------===//

#ifndef OF_LIB_RUNTIME_SESSION_H
#define OF_LIB_RUNTIME_SESSION_H

#include "Session/AlignedBytes.h"
#include "Comm/Collective.h"
#include "Comm/Communicator.h"
#include "Comm/Distribution.h"
#include "Session/Executor.h"
#include "Plan/KernelObject.h"
#include "Plan/PlanFile.h"
#include "Session/Status.h"

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace of::rt {

/// The name, element type and shape of an input or output.
struct TensorInfo {
  std::string name;
  plan::DType dtype = plan::DType::F32;
  std::vector<int64_t> dims;
  uint64_t bytes = 0;
  /// The global tensor this rank's value is part of (`dist.globalShape`
  /// etc.), when the plan gives a distribution.
  bool distributed = false;
  DistSpec dist;
  uint64_t globalBytes = 0;
  /// Outputs: the index of the input this output replaces after every run
  /// (a training step's state), or -1.
  int64_t updates = -1;
};

class Session {
public:
  /// Prepares entry `entry` (null: "main", or the plan's only entry) for
  /// `rank`. With a communicator `comm` (not owned; it outlives the
  /// session), `rank` must be its world rank and its size the plan's world
  /// size.
  /// With `describeOnly`, a session is made without its device, memory or
  /// code (no arena, no storage, no kernel object loaded): it describes
  /// the entry's inputs and outputs, and every call that would copy or run
  /// fails.
  static Status create(std::shared_ptr<const PlanFile> plan, const char *entry,
                       int rank, Communicator *comm,
                       std::unique_ptr<Session> &out,
                       bool describeOnly = false);
  ~Session();

  /// The entry function this session runs.
  const std::string &entryName() const { return entry_; }
  /// Whether this is the rank that gathers (world rank 0, or no
  /// communicator).
  bool isRoot() const { return !comm_ || comm_->worldRank() == 0; }

  /// Inputs in the program's `inputs` order, outputs in Output step order.
  const std::vector<TensorInfo> &inputs() const { return inputs_; }
  const std::vector<TensorInfo> &outputs() const { return outputs_; }
  /// The index of the input/output named `name`, or -1.
  int64_t findInput(std::string_view name) const;
  int64_t findOutput(std::string_view name) const;

  /// Copies exactly the input's size in bytes into the session.
  Status setInput(size_t index, const void *data, size_t bytes);
  /// Takes this rank's part of the global value `data` (exactly the global
  /// size) by the input's distribution: a balanced slice per S axis, the
  /// whole along B, and along P the value on coordinate 0 and the
  /// reduction's identity (0, or the lowest value for P(max)) elsewhere.
  /// An input without a distribution is set whole.
  Status setInputGlobal(size_t index, const void *data, size_t bytes);
  /// Copies this rank's current value of an input (set, loaded, or updated
  /// by a run) out; exactly its size.
  Status getInput(size_t index, void *data, size_t bytes) const;
  /// The checks of copying input `index` in or out: the index, exactly its
  /// size, a data pointer.
  Status checkInputCopy(size_t index, const void *data, size_t bytes) const;
  /// Runs every step; fails, naming them, if inputs were never set.
  Status run();
  /// Copies an output of the last successful run (exactly its size).
  Status getOutput(size_t index, void *data, size_t bytes) const;
  /// Assembles the global value of an output on world rank 0 (S parts
  /// concatenated, B from coordinate 0, P reduced). Collective: every rank
  /// calls it, for the same outputs in the same order. On rank 0 `data`
  /// receives the global value (`bytes` is its size) and `isRoot` is set;
  /// other ranks pass any `data`. An output without a distribution is
  /// rank 0's value.
  Status gatherOutput(size_t index, void *data, size_t bytes,
                      bool &isRoot) const;
  /// The same for the current value of an input (after a run, a training
  /// step's state holds the run's update), which must have been set.
  Status gatherInput(size_t index, void *data, size_t bytes,
                     bool &isRoot) const;
  /// Whether input `index` has a value (set, or updated by a run).
  bool inputIsSet(size_t index) const {
    return index < inputSet_.size() && inputSet_[index];
  }

  void enableProfiling(bool enable) { profiling_ = enable; }
  size_t numSteps() const { return steps_.size(); }
  const std::string &stepName(size_t index) const { return steps_[index].name; }
  double stepSeconds(size_t index) const { return stepSeconds_[index]; }
  size_t profiledRuns() const { return profiledRuns_; }
  uint64_t arenaBytes() const { return arena_.size(); }

private:
  Session() = default;
  bool describeOnly_ = false;
  Status describeOnlyError() const;
  /// Ranks agree or the job stops: before every run of a distributed
  /// plan, the ranks compare the plan's checksum and a digest of every
  /// input that is B on every mesh axis (taken when it is set) or was set
  /// from a global value (all of it), and all fail, naming the rank and
  /// the input, if one differs
  /// ($OF_CHECK_INPUTS=0 leaves the inputs out; the plan is always
  /// compared).
  Status checkRanksAgree();
  std::vector<uint64_t> inputDigest_; // 0: not compared
  bool compareInputs_ = true;
  Status prepare(const char *entry, int rank, Communicator *comm);
  Status loadKernels();
  /// Lets outputs that update inputs be copied straight into them where
  /// that is safe (see Session.cpp).
  void planDirectUpdates();
  /// Where output `index`'s value of the last run is.
  const uint8_t *outputData(size_t index) const;
  /// Records that input `input` was given a value on the host: it is set,
  /// stale on a device, and an output kept in its storage is no longer
  /// valid.
  void inputWasSet(size_t input);
  Status prepareStep(const plan::Step &step, uint32_t index);
  /// "program 'main' step 3 (library blas.gemm, from model.py:42:1)".
  std::string stepLabel(const PreparedStep &step, size_t index) const;
  void *bufferData(uint32_t index) const { return bufferData_[index]; }
  /// Gathers `mine`, this rank's part of the value `info` describes (an
  /// input's or output's, `kind` says which), on world rank 0.
  Status gather(const TensorInfo &info, const char *kind, const uint8_t *mine,
                void *data, size_t bytes, bool &rootOut) const;

  std::shared_ptr<const PlanFile> plan_;
  const plan::Program *program_ = nullptr;
  int rank_ = 0;
  std::string entry_;
  Communicator *comm_ = nullptr;
  /// The communicator of the program's collectives: comm_, or the device's
  /// own (NCCL), which the executor owns.
  Communicator *collectiveComm_ = nullptr;
  std::string label_;
  std::unique_ptr<Executor> executor_;

  AlignedBytes arena_;
  std::vector<AlignedBytes> inputStorage_;
  std::vector<bool> inputSet_;
  /// Where the program reads each input: its host storage, or on a device
  /// its device copy, which `inputStale_` marks out of date.
  std::vector<void *> inputData_;
  std::vector<bool> inputStale_;
  /// Whether the buffers are device memory (a CUDA program).
  bool onDevice_ = false;
  /// Uploads the inputs set since the last run (device programs).
  Status uploadStaleInputs();
  /// After a run on a device: the device copies of updated inputs.
  Status updateDeviceInputs();
  std::vector<AlignedBytes> outputStorage_;
  /// Per output: its step's index, and whether the step writes straight
  /// into the storage of the input it updates.
  std::vector<size_t> outputStep_;
  std::vector<bool> directUpdate_;
  bool outputsValid_ = false;
  /// On a device, host copies are made when the host reads them: a run
  /// copies no output to the host, and a training step's state stays on
  /// the device. Whether each output's (each input's) host storage holds
  /// its current value, and the downloads that make it so.
  /// Step graphs: on an executor that records them, each maximal run of
  /// recordable steps on one stream (at least two) is recorded at the
  /// second run and replayed after. The first run runs every step on its
  /// own, so that libraries do their first-use work (cuBLAS loading its
  /// kernels, say) outside a capture, as PyTorch warms up before capturing
  /// a graph. Not while profiling, which times steps one by one.
  struct StepGraph {
    size_t begin = 0, end = 0; // steps_[begin, end), output steps skipped
    std::optional<size_t> graph;
  };
  std::vector<StepGraph> graphs_;
  bool warmedUp_ = false; // a run has completed
  void planStepGraphs();
  /// Whether a run leaves `step` out: an output step on a device (the
  /// output is copied to the host when read, outputToHost).
  bool deferred(const PreparedStep &step) const;
  Status runSteps();
  mutable std::vector<bool> outputOnHost_;
  mutable std::vector<bool> inputOnHost_;
  Status outputToHost(size_t index) const;
  Status inputToHost(size_t index) const;
  /// The data pointer of every buffer of the program, by index.
  std::vector<void *> bufferData_;

  /// Loaded executables, by executable index (null when unused).
  std::vector<std::unique_ptr<KernelObject>> objects_;
  /// A CUDA executable's loaded GPU modules, by executable index, and its
  /// resolved functions by (module, name).
  std::map<uint32_t, std::vector<void *>> gpuModules_;
  std::map<std::pair<void *, std::string>, void *> gpuFunctions_;
  Status prepareGpuLaunch(const plan::Launch &launch, PreparedStep &step);
  /// Resolved kernels by (executable index, name).
  std::map<std::pair<uint32_t, std::string>, KernelFunction> kernels_;
  std::vector<PreparedStep> steps_;
  std::vector<std::unique_ptr<PreparedCollective>> collectives_;

  std::vector<TensorInfo> inputs_;
  std::vector<TensorInfo> outputs_;

  bool profiling_ = false;
  std::vector<double> stepSeconds_;
  size_t profiledRuns_ = 0;
};

} // namespace of::rt

#endif // OF_LIB_RUNTIME_SESSION_H
