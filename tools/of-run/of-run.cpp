//===- of-run.cpp - Run a binary plan on .npy inputs ----------------------===//
//
// The command-line face of libofrt: opens a plan, binds inputs from .npy
// files by name, runs one entry, and writes each output as
// <output-dir>/<name>.npy. It uses only the C API (ofrt.h), so it exercises
// exactly what other clients (the Python package) will. Every error is one
// message starting with "of-run: error: " and a non-zero exit code.
//
// A plan compiled for several ranks runs as one process per rank: `-n N`
// re-executes of-run under mpirun, and a process that an MPI launcher
// started (mpirun, srun) runs as its rank. Every rank reads the global
// inputs and takes its part by their distributions; rank 0 gathers the
// global outputs and writes them once every rank has finished. An error on
// any rank is printed with the rank and ends the whole job (MPI_Abort), so
// every rank exits non-zero and no output is written.
//
//===----------------------------------------------------------------------===//

#include "Npy.h"

#include "OF/ABI/PlanFormat.h"
#include "OF/ABI/Sbp.h"
#include "OF/Runtime/ofrt.h"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <climits>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>
#include <sys/stat.h>
#include <unistd.h>
#include <utility>
#include <vector>

#ifndef OF_VERSION
#define OF_VERSION "unknown"
#endif

