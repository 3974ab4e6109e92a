#!/usr/bin/env bash
# The README's main command. For now: build OF and run every example program
# under examples/ through the global-program pipeline of-opt has today
# (verification, canonicalization, CSE), printing the result. Later stages
# (SBP propagation, partitioning, CPU code, training on 2 ranks) extend it.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD_DIR=${OF_BUILD_DIR:-$ROOT/build}
"$ROOT/scripts/setup.sh"
"$ROOT/scripts/build.sh"
for example in "$ROOT"/examples/*.mlir; do
  echo "=== $(basename "$example") ==="
  "$BUILD_DIR/bin/of-opt" --canonicalize --cse "$example"
done
