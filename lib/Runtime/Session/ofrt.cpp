//===- ofrt.cpp - The C API of libofrt over PlanFile and Session ----------===//
//
// Thin wrappers: each handle owns the C++ object, each failing call turns a
// Status into a heap-allocated ofrt_error. NULL handles and out-of-range
// indices are errors or neutral values, never crashes. Only the functions
// declared in ofrt.h are exported from the shared library (the build hides
// everything else).
//
//===----------------------------------------------------------------------===//

#include "CPU/KernelFaults.h"
#include "CPU/Parallel.h"
#include "Checkpoint/Checkpoint.h"
#include "Comm/Communicator.h"
#include "Plan/DynamicLibrary.h"
#include "Plan/PlanFile.h"
#include "Session/Session.h"

#pragma GCC visibility push(default)
#include "OF/ABI/StateNames.h"
#include "OF/Runtime/ofrt.h"
#pragma GCC visibility pop

#include <cstdlib>
#include <cstring>
#include <new>

using namespace of::rt;

struct ofrt_error {
  std::string message;
};

struct ofrt_plan {
  std::shared_ptr<const PlanFile> file;
};

struct ofrt_session {
  std::unique_ptr<Session> session;
};

struct ofrt_comm {
  std::unique_ptr<Communicator> comm;
};

namespace {

ofrt_error *toError(const Status &status) {
  if (status.succeeded())
    return nullptr;
  return new (std::nothrow) ofrt_error{status.message()};
}

ofrt_error *makeError(const char *message) {
  return new (std::nothrow) ofrt_error{message};
}

int toDist(const TensorInfo &info, ofrt_dist *out) {
  if (!out)
    return info.distributed ? 1 : 0;
  *out = ofrt_dist{};
  if (!info.distributed)
    return 0;
  out->rank = info.dist.globalShape.size();
  out->global_dims = info.dist.globalShape.data();
  out->global_bytes = static_cast<size_t>(info.globalBytes);
  out->mesh_rank = info.dist.mesh.size();
  out->mesh = info.dist.mesh.data();
  out->sbp = info.dist.sbp.data();
  out->num_mesh_ranks = info.dist.meshRanks.size();
  out->mesh_ranks = info.dist.meshRanks.data();
  return 1;
}

ofrt_tensor_info toInfo(const TensorInfo &info) {
  ofrt_tensor_info out{};
  out.name = info.name.c_str();
  out.dtype = static_cast<ofrt_dtype>(info.dtype);
  out.rank = info.dims.size();
  out.dims = info.dims.data();
  out.bytes = static_cast<size_t>(info.bytes);
  return out;
}

} // namespace

