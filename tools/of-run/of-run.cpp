//===- of-run.cpp - Run a binary plan on .npy inputs ----------------------===//
//
// The command-line face of libofrt: opens a plan, binds inputs from .npy
// files by name, runs one entry as one rank, and writes each output as
// <output-dir>/<name>.npy. It uses only the C API (ofrt.h), so it exercises
// exactly what other clients (the Python package) will. Every error is one
// message starting with "of-run: error: " and a non-zero exit code.
//
//===----------------------------------------------------------------------===//

#include "Npy.h"

#include "OF/Runtime/PlanFormat.h"
#include "OF/Runtime/ofrt.h"

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>
#include <sys/stat.h>
#include <utility>
#include <vector>

#ifndef OF_VERSION
#define OF_VERSION "unknown"
#endif

namespace {

constexpr const char *kUsage = R"(OF plan runner

USAGE: of-run PLAN.ofp [--input NAME=FILE.npy]... --output-dir DIR [options]
       of-run PLAN.ofp --list [--entry NAME] [--rank R]

Runs one entry function of a binary plan (written by of-translate) as one
rank, with inputs and outputs as NumPy .npy files.

OPTIONS:
  --input NAME=FILE   Bind the input NAME to FILE (.npy, C order, little
                      endian). Every input of the entry must be given; its
                      dtype and shape must match the plan's exactly.
  --output-dir DIR    Write each output as DIR/<name>.npy (DIR is created).
                      Required unless --list is given.
  --entry NAME        The entry function to run (default: "main", or the
                      plan's only entry).
  --rank R            The rank to run as (default 0).
  --repeat N          Run N times (default 1); outputs are from the last run.
  --print-timing      Print a per-step table (step, calls, mean ms, share %)
                      and the total time per run.
  --list              Print the plan's entries and each one's inputs and
                      outputs with dtype and shape, then exit.
  --help              Print this help.
  --version           Print the version.

NAMES: the plan fixes the names. An input is named by its argument's of.name
attribute where present, else arg0, arg1, ... by position; an output by its
result's of.name, else out0, out1, .... A name is kept as the file name
(the output "ln1.weight" becomes ln1.weight.npy); a name containing '/' is
rejected.

DTYPES: f32 <f4, f64 <f8, f16 <f2, i64 <i8, i32 <i4, i8 |i1, i1 |b1; bf16 is
read from <u2 (raw bits) or <V2 (np.save of an ml_dtypes.bfloat16 array) and
written as <u2.
)";

int error(const std::string &message) {
  std::fprintf(stderr, "of-run: error: %s\n", message.c_str());
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
  std::string outputDir;
  const char *entry = nullptr;
  std::string entryStorage;
  int rank = 0;
  long repeat = 1;
  bool printTiming = false;
  bool list = false;
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

/// Parses argv; returns -1 to continue, else the exit code.
int parseOptions(int argc, char **argv, Options &options) {
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
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

    if (arg == "--help" || arg == "-h") {
      std::fputs(kUsage, stdout);
      return 0;
    }
    if (arg == "--version") {
      std::printf("OF version %s (of-run; reads plan format version %u)\n",
                  OF_VERSION, of::plan::kFormatVersion);
      return 0;
    }
    if (arg == "--print-timing" || arg == "--list") {
      if (hasInlineValue)
        return usageError("option '" + arg + "' takes no value");
      (arg == "--list" ? options.list : options.printTiming) = true;
    } else if (arg == "--input") {
      std::string binding;
      if (!takeValue(binding))
        return needsValue();
      size_t equals = binding.find('=');
      if (equals == std::string::npos || equals == 0 ||
          equals + 1 == binding.size())
        return usageError("--input expects NAME=FILE.npy, got '" + binding +
                          "'");
      options.inputs.emplace_back(binding.substr(0, equals),
                                  binding.substr(equals + 1));
    } else if (arg == "--output-dir") {
      if (!takeValue(options.outputDir) || options.outputDir.empty())
        return needsValue();
    } else if (arg == "--entry") {
      if (!takeValue(options.entryStorage))
        return needsValue();
      options.entry = options.entryStorage.c_str();
    } else if (arg == "--rank") {
      std::string text;
      long rank;
      if (!takeValue(text))
        return needsValue();
      if (!parseInteger(text, 0, rank))
        return usageError("--rank expects a non-negative integer, got '" +
                          text + "'");
      options.rank = static_cast<int>(rank);
    } else if (arg == "--repeat") {
      std::string text;
      if (!takeValue(text))
        return needsValue();
      if (!parseInteger(text, 1, options.repeat))
        return usageError("--repeat expects a positive integer, got '" + text +
                          "'");
    } else if (arg.size() > 1 && arg[0] == '-') {
      return usageError("unknown option '" + arg + "' (see --help)");
    } else if (options.planPath.empty()) {
      options.planPath = arg;
    } else {
      return usageError("more than one plan given ('" + options.planPath +
                        "' and '" + arg + "')");
    }
  }
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

int listPlan(ofrt_plan *plan, const Options &options) {
  std::vector<const char *> entries;
  if (options.entry)
    entries.push_back(options.entry);
  else
    for (size_t e = 0; e < ofrt_plan_num_entries(plan); ++e)
      entries.push_back(ofrt_plan_entry_name(plan, e));
  for (const char *entry : entries) {
    ofrt_session *session;
    if (ofrt_error *err =
            ofrt_session_create(plan, entry, options.rank, &session))
      return error(err);
    std::printf("entry %s (rank %d)\n", entry, options.rank);
    for (size_t i = 0; i < ofrt_session_num_inputs(session); ++i) {
      ofrt_tensor_info info = ofrt_session_input_info(session, i);
      std::printf("  input  %s: %s\n", info.name,
                  ofrun::describeTensor(info.dtype, dimsOf(info)).c_str());
    }
    for (size_t i = 0; i < ofrt_session_num_outputs(session); ++i) {
      ofrt_tensor_info info = ofrt_session_output_info(session, i);
      std::printf("  output %s: %s\n", info.name,
                  ofrun::describeTensor(info.dtype, dimsOf(info)).c_str());
    }
    ofrt_session_destroy(session);
  }
  return 0;
}

/// Binds every input from its .npy file; reports every problem of one kind
/// at once (all unknown names, or all missing inputs).
int bindInputs(ofrt_session *session, const Options &options) {
  size_t numInputs = ofrt_session_num_inputs(session);
  std::string known;
  for (size_t i = 0; i < numInputs; ++i)
    known +=
        std::string(i ? ", " : "") + ofrt_session_input_info(session, i).name;
  if (known.empty())
    known = "(none)";

  std::map<size_t, std::string> files;
  for (const auto &[name, file] : options.inputs) {
    int64_t index = ofrt_session_find_input(session, name.c_str());
    if (index < 0)
      return error("unknown input '" + name + "'; the inputs are: " + known);
    if (!files.emplace(static_cast<size_t>(index), file).second)
      return error("input '" + name + "' is given twice");
  }
  std::string missing;
  size_t numMissing = 0;
  for (size_t i = 0; i < numInputs; ++i)
    if (!files.count(i)) {
      missing += std::string(numMissing++ ? ", " : "") + "'" +
                 ofrt_session_input_info(session, i).name + "'";
    }
  if (numMissing)
    return error(
        std::string(numMissing == 1 ? "missing input " : "missing inputs ") +
        missing + " (give each as --input NAME=FILE.npy)");

  for (const auto &[index, file] : files) {
    ofrt_tensor_info info = ofrt_session_input_info(session, index);
    ofrun::NpyArray array;
    std::string message;
    if (!ofrun::readNpy(file, array, message))
      return error("input '" + std::string(info.name) + "': " + message);
    if (array.dtype != info.dtype || array.shape != dimsOf(info))
      return error("input '" + std::string(info.name) + "': expected " +
                   ofrun::describeTensor(info.dtype, dimsOf(info)) + ", got " +
                   ofrun::describeTensor(array.dtype, array.shape) + " in " +
                   file);
    if (ofrt_error *err = ofrt_session_set_input(
            session, index, array.data.data(), array.data.size()))
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

int writeOutputs(ofrt_session *session, const Options &options) {
  std::string message;
  if (!makeDirectories(options.outputDir, message))
    return error(message);
  for (size_t i = 0; i < ofrt_session_num_outputs(session); ++i) {
    ofrt_tensor_info info = ofrt_session_output_info(session, i);
    std::vector<unsigned char> data(info.bytes);
    if (ofrt_error *err =
            ofrt_session_get_output(session, i, data.data(), data.size()))
      return error(err);
    std::string path = options.outputDir + "/" + info.name + ".npy";
    if (!ofrun::writeNpy(path, info.dtype, dimsOf(info), data.data(),
                         data.size(), message))
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
  if (ofrt_error *err =
          ofrt_session_create(plan, options.entry, options.rank, &session))
    return error(err);
  struct SessionGuard {
    ofrt_session *session;
    ~SessionGuard() { ofrt_session_destroy(session); }
  } guard{session};

  if (int status = bindInputs(session, options))
    return status;
  if (int status = checkOutputNames(session))
    return status;
  ofrt_session_enable_profiling(session, options.printTiming);
  auto start = std::chrono::steady_clock::now();
  for (long run = 0; run < options.repeat; ++run)
    if (ofrt_error *err = ofrt_session_run(session))
      return error(err);
  double wall =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  if (int status = writeOutputs(session, options))
    return status;
  if (options.printTiming)
    printTiming(session, wall, options.repeat);
  return 0;
}

} // namespace

int main(int argc, char **argv) {
  Options options;
  if (int status = parseOptions(argc, argv, options); status >= 0)
    return status;

  ofrt_plan *plan;
  if (ofrt_error *err = ofrt_plan_open_file(options.planPath.c_str(), &plan))
    return error(err);
  int status = options.list ? listPlan(plan, options) : runPlan(plan, options);
  ofrt_plan_close(plan);
  return status;
}
