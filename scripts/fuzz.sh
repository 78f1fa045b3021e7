#!/usr/bin/env bash
# Builds the libFuzzer targets (fuzz/) with clang, ASan and UBSan, replays
# each committed corpus (the regression inputs of every bug found so far),
# then fuzzes each target for a bounded time.  Fails on any crash, leak,
# timeout, sanitizer report or broken invariant.
#
#   scripts/fuzz.sh                 60 s per target (FUZZ_SECONDS), in parallel on all cores
#   FUZZ_SECONDS=600 scripts/fuzz.sh fuzz_fixture     one target, longer
#   FUZZ_BUILD=build-fuzz           the build folder (default)
#
# New inputs found while fuzzing go to $FUZZ_BUILD/fuzz-corpus/<target>, not
# into the committed corpus; a crash leaves its input in
# $FUZZ_BUILD/fuzz-artifacts/ -- add it to fuzz/corpus/<target>/ as
# regress-<what>.<ext> once fixed.
set -euo pipefail
cd "$(dirname "$0")/.."
secs=${FUZZ_SECONDS:-60}
build=${FUZZ_BUILD:-build-fuzz}
jobs=${FUZZ_JOBS:-$(nproc)}
all=(fuzz_npy fuzz_npz fuzz_fixture fuzz_fixture_edit fuzz_policy fuzz_grid fuzz_cli)
targets=("$@")
((${#targets[@]})) || targets=("${all[@]}")

command -v clang >/dev/null || { echo "scripts/fuzz.sh: clang is required (scripts/deps.sh installs it)" >&2; exit 2; }
if [[ ! -f "$build/build.ninja" ]]; then
  CC=clang meson setup "$build" -Dfuzz=true -Dtests=false -Dnative=false -Dbuildtype=debugoptimized \
    -Db_sanitize=address,undefined -Db_lundef=false -Dc_args=-fno-sanitize-recover=all >/dev/null
fi
if ! ninja -C "$build" "${targets[@]/#/fuzz/}" >"$build/fuzz-build.log" 2>&1; then
  echo "scripts/fuzz.sh: building the fuzz targets failed:" >&2
  grep -E "error|FAILED" "$build/fuzz-build.log" | head -30 >&2
  exit 1
fi

export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1:symbolize=1:allocator_may_return_null=1
export UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1
mkdir -p "$build/fuzz-artifacts" "$build/fuzz-logs"

corpus_of() { echo "fuzz/corpus/${1#fuzz_}"; }

run_one() {
  local t=$1 seeds work log
  seeds=$(corpus_of "$t")
  work="$build/fuzz-corpus/$t"
  log="$build/fuzz-logs/$t.log"
  mkdir -p "$work"
  # 1. every committed input once (regressions), 2. fuzz for $secs seconds.
  if ! "$build/fuzz/$t" -runs=0 -artifact_prefix="$build/fuzz-artifacts/$t-" "$seeds" >"$log" 2>&1; then
    echo "FAIL $t: a committed corpus input fails (see $log)"; tail -30 "$log"; return 1
  fi
  if ! "$build/fuzz/$t" -max_total_time="$secs" -timeout=20 -rss_limit_mb=2560 -max_len=65536 \
      -print_final_stats=1 -artifact_prefix="$build/fuzz-artifacts/$t-" "$work" "$seeds" >>"$log" 2>&1; then
    echo "FAIL $t: crash, leak, timeout or sanitizer report (see $log)"; tail -40 "$log"; return 1
  fi
  # libFuzzer stops on the first report; a report that did not stop it is a failure too.
  if grep -qE "runtime error:|ERROR: (AddressSanitizer|LeakSanitizer|UndefinedBehaviorSanitizer)|fuzz invariant failed" "$log"; then
    echo "FAIL $t: sanitizer report in $log"; grep -m5 -E "runtime error:|ERROR:|invariant" "$log"; return 1
  fi
  local runs
  runs=$(grep -oE "stat::number_of_executed_units: *[0-9]+" "$log" | grep -oE "[0-9]+$" || echo "?")
  echo "ok   $t: $runs runs in ${secs}s, corpus $(ls "$work" | wc -l) inputs"
}

export -f run_one corpus_of
export build secs
start=$(date +%s)
status=0
printf '%s\n' "${targets[@]}" | xargs -P "$jobs" -I{} bash -c 'run_one {}' || status=1
echo "scripts/fuzz.sh: ${#targets[@]} targets, ${secs}s each, $(( $(date +%s) - start ))s in all: $([[ $status == 0 ]] && echo clean || echo FAILED)"
exit $status