namespace {

constexpr const char *kUsage = R"(OF plan runner

USAGE: of-run PLAN.ofp [--input NAME=FILE.npy]... --output-dir DIR [options]
       of-run -n N PLAN.ofp [--input NAME=FILE.npy]... --output-dir DIR
       of-run PLAN.ofp --list [--entry NAME] [--rank R]

Runs one entry function of a binary plan (written by of-translate), with
inputs and outputs as NumPy .npy files.

OPTIONS:
  --input NAME=FILE   Bind the input NAME to FILE (.npy, C order, little
                      endian). Every input of the entry must be given; its
                      dtype and shape must match the plan's exactly (for a
                      distributed input, its global shape).
  --output-dir DIR    Write each output as DIR/<name>.npy (DIR is created).
                      Required unless --list is given.
  --entry NAME        The entry function to run (default: "main", or the
                      plan's only entry).
  --rank R            The rank to run as without MPI (default 0).
  -n N, --nproc N     Run N ranks: re-executes of-run under mpirun -n N
                      (Open MPI; as root with --allow-run-as-root). N must be
                      the plan's world size. Without -n, a process started by
                      mpirun or srun runs as its MPI rank, and any other runs
                      one rank without MPI. Ranks that share a machine use
                      OMP_WAIT_POLICY=passive unless it is set.
  --timeout S         Seconds a rank waits for the others in a collective
                      before the job is aborted (default 60, or
                      $OF_COMM_TIMEOUT).
  --repeat N          Run N times (default 1); outputs are from the last run.
  --warmup N          Before the --repeat runs, run N times untimed (kernel
                      loading, cuBLAS's set-up and caches are then not in
                      --print-timing's figures).
  --steps N           Train: run a training step (an entry whose outputs
                      update inputs, from --of-pipeline=cpu,train=...) N
                      times, printing each step's loss (the output "loss")
                      and time; parameters and optimizer state stay in the
                      session between steps, and the outputs written are
                      the last step's (the trained parameters).
  --set NAME=VALUE    Bind a scalar (rank-0) input to a number, e.g.
                      --set lr=0.01.
  --batch NAME=FILE   With --steps: FILE.npy holds one value of the input
                      NAME per batch along a new leading axis (shape [K] +
                      the input's global shape); step s takes batch s mod K,
                      counting steps from the loaded checkpoint's step.
  --load-state FILE   Before running, set every input that the safetensors
                      checkpoint FILE holds a tensor of the same name for
                      (parameters and optimizer state; other tensors are
                      ignored, so an evaluation entry loads only the
                      parameters). A training step needs all of its state
                      in the file, and continues from its step count.
  --init-state FILE   Start a training step afresh from the weights in the
                      safetensors file FILE (of.save of a state dict, a
                      model's safetensors, or a checkpoint's parameters):
                      set every input it holds a tensor of the same name
                      for, as --load-state does, except the optimizer
                      state, which starts at zeros, at step 0. Every
                      parameter and buffer must be in the file.
  --save-state FILE   After the last run, save the entry's state
                      (parameters and optimizer state) to FILE as one
                      safetensors file of global tensors with the step
                      count; written to FILE.tmp.<pid> and renamed, so a
                      crash leaves any previous FILE whole.
  --save-every K      With --steps and --save-state: also save after every
                      K-th step.
  --print-timing      Print a per-step table (step, calls, mean ms, share %)
                      and the total time per run; with several ranks, rank
                      0's, and the share of the collectives.
  --trusted-keys FILE Open the plan only if PLAN.ofp.sig is a signature of it
                      (of-sign) by a key listed in FILE; $OF_TRUSTED_KEYS
                      sets the same policy. A plan is native code: see
                      docs/security.md before running one you did not
                      compile.
  --list              Print the plan's entries and each one's inputs and
                      outputs with dtype and shape, then exit.
  --check-libraries[=NAME,...]
                      Load the libraries a plan may need (openblas, onednn,
                      cuda, cublas, cublaslt, cudnn, nccl, mpi; all by
                      default) as a
                      session would, resolving every function OF calls, and
                      print the file each came from or why it cannot be
                      used; exit 1 if any cannot.
  --help              Print this help.
  --version           Print the version.

NAMES: the plan fixes the names. An input is named by its argument's of.name
attribute where present, else arg0, arg1, ... by position; an output by its
result's of.name, else out0, out1, .... A name is kept as the file name
(the output "ln1.weight" becomes ln1.weight.npy); a name containing '/' is
rejected.

STATE: an input that an output updates (a training step's optimizer state)
and that is neither given nor loaded starts at zeros; a note names it.

DTYPES: f32 <f4, f64 <f8, f16 <f2, i64 <i8, i32 <i4, i8 |i1, i1 |b1; bf16 is
read from <u2 (raw bits) or <V2 (np.save of an ml_dtypes.bfloat16 array) and
written as <u2.

SEVERAL RANKS: every rank reads each input's global .npy and takes its part
by the input's distribution (S: its balanced slice, B: the whole, P: the
value on coordinate 0 of that axis and zeros, or the lowest value for
P(max), elsewhere). Rank 0 gathers every output (S parts concatenated, B
from coordinate 0, P summed or maxed) and writes the global .npy once every
rank has finished; a failing rank ends the job and nothing is written.

LIBRARIES AND THREADS (CPU plans): f32 gemm steps run on oneDNN's matmul
(libdnnl.so.2, or $OF_DNNL_LIBRARY), other gemms and any gemm where oneDNN
is missing or OF_CPU_GEMM=openblas on OpenBLAS (its OpenMP build first, or
$OF_OPENBLAS_LIBRARY); convolutions need oneDNN. Kernels, gemms and
convolutions share libgomp's threads: $OMP_NUM_THREADS of them, else the
CPUs divided among the ranks that share the machine.
)";

/// "rank R: " under MPI, so every message says which rank it is from.
std::string rankPrefix;
/// The world communicator under MPI (null otherwise).
ofrt_comm *worldComm = nullptr;

int error(const std::string &message) {
  std::fprintf(stderr, "of-run: error: %s%s\n", rankPrefix.c_str(),
               message.c_str());
  std::fflush(stderr);
  return 1;
}

/// A usage error (a bad command line) exits with 2, other errors with 1.
int usageError(const std::string &message) {
  error(message);
  return 2;
}

/// Takes the message of `err`, frees it, and reports it.
int error(ofrt_error *err, const std::string &context = "") {
  std::string message = context + ofrt_error_message(err);
  ofrt_error_free(err);
  return error(message);
}

struct Options {
  std::string planPath;
  std::vector<std::pair<std::string, std::string>> inputs; // name, file
  std::vector<std::pair<std::string, std::string>> scalars; // --set
  std::vector<std::pair<std::string, std::string>> batches; // --batch
  std::string loadState, saveState;
  std::string trustedKeys; // --trusted-keys
  std::string initState; // --init-state: weights, no optimizer state
  long saveEvery = 0; // --save-every; 0 when not given
  std::string outputDir;
  const char *entry = nullptr;
  std::string entryStorage;
  int rank = 0;
  long repeat = 1;
  long warmup = 0; // --warmup
  long steps = 0; // --steps; 0 when not given
  bool printTiming = false;
  bool list = false;
  long nproc = 0;     // -n; 0 when not given
  double timeout = 0; // --timeout; 0 when not given
  /// argv without -n/--nproc and its value, for the re-execution.
  std::vector<std::string> passThrough;
};

bool parseInteger(const std::string &text, long minimum, long &out) {
  if (text.empty())
    return false;
  char *end = nullptr;
  errno = 0;
  long value = std::strtol(text.c_str(), &end, 10);
  if (errno || *end || value < minimum || value > 1000000000L)
    return false;
  out = value;
  return true;
}

/// Splits "NAME=VALUE" (both non-empty) into its halves.
bool splitBinding(const std::string &binding, std::string &name,
                  std::string &value) {
  size_t equals = binding.find('=');
  if (equals == std::string::npos || equals == 0 ||
      equals + 1 == binding.size())
    return false;
  name = binding.substr(0, equals);
  value = binding.substr(equals + 1);
  return true;
}

/// --check-libraries[=NAME,...]: loads each library (all by default) as a
/// session would and prints where it came from or why it cannot be used;
/// exits 1 if any of them cannot.
int checkLibraries(const std::string &list) {
  std::vector<std::string> names;
  for (size_t start = 0; start < list.size();) {
    size_t comma = list.find(',', start);
    if (comma == std::string::npos)
      comma = list.size();
    names.push_back(list.substr(start, comma - start));
    start = comma + 1;
  }
  if (names.empty())
    for (size_t i = 0; i < ofrt_library_count(); ++i)
      names.push_back(ofrt_library_name(i));
  int failed = 0;
  for (const std::string &name : names) {
    const char *path = nullptr;
    if (ofrt_error *error = ofrt_library_check(name.c_str(), &path)) {
      std::printf("%-9s error: %s\n", name.c_str(), ofrt_error_message(error));
      ofrt_error_free(error);
      ++failed;
    } else {
      std::printf("%-9s ok     %s\n", name.c_str(), path);
    }
  }
  return failed ? 1 : 0;
}

/// Parses argv; returns -1 to continue, else the exit code.
int parseOptions(int argc, char **argv, Options &options) {
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    int first = i;
    std::string value;
    bool hasInlineValue = false;
    if (arg.rfind("--", 0) == 0) {
      size_t equals = arg.find('=');
      if (equals != std::string::npos) {
        value = arg.substr(equals + 1);
        arg = arg.substr(0, equals);
        hasInlineValue = true;
      }
    }
    auto takeValue = [&](std::string &out) {
      if (hasInlineValue) {
        out = value;
        return true;
      }
      if (i + 1 >= argc)
        return false;
      out = argv[++i];
      return true;
    };
    auto needsValue = [&]() {
      return usageError("option '" + arg + "' needs a value (see --help)");
    };
    // The integer value (at least `minimum`) of an option: -1 when taken,
    // else the exit code.
    auto takeInteger = [&](long minimum, long &out) {
      std::string text;
      if (!takeValue(text))
        return needsValue();
      if (!parseInteger(text, minimum, out))
        return usageError(arg + " expects a " +
                          (minimum > 0 ? "positive" : "non-negative") +
                          " integer, got '" + text + "'");
      return -1;
    };

    if (arg == "--help" || arg == "-h") {
      std::fputs(kUsage, stdout);
      return 0;
    }
    if (arg == "--version") {
      std::printf("OF version %s (of-run; reads plan format version %u)\n",
                  OF_VERSION, of::plan::kFormatVersion);
      return 0;
    }
    if (arg == "--check-libraries")
      return checkLibraries(hasInlineValue ? value : "");
    if (arg == "--print-timing" || arg == "--list") {
      if (hasInlineValue)
        return usageError("option '" + arg + "' takes no value");
      (arg == "--list" ? options.list : options.printTiming) = true;
    } else if (arg == "--input") {
      std::string binding, name, file;
      if (!takeValue(binding))
        return needsValue();
      if (!splitBinding(binding, name, file))
        return usageError("--input expects NAME=FILE.npy, got '" + binding +
                          "'");
      options.inputs.emplace_back(name, file);
    } else if (arg == "--batch") {
      std::string binding, name, file;
      if (!takeValue(binding))
        return needsValue();
      if (!splitBinding(binding, name, file))
        return usageError("--batch expects NAME=FILE.npy, got '" + binding +
                          "'");
      options.batches.emplace_back(name, file);
    } else if (arg == "--load-state" || arg == "--save-state" ||
               arg == "--init-state" || arg == "--trusted-keys") {
      std::string &path = arg == "--load-state"     ? options.loadState
                          : arg == "--init-state"   ? options.initState
                          : arg == "--trusted-keys" ? options.trustedKeys
                                                    : options.saveState;
      if (!takeValue(path) || path.empty())
        return needsValue();
    } else if (arg == "--save-every") {
      if (int status = takeInteger(1, options.saveEvery); status >= 0)
        return status;
    } else if (arg == "--output-dir") {
      if (!takeValue(options.outputDir) || options.outputDir.empty())
        return needsValue();
    } else if (arg == "--entry") {
      if (!takeValue(options.entryStorage))
        return needsValue();
      options.entry = options.entryStorage.c_str();
    } else if (arg == "--rank") {
      long rank;
      if (int status = takeInteger(0, rank); status >= 0)
        return status;
      options.rank = static_cast<int>(rank);
    } else if (arg == "-n" || arg == "--nproc") {
      if (int status = takeInteger(1, options.nproc); status >= 0)
        return status;
      continue; // not passed on to the re-executed of-run
    } else if (arg == "--timeout") {
      std::string text;
      if (!takeValue(text))
        return needsValue();
      char *end = nullptr;
      double seconds = std::strtod(text.c_str(), &end);
      if (text.empty() || *end || !(seconds > 0) || !std::isfinite(seconds))
        return usageError("--timeout expects a positive number of seconds, "
                          "got '" +
                          text + "'");
      options.timeout = seconds;
    } else if (arg == "--set") {
      std::string binding, name, text;
      if (!takeValue(binding))
        return needsValue();
      char *end = nullptr;
      double value = 0;
      if (splitBinding(binding, name, text))
        value = std::strtod(text.c_str(), &end);
      if (!end || *end || !std::isfinite(value))
        return usageError("--set expects NAME=NUMBER, got '" + binding + "'");
      options.scalars.emplace_back(name, text);
    } else if (arg == "--steps" || arg == "--repeat" || arg == "--warmup") {
      long &out = arg == "--steps"    ? options.steps
                  : arg == "--repeat" ? options.repeat
                                      : options.warmup;
      if (int status = takeInteger(arg == "--warmup" ? 0 : 1, out); status >= 0)
        return status;
    } else if (arg.size() > 1 && arg[0] == '-') {
      return usageError("unknown option '" + arg + "' (see --help)");
    } else if (options.planPath.empty()) {
      options.planPath = arg;
    } else {
      return usageError("more than one plan given ('" + options.planPath +
                        "' and '" + arg + "')");
    }
    for (int j = first; j <= i; ++j)
      options.passThrough.push_back(argv[j]);
  }
  if (options.steps && (options.repeat != 1 || options.warmup))
    return usageError("--steps cannot be combined with --repeat or --warmup "
                      "(every training step counts)");
  if (!options.batches.empty() && !options.steps)
    return usageError("--batch feeds one batch per training step: give "
                      "--steps");
  if (options.saveEvery && (!options.steps || options.saveState.empty()))
    return usageError("--save-every needs --steps and --save-state");
  if (!options.initState.empty() && !options.loadState.empty())
    return usageError("--init-state starts training from weights and "
                      "--load-state continues it from a checkpoint: give one");
  if (options.planPath.empty())
    return error("no plan given (usage: of-run PLAN.ofp --input NAME=FILE "
                 "--output-dir DIR; see --help)") +
           1;
  if (!options.list && options.outputDir.empty())
    return usageError("--output-dir is required (see --help)");
  return -1;
}

std::vector<int64_t> dimsOf(const ofrt_tensor_info &info) {
  return std::vector<int64_t>(info.dims, info.dims + info.rank);
}

std::vector<int64_t> globalDims(const ofrt_dist &dist) {
  return std::vector<int64_t>(dist.global_dims, dist.global_dims + dist.rank);
}

/// " (part of f32 [7, 4] over mesh [2] ranks [0, 1] as [S(0)])"; for a
/// `rank` outside the mesh (another pipeline stage's tensor) " (none on
/// this rank: f32 [7, 4] over ...)".
std::string describeDist(ofrt_dtype dtype, const ofrt_dist &dist, int rank) {
  auto list = [](auto begin, auto end) {
    std::string text = "[";
    for (auto it = begin; it != end; ++it)
      text += (it == begin ? "" : ", ") + std::to_string(*it);
    return text + "]";
  };
  std::string sbp = "[";
  for (size_t a = 0; a < dist.mesh_rank; ++a) {
    sbp += a ? ", " : "";
    sbp += of::sbp::text(dist.sbp[a]);
  }
  sbp += "]";
  bool member =
      std::find(dist.mesh_ranks, dist.mesh_ranks + dist.num_mesh_ranks, rank) !=
      dist.mesh_ranks + dist.num_mesh_ranks;
  return std::string(member ? " (part of " : " (none on this rank: ") +
         ofrun::describeTensor(dtype, globalDims(dist)) + " over mesh " +
         list(dist.mesh, dist.mesh + dist.mesh_rank) + " ranks " +
         of::sbp::ranksText(dist.mesh_ranks, dist.num_mesh_ranks) + " as " +
         sbp + ")";
}

int listPlan(ofrt_plan *plan, const Options &options) {
  std::vector<const char *> entries;
  if (options.entry)
    entries.push_back(options.entry);
  else
    for (size_t e = 0; e < ofrt_plan_num_entries(plan); ++e)
      entries.push_back(ofrt_plan_entry_name(plan, e));
  for (const char *entry : entries) {
    ofrt_session *session;
    if (ofrt_error *err = ofrt_session_create_description(plan, entry,
                                                          options.rank, &session))
      return error(err);
    std::printf("entry %s (rank %d)\n", entry, options.rank);
    for (size_t i = 0; i < ofrt_session_num_inputs(session); ++i) {
      ofrt_tensor_info info = ofrt_session_input_info(session, i);
      ofrt_dist dist;
      bool distributed = ofrt_session_input_dist(session, i, &dist);
      std::printf("  input  %s: %s%s\n", info.name,
                  ofrun::describeTensor(info.dtype, dimsOf(info)).c_str(),
                  distributed
                      ? describeDist(info.dtype, dist, options.rank).c_str()
                      : "");
    }
    for (size_t i = 0; i < ofrt_session_num_outputs(session); ++i) {
      ofrt_tensor_info info = ofrt_session_output_info(session, i);
      ofrt_dist dist;
      bool distributed = ofrt_session_output_dist(session, i, &dist);
      std::printf("  output %s: %s%s\n", info.name,
                  ofrun::describeTensor(info.dtype, dimsOf(info)).c_str(),
                  distributed
                      ? describeDist(info.dtype, dist, options.rank).c_str()
                      : "");
    }
    ofrt_session_destroy(session);
  }
  return 0;
}

/// The values of an input fed one per training step (--batch).
struct BatchInput {
  size_t index;
  std::string file;
  ofrun::NpyArray array; // [count] + the input's global shape
  int64_t count = 0;
  size_t batchBytes = 0;
};

/// Sets the batch of global step `step` for every --batch input.
int feedBatches(ofrt_session *session, const std::vector<BatchInput> &batches,
                int64_t step) {
  for (const BatchInput &batch : batches) {
    const unsigned char *data =
        batch.array.data.empty()
            ? nullptr // this rank's part is empty (another stage's input)
            : batch.array.data.data() + (step % batch.count) * batch.batchBytes;
    if (ofrt_error *err = ofrt_session_set_input_global(session, batch.index,
                                                        data, batch.batchBytes))
      return error(err);
  }
  return 0;
}

/// Binds every input from its .npy file (inputs loaded from a checkpoint
/// are set already); reports every problem of one kind at once (all
/// unknown names, or all missing inputs). --batch inputs are read into
/// `batches`, and set to their first batch by the caller.
int bindInputs(ofrt_session *session, const Options &options,
               std::vector<BatchInput> &batches) {
  size_t numInputs = ofrt_session_num_inputs(session);
  std::string known;
  for (size_t i = 0; i < numInputs; ++i)
    known +=
        std::string(i ? ", " : "") + ofrt_session_input_info(session, i).name;
  if (known.empty())
    known = "(none)";

  std::map<size_t, std::string> files;
  std::map<size_t, std::string> scalars;
  std::map<size_t, std::string> batchFiles;
  // The input named `name`, given once in all (as a file or a number).
  auto claim = [&](const std::string &name, int64_t &index) -> int {
    index = ofrt_session_find_input(session, name.c_str());
    if (index < 0)
      return error("unknown input '" + name + "'; the inputs are: " + known);
    if (files.count(index) || scalars.count(index) || batchFiles.count(index))
      return error("input '" + name + "' is given twice");
    if (ofrt_session_input_is_set(session, index))
      return error(
          "input '" + name +
          "' is given on the command line and "
          "loaded from the checkpoint " +
          (options.loadState.empty() ? options.initState : options.loadState));
    return 0;
  };
  for (const auto &[name, file] : options.inputs) {
    int64_t index;
    if (int status = claim(name, index))
      return status;
    files[index] = file;
  }
  for (const auto &[name, value] : options.scalars) {
    int64_t index;
    if (int status = claim(name, index))
      return status;
    scalars[index] = value;
  }
  for (const auto &[name, file] : options.batches) {
    int64_t index;
    if (int status = claim(name, index))
      return status;
    batchFiles[index] = file;
  }
  // State that a step updates starts at zeros when not given.
  std::vector<bool> updated(numInputs, false);
  for (size_t o = 0; o < ofrt_session_num_outputs(session); ++o)
    if (int64_t in = ofrt_session_output_updates(session, o); in >= 0)
      updated[in] = true;
  std::string missing, zeroed;
  size_t numMissing = 0, numZeroed = 0;
  for (size_t i = 0; i < numInputs; ++i) {
    if (files.count(i) || scalars.count(i) || batchFiles.count(i) ||
        ofrt_session_input_is_set(session, i))
      continue;
    ofrt_tensor_info info = ofrt_session_input_info(session, i);
    if (updated[i]) {
      std::vector<uint8_t> zeros(info.bytes, 0);
      if (ofrt_error *err =
              ofrt_session_set_input(session, i, zeros.data(), zeros.size()))
        return error(err);
      if (++numZeroed <= 6)
        zeroed += std::string(zeroed.empty() ? "" : ", ") + info.name;
      continue;
    }
    missing += std::string(numMissing++ ? ", " : "") + "'" + info.name + "'";
  }
  if (!zeroed.empty() && (!worldComm || ofrt_comm_rank(worldComm) == 0))
    std::fprintf(
        stderr, "of-run: note: state not given starts at zeros: %s%s\n",
        zeroed.c_str(),
        numZeroed > 6 ? (" and " + std::to_string(numZeroed - 6) + " more (" +
                         std::to_string(numZeroed) + " inputs)")
                            .c_str()
                      : "");
  if (numMissing)
    return error(
        std::string(numMissing == 1 ? "missing input " : "missing inputs ") +
        missing + " (give each as --input NAME=FILE.npy)");

  for (const auto &[index, value] : scalars) {
    // A distributed scalar is set globally: a rank off its placement (a
    // pipeline stage's) holds nothing, a P one's value is on one rank.
    ofrt_tensor_info info = ofrt_session_input_info(session, index);
    ofrt_dist dist;
    bool distributed = ofrt_session_input_dist(session, index, &dist);
    std::vector<int64_t> dims = distributed ? globalDims(dist) : dimsOf(info);
    std::vector<unsigned char> bytes;
    std::string why;
    if (!dims.empty())
      return error("--set " + std::string(info.name) + ": the input is " +
                   ofrun::describeTensor(info.dtype, dims) +
                   ", not a float or integer scalar");
    if (!ofrun::storeScalar(value, info.dtype, bytes, why))
      return error("--set " + std::string(info.name) + ": the input is " +
                   ofrun::describeTensor(info.dtype, dims) + " and " + why);
    if (ofrt_error *err =
            distributed ? ofrt_session_set_input_global(
                              session, index, bytes.data(), bytes.size())
                        : ofrt_session_set_input(session, index, bytes.data(),
                                                 bytes.size()))
      return error(err);
  }
  for (const auto &[index, file] : batchFiles) {
    ofrt_tensor_info info = ofrt_session_input_info(session, index);
    ofrt_dist dist;
    std::vector<int64_t> expected =
        ofrt_session_input_dist(session, index, &dist) ? globalDims(dist)
                                                       : dimsOf(info);
    BatchInput batch{index, file, {}, 0, 0};
    std::string message;
    // A rank whose part is empty (an input of a pipeline stage it is not
    // on) checks the header only.
    if (!ofrun::readNpy(file, batch.array, message, info.bytes != 0))
      return error("--batch '" + std::string(info.name) + "': " + message);
    const std::vector<int64_t> &shape = batch.array.shape;
    if (batch.array.dtype != info.dtype ||
        shape.size() != expected.size() + 1 ||
        !std::equal(expected.begin(), expected.end(), shape.begin() + 1) ||
        shape[0] < 1) {
      std::string batchShape = std::string(ofrt_dtype_name(info.dtype)) + " [K";
      for (int64_t dim : expected)
        batchShape += ", " + std::to_string(dim);
      return error("--batch '" + std::string(info.name) + "': expected " +
                   batchShape + "] (K >= 1 batches of " +
                   ofrun::describeTensor(info.dtype, expected) + "), got " +
                   ofrun::describeTensor(batch.array.dtype, shape) + " in " +
                   file);
    }
    batch.count = shape[0];
    batch.batchBytes = ofrt_dtype_size(info.dtype);
    for (int64_t dim : expected)
      batch.batchBytes *= static_cast<size_t>(dim);
    batches.push_back(std::move(batch));
  }
  for (const auto &[index, file] : files) {
    ofrt_tensor_info info = ofrt_session_input_info(session, index);
    ofrt_dist dist;
    // A distributed input is read whole; this rank takes its part.
    std::vector<int64_t> expected =
        ofrt_session_input_dist(session, index, &dist) ? globalDims(dist)
                                                       : dimsOf(info);
    ofrun::NpyArray array;
    std::string message;
    // As for batches: an empty part needs the header only.
    if (!ofrun::readNpy(file, array, message, info.bytes != 0))
      return error("input '" + std::string(info.name) + "': " + message);
    if (array.dtype != info.dtype || array.shape != expected)
      return error("input '" + std::string(info.name) + "': expected " +
                   ofrun::describeTensor(info.dtype, expected) + ", got " +
                   ofrun::describeTensor(array.dtype, array.shape) + " in " +
                   file);
    size_t bytes = ofrt_dtype_size(info.dtype);
    for (int64_t dim : expected)
      bytes *= static_cast<size_t>(dim);
    if (ofrt_error *err = ofrt_session_set_input_global(
            session, index, array.data.empty() ? nullptr : array.data.data(),
            bytes))
      return error(err);
  }
  return 0;
}

/// Creates `path` and its parents as needed.
bool makeDirectories(const std::string &path, std::string &message) {
  for (size_t slash = path.find('/', 1);; slash = path.find('/', slash + 1)) {
    std::string prefix = path.substr(0, slash);
    if (!prefix.empty() && ::mkdir(prefix.c_str(), 0777) != 0 &&
        errno != EEXIST) {
      message = "cannot create '" + prefix + "': " + std::strerror(errno);
      return false;
    }
    if (slash == std::string::npos)
      break;
  }
  struct stat info;
  if (::stat(path.c_str(), &info) != 0 || !S_ISDIR(info.st_mode)) {
    message = "'" + path + "' is not a directory";
    return false;
  }
  return true;
}

/// Gathers every output's global value (on rank 0, collectively, in name
/// order so that every rank takes part in the same order), waits until every
/// rank got there, then rank 0 writes them.
int writeOutputs(ofrt_session *session, const Options &options) {
  struct Gathered {
    std::string name;
    ofrt_dtype dtype;
    std::vector<int64_t> dims;
    std::vector<unsigned char> data;
  };
  std::vector<size_t> order(ofrt_session_num_outputs(session));
  for (size_t i = 0; i < order.size(); ++i)
    order[i] = i;
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return std::strcmp(ofrt_session_output_info(session, a).name,
                       ofrt_session_output_info(session, b).name) < 0;
  });
  std::vector<Gathered> gathered;
  bool root = true;
  for (size_t index : order) {
    ofrt_tensor_info info = ofrt_session_output_info(session, index);
    ofrt_dist dist;
    bool distributed = ofrt_session_output_dist(session, index, &dist);
    Gathered output{info.name,
                    info.dtype,
                    distributed ? globalDims(dist) : dimsOf(info),
                    {}};
    bool isRoot = !worldComm || ofrt_comm_rank(worldComm) == 0;
    if (isRoot)
      output.data.resize(distributed ? dist.global_bytes : info.bytes);
    int rootFlag = 0;
    if (ofrt_error *err = ofrt_session_gather_output(
            session, index, isRoot ? output.data.data() : nullptr,
            isRoot ? output.data.size() : 0, &rootFlag))
      return error(err);
    root = rootFlag != 0;
    if (root)
      gathered.push_back(std::move(output));
  }
  // Every rank has run and gathered: only now may files appear.
  if (worldComm)
    if (ofrt_error *err = ofrt_comm_barrier(worldComm))
      return error(err);
  if (!root)
    return 0;
  std::string message;
  if (!makeDirectories(options.outputDir, message))
    return error(message);
  for (const Gathered &output : gathered) {
    std::string path = options.outputDir + "/" + output.name + ".npy";
    if (!ofrun::writeNpy(path, output.dtype, output.dims, output.data.data(),
                         output.data.size(), message))
      return error(message);
  }
  return 0;
}

