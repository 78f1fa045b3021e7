#!/usr/bin/env bash
# The main job: installs dependencies, builds, and runs the default parity
# sweep (grids/default.json), writing its reports to out/.
# Exit status is gdn-parity's: 0 all cases within tolerance, 1 some out.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/deps.sh
if [[ ! -d build ]]; then meson setup build; fi
ninja -C build
mkdir -p out
exec build/parity/gdn-parity sweep --grid grids/default.json \
  --json out/results.json --report out/report.html --junit out/junit.xml \
  --summary out/summary.md "$@"
