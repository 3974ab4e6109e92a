//===- OFModule.cpp - of._C: the Python binding of OF ---------------------===//
//
// A thin pybind11 layer over two C/C++ APIs: the compiler call of
// OF/Compiler/Compiler.h (program text to .ofp bytes) and libofrt's C API
// (open a plan, make sessions, bind, run, gather, checkpoint). Everything
// above it (tensors, modules, tracing, caching) is Python in python/of.
//
// Buffers cross as Python buffers of raw bytes; the Python side owns the
// dtypes and shapes. Errors of libofrt are raised as of._C.Error with the
// runtime's message. Compiling and running release the GIL.
//
//===----------------------------------------------------------------------===//

#include "OF/ABI/Sbp.h"
#include "OF/Compiler/Compiler.h"
#include "OF/Runtime/ofrt.h"

#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <functional>
#include <map>
#include <memory>
#include <string>

namespace py = pybind11;

namespace {

struct Error : std::runtime_error {
  using std::runtime_error::runtime_error;
};

/// Raises the error (and frees it) if there is one.
void check(ofrt_error *error) {
  if (!error)
    return;
  std::string message = ofrt_error_message(error);
  ofrt_error_free(error);
  throw Error(message);
}

/// A contiguous view of a Python buffer of exactly `bytes` bytes.
py::buffer_info contiguous(const py::buffer &buffer, bool writable,
                           size_t bytes, const char *what) {
  py::buffer_info info = buffer.request(writable);
  size_t size = static_cast<size_t>(info.size) * info.itemsize;
  ssize_t expected = info.itemsize;
  for (ssize_t d = info.ndim - 1; d >= 0; --d) {
    if (info.shape[d] > 1 && info.strides[d] != expected)
      throw py::value_error(std::string(what) + ": the buffer is not "
                                                "C-contiguous");
    expected *= info.shape[d];
  }
  if (size != bytes)
    throw py::value_error(std::string(what) + ": the buffer has " +
                          std::to_string(size) + " bytes, " +
                          std::to_string(bytes) + " expected");
  return info;
}

class Plan {
public:
  explicit Plan(const py::bytes &data) {
    std::string_view view = data;
    ofrt_plan *p = nullptr;
    check(ofrt_plan_open_memory(view.data(), view.size(), &p));
    plan.reset(p);
  }
  ofrt_plan *get() const { return plan.get(); }
  int worldSize() const { return ofrt_plan_world_size(plan.get()); }
  std::vector<std::string> entries() const {
    std::vector<std::string> names;
    for (size_t i = 0; i < ofrt_plan_num_entries(plan.get()); ++i)
      names.push_back(ofrt_plan_entry_name(plan.get(), i));
    return names;
  }

private:
  struct Close {
    void operator()(ofrt_plan *p) const { ofrt_plan_close(p); }
  };
  std::unique_ptr<ofrt_plan, Close> plan;
};

/// The MPI world, made once per process (MPI cannot be initialised twice).
class Comm {
public:
  static Comm &world() {
    static Comm *comm = new Comm(); // finalised by finalize(), never freed
    return *comm;
  }
  ofrt_comm *get() const { return comm; }
  int rank() const { return ofrt_comm_rank(comm); }
  int size() const { return ofrt_comm_size(comm); }
  void barrier() {
    ofrt_error *e;
    {
      py::gil_scoped_release release;
      e = ofrt_comm_barrier(comm);
    }
    check(e);
  }
  void setTimeout(double seconds) { ofrt_comm_set_timeout(comm, seconds); }
  /// Sessions over this communicator, closed before MPI is finalised.
  std::vector<std::function<void()>> closers;
  std::map<const void *, size_t> closerIndex;
  bool finalized = false;
  void finalize() {
    if (finalized)
      return;
    for (auto &close : closers)
      if (close)
        close();
    closers.clear();
    finalized = true;
    check(ofrt_comm_finalize(comm));
  }
  void abort(int code) { ofrt_comm_abort(comm, code); }

private:
  Comm() { check(ofrt_comm_init_mpi(nullptr, nullptr, &comm)); }
  ofrt_comm *comm = nullptr;
};

py::dict tensorInfo(const ofrt_tensor_info &info, bool hasDist,
                    const ofrt_dist &dist) {
  py::dict d;
  d["name"] = info.name;
  d["dtype"] = ofrt_dtype_name(info.dtype);
  d["shape"] = std::vector<int64_t>(info.dims, info.dims + info.rank);
  d["bytes"] = info.bytes;
  if (hasDist) {
    d["global_shape"] =
        std::vector<int64_t>(dist.global_dims, dist.global_dims + dist.rank);
    d["global_bytes"] = dist.global_bytes;
    d["mesh"] = std::vector<int64_t>(dist.mesh, dist.mesh + dist.mesh_rank);
    d["sbp"] = std::vector<int>(dist.sbp, dist.sbp + dist.mesh_rank);
    d["mesh_ranks"] = std::vector<int>(dist.mesh_ranks,
                                       dist.mesh_ranks + dist.num_mesh_ranks);
  } else {
    d["global_shape"] = d["shape"];
    d["global_bytes"] = info.bytes;
  }
  return d;
}

class Session {
public:
  Session(std::shared_ptr<Plan> plan, const std::string &entry,
          bool distributed, int rank)
      : plan(std::move(plan)) {
    ofrt_session *s = nullptr;
    const char *name = entry.empty() ? nullptr : entry.c_str();
    if (distributed) {
      ofrt_error *e;
      Comm &comm = Comm::world();
      if (comm.finalized)
        throw Error("MPI has been finalised in this process");
      {
        py::gil_scoped_release release;
        e = ofrt_session_create_with_comm(this->plan->get(), name, comm.get(),
                                          &s);
      }
      check(e);
      comm.closerIndex[this] = comm.closers.size();
      comm.closers.push_back([this] { session.reset(); });
      registered = true;
    } else {
      check(ofrt_session_create(this->plan->get(), name, rank, &s));
    }
    session.reset(s);
  }
  ~Session() {
    if (registered) {
      Comm &comm = Comm::world();
      auto it = comm.closerIndex.find(this);
      if (it != comm.closerIndex.end()) {
        comm.closers[it->second] = nullptr;
        comm.closerIndex.erase(it);
      }
    }
  }
  Session(const Session &) = delete;
  Session &operator=(const Session &) = delete;

