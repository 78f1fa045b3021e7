#!/usr/bin/env bash
# A TPU dump of one layer judged end to end, as a user would run it:
#
#   scripts/layer-dump.sh [--build DIR] [--out DIR] [--shape B,T,H,D] [--key-heads HK]
#                         [--oracle dd|mpfr|both] [--threads N] [--ranks N] [--plant-head H]
#                         [--check-args "ARGS"]
#
#  1. gdn-fixture synth --h0 --grad --kernel-outputs 1,8: the inputs, h0,
#     /cotangents and two outputs as a TPU run writes them (o, ht and their
#     gradients dq dk dv dg dbeta dh0, for D = 1 and D = 8 devices).
#  2. gdn-fixture regen --oracle dd --grads (default; --oracle mpfr the
#     certified MPFR run, --oracle both runs MPFR on a copy too, for its
#     time, without --grads): the /oracle stored with its certificate, and
#     the oracle's gradients for the file's cotangents (/oracle/grads), so
#     that the check computes no VJP.  With --ranks N > 1 (MPI),
#     mpirun -np N gdn-parity regen instead: the key-head groups dealt over
#     the ranks, the same file (scripts/gdn-mpirun).
#  3. gdn-parity check --fixture FILE --grad: PASS expected (exit 0); its
#     progress line with the ETA (on a pseudo-terminal, through script(1));
#     with --ranks N under mpirun too, dealt by head group over the ranks
#     (no progress line there: a rank's stderr is not the terminal).
#  4. The same file with one output planted wrong (fixtures/fixture_plant:
#     kernel-affine-prefix-d8's o at value head --plant-head, default H - 1,
#     the last head group, tokens [T/2, T/2 + 64), x (1 + 2^-10)): check
#     FAILs (exit 1), and its FAIL line must name the output, the head and a
#     token in the range.
# Each step under /usr/bin/time -v: wall time and peak RSS, printed and in
# OUT/layer-dump.json with the ratio of check's time to the oracle's
# (regen's).  Default shape 1,16384,32,128 with 16 key heads (the Qwen 3.5
# layer at 1/16 of its 262,144 tokens).  Exit 0 when step 3 PASSes and step
# 4 FAILs as said; 1 otherwise; 2 on bad usage; 77 (a skip, to meson) when
# /usr/bin/time, script(1) or bc is missing (or mpirun, with --ranks).
set -euo pipefail
cd "$(dirname "$0")/.."
build=build out=out/layer-dump shape=1,16384,32,128 hk=16 oracle=dd threads="" plant_head="" check_args="" ranks=1
while (($#)); do
  case "$1" in
    --build) build=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --shape) shape=$2; shift 2 ;;
    --key-heads) hk=$2; shift 2 ;;
    --oracle) oracle=$2; shift 2 ;;
    --threads) threads=$2; shift 2 ;;
    --ranks) ranks=$2; shift 2 ;;
    --plant-head) plant_head=$2; shift 2 ;;
    --check-args) check_args=$2; shift 2 ;;
    -h|--help) sed -n '2,32p' "$0"; exit 0 ;;
    *) echo "layer-dump.sh: unknown option $1" >&2; exit 2 ;;
  esac
done
case "$oracle" in dd|mpfr|both) ;; *) echo "layer-dump.sh: --oracle dd, mpfr or both" >&2; exit 2 ;; esac
[[ $ranks =~ ^[1-9][0-9]*$ ]] || { echo "layer-dump.sh: --ranks takes a positive integer, not '$ranks'" >&2; exit 2; }
fx=$build/fixtures/gdn-fixture par=$build/parity/gdn-parity plant=$build/fixtures/fixture_plant
for x in "$fx" "$par" "$plant"; do [[ -x $x ]] || { echo "layer-dump.sh: $x not built (ninja -C $build)" >&2; exit 2; }; done
needs=(/usr/bin/time script bc)
((ranks > 1)) && needs+=(mpirun)
for t in "${needs[@]}"; do
  command -v $t >/dev/null || { echo "layer-dump.sh: $t is needed (GNU time, util-linux script, bc); skipped" >&2; exit 77; }
