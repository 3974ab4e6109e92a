#!/usr/bin/env bash
# The README's test command: installs what is missing, builds, runs every
# test through ctest. The last line printed is ctest's summary.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD_DIR=${OF_BUILD_DIR:-$ROOT/build}
"$ROOT/scripts/setup.sh" --test
"$ROOT/scripts/build.sh"
cd "$BUILD_DIR"
log=$(mktemp)
trap 'rm -f "$log"' EXIT
status=0
ctest --output-on-failure -j "${JOBS:-2}" 2>&1 | tee "$log" || status=$?
# Close on ctest's own summary line, restated plainly as the last line.
summary=$(grep -E "tests passed, [0-9]+ tests? failed out of [0-9]+" "$log" | tail -n 1)
if [[ -z "$summary" ]]; then
  echo "ctest printed no summary" >&2
  exit 1
fi
total=$(sed -E 's/.* out of ([0-9]+).*/\1/' <<<"$summary")
failed=$(sed -E 's/.*passed, ([0-9]+) tests? failed.*/\1/' <<<"$summary")
# A test that reports itself unsupported (ctest's "Skipped") did not pass.
skipped=$(grep -cE "\*\*\*Skipped" "$log" || true)
echo "$summary"
if ((skipped)); then
  echo "$skipped of them skipped (unsupported here), not counted as passed"
fi
echo "$((total - failed - skipped)) passed, $failed failed"
exit "$status"
