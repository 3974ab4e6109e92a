#!/usr/bin/env bash
# Builds the plan loader fuzzer (test/Fuzz/plan_loader_fuzzer.cpp) and the
# checkpoint loader fuzzer (checkpoint_loader_fuzzer.cpp) with clang++-14 and
# libFuzzer + ASan + UBSan, straight from the runtime sources, and runs the
# first for [seconds] (default 60) and the second for half as long. The seed corpus is the sample plans
# of test/Runtime/ofrt-test-plan, plus every .ofp named in $OF_FUZZ_SEEDS
# (files or directories, separated by spaces). Work files go to
# $OF_FUZZ_DIR (default build-fuzz/); a crash leaves its input there as
# crash-* and makes this script exit non-zero.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
SECONDS_TO_RUN=${1:-60}
WORK=${OF_FUZZ_DIR:-$ROOT/build-fuzz}
CXX=${OF_FUZZ_CXX:-clang++-14}
CC=${OF_FUZZ_CC:-clang-14}
mkdir -p "$WORK/include/OF/ABI" "$WORK/corpus"

flatc --cpp --scoped-enums --gen-object-api -o "$WORK/include/OF/ABI" \
  "$ROOT/include/OF/ABI/PlanFormat.fbs"
includes=(-I"$ROOT/include" -I"$WORK/include" -I/usr/include/x86_64-linux-gnu)
# The MPI backend compiles against Open MPI's <mpi.h> (for types only; libmpi
# is loaded with dlopen at run time and never by the fuzzer).
for dir in $(mpicc --showme:incdirs 2>/dev/null ||
             echo /usr/lib/x86_64-linux-gnu/openmpi/include); do
  includes+=(-isystem "$dir")
done

# The seed corpus: the sample plans, with the test kernel object.
"$CC" -O1 -shared -fPIC -o "$WORK/libofrt_test_kernels.so" \
  "$ROOT/test/Runtime/test_kernels.c"
"$CXX" -std=c++17 -O1 "${includes[@]}" -o "$WORK/ofrt-test-plan" \
  "$ROOT/test/Runtime/ofrt-test-plan.cpp"
"$WORK/ofrt-test-plan" --kernels "$WORK/libofrt_test_kernels.so" "$WORK/corpus"
for seed in ${OF_FUZZ_SEEDS:-}; do
  if [[ -d "$seed" ]]; then
    find "$seed" -name '*.ofp' -exec cp {} "$WORK/corpus/" \;
  else
    cp "$seed" "$WORK/corpus/"
  fi
done

# A fuzzer: test/Fuzz/<name>.cpp with the runtime's sources, sanitized.
# The runtime's sources are compiled once for both fuzzers, two at a time
# (through ccache where it is installed), and linked into each.
flags=(-std=c++17 -g -O1 -fno-exceptions -fno-sanitize-recover=undefined
       -DFUZZING_BUILD_MODE_UNSAFE_FOR_PRODUCTION "${includes[@]}" -I"$ROOT/lib/Runtime")
compiler=("$CXX")
if command -v ccache >/dev/null; then compiler=(ccache "$CXX"); fi
mkdir -p "$WORK/obj"
pids=()
for src in "$ROOT"/lib/Runtime/*/*.cpp; do
  "${compiler[@]}" "${flags[@]}" -fsanitize=fuzzer-no-link,address,undefined \
    -c "$src" -o "$WORK/obj/$(basename "$src" .cpp).o" &
  pids+=($!)
  if ((${#pids[@]} >= ${JOBS:-2})); then wait "${pids[0]}"; pids=("${pids[@]:1}"); fi
done
for pid in "${pids[@]}"; do wait "$pid"; done
build_fuzzer() {
  "${compiler[@]}" "${flags[@]}" -fsanitize=fuzzer,address,undefined \
    -o "$WORK/$1" "$ROOT/test/Fuzz/$1.cpp" "$WORK"/obj/*.o -ldl
}
build_fuzzer plan_loader_fuzzer
build_fuzzer checkpoint_loader_fuzzer

# Seed checkpoints for the dtypes plan (one [2, 3] input of every element
# type): a whole one, one with metadata, escapes and padding, and one with
# a tensor it does not take.
mkdir -p "$WORK/checkpoints"
python3 - "$WORK/checkpoints" <<'PY'
import json, struct, sys
sizes = {"F32": 4, "F64": 8, "F16": 2, "BF16": 2, "I64": 8, "I32": 4, "I8": 1, "BOOL": 1}
names = {"F32": "f32", "F64": "f64", "F16": "f16", "BF16": "bf16", "I64": "i64",
         "I32": "i32", "I8": "i8", "BOOL": "i1"}
def write(path, tensors, metadata=None, pad=0):
    header, data = {}, b""
    if metadata is not None:
        header["__metadata__"] = metadata
    for name, dtype in tensors:
        size = 6 * sizes[dtype]
        header[name] = {"dtype": dtype, "shape": [2, 3],
                        "data_offsets": [len(data), len(data) + size]}
        data += bytes((i * 7) % 256 for i in range(size))
    text = json.dumps(header).encode() + b" " * pad
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + data)
all_tensors = [(names[d], d) for d in sizes]
write(f"{sys.argv[1]}/all.safetensors", all_tensors)
write(f"{sys.argv[1]}/meta.safetensors", all_tensors[:3],
      {"of.step": "12", "of.entry": "main\u00e9\n"}, pad=5)
write(f"{sys.argv[1]}/extra.safetensors", all_tensors[:2] + [("other", "F32")])
PY

cd "$WORK"
# libFuzzer exits non-zero on a crash, a leak, or a sanitizer report.
./plan_loader_fuzzer -max_total_time="$SECONDS_TO_RUN" -print_final_stats=1 \
  -rss_limit_mb=2048 -artifact_prefix="$WORK/" "$WORK/corpus"
OF_FUZZ_PLAN="$WORK/corpus/dtypes.ofp" ./checkpoint_loader_fuzzer \
  -max_total_time="$(( (SECONDS_TO_RUN + 1) / 2 ))" -print_final_stats=1 \
  -rss_limit_mb=2048 -artifact_prefix="$WORK/checkpoint-" "$WORK/checkpoints"
