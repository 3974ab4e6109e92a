/*===- ofrt.h - C API of the OF runtime (libofrt) ------------------------===*
 *
 * libofrt loads a binary plan (.ofp) written by `of-translate
 * --of-plan-to-binary`, verifies it once (header, checksum, FlatBuffers
 * verifier, every index, offset and size in bounds), and runs its programs.
 * It links no MLIR or LLVM library.
 *
 * Errors are values: every call that can fail returns an `ofrt_error *`,
 * NULL on success. The message names the problem; free it with
 * ofrt_error_free. No function of the library prints or exits, except
 * ofrt_comm_abort (and a blocking MPI call past its deadline, see below).
 *
 *   ofrt_plan *plan;
 *   if ((err = ofrt_plan_open_file("mlp.ofp", &plan))) ...
 *   ofrt_session *s;
 *   if ((err = ofrt_session_create(plan, "main", 0, &s))) ...
 *   ofrt_session_set_input(s, 0, x, x_bytes);
 *   ofrt_session_run(s);
 *   ofrt_session_get_output(s, 0, y, y_bytes);
 *
 *
 * Multi-rank plans (Plan.world_size > 1) run one process per rank, started
 * by an MPI launcher (mpirun, srun; `of-run -n N` starts mpirun itself).
 * Each process makes the world communicator, then a session for its rank:
 *
 *   ofrt_comm *comm;
 *   if ((err = ofrt_comm_init_mpi(&argc, &argv, &comm))) ...
 *   if ((err = ofrt_session_create_with_comm(plan, "main", comm, &s))) ...
 *   ofrt_session_set_input_global(s, 0, x_global, x_global_bytes);
 *   if ((err = ofrt_session_run(s))) { report; ofrt_comm_abort(comm, 1); }
 *   ofrt_session_gather_output(s, 0, y_global, y_global_bytes, &is_root);
 *   ofrt_session_destroy(s);
 *   ofrt_comm_finalize(comm);
 *
 * libofrt does not link MPI: ofrt_comm_init_mpi loads Open MPI's libmpi
 * (libmpi.so.40, or $OF_MPI_LIBRARY) with dlopen, so single-rank plans run
 * where MPI is absent. Every wait for other ranks has a deadline (60 s, or
 * $OF_COMM_TIMEOUT seconds, or ofrt_comm_set_timeout): past it the call
 * fails with a message naming the rank, the step and the ranks waited for.
 * After a failed collective the job cannot continue (other ranks may be
 * blocked in it): report the error and call ofrt_comm_abort, which ends
 * every rank with a non-zero exit code. The few MPI calls that cannot wait
 * non-blockingly (MPI_Init, making sub-group communicators, MPI_Finalize)
 * end the process with a message on stderr when their deadline passes.
 *
 *===----------------------------------------------------------------------===*/

#ifndef OF_RUNTIME_OFRT_H
#define OF_RUNTIME_OFRT_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct ofrt_error ofrt_error;
typedef struct ofrt_plan ofrt_plan;
typedef struct ofrt_session ofrt_session;
typedef struct ofrt_comm ofrt_comm;

/* Element types; the values match of.plan.DType in PlanFormat.fbs. */
typedef enum ofrt_dtype {
  OFRT_F32 = 0,
  OFRT_F64 = 1,
  OFRT_F16 = 2,
  OFRT_BF16 = 3,
  OFRT_I64 = 4,
  OFRT_I32 = 5,
  OFRT_I8 = 6,
  OFRT_I1 = 7,
} ofrt_dtype;

/* Bytes per element of a dtype (I1 is stored as one byte). */
size_t ofrt_dtype_size(ofrt_dtype dtype);
/* "f32", "bf16", ... */
const char *ofrt_dtype_name(ofrt_dtype dtype);

const char *ofrt_error_message(const ofrt_error *error);
void ofrt_error_free(ofrt_error *error);

/* The libraries libofrt loads with dlopen when a plan first needs them:
 * "openblas", "onednn", "cuda" (the driver), "cublas", "cublaslt" (gemms
 * with $OF_GEMM_LIBRARY=cublaslt), "cudnn", "nccl",
 * "mpi" (loaded, not initialised), for index < ofrt_library_count(). */