void printTiming(ofrt_session *session, double wallSeconds, long runs) {
  size_t numSteps = ofrt_session_num_steps(session);
  size_t profiled = ofrt_session_profiled_runs(session);
  double total = 0;
  size_t width = 4;
  for (size_t i = 0; i < numSteps; ++i) {
    total += ofrt_session_step_seconds(session, i);
    width = std::max(width, std::strlen(ofrt_session_step_name(session, i)));
  }
  int nameWidth = static_cast<int>(width);
  std::printf("%-*s  %8s  %10s  %7s\n", nameWidth, "step", "calls", "mean ms",
              "share %");
  for (size_t i = 0; i < numSteps; ++i) {
    double seconds = ofrt_session_step_seconds(session, i);
    std::printf("%-*s  %8zu  %10.4f  %7.1f\n", nameWidth,
                ofrt_session_step_name(session, i), profiled,
                profiled ? seconds * 1e3 / static_cast<double>(profiled) : 0.0,
                total > 0 ? 100.0 * seconds / total : 0.0);
  }
  std::printf("total per run: %.4f ms in steps, %.4f ms wall (%ld runs)\n",
              profiled ? total * 1e3 / static_cast<double>(profiled) : 0.0,
              wallSeconds * 1e3 / static_cast<double>(runs), runs);
  double collectives = 0;
  size_t numCollectives = 0;
  for (size_t i = 0; i < numSteps; ++i)
    if (std::strncmp(ofrt_session_step_name(session, i), "collective", 10) ==
        0) {
      collectives += ofrt_session_step_seconds(session, i);
      ++numCollectives;
    }
  if (numCollectives)
    std::printf("collectives per run: %.4f ms in %zu steps (%.1f %% of the "
                "steps)%s\n",
                profiled ? collectives * 1e3 / static_cast<double>(profiled)
                         : 0.0,
                numCollectives, total > 0 ? 100.0 * collectives / total : 0.0,
                worldComm ? " on rank 0" : "");
}