extern "C" {

size_t ofrt_dtype_size(ofrt_dtype dtype) {
  return dtypeSize(static_cast<of::plan::DType>(dtype));
}

const char *ofrt_dtype_name(ofrt_dtype dtype) {
  return dtypeName(static_cast<of::plan::DType>(dtype));
}

const char *ofrt_error_message(const ofrt_error *error) {
  return error ? error->message.c_str() : "";
}

void ofrt_error_free(ofrt_error *error) { delete error; }

ofrt_error *ofrt_plan_open_file(const char *path, ofrt_plan **out) {
  return ofrt_plan_open_file_trusted(path, nullptr, out);
}

ofrt_error *ofrt_plan_open_file_trusted(const char *path,
                                        const char *trusted_keys,
                                        ofrt_plan **out) {
  if (!out)
    return makeError("ofrt_plan_open_file: the output pointer is NULL");
  *out = nullptr;
  if (!trusted_keys || !*trusted_keys)
    trusted_keys = std::getenv("OF_TRUSTED_KEYS");
  std::shared_ptr<const PlanFile> file;
  if (Status status =
          PlanFile::openFile(path, file, trusted_keys ? trusted_keys : "");
      status.failed())
    return toError(status);
  *out = new (std::nothrow) ofrt_plan{std::move(file)};
  return *out ? nullptr : makeError("out of memory");
}

ofrt_error *ofrt_plan_open_memory(const void *data, size_t size,
                                  ofrt_plan **out) {
  if (!out)
    return makeError("ofrt_plan_open_memory: the output pointer is NULL");
  *out = nullptr;
  std::shared_ptr<const PlanFile> file;
  if (Status status = PlanFile::openMemory(data, size, file); status.failed())
    return toError(status);
  *out = new (std::nothrow) ofrt_plan{std::move(file)};
  return *out ? nullptr : makeError("out of memory");
}

void ofrt_plan_close(ofrt_plan *plan) { delete plan; }

int ofrt_plan_world_size(const ofrt_plan *plan) {
  return plan ? plan->file->plan().world_size() : 0;
}

size_t ofrt_plan_num_entries(const ofrt_plan *plan) {
  return plan ? plan->file->entries().size() : 0;
}

const char *ofrt_plan_entry_name(const ofrt_plan *plan, size_t index) {
  if (!plan || index >= plan->file->entries().size())
    return nullptr;
  return plan->file->entries()[index].c_str();
}

ofrt_error *ofrt_session_create(ofrt_plan *plan, const char *entry, int rank,
                                ofrt_session **out) {
  if (!out)
    return makeError("ofrt_session_create: the output pointer is NULL");
  *out = nullptr;
  if (!plan)
    return makeError("ofrt_session_create: the plan is NULL");
  std::unique_ptr<Session> session;
  if (Status status =
          Session::create(plan->file, entry, rank, nullptr, session);
      status.failed())
    return toError(status);
  *out = new (std::nothrow) ofrt_session{std::move(session)};
  return *out ? nullptr : makeError("out of memory");
}

ofrt_error *ofrt_session_create_description(ofrt_plan *plan, const char *entry,
                                            int rank, ofrt_session **out) {
  if (!out)
    return makeError(
        "ofrt_session_create_description: the output pointer is NULL");
  *out = nullptr;
  if (!plan)
    return makeError("ofrt_session_create_description: the plan is NULL");
  std::unique_ptr<Session> session;
  if (Status status = Session::create(plan->file, entry, rank, nullptr,
                                      session, /*describeOnly=*/true);
      status.failed())
    return toError(status);
  *out = new (std::nothrow) ofrt_session{std::move(session)};
  return *out ? nullptr : makeError("out of memory");
}

ofrt_error *ofrt_session_create_with_comm(ofrt_plan *plan, const char *entry,
                                          ofrt_comm *comm, ofrt_session **out) {
  if (!out)
    return makeError(
        "ofrt_session_create_with_comm: the output pointer is NULL");
  *out = nullptr;
  if (!plan)
    return makeError("ofrt_session_create_with_comm: the plan is NULL");
  if (!comm)
    return makeError("ofrt_session_create_with_comm: the communicator is NULL");
  std::unique_ptr<Session> session;
  if (Status status =
          Session::create(plan->file, entry, comm->comm->worldRank(),
                          comm->comm.get(), session);
      status.failed())
    return toError(status);
  *out = new (std::nothrow) ofrt_session{std::move(session)};
  return *out ? nullptr : makeError("out of memory");
}

void ofrt_session_destroy(ofrt_session *session) { delete session; }

size_t ofrt_session_num_inputs(const ofrt_session *session) {
  return session ? session->session->inputs().size() : 0;
}

size_t ofrt_session_num_outputs(const ofrt_session *session) {
  return session ? session->session->outputs().size() : 0;
}

ofrt_tensor_info ofrt_session_input_info(const ofrt_session *session,
                                         size_t index) {
  if (!session || index >= session->session->inputs().size())
    return ofrt_tensor_info{};
  return toInfo(session->session->inputs()[index]);
}

ofrt_tensor_info ofrt_session_output_info(const ofrt_session *session,
                                          size_t index) {
  if (!session || index >= session->session->outputs().size())
    return ofrt_tensor_info{};
  return toInfo(session->session->outputs()[index]);
}

int ofrt_session_input_dist(const ofrt_session *session, size_t index,
                            ofrt_dist *out) {
  if (!session || index >= session->session->inputs().size()) {
    if (out)
      *out = ofrt_dist{};
    return 0;
  }
  return toDist(session->session->inputs()[index], out);
}

int ofrt_session_output_dist(const ofrt_session *session, size_t index,
                             ofrt_dist *out) {
  if (!session || index >= session->session->outputs().size()) {
    if (out)
      *out = ofrt_dist{};
    return 0;
  }
  return toDist(session->session->outputs()[index], out);
}

int64_t ofrt_session_find_input(const ofrt_session *session, const char *name) {
  if (!session || !name)
    return -1;
  return session->session->findInput(name);
}

int64_t ofrt_session_find_output(const ofrt_session *session,
                                 const char *name) {
  if (!session || !name)
    return -1;
  return session->session->findOutput(name);
}

int64_t ofrt_session_output_updates(const ofrt_session *session, size_t index) {
  if (!session || index >= session->session->outputs().size())
    return -1;
  return session->session->outputs()[index].updates;
}

int ofrt_session_input_is_set(const ofrt_session *session, size_t index) {
  return session && session->session->inputIsSet(index) ? 1 : 0;
}

ofrt_error *ofrt_session_save_state(const ofrt_session *session,
                                    const char *path, int64_t step) {
  if (!session || !path)
    return makeError("ofrt_session_save_state: the session or path is NULL");
  if (step < 0)
    return makeError("ofrt_session_save_state: the step is negative");
  return toError(saveState(*session->session, path, step));
}

ofrt_error *ofrt_session_load_state(ofrt_session *session, const char *path,
                                    int64_t *step) {
  if (!session || !path)
    return makeError("ofrt_session_load_state: the session or path is NULL");
  int64_t loadedStep = 0;
  Status status = loadState(*session->session, path, loadedStep);
  if (status.succeeded() && step)
    *step = loadedStep;
  return toError(status);
}

ofrt_error *ofrt_session_init_state(ofrt_session *session, const char *path) {
  if (!session || !path)
    return makeError("ofrt_session_init_state: the session or path is NULL");
  int64_t step = 0;
  return toError(
      loadState(*session->session, path, step, /*weightsOnly=*/true));
}

int ofrt_is_optimizer_state(const char *name) {
  return name && ::of::state::isOptimizerState(name) ? 1 : 0;
}

ofrt_error *ofrt_session_set_input(ofrt_session *session, size_t index,
                                   const void *data, size_t bytes) {
  if (!session)
    return makeError("ofrt_session_set_input: the session is NULL");
  return toError(session->session->setInput(index, data, bytes));
}

ofrt_error *ofrt_session_set_input_global(ofrt_session *session, size_t index,
                                          const void *data, size_t bytes) {
  if (!session)
    return makeError("ofrt_session_set_input_global: the session is NULL");
  return toError(session->session->setInputGlobal(index, data, bytes));
}

ofrt_error *ofrt_session_get_input(const ofrt_session *session, size_t index,
                                   void *data, size_t bytes) {
  if (!session)
    return makeError("ofrt_session_get_input: the session is NULL");
  return toError(session->session->getInput(index, data, bytes));
}

ofrt_error *ofrt_session_run(ofrt_session *session) {
  if (!session)
    return makeError("ofrt_session_run: the session is NULL");
  return toError(session->session->run());
}

ofrt_error *ofrt_session_get_output(const ofrt_session *session, size_t index,
                                    void *data, size_t bytes) {
  if (!session)
    return makeError("ofrt_session_get_output: the session is NULL");
  return toError(session->session->getOutput(index, data, bytes));
}

ofrt_error *ofrt_session_gather_output(const ofrt_session *session,
                                       size_t index, void *data, size_t bytes,
                                       int *is_root) {
  if (is_root)
    *is_root = 0;
  if (!session)
    return makeError("ofrt_session_gather_output: the session is NULL");
  bool root = false;
  Status status = session->session->gatherOutput(index, data, bytes, root);
  if (is_root)
    *is_root = root ? 1 : 0;
  return toError(status);
}

void ofrt_guard_kernel_faults(void) { of::rt::installKernelFaultHandlers(); }

void ofrt_session_enable_profiling(ofrt_session *session, int enable) {
  if (session)
    session->session->enableProfiling(enable != 0);
}

size_t ofrt_session_num_steps(const ofrt_session *session) {
  return session ? session->session->numSteps() : 0;
}

const char *ofrt_session_step_name(const ofrt_session *session, size_t index) {
  if (!session || index >= session->session->numSteps())
    return nullptr;
  return session->session->stepName(index).c_str();
}

double ofrt_session_step_seconds(const ofrt_session *session, size_t index) {
  if (!session || index >= session->session->numSteps())
    return 0.0;
  return session->session->stepSeconds(index);
}

size_t ofrt_session_profiled_runs(const ofrt_session *session) {
  return session ? session->session->profiledRuns() : 0;
}

uint64_t ofrt_session_arena_bytes(const ofrt_session *session) {
  return session ? session->session->arenaBytes() : 0;
}

namespace {
struct LibraryCheck {
  const char *name;
  Status (*check)(const std::string *&path);
};
constexpr LibraryCheck kLibraries[] = {
    {"openblas", checkOpenBlas}, {"onednn", checkOneDnn},
    {"cuda", checkCudaDriver},   {"cublas", checkCublas},
    {"cublaslt", checkCublasLt}, {"cudnn", checkCudnn},
    {"nccl", checkNccl},         {"mpi", checkMpi}};
constexpr size_t kLibraryCount = sizeof(kLibraries) / sizeof(kLibraries[0]);
} // namespace

size_t ofrt_library_count(void) { return kLibraryCount; }

const char *ofrt_library_name(size_t index) {
  return index < kLibraryCount ? kLibraries[index].name : nullptr;
}

ofrt_error *ofrt_library_check(const char *name, const char **path) {
  for (const LibraryCheck &library : kLibraries) {
    if (!name || std::strcmp(name, library.name) != 0)
      continue;
    const std::string *loaded = nullptr;
    if (Status status = library.check(loaded); status.failed())
      return toError(status);
    if (path)
      *path = loaded->c_str();
    return nullptr;
  }
  std::string known;
  for (const LibraryCheck &library : kLibraries)
    known += std::string(known.empty() ? "" : ", ") + library.name;
  return toError(fail("ofrt_library_check: no library '",
                      name ? name : "(null)", "'; the libraries are ", known));
}

ofrt_error *ofrt_cuda_device_count(int *count) {
  if (!count)
    return makeError("ofrt_cuda_device_count: the output pointer is NULL");
  return toError(cudaDeviceCount(*count));
}

int ofrt_num_threads(void) { return parallelThreads(); }

ofrt_error *ofrt_set_num_threads(int threads) {
  if (threads < 1)
    return toError(fail("ofrt_set_num_threads: the number of threads must be "
                        "at least 1, not ",
                        threads));
  setParallelThreads(threads);
  return nullptr;
}

ofrt_error *ofrt_cuda_device_capability(int ordinal, int *major, int *minor) {
  if (!major || !minor)
    return makeError("ofrt_cuda_device_capability: an output pointer is NULL");
  return toError(cudaDeviceCapability(ordinal, *major, *minor));
}

int ofrt_comm_launched(void) { return launchedByMpi() ? 1 : 0; }

ofrt_error *ofrt_comm_init_mpi(int *argc, char ***argv, ofrt_comm **out) {
  if (!out)
    return makeError("ofrt_comm_init_mpi: the output pointer is NULL");
  *out = nullptr;
  std::unique_ptr<Communicator> comm;
  if (Status status = createMpiCommunicator(argc, argv, comm); status.failed())
    return toError(status);
  *out = new (std::nothrow) ofrt_comm{std::move(comm)};
  return *out ? nullptr : makeError("out of memory");
}

int ofrt_comm_rank(const ofrt_comm *comm) {
  return comm ? comm->comm->rank() : 0;
}

int ofrt_comm_size(const ofrt_comm *comm) {
  return comm ? comm->comm->size() : 1;
}

void ofrt_comm_set_timeout(ofrt_comm *comm, double seconds) {
  if (comm)
    comm->comm->setTimeout(seconds);
}

double ofrt_comm_timeout(const ofrt_comm *comm) {
  return comm ? comm->comm->timeout() : commTimeoutFromEnvironment();
}

ofrt_error *ofrt_comm_barrier(ofrt_comm *comm) {
  if (!comm)
    return makeError("ofrt_comm_barrier: the communicator is NULL");
  return toError(comm->comm->barrier("a barrier"));
}

void ofrt_comm_abort(ofrt_comm *comm, int code) {
  if (comm)
    comm->comm->abort(code);
  std::_Exit(code);
}

ofrt_error *ofrt_comm_finalize(ofrt_comm *comm) {
  if (!comm)
    return nullptr;
  double timeout = comm->comm->timeout();
  delete comm;
  return toError(finalizeMpi(timeout));
}

} // extern "C"