done
IFS=, read -r B T H D <<<"$shape"
plant_head=${plant_head:-$((H - 1))}
t0=$((T / 2)) t1=$((T / 2 + 64 < T ? T / 2 + 64 : T))
thr=()
[[ -n $threads ]] && thr=(--threads "$threads")
# regen and check: in one process, or over --ranks ranks (gdn-mpirun: one
# line and gdn-parity's exit status on failure)
mpi=()
((ranks > 1)) && mpi=(scripts/gdn-mpirun --oversubscribe -np "$ranks")
regen_cmd=("$fx" regen)
((ranks > 1)) && regen_cmd=("${mpi[@]}" "$par" regen)
mkdir -p "$out"
f=$out/layer.h5

# step NAME CMD...: runs CMD under /usr/bin/time -v; sets WALL (s), CPU (user + system s), RSS (KiB), RC.
step() {
  local name=$1; shift
  set +e
  /usr/bin/time -v -o "$out/$name.time" "$@" >"$out/$name.log" 2>&1
  RC=$?
  set -e
  WALL=$(awk -F': ' '/Elapsed \(wall clock\)/ {n = split($2, p, ":"); s = 0; for (i = 1; i <= n; i++) s = s * 60 + p[i]; print s}' "$out/$name.time")
  RSS=$(awk -F': ' '/Maximum resident set size/ {print $2}' "$out/$name.time")
  CPU=$(awk -F': ' '/User time|System time/ {s += $2} END {printf "%.2f", s}' "$out/$name.time")
  printf '%-13s exit %d  wall %8.1f s  cpu %8.1f s  peak RSS %8.1f MiB\n' "$name" "$RC" "$WALL" "$CPU" \
    "$(echo "$RSS / 1024" | bc -l)"
}

# The check under a pseudo-terminal, so that its progress line (with the ETA)
# is drawn; the last one drawn is kept.
check_pty() {
  local name=$1 json=$2
  step "$name" script -qfec "${mpi[*]} $par check --fixture $f --grad ${thr[*]} $check_args --json $json" "$out/$name.tty"
  CHECK_RC=$(grep -o 'COMMAND_EXIT_CODE="[0-9]*"' "$out/$name.tty" | tail -1 | grep -o '[0-9]*' || true)
  CHECK_RC=${CHECK_RC:-$RC}
  # the line drawn halfway through the run (its ETA still ahead), and the count drawn
  tr '\r' '\n' <"$out/$name.tty" | sed 's/\x1b\[[0-9;]*[A-Za-z]//g' | grep -E 'elapsed, ~' >"$out/$name.progress" || true
  # (none under mpirun: a rank's stderr is mpirun's pipe, not the terminal)
  local n
  n=$(wc -l <"$out/$name.progress")
  PROGRESS=""
  ((n == 0)) || PROGRESS=$(sed -n "$(((n + 1) / 2))p" "$out/$name.progress")
}

echo "layer-dump: shape $shape, key heads $hk, oracle $oracle, ranks $ranks, out $out ($(nproc) cores, load $(cut -d' ' -f1 /proc/loadavg))"
rm -f "$f"
step synth "$fx" synth --shape "$shape" --key-heads "$hk" --h0 --grad --kernel-outputs 1,8 --max-bytes 0 --out "$f"
((RC == 0)) || { cat "$out/synth.log"; exit 1; }
SYNTH_WALL=$WALL SYNTH_RSS=$RSS SYNTH_CPU=$CPU
MPFR_WALL=null MPFR_RSS=null MPFR_CPU=null
if [[ $oracle == both ]]; then
  cp "$f" "$out/layer-mpfr.h5"
  step regen-mpfr "${regen_cmd[@]}" "$out/layer-mpfr.h5" --oracle mpfr --quiet --max-bytes 0 "${thr[@]}"
  ((RC == 0)) || { cat "$out/regen-mpfr.log"; exit 1; }
  MPFR_WALL=$WALL MPFR_RSS=$RSS MPFR_CPU=$CPU
  rm -f "$out/layer-mpfr.h5"
fi
tier=$([[ $oracle == mpfr ]] && echo mpfr || echo dd)
step regen "${regen_cmd[@]}" "$f" --oracle "$tier" --grads --max-bytes 0 "${thr[@]}"
((RC == 0)) || { cat "$out/regen.log"; exit 1; }
REGEN_WALL=$WALL REGEN_RSS=$RSS REGEN_CPU=$CPU
grep -h 'oracle written' "$out/regen.log" || true