size_t ofrt_library_count(void);
const char *ofrt_library_name(size_t index);
/* Loads the library `name` as a session would (once per process; the
 * driver is initialised too) and resolves every function libofrt calls in
 * it. On success *path, unless path is NULL, is the file loaded (valid
 * until the process ends); otherwise the error says why it cannot be used. */
ofrt_error *ofrt_library_check(const char *name, const char **path);

/* The number of CUDA devices the driver sees, in *count (0 on error). Fails,
 * saying why, when the driver cannot be loaded or initialised (no NVIDIA
 * driver, a build without the CUDA headers, no device). */
ofrt_error *ofrt_cuda_device_count(int *count);
/* The threads a CPU step may use (at first $OMP_NUM_THREADS, else this
 * process's CPUs divided among the job's ranks on the machine), and setting
 * it (at least 1) for the steps that start after the call: torch's
 * get_num_threads / set_num_threads. */
int ofrt_num_threads(void);
ofrt_error *ofrt_set_num_threads(int threads);
/* The compute capability (major, minor) of CUDA device `ordinal`: 9.0 is
 * an H100/H200, whose kernels --of-pipeline=cuda,chip=sm_90a builds. */
ofrt_error *ofrt_cuda_device_capability(int ordinal, int *major, int *minor);

/* Opens and verifies a plan. The memory variant copies `data`.
 *
 * A plan holds native code (docs/security.md). ofrt_plan_open_file_trusted
 * opens a file only if `path`.sig is a signature of it (of-sign) by a key
 * listed in the file `trusted_keys`; ofrt_plan_open_file is the same with
 * the keys of $OF_TRUSTED_KEYS when that is set, and opens any plan
 * otherwise. A NULL or empty `trusted_keys` means $OF_TRUSTED_KEYS. */
ofrt_error *ofrt_plan_open_file(const char *path, ofrt_plan **out);
ofrt_error *ofrt_plan_open_file_trusted(const char *path,
                                        const char *trusted_keys,
                                        ofrt_plan **out);
ofrt_error *ofrt_plan_open_memory(const void *data, size_t size,
                                  ofrt_plan **out);
void ofrt_plan_close(ofrt_plan *plan);

/* The number of ranks the plan is compiled for (1 for a one-rank plan). */
int ofrt_plan_world_size(const ofrt_plan *plan);

/* The distinct entry function names of the plan. */
size_t ofrt_plan_num_entries(const ofrt_plan *plan);
const char *ofrt_plan_entry_name(const ofrt_plan *plan, size_t index);

/* Describes one input or output of a session. `dims` stays valid as long as
 * the session. */
typedef struct ofrt_tensor_info {
  const char *name;
  ofrt_dtype dtype;
  size_t rank;
  const int64_t *dims;
  size_t bytes;
} ofrt_tensor_info;

/* How a rank's input or output is part of a global tensor: the ranks of a
 * placement (`mesh` its grid, `mesh_ranks` the world rank of each grid
 * position in row-major order) and one SBP entry per grid axis: d >= 0 is
 * S(d) (balanced split: member k of p holds e/p + (k < e%p) of extent e),
 * -1 B, -2 P (sum), -3 P(max). Pointers stay valid as long as the session. */
typedef struct ofrt_dist {
  size_t rank; /* of the global tensor */
  const int64_t *global_dims;
  size_t global_bytes;
  size_t mesh_rank; /* axes of the mesh, and of sbp */
  const int64_t *mesh;
  const int *sbp;
  size_t num_mesh_ranks;
  const int *mesh_ranks;
} ofrt_dist;

/* A session runs one entry function as one rank. `entry` may be NULL: then
 * "main", or the only entry. Loads the kernels and allocates the arena.
 * Without a communicator, a collective over several ranks fails at run. */
ofrt_error *ofrt_session_create(ofrt_plan *plan, const char *entry, int rank,
                                ofrt_session **out);
/* A session for rank ofrt_comm_rank(comm) of a plan compiled for
 * ofrt_comm_size(comm) ranks. Collective: every rank creates its session
 * (it sets up the communicators of the plan's sub-groups). `comm` must
 * outlive the session. */
ofrt_error *ofrt_session_create_with_comm(ofrt_plan *plan, const char *entry,
                                          ofrt_comm *comm, ofrt_session **out);