/// Checks every output name can be a file name before anything runs.
int checkOutputNames(ofrt_session *session) {
  for (size_t i = 0; i < ofrt_session_num_outputs(session); ++i) {
    std::string name = ofrt_session_output_info(session, i).name;
    if (name.find('/') != std::string::npos || name == "." || name == "..")
      return error("output name '" + name +
                   "' cannot be a file name (it contains '/' or is a "
                   "directory name)");
  }
  return 0;
}

int runPlan(ofrt_plan *plan, const Options &options) {
  ofrt_session *session;
  if (ofrt_error *err = worldComm
                            ? ofrt_session_create_with_comm(plan, options.entry,
                                                            worldComm, &session)
                            : ofrt_session_create(plan, options.entry,
                                                  options.rank, &session))
    return error(err);
  struct SessionGuard {
    ofrt_session *session;
    ~SessionGuard() { ofrt_session_destroy(session); }
  } guard{session};

  bool root = !worldComm || ofrt_comm_rank(worldComm) == 0;
  int64_t firstStep = 0; // steps taken before this run (from a checkpoint)
  if (!options.initState.empty()) {
    if (ofrt_error *err =
            ofrt_session_init_state(session, options.initState.c_str()))
      return error(err);
    if (root && options.steps)
      std::fprintf(stderr, "of-run: weights from %s (step 0)\n",
                   options.initState.c_str());
  }
  if (!options.loadState.empty()) {
    if (ofrt_error *err = ofrt_session_load_state(
            session, options.loadState.c_str(), &firstStep))
      return error(err);
    if (root && options.steps)
      std::fprintf(stderr, "of-run: loaded %s (step %lld)\n",
                   options.loadState.c_str(),
                   static_cast<long long>(firstStep));
  }
  std::vector<BatchInput> batches;
  if (int status = bindInputs(session, options, batches))
    return status;
  if (int status = checkOutputNames(session))
    return status;
  for (long run = 0; run < options.warmup; ++run)
    if (ofrt_error *err = ofrt_session_run(session))
      return error(err);
  ofrt_session_enable_profiling(session, options.printTiming);
  long runs = options.steps ? options.steps : options.repeat;
  if (options.steps && firstStep > INT64_MAX - runs)
    return error("the checkpoint's step count " + std::to_string(firstStep) +
                 " plus --steps " + std::to_string(runs) +
                 " overflows the 64-bit step counter");
  long lastStep = firstStep + runs;
  int64_t lossIndex = ofrt_session_find_output(session, "loss");
  auto save = [&](int64_t step) -> int {
    if (ofrt_error *err =
            ofrt_session_save_state(session, options.saveState.c_str(), step))
      return error(err);
    return 0;
  };
  bool savedLast = false;
  auto start = std::chrono::steady_clock::now();
  for (long run = 0; run < runs; ++run) {
    int64_t step = firstStep + run; // the global index of this step
    if (int status = feedBatches(session, batches, step))
      return status;
    auto stepStart = std::chrono::steady_clock::now();
    if (ofrt_error *err = ofrt_session_run(session))
      return error(err);
    if (!options.steps)
      continue;
    // Training: one line per step with the loss (gathered: every rank
    // takes part) and the step's time.
    double ms = std::chrono::duration<double, std::milli>(
                    std::chrono::steady_clock::now() - stepStart)
                    .count();
    std::string loss;
    if (lossIndex >= 0) {
      // Global: rank 0 may be off the loss's placement (a pipeline's last
      // stage) and hold an empty part.
      ofrt_tensor_info info = ofrt_session_output_info(session, lossIndex);
      ofrt_dist dist;
      bool distributed = ofrt_session_output_dist(session, lossIndex, &dist);
      std::vector<int64_t> dims = distributed ? globalDims(dist) : dimsOf(info);
      std::vector<uint8_t> bytes(distributed ? dist.global_bytes : info.bytes);
      int isRoot = 0;
      if (ofrt_error *err = ofrt_session_gather_output(
              session, lossIndex, bytes.data(), bytes.size(), &isRoot))
        return error(err);
      double value;
      if (isRoot && dims.empty() &&
          ofrun::loadScalar(bytes, info.dtype, value)) {
        char text[64];
        std::snprintf(text, sizeof text, "  loss %.9g", value);
        loss = text;
      }
    }
    if (root) { // a line per step, as it happens (also into a pipe)
      std::printf("step %lld/%ld%s  %.3f ms\n",
                  static_cast<long long>(step + 1), lastStep, loss.c_str(), ms);
      std::fflush(stdout);
    }
    if (options.saveEvery && (step + 1) % options.saveEvery == 0) {
      if (int status = save(step + 1))
        return status;
      savedLast = run + 1 == runs;
    }
  }
  if (!options.saveState.empty() && !savedLast)
    if (int status = save(lastStep))
      return status;
  double wall =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  if (int status = writeOutputs(session, options))
    return status;
  if (options.printTiming && root)
    printTiming(session, wall, runs);
  return 0;
}