check_pty check "$out/check.json"
CHECK_WALL=$WALL CHECK_RSS=$RSS CHECK_CPU=$CPU PASS_RC=$CHECK_RC PASS_PROGRESS=$PROGRESS
pass_line=$(grep -E '^(PASS|FAIL)' "$out/check.log" | tail -1 || true)
reference=$(grep -m1 '^reference:' "$out/check.log" || true)
echo "  $reference"
grep -m1 '^gradients:' "$out/check.log" | sed 's/^/  /' || true
echo "  progress: $PASS_PROGRESS"
echo "  verdict: $pass_line (exit $PASS_RC)"

"$plant" "$f" kernel-affine-prefix-d8 "$plant_head" "$t0" "$t1" 0x1p-10 | tee "$out/plant.log"
check_pty check-planted "$out/check-planted.json"
FAIL_WALL=$WALL FAIL_RSS=$RSS FAIL_CPU=$CPU FAIL_RC=$CHECK_RC
# the summary line: "FAIL: ... worst: kernel-affine-prefix-d8 o ... at b=0 t=133 h=3 d=10 ..."
fail_line=$(grep -E '^FAIL:' "$out/check-planted.log" | tail -1 || true)
worst=$(grep -oE 'worst: kernel-affine-prefix-d8 (o|ht|d[a-z0-9]+) .* at b=[0-9]+ t=[0-9]+ h=[0-9]+' <<<"$fail_line" |
  grep -oE 'kernel-affine-prefix-d8 [a-z0-9]+|b=[0-9]+ t=[0-9]+ h=[0-9]+' | paste -sd' ' || true)
echo "  planted: exit $FAIL_RC; $fail_line"
echo "  named: ${worst:-nothing}"
wt=$(sed -E 's/.*t=([0-9]+).*/\1/' <<<"$worst") wh=$(sed -E 's/.*h=([0-9]+).*/\1/' <<<"$worst")
named=0
[[ -n $worst && $wh == "$plant_head" && $wt -ge $t0 && $wt -lt $t1 ]] && named=1

ratio=$(printf '%.3f' "$(echo "$CHECK_WALL / $REGEN_WALL" | bc -l)")
cratio=$(printf '%.3f' "$(echo "$CHECK_CPU / $REGEN_CPU" | bc -l)")
cat >"$out/layer-dump.json" <<EOF
{"shape": "$shape", "key_heads": $hk, "ranks": $ranks, "cores": $(nproc), "load": "$(cut -d' ' -f1-3 /proc/loadavg)",
 "synth": {"wall_s": $SYNTH_WALL, "cpu_s": $SYNTH_CPU, "peak_rss_kib": $SYNTH_RSS},
 "regen": {"tier": "$tier", "wall_s": $REGEN_WALL, "cpu_s": $REGEN_CPU, "peak_rss_kib": $REGEN_RSS},
 "regen_mpfr": {"wall_s": $MPFR_WALL, "cpu_s": $MPFR_CPU, "peak_rss_kib": $MPFR_RSS},
 "check": {"wall_s": $CHECK_WALL, "cpu_s": $CHECK_CPU, "peak_rss_kib": $CHECK_RSS, "exit": $PASS_RC,
           "ratio_to_oracle": $ratio, "cpu_ratio_to_oracle": $cratio,
           "progress": "$(sed 's/"/\\"/g' <<<"$PASS_PROGRESS")"},
 "check_planted": {"wall_s": $FAIL_WALL, "cpu_s": $FAIL_CPU, "peak_rss_kib": $FAIL_RSS, "exit": $FAIL_RC, "head": $plant_head,
                   "tokens": [$t0, $t1], "named": "$worst", "named_right": $named}}
EOF
printf 'check / oracle (regen %s): %.2fx wall, %.2fx CPU; peak RSS of check %.2f GiB\n' "$tier" "$ratio" "$cratio" \
  "$(echo "$CHECK_RSS / 1048576" | bc -l)"
[[ $MPFR_CPU != null ]] && printf 'regen mpfr / regen dd: %.1fx wall, %.1fx CPU\n' "$(echo "$MPFR_WALL / $REGEN_WALL" | bc -l)" \
  "$(echo "$MPFR_CPU / $REGEN_CPU" | bc -l)"
if ((PASS_RC == 0 && FAIL_RC == 1 && named == 1)); then
  echo "layer-dump: OK (PASS, then FAIL naming kernel-affine-prefix-d8, h=$wh, t=$wt)"
  exit 0
fi
echo "layer-dump: NOT OK (check exit $PASS_RC, planted exit $FAIL_RC, named '${worst}')" >&2
exit 1
