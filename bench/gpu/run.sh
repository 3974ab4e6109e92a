#!/usr/bin/env bash
# Runs OF's GPU tests and benchmarks on a CUDA machine from a bundle that
# bench/gpu/prepare.py built elsewhere (the GPU machine needs no MLIR, MPI
# or OpenBLAS installed):
#
#   bash bench/gpu/run.sh [BUNDLE] [run.py options]   (default build/gpu-bundle)
#
# Prints one table of every case and benchmark; exits non-zero when any
# case fails.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
BUNDLE=${1:-$ROOT/build/gpu-bundle}
shift || true
if [[ ! -f $BUNDLE/manifest.json ]]; then
  echo "run.sh: no bundle at $BUNDLE (run bench/gpu/prepare.py first)" >&2
  exit 2
fi
# The bundle's libraries, unpacked beside libofrt.
LIBS=$(mktemp -d)
cp "$BUNDLE"/lib/*.so* "$LIBS"/
for f in "$LIBS"/*.gz; do
  [[ -e $f ]] && gunzip "$f"
done
export LD_LIBRARY_PATH=$LIBS${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
# cuDNN, NCCL (and cuBLAS) may be Python wheels beside PyTorch
# (nvidia-cudnn-cu13, nvidia-nccl-cu13) rather than in the toolkit's
# folder: their lib folders join the loader's path, after the others.
PURELIB=$(python3 -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])' 2>/dev/null || true)
if [[ -n $PURELIB ]]; then
  for dir in "$PURELIB"/nvidia/*/lib; do
    [[ -d $dir ]] && LD_LIBRARY_PATH=$LD_LIBRARY_PATH:$dir
  done
fi
export PYTHONUNBUFFERED=1
# Which libraries the runtime finds (OpenBLAS, oneDNN and MPI are the CPU's
# and need not be there). Without the driver or cuBLAS nothing can run; a
# missing cuDNN or NCCL fails only the cases that need it, with the same
# message.
"$BUNDLE/bin/of-run" --check-libraries || true
if ! "$BUNDLE/bin/of-run" --check-libraries=cuda,cublas >/dev/null; then
  echo "run.sh: the CUDA driver or cuBLAS cannot be loaded (above); nothing to run" >&2
  exit 3
fi
python3 "$ROOT/bench/gpu/run.py" "$BUNDLE" "$@"