  py::list inputs() const {
    py::list out;
    for (size_t i = 0; i < ofrt_session_num_inputs(live()); ++i) {
      ofrt_dist dist;
      bool has = ofrt_session_input_dist(live(), i, &dist);
      py::dict d = tensorInfo(ofrt_session_input_info(live(), i), has, dist);
      d["is_set"] = bool(ofrt_session_input_is_set(live(), i));
      out.append(d);
    }
    return out;
  }
  py::list outputs() const {
    py::list out;
    for (size_t i = 0; i < ofrt_session_num_outputs(live()); ++i) {
      ofrt_dist dist;
      bool has = ofrt_session_output_dist(live(), i, &dist);
      py::dict d = tensorInfo(ofrt_session_output_info(live(), i), has, dist);
      d["updates"] = ofrt_session_output_updates(live(), i);
      out.append(d);
    }
    return out;
  }

  void setInput(size_t index, const py::buffer &data, bool global) {
    checkInput(index);
    size_t bytes = inputBytes(index, global);
    py::buffer_info info = contiguous(data, false, bytes, "set_input");
    check(global ? ofrt_session_set_input_global(live(), index, info.ptr, bytes)
                 : ofrt_session_set_input(live(), index, info.ptr, bytes));
  }
  void getInput(size_t index, const py::buffer &out) const {
    checkInput(index);
    size_t bytes = ofrt_session_input_info(live(), index).bytes;
    py::buffer_info info = contiguous(out, true, bytes, "get_input");
    check(ofrt_session_get_input(live(), index, info.ptr, bytes));
  }
  void run() {
    ofrt_error *e;
    {
      py::gil_scoped_release release;
      e = ofrt_session_run(live());
    }
    check(e);
  }
  void getOutput(size_t index, const py::buffer &out) const {
    checkOutput(index);
    size_t bytes = ofrt_session_output_info(live(), index).bytes;
    py::buffer_info info = contiguous(out, true, bytes, "get_output");
    check(ofrt_session_get_output(live(), index, info.ptr, bytes));
  }
  /// Gathers output `index` into `out` on rank 0 (returns True there); on
  /// other ranks `out` may be None.
  bool gatherOutput(size_t index, const py::object &out) const {
    checkOutput(index);
    ofrt_dist dist;
    size_t bytes = ofrt_session_output_dist(live(), index, &dist)
                       ? dist.global_bytes
                       : ofrt_session_output_info(live(), index).bytes;
    void *ptr = nullptr;
    py::buffer_info info;
    if (!out.is_none()) {
      info = contiguous(out.cast<py::buffer>(), true, bytes, "gather_output");
      ptr = info.ptr;
    }
    int isRoot = 0;
    ofrt_error *e;
    {
      py::gil_scoped_release release;
      e = ofrt_session_gather_output(live(), index, ptr, bytes, &isRoot);
    }
    check(e);
    return isRoot;
  }
  void saveState(const std::string &path, int64_t step) const {
    ofrt_error *e;
    {
      py::gil_scoped_release release;
      e = ofrt_session_save_state(live(), path.c_str(), step);
    }
    check(e);
  }
  int64_t loadState(const std::string &path) {
    int64_t step = 0;
    ofrt_error *e;
    {
      py::gil_scoped_release release;
      e = ofrt_session_load_state(live(), path.c_str(), &step);
    }
    check(e);
    return step;
  }
  uint64_t arenaBytes() const { return ofrt_session_arena_bytes(live()); }

private:
  void checkInput(size_t index) const {
    if (index >= ofrt_session_num_inputs(live()))
      throw py::index_error("input index " + std::to_string(index) +
                            " out of range");
  }
  void checkOutput(size_t index) const {
    if (index >= ofrt_session_num_outputs(live()))
      throw py::index_error("output index " + std::to_string(index) +
                            " out of range");
  }
  size_t inputBytes(size_t index, bool global) const {
    ofrt_dist dist;
    if (global && ofrt_session_input_dist(live(), index, &dist))
      return dist.global_bytes;
    return ofrt_session_input_info(live(), index).bytes;
  }
  ofrt_session *live() const {
    if (!session)
      throw Error("the session was closed when MPI was finalised");
    return session.get();
  }
  struct Destroy {
    void operator()(ofrt_session *s) const { ofrt_session_destroy(s); }
  };
  std::shared_ptr<Plan> plan; // outlives the session
  std::unique_ptr<ofrt_session, Destroy> session;
  bool registered = false;
};

py::dict diagnosticToDict(const of::compiler::Diagnostic &d) {
  py::dict out;
  out["severity"] = d.severity;
  out["file"] = d.file;
  out["line"] = d.line;
  out["column"] = d.column;
  out["message"] = d.message;
  py::list notes;
  for (const auto &n : d.notes)
    notes.append(diagnosticToDict(n));
  out["notes"] = notes;
  return out;
}

} // namespace

