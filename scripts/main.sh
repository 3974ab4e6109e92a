#!/usr/bin/env bash
# The README's main command: installs what is missing, builds OF, then
# (scripts/main_demo.py) compiles the Megatron MLP of
# examples/mlp_megatron.mlir for 2 ranks, runs it and checks it against
# NumPy, then trains the small GPT of examples/gpt.py on 2 ranks on a text
# corpus that Debian installs, saves a checkpoint and prints a sample.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD_DIR=${OF_BUILD_DIR:-$ROOT/build}
"$ROOT/scripts/setup.sh"
"$ROOT/scripts/build.sh"
python3 "$ROOT/scripts/main_demo.py" "$BUILD_DIR/bin"
