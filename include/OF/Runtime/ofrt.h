/*===- ofrt.h - C API of the OF runtime (libofrt) ------------------------===*
 *
 * libofrt loads a binary plan (.ofp) written by `of-translate
 * --of-plan-to-binary`, verifies it once (header, checksum, FlatBuffers
 * verifier, every index, offset and size in bounds), and runs its programs.
 * It links no MLIR or LLVM library.
 *
 * Errors are values: every call that can fail returns an `ofrt_error *`,
 * NULL on success. The message names the problem; free it with
 * ofrt_error_free. No function of the library prints or exits.
 *
 *   ofrt_plan *plan;
 *   if ((err = ofrt_plan_open_file("mlp.ofp", &plan))) ...
 *   ofrt_session *s;
 *   if ((err = ofrt_session_create(plan, "main", 0, &s))) ...
 *   ofrt_session_set_input(s, 0, x, x_bytes);
 *   ofrt_session_run(s);
 *   ofrt_session_get_output(s, 0, y, y_bytes);
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

/* Opens and verifies a plan. The memory variant copies `data`. */
ofrt_error *ofrt_plan_open_file(const char *path, ofrt_plan **out);
ofrt_error *ofrt_plan_open_memory(const void *data, size_t size,
                                  ofrt_plan **out);
void ofrt_plan_close(ofrt_plan *plan);

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

/* A session runs one entry function as one rank. `entry` may be NULL: then
 * "main", or the only entry. Loads the kernels and allocates the arena. */
ofrt_error *ofrt_session_create(ofrt_plan *plan, const char *entry, int rank,
                                ofrt_session **out);
void ofrt_session_destroy(ofrt_session *session);

size_t ofrt_session_num_inputs(const ofrt_session *session);
size_t ofrt_session_num_outputs(const ofrt_session *session);
ofrt_tensor_info ofrt_session_input_info(const ofrt_session *session,
                                         size_t index);
ofrt_tensor_info ofrt_session_output_info(const ofrt_session *session,
                                          size_t index);
/* Index of the input/output named `name`, or -1. */
int64_t ofrt_session_find_input(const ofrt_session *session, const char *name);
int64_t ofrt_session_find_output(const ofrt_session *session,
                                 const char *name);

/* Copies `bytes` bytes (exactly the input's size) into the session. */
ofrt_error *ofrt_session_set_input(ofrt_session *session, size_t index,
                                   const void *data, size_t bytes);
/* Runs every step. Fails if an input was never set. */
ofrt_error *ofrt_session_run(ofrt_session *session);
/* Copies an output of the last run out (`bytes` is exactly its size). */
ofrt_error *ofrt_session_get_output(const ofrt_session *session, size_t index,
                                    void *data, size_t bytes);

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

#ifdef __cplusplus
}
#endif

#endif /* OF_RUNTIME_OFRT_H */