/// The mpirun to start ranks with: $OF_MPIRUN, else mpirun on PATH.
std::string findMpirun() {
  if (const char *path = std::getenv("OF_MPIRUN"); path && *path)
    return path;
  const char *path = std::getenv("PATH");
  std::string dirs = path ? path : "/usr/bin:/bin";
  for (size_t start = 0; start <= dirs.size();) {
    size_t end = dirs.find(':', start);
    if (end == std::string::npos)
      end = dirs.size();
    std::string dir = dirs.substr(start, end - start);
    std::string candidate = (dir.empty() ? "." : dir) + "/mpirun";
    if (::access(candidate.c_str(), X_OK) == 0)
      return candidate;
    start = end + 1;
  }
  return "";
}

/// Re-executes this of-run under `mpirun -n N`; returns only on failure.
int relaunch(const Options &options) {
  std::string mpirun = findMpirun();
  if (mpirun.empty())
    return error("-n " + std::to_string(options.nproc) +
                 " starts the ranks with mpirun, which is not on PATH "
                 "(install Open MPI: apt-get install openmpi-bin; or set "
                 "OF_MPIRUN, or start of-run under your MPI launcher)");
  char self[PATH_MAX];
  ssize_t length = ::readlink("/proc/self/exe", self, sizeof self - 1);
  if (length <= 0)
    return error(std::string("cannot find this executable to re-run it "
                             "under mpirun: ") +
                 std::strerror(errno));
  self[length] = '\0';

  std::vector<std::string> args = {mpirun, "-n", std::to_string(options.nproc)};
  // Open MPI refuses root unless told twice; ranks may outnumber cores;
  // shared-memory transport between the processes of this machine.
  if (::geteuid() == 0) {
    args.push_back("--allow-run-as-root");
    ::setenv("OMPI_ALLOW_RUN_AS_ROOT", "1", 1);
    ::setenv("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1", 1);
  }
  for (const char *arg : {"--oversubscribe", "--bind-to", "none", "--mca",
                          "btl", "self,vader", "--mca", "pml", "ob1"})
    args.push_back(arg);
  args.push_back(self);
  args.insert(args.end(), options.passThrough.begin(),
              options.passThrough.end());
  std::vector<char *> argv;
  for (std::string &arg : args)
    argv.push_back(arg.data());
  argv.push_back(nullptr);
  std::fflush(nullptr);
  ::execv(mpirun.c_str(), argv.data());
  return error("cannot run " + mpirun + ": " + std::strerror(errno));
}

