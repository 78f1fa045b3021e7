#!/usr/bin/env bash
# The whole test suite: installs dependencies, builds with -Werror, runs every
# test, then the same suite again under AddressSanitizer + UBSan.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/deps.sh
jobs=$(nproc)

meson setup build-test --wipe -Dwerror=true -Dbuildtype=debugoptimized >/dev/null 2>&1 ||
  meson setup build-test -Dwerror=true -Dbuildtype=debugoptimized
ninja -C build-test -j "$jobs"
meson test -C build-test --print-errorlogs --num-processes "$jobs"

# Sanitizers: the same tests, with leak detection on; UBSan aborts on the first report.
meson setup build-asan --wipe -Dwerror=true -Dbuildtype=debug -Db_sanitize=address,undefined \
  -Db_lundef=false >/dev/null 2>&1 ||
  meson setup build-asan -Dwerror=true -Dbuildtype=debug -Db_sanitize=address,undefined -Db_lundef=false
ninja -C build-asan -j "$jobs"
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
  meson test -C build-asan --print-errorlogs --num-processes "$jobs" --timeout-multiplier 4
echo "scripts/test.sh: all tests passed (plain and ASan/UBSan)"
