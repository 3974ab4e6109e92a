/*===- untrusted_kernels.c - Kernel objects the runtime must not load -----===*
 *
 * One kernel, add_f32_16 (the sample plan's), in variants that each do one
 * thing a plan's kernel object may not (lib/Runtime/Plan/ElfCheck.h): run a
 * constructor, import a libc function, define an IFUNC, use thread-local
 * storage; or (FAULT) one that passes every check and faults when it runs
 * (kernel-fault.test). kernel-object-trust.test builds each with
 * -D<VARIANT> and links some with options that add an executable stack, a
 * search path or a library. MARKER is a file the constructor creates: it
 * must never appear.
 *
 *===----------------------------------------------------------------------===*/

#include <fcntl.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#ifdef CONSTRUCTOR
__attribute__((constructor)) static void constructor(void) {
  open(MARKER, O_CREAT | O_WRONLY, 0600);
}
#endif

#ifdef IFUNC
static void add(void **args, int64_t begin, int64_t end) {}
static void *resolve(void) { return (void *)add; }
void add_f32_16(void **args, int64_t begin, int64_t end)
    __attribute__((ifunc("resolve")));
#else

#ifdef TLS
__thread int calls;
#endif

void add_f32_16(void **args, int64_t begin, int64_t end) {
  const float *a = (const float *)args[0];
  const float *b = (const float *)args[1];
  float *c = (float *)args[2];
  for (int64_t i = begin; i < end; ++i)
    c[i] = tanhf(a[i]) * 0.0f + a[i] + b[i];
#ifdef SYSTEM
  system("touch " MARKER);
#endif
#ifdef TLS
  ++calls;
#endif
#ifdef FAULT
  /* Code as a tampered object may have it: it passes every check, and
     writes where nothing is mapped when it runs. */
  *(volatile float *)(uintptr_t)(16 + begin) = c[begin];
#endif
}
#endif