/// Ends the job after an error on this rank: under MPI every rank must
/// stop (some may wait for this one in a collective).
int finish(int status) {
  if (status != 0 && worldComm)
    ofrt_comm_abort(worldComm, status);
  if (worldComm) {
    if (ofrt_error *err = ofrt_comm_finalize(worldComm)) {
      worldComm = nullptr;
      return error(err);
    }
    worldComm = nullptr;
  }
  return status;
}

} // namespace

int main(int argc, char **argv) {
  ofrt_guard_kernel_faults();
  Options options;
  if (int status = parseOptions(argc, argv, options); status >= 0)
    return status;

  bool launched = ofrt_comm_launched() != 0;
  if (!launched && options.nproc > 1 && !options.list)
    return relaunch(options);
  if (launched) {
    if (ofrt_error *err = ofrt_comm_init_mpi(&argc, &argv, &worldComm))
      return error(err);
    rankPrefix = "rank " + std::to_string(ofrt_comm_rank(worldComm)) + ": ";
    // A rank that only lists would leave the others of an MPMD job waiting
    // for it; the failure aborts them all.
    if (options.list && ofrt_comm_size(worldComm) > 1)
      return finish(error("--list describes a plan in one process, not in a "
                          "job of " +
                          std::to_string(ofrt_comm_size(worldComm)) +
                          " ranks (run it without mpirun)"));
    if (options.timeout > 0)
      ofrt_comm_set_timeout(worldComm, options.timeout);
    if (options.nproc && options.nproc != ofrt_comm_size(worldComm))
      return finish(error("-n " + std::to_string(options.nproc) + " asks for " +
                          std::to_string(options.nproc) +
                          " ranks, but the "
                          "launcher started " +
                          std::to_string(ofrt_comm_size(worldComm))));
  }

  ofrt_plan *plan;
  if (ofrt_error *err = ofrt_plan_open_file_trusted(
          options.planPath.c_str(), options.trustedKeys.c_str(), &plan))
    return finish(error(err));
  int status = 0;
  int worldSize = ofrt_plan_world_size(plan);
  int running = worldComm ? ofrt_comm_size(worldComm) : 1;
  if (!options.list && worldSize != running) {
    status = error(
        "the plan is compiled for " + std::to_string(worldSize) +
        (worldSize == 1 ? " rank" : " ranks") + " but " +
        std::to_string(running) + (running == 1 ? " is" : " are") + " running" +
        (worldComm ? std::string()
                   : " (run it with -n " + std::to_string(worldSize) + ")"));
  } else {
    status = options.list ? listPlan(plan, options) : runPlan(plan, options);
  }
  ofrt_plan_close(plan);
  return finish(status);
}