/* A session that only describes an entry as `rank` sees it (its inputs and
 * outputs, with their distributions): a device program's session is made
 * without the device (no driver needed, no memory taken), and any session
 * made so fails to run. */
ofrt_error *ofrt_session_create_description(ofrt_plan *plan, const char *entry,
                                            int rank, ofrt_session **out);
void ofrt_session_destroy(ofrt_session *session);

size_t ofrt_session_num_inputs(const ofrt_session *session);
size_t ofrt_session_num_outputs(const ofrt_session *session);
ofrt_tensor_info ofrt_session_input_info(const ofrt_session *session,
                                         size_t index);
ofrt_tensor_info ofrt_session_output_info(const ofrt_session *session,
                                          size_t index);
/* When the input/output has a distribution, fills `out` and returns 1;
 * else zeroes `out` and returns 0 (the value is the same on every rank). */
int ofrt_session_input_dist(const ofrt_session *session, size_t index,
                            ofrt_dist *out);
int ofrt_session_output_dist(const ofrt_session *session, size_t index,
                             ofrt_dist *out);
/* The index of the input that output `index` replaces after every run, or
 * -1 (also for an index out of range). */
int64_t ofrt_session_output_updates(const ofrt_session *session,
                                    size_t index);
/* Index of the input/output named `name`, or -1. */
int64_t ofrt_session_find_input(const ofrt_session *session, const char *name);
int64_t ofrt_session_find_output(const ofrt_session *session,
                                 const char *name);

/* Copies `bytes` bytes (exactly the input's size) into the session. */
ofrt_error *ofrt_session_set_input(ofrt_session *session, size_t index,
                                   const void *data, size_t bytes);
/* Sets an input from its global value (`bytes` is the global size): this
 * rank takes its part by the input's distribution (a balanced slice per S
 * axis, the whole along B; along P the value on coordinate 0 and the
 * reduction's identity elsewhere: 0, or the lowest value for P(max)). An
 * input without a distribution is set whole, as by ofrt_session_set_input.
 * Where this rank's part is empty (an uneven split's, or an input of a
 * pipeline stage the rank is not on) `data` may be NULL. */
ofrt_error *ofrt_session_set_input_global(ofrt_session *session, size_t index,
                                          const void *data, size_t bytes);
/* Copies this rank's current value of an input out (`bytes` is exactly its
 * local size): what was set or loaded, or a training step's update after a
 * run. Fails if the input has no value. */
ofrt_error *ofrt_session_get_input(const ofrt_session *session, size_t index,
                                   void *data, size_t bytes);
/* 1 when input `index` has a value (set, loaded or updated by a run). */
int ofrt_session_input_is_set(const ofrt_session *session, size_t index);

/* Checkpoints. A session's state is every input that an output updates (a
 * training step's parameters and optimizer state). It is saved as ONE
 * safetensors file of GLOBAL tensors named like the inputs: rank 0 gathers
 * each tensor from the ranks that hold it and writes it (one tensor in
 * memory at a time), so a checkpoint loads under any rank count or SBP
 * layout, into an entry that takes only some of the tensors (an evaluation
 * entry taking the parameters), and into other tools. Metadata "of.step"
 * holds `step`, "of.entry" the entry's name. The file is written to
 * PATH.tmp.<pid>, flushed to disk and renamed over PATH, so a crash
 * mid-save leaves the previous file whole.
 *
 * save_state is collective (every rank calls it); rank 0 reports a failure
 * to write. load_state is called by every rank (each reads the file and
 * takes its part): it sets every input that the file has a tensor of the
 * same name for (dtype and global shape must match; other tensors are
 * ignored), requires every state input to be in the file, and returns the
 * step in *step (0 without "of.step"; step may be NULL). A file that is not
 * valid safetensors (cut short, bad header, offsets outside the data) is
 * rejected with a message before anything is set. */
ofrt_error *ofrt_session_save_state(const ofrt_session *session,
                                    const char *path, int64_t step);
ofrt_error *ofrt_session_load_state(ofrt_session *session, const char *path,
                                    int64_t *step);
