/*===- test_kernels.c - A kernel shared object for the runtime tests -----===*
 *
 * Compiled at build time into libofrt_test_kernels.so, whose bytes the tests
 * embed in plans as the CPU executable. The kernels use the packed calling
 * convention of the runtime: args[i] is the data pointer of buffer i, and
 * [begin, end) the slice of the launch's range to run.
 *
 *===----------------------------------------------------------------------===*/

#include <stdint.h>

/* c[i] = a[i] + b[i] for i in [begin, end) of 16 floats; args = {a, b, c}. */
void add_f32_16(void **args, int64_t begin, int64_t end) {
  const float *a = (const float *)args[0];
  const float *b = (const float *)args[1];
  float *c = (float *)args[2];
  for (int64_t i = begin; i < end; ++i)
    c[i] = a[i] + b[i];
}

/* counts[i] += 1 for i in [begin, end); args = {counts} (i32): after a run,
 * every element of the range was visited exactly once. */
void count_visits(void **args, int64_t begin, int64_t end) {
  int32_t *counts = (int32_t *)args[0];
  for (int64_t i = begin; i < end; ++i)
    counts[i] += 1;
}

/* y[i] = tanh(x[i]) for i in [begin, end); args = {x, y}. It imports a math
 * function, so that the object has what compiled kernels have and the
 * loader checks (a needed library, symbol versions, PLT relocations). */
float tanhf(float);
void tanh_f32(void **args, int64_t begin, int64_t end) {
  const float *x = (const float *)args[0];
  float *y = (float *)args[1];
  for (int64_t i = begin; i < end; ++i)
    y[i] = tanhf(x[i]);
}
