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
# gdn-fixture (sanitized, as the fuzzers) triages fuzz_fixture's crashes.
if ! ninja -C "$build" "${targets[@]/#/fuzz/}" fixtures/gdn-fixture >"$build/fuzz-build.log" 2>&1; then
  echo "scripts/fuzz.sh: building the fuzz targets failed:" >&2
  grep -E "error|FAILED" "$build/fuzz-build.log" | head -30 >&2
  exit 1
fi

export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1:symbolize=1:allocator_may_return_null=1
export UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1
mkdir -p "$build/fuzz-artifacts" "$build/fuzz-logs"

corpus_of() { echo "fuzz/corpus/${1#fuzz_}"; }

# fuzz_fixture loads in-process (no probe child per input: ~100 inputs/s
# instead of ~13), so a crash or hang inside HDF5 1.10.8 -- which the CLIs
# contain in their probe (fixtures/fix_isolate.h) -- would stop a plain run.
# It runs in libFuzzer's fork mode, going on after crashes, with HDF5's own
# leaks on corrupt input suppressed; then every input it kept as a crash or
# leak, and every committed input, goes through the sanitized
# `gdn-fixture verify`, probe and in-process load: it must end with status
# 0, 1 or 2 and no sanitizer report (a crash the probe contains is refused
# with 2; one in our code crashes the CLI).  Hangs are the probe's time
# limit's job (tested in tests/hostile) and are not replayed.
triage_fixture() {
  local f log=$1; shift
  for f in "$@"; do
    [[ -f $f && $f != *hang* ]] || continue # a hang costs the probe's 60 s limit
    local err st
    err=$(timeout 300 "$build/fixtures/gdn-fixture" verify "$f" 2>&1 >/dev/null) && st=0 || st=$?
    if ((st > 2)) || grep -qE "runtime error:|ERROR: (AddressSanitizer|LeakSanitizer)" <<<"$err"; then
      echo "FAIL fuzz_fixture: $f gets past the probe: status $st" | tee -a "$log"; head -c 3000 <<<"$err"
      return 1
    fi
  done
}

run_fixture_forked() {
  local t=fuzz_fixture seeds work log valid
  seeds=$(corpus_of "$t")
  work="$build/fuzz-corpus/$t"
  log="$build/fuzz-logs/$t.log"
  valid="$build/fuzz-seeds/$t"
  mkdir -p "$work" "$valid"
  : >"$log"
  triage_fixture "$log" "$seeds"/* || return 1
  cp "$seeds"/* "$valid"/ && rm -f "$valid"/regress-hdf5-* # HDF5's known crashers: replayed above
  local supp="$build/fuzz-logs/lsan-hdf5.supp"
  echo "leak:libhdf5" >"$supp"
  local art="$build/fuzz-artifacts/$t-forked"
  rm -rf "$art" && mkdir -p "$art"
  LSAN_OPTIONS="suppressions=$PWD/$supp" "$build/fuzz/$t" -fork=1 -ignore_crashes=1 -ignore_timeouts=1 \
    -ignore_ooms=1 -max_total_time="$secs" -timeout=2 -rss_limit_mb=2560 -max_len=65536 \
    -artifact_prefix="$art/" "$work" "$valid" >>"$log" 2>&1 || true
  local n_art
  n_art=$(find "$art" -name 'crash-*' -o -name 'leak-*' | wc -l)
  triage_fixture "$log" "$art"/crash-* "$art"/leak-* || return 1
  local runs
  runs=$(grep -oE "^#[0-9]+" "$log" | tail -1 | tr -d '#')
  # fork mode's own status is not the verdict (it ends non-zero when it kept
  # crashes); that it ran at all is checked here, the crashes above
  if [[ -z $runs || $runs == 0 ]]; then
    echo "FAIL $t: the fuzzer did not run (see $log)"; tail -20 "$log"; return 1
  fi
  echo "ok   $t: ${runs} runs in ${secs}s (in-process, fork mode), $n_art crash/leak inputs contained by the probe, corpus $(ls "$work" | wc -l) inputs"
}

run_one() {
  local t=$1 seeds work log
  [[ $t == fuzz_fixture ]] && { run_fixture_forked; return; }
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

export -f run_one corpus_of run_fixture_forked triage_fixture
export build secs
start=$(date +%s)
status=0
printf '%s\n' "${targets[@]}" | xargs -P "$jobs" -I{} bash -c 'run_one {}' || status=1
echo "scripts/fuzz.sh: ${#targets[@]} targets, ${secs}s each, $(( $(date +%s) - start ))s in all: $([[ $status == 0 ]] && echo clean || echo FAILED)"
exit $status