PYBIND11_MODULE(_C, m) {
  m.doc() = "OF's compiler and runtime (libofrt), for the of package";
  // The codes of a distribution's non-split SBP entries (OF/ABI/Sbp.h);
  // a split is its dimension.
  m.attr("SBP_BROADCAST") = of::sbp::kBroadcast;
  m.attr("SBP_PARTIAL_SUM") = of::sbp::kPartialSum;
  m.attr("SBP_PARTIAL_MAX") = of::sbp::kPartialMax;
  m.def(
      "sbp_text", [](int32_t code) { return of::sbp::text(code); },
      py::arg("code"),
      "S(d), B, P or P(max): an SBP code as #of.sbp writes it");
  py::register_exception<Error>(m, "Error", PyExc_RuntimeError);

  m.def(
      "compile",
      [](const std::string &source, const std::string &sourceName,
         const std::string &pipeline, const std::string &dumpDir) {
        of::compiler::CompileResult result;
        {
          py::gil_scoped_release release;
          result = of::compiler::compile(source, sourceName, pipeline, dumpDir);
        }
        py::dict out;
        out["success"] = result.success;
        out["plan"] = py::bytes(result.plan);
        py::list diags;
        for (const auto &d : result.diagnostics)
          diags.append(diagnosticToDict(d));
        out["diagnostics"] = diags;
        out["passes"] = result.passes;
        return out;
      },
      py::arg("source"), py::arg("source_name"), py::arg("pipeline"),
      py::arg("dump_dir") = "",
      "Compiles an of program (MLIR text) through --of-pipeline=<pipeline> "
      "into .ofp bytes; returns a dict with success, plan, diagnostics and "
      "passes (name, seconds)");

  py::class_<Plan, std::shared_ptr<Plan>>(m, "Plan")
      .def(py::init<const py::bytes &>(), py::arg("data"))
      .def_property_readonly("world_size", &Plan::worldSize)
      .def_property_readonly("entries", &Plan::entries);

  m.def(
      "num_threads", [] { return ofrt_num_threads(); },
      "The threads a CPU step may use");
  m.def(
      "set_num_threads",
      [](int threads) { check(ofrt_set_num_threads(threads)); },
      py::arg("threads"),
      "Sets the threads CPU steps use from now on (at least 1)");
  m.def(
      "cuda_device_count",
      [] {
        int count = 0;
        check(ofrt_cuda_device_count(&count));
        return count;
      },
      "The CUDA devices the driver sees, as libofrt loads it; raises "
      "of._C.Error saying why when there is no usable driver");
  m.def(
      "is_optimizer_state",
      [](const std::string &name) {
        return bool(ofrt_is_optimizer_state(name.c_str()));
      },
      py::arg("name"),
      "Whether a training step's input `name` is optimizer state");
  m.def(
      "cuda_device_capability",
      [](int ordinal) {
        int major = 0, minor = 0;
        check(ofrt_cuda_device_capability(ordinal, &major, &minor));
        return std::make_pair(major, minor);
      },
      py::arg("ordinal"),
      "(major, minor): the compute capability of CUDA device `ordinal`");
  m.def(
      "mpi_launched", [] { return bool(ofrt_comm_launched()); },
      "True when an MPI launcher started this process");
  m.def("comm_rank", [] { return Comm::world().rank(); });
  m.def("comm_size", [] { return Comm::world().size(); });
  m.def("comm_barrier", [] { Comm::world().barrier(); });
  m.def("comm_set_timeout",
        [](double seconds) { Comm::world().setTimeout(seconds); });
  m.def("comm_abort", [](int code) { Comm::world().abort(code); });
  m.def(
      "comm_finalize", [] { Comm::world().finalize(); },
      "Closes every distributed session and finalises MPI (at exit)");

  py::class_<Session>(m, "Session")
      .def(py::init<std::shared_ptr<Plan>, const std::string &, bool, int>(),
           py::arg("plan"), py::arg("entry") = "",
           py::arg("distributed") = false, py::arg("rank") = 0)
      .def("inputs", &Session::inputs)
      .def("outputs", &Session::outputs)
      .def("set_input", &Session::setInput, py::arg("index"), py::arg("data"),
           py::arg("global_value") = false)
      .def("get_input", &Session::getInput, py::arg("index"), py::arg("out"))
      .def("run", &Session::run)
      .def("get_output", &Session::getOutput, py::arg("index"), py::arg("out"))
      .def("gather_output", &Session::gatherOutput, py::arg("index"),
           py::arg("out"))
      .def("save_state", &Session::saveState, py::arg("path"), py::arg("step"))
      .def("load_state", &Session::loadState, py::arg("path"))
      .def_property_readonly("arena_bytes", &Session::arenaBytes);
}
