#!/usr/bin/env bash
# The README's main command: installs what is missing, builds OF, then
# compiles the embedded default model (examples/mlp.mlir) through the whole
# CPU path (of-opt --of-pipeline=cpu | of-translate --of-plan-to-binary),
# runs the plan with of-run on random inputs and checks it against NumPy,
# then trains examples/mlp_train.mlir on 2 ranks (scripts/main_demo.py).
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD_DIR=${OF_BUILD_DIR:-$ROOT/build}
"$ROOT/scripts/setup.sh"
"$ROOT/scripts/build.sh"
python3 "$ROOT/scripts/main_demo.py" "$BUILD_DIR/bin"
