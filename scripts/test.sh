#!/usr/bin/env bash
# The README's test command: installs what is missing, builds, runs every
# test through ctest. The last line printed is ctest's summary.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD_DIR=${OF_BUILD_DIR:-$ROOT/build}
"$ROOT/scripts/setup.sh"
"$ROOT/scripts/build.sh"
cd "$BUILD_DIR"
ctest --output-on-failure -j "${JOBS:-2}"
