/*===- test_kernels.c - A kernel shared object for the runtime tests -----===*
 *
 * Compiled at build time into libofrt_test_kernels.so, whose bytes the tests
 * embed in plans as the CPU executable. The kernel uses the packed calling
 * convention of the runtime: args[i] is the data pointer of buffer i.
 *
 *===----------------------------------------------------------------------===*/

/* c[i] = a[i] + b[i] for 16 floats; args = {a, b, c}. */
void add_f32_16(void **args) {
  const float *a = (const float *)args[0];
  const float *b = (const float *)args[1];
  float *c = (float *)args[2];
  for (int i = 0; i < 16; ++i)
    c[i] = a[i] + b[i];
}