/* Initial values from a safetensors file (a model's weights: of.save's
 * state dict, a PyTorch export): sets every input the file has a tensor of
 * the same name for, as load_state does, except the optimizer state, which
 * it neither requires nor reads (the caller zeroes it: the step starts
 * afresh), and reads no step. Every other state input (the parameters,
 * buffers such as running statistics) must be in the file. */
ofrt_error *ofrt_session_init_state(ofrt_session *session, const char *path);
/* Whether a training step's input `name` is optimizer state, by the names
 * --of-training-step gives it (adam_m_<param>, adam_v_<param>, adam_step,
 * momentum_<param>, loss_scale_log2, loss_scale_good_steps). */
int ofrt_is_optimizer_state(const char *name);

/* Runs every step. Fails if an input was never set. After a run, every
 * output that updates an input (ofrt_session_output_updates: a training
 * step's parameters and optimizer state) has been copied into that input,
 * so the next run continues from it without the caller setting it again. */
ofrt_error *ofrt_session_run(ofrt_session *session);
/* Copies an output of the last run out (`bytes` is exactly its size). */
ofrt_error *ofrt_session_get_output(const ofrt_session *session, size_t index,
                                    void *data, size_t bytes);

/* Assembles an output's global value on rank 0 from every rank's part by
 * its distribution (S parts concatenated, B from coordinate 0, P summed or
 * maxed). Collective: every rank calls it for the same outputs in the same
 * order. On rank 0, `data` receives `bytes` (the global size) and
 * *is_root is set to 1; elsewhere `data` may be NULL and *is_root is 0. An
 * output without a distribution is rank 0's value. `is_root` may be NULL. */
ofrt_error *ofrt_session_gather_output(const ofrt_session *session,
                                       size_t index, void *data, size_t bytes,
                                       int *is_root);

/* Installs handlers of SIGSEGV, SIGBUS, SIGILL, SIGFPE and SIGTRAP: a fault
 * while a plan's CPU kernel runs (a kernel whose code was changed after
 * compiling) ends the process with exit status 70 and a message naming the step
 * and the signal; a fault anywhere else keeps the default action. For tools
 * (of-run installs them); a host process with handlers of its own need not
 * call it. Idempotent. */
void ofrt_guard_kernel_faults(void);

/* Step profiling: when enabled, every run adds each step's wall time. */
void ofrt_session_enable_profiling(ofrt_session *session, int enable);
size_t ofrt_session_num_steps(const ofrt_session *session);
/* A step's description, e.g. "launch k3" or "library blas.gemm". */
const char *ofrt_session_step_name(const ofrt_session *session, size_t index);
/* Total seconds spent in a step over the profiled runs, and their number. */
double ofrt_session_step_seconds(const ofrt_session *session, size_t index);
size_t ofrt_session_profiled_runs(const ofrt_session *session);
/* Bytes of the arena the session allocated. */
uint64_t ofrt_session_arena_bytes(const ofrt_session *session);

/* Communicators (MPI). */

/* 1 when an MPI launcher started this process (OMPI_COMM_WORLD_SIZE,
 * PMI_SIZE or PMIX_RANK is set), else 0. */
int ofrt_comm_launched(void);
/* Loads libmpi, initialises MPI (argc/argv may be NULL) and returns the
 * world communicator. Fails where no Open MPI library can be loaded. */
ofrt_error *ofrt_comm_init_mpi(int *argc, char ***argv, ofrt_comm **out);
int ofrt_comm_rank(const ofrt_comm *comm);
int ofrt_comm_size(const ofrt_comm *comm);
/* The deadline of every wait, in seconds (> 0). */
void ofrt_comm_set_timeout(ofrt_comm *comm, double seconds);
double ofrt_comm_timeout(const ofrt_comm *comm);
/* Waits for every rank (under the deadline). */
ofrt_error *ofrt_comm_barrier(ofrt_comm *comm);
/* Ends the whole job with exit code `code` (MPI_Abort); never returns. */
void ofrt_comm_abort(ofrt_comm *comm, int code);
/* Frees the communicator and finalises MPI; destroy its sessions first. */
ofrt_error *ofrt_comm_finalize(ofrt_comm *comm);

#ifdef __cplusplus
}
#endif

#endif /* OF_RUNTIME_OFRT_H */
