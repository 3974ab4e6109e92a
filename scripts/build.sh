#!/usr/bin/env bash
# Configures (once) and builds OF into build/ (or $OF_BUILD_DIR) with Ninja
# and ccache. BUILD_TYPE=Debug or OF_SANITIZE=address select other builds.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD_DIR=${OF_BUILD_DIR:-$ROOT/build}
BUILD_TYPE=${BUILD_TYPE:-Release}
JOBS=${JOBS:-2}
LLVM_PREFIX=/usr/lib/llvm-22

extra=()
if [[ -n "${OF_SANITIZE:-}" ]]; then
  extra+=("-DLLVM_USE_SANITIZER=${OF_SANITIZE^}")
fi
launcher=()
if command -v ccache >/dev/null 2>&1; then
  launcher=(-DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
fi

if [[ ! -f "$BUILD_DIR/build.ninja" ]]; then
  echo "[build] configuring $BUILD_DIR ($BUILD_TYPE)"
  cmake -G Ninja -S "$ROOT" -B "$BUILD_DIR" \
    -DCMAKE_BUILD_TYPE="$BUILD_TYPE" \
    -DMLIR_DIR="$LLVM_PREFIX/lib/cmake/mlir" \
    -DLLVM_EXTERNAL_LIT="$LLVM_PREFIX/bin/lit" \
    "${launcher[@]}" "${extra[@]}"
fi
echo "[build] building with $JOBS jobs"
cmake --build "$BUILD_DIR" -j "$JOBS"
