#!/usr/bin/env bash
# Installs everything OF needs from Debian's packages and PyPI. Idempotent:
# a package that is already installed is not fetched again, so a second run
# takes a second.
set -euo pipefail

DEBIAN_PACKAGES=(
  # compiler
  libmlir-22-dev mlir-22-tools llvm-22-dev llvm-22-tools
  # build
  cmake ninja-build ccache g++ pkg-config
  # plan format, runtime collectives, Python bindings, BLAS, convolutions
  libflatbuffers-dev flatbuffers-compiler
  libopenmpi-dev openmpi-bin
  pybind11-dev python3-dev
  libopenblas-dev libopenblas0-openmp libdnnl-dev
  # the exact SBP search of --of-auto-parallel (CBC's integer programming)
  coinor-libcbc-dev
  # plan signatures (of-sign, of-run --trusted-keys): Ed25519
  libsodium-dev
  # tests: GoogleTest, and clang's libFuzzer/ASan for the plan loader fuzzer
  libgtest-dev clang-14 libclang-rt-14-dev
)
# jax (CPU): the autograd reference of the gradient and training tests;
# safetensors: an independent reader of OF's checkpoints; scikit-learn: its
# bundled digits data set, which the training tests learn.
PYTHON_PACKAGES=(pytest numpy ml_dtypes jax safetensors scikit-learn)
PYTHON_IMPORTS="import pytest, numpy, ml_dtypes, jax, safetensors, sklearn"
# `setup.sh --test` adds PyTorch, the reference of the Python frontend's
# tests (PyPI's wheel, which brings CUDA libraries: a large download once).
if [[ "${1:-}" == "--test" ]]; then
  PYTHON_PACKAGES+=(torch)
  PYTHON_IMPORTS+=", torch"
fi

missing=()
for pkg in "${DEBIAN_PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$pkg")
  fi
done

if ((${#missing[@]})); then
  echo "[setup] installing Debian packages: ${missing[*]}"
  SUDO=""
  if [[ $(id -u) -ne 0 ]]; then SUDO="sudo"; fi
  $SUDO apt-get update -q
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q --no-install-recommends "${missing[@]}"
else
  echo "[setup] Debian packages present"
fi

PYTHON=${PYTHON:-python3}
if ! "$PYTHON" -c "$PYTHON_IMPORTS" >/dev/null 2>&1; then
  echo "[setup] installing Python packages: ${PYTHON_PACKAGES[*]}"
  "$PYTHON" -m pip install -q "${PYTHON_PACKAGES[@]}"
else
  echo "[setup] Python packages present"
fi
