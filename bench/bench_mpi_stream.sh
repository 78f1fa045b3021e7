#!/usr/bin/env bash
# bench_mpi_stream: a run streamed by head group (--group-heads 1) on one
# rank and on NP ranks, in the same run: the time ratio NP/1 and the part of
# the measurement rank 0 did (parity/run/parity_stream_merge.h).
#
#   bench/bench_mpi_stream.sh [--build DIR] [--np N] [--reps R] [-- gdn-parity args]
#
# Default args: --shape 1,4096,8,128 --key-heads 4 --devices 1,8 --threads 1
# (the issue's figure is at --shape 1,16384,8,128; pass it after --).  Each
# repetition runs `mpirun -np 1` then `mpirun -np N` (wall clock, the whole
# mpirun), checks the two results documents are byte-identical
# (--reproducible), and reads rank 0's share of the measuring seconds from
# the NP run's --verbose line ("measurement dealt over N ranks: ...").
# Prints each repetition and then the median ratio; the ratio's target is
# 0.55 at np 2 on an idle machine, which on a shared machine it is not.
# On a shared machine the wall ratio is the load's; the CPU ratio (the
# busiest rank's CPU seconds at np N over the one rank's at np 1, each
# process's getrusage at the end of the run) is what an idle machine's wall
# ratio would approach when the ranks do not wait on each other.  Also
# printed: each rank's measuring seconds and groups, from both runs (np 1:
# the measurement rank 0 did alone before it was dealt).
set -uo pipefail
cd "$(dirname "$0")/.."
build=build np=2 reps=3
while (($#)); do
  case $1 in
  --build) build=$2; shift 2 ;;
  --np) np=$2; shift 2 ;;
  --reps) reps=$2; shift 2 ;;
  --) shift; break ;;
  *) echo "bench_mpi_stream: unknown option $1" >&2; exit 2 ;;
  esac
done
args=("$@")
((${#args[@]})) || args=(--shape 1,4096,8,128 --key-heads 4 --devices 1,8 --threads 1)
G=$(realpath "$build/parity/gdn-parity")
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMP_WAIT_POLICY=passive
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
run() { # run NP JSON LOG: prints the wall seconds
  local t0 t1
  t0=$(date +%s.%N)
  mpirun --oversubscribe -np "$1" "$G" "${args[@]}" --group-heads 1 --reproducible --verbose --json "$2" >"$3" 2>&1 ||
    { echo "bench_mpi_stream: np $1 failed: $(tail -3 "$3")" >&2; exit 1; }
  t1=$(date +%s.%N)
  echo "$t1 - $t0" | bc -l
}
echo "bench_mpi_stream: ${args[*]} --group-heads 1, np 1 against np $np, $reps repetitions; load $(cut -d' ' -f1-3 /proc/loadavg)"
# cpu LOG: the greatest CPU seconds of a rank in the run's --verbose line
cpu() { grep "measurement dealt over" "$1" | grep -o '[0-9.]* CPU s' | awk '$1 > m {m = $1} END {print m}'; }
ratios=() cratios=()
for ((i = 1; i <= reps; i++)); do
  t1=$(run 1 "$tmp/one.json" "$tmp/one.log")
  tn=$(run "$np" "$tmp/n.json" "$tmp/n.log")
  cmp -s "$tmp/one.json" "$tmp/n.json" || { echo "bench_mpi_stream: np $np's document differs from np 1's" >&2; exit 1; }
  line=$(grep "measurement dealt over" "$tmp/n.log")
  share=$(sed -n "s/.*rank 0's share \([0-9.]*\).*/\1/p" <<<"$line")
  r=$(echo "$tn / $t1" | bc -l) c1=$(cpu "$tmp/one.log") cn=$(cpu "$tmp/n.log")
  cr=$(echo "$cn / $c1" | bc -l)
  ratios+=("$r") cratios+=("$cr")
  printf 'rep %d: wall np 1 %.1f s, np %d %.1f s, ratio %.3f; busiest rank CPU %.1f s against %.1f s, ratio %.3f\n' \
    "$i" "$t1" "$np" "$tn" "$r" "$cn" "$c1" "$cr"
  printf '  np 1: %s\n  np %d: %s\n  rank 0 did %s of the np %d run'"'"'s measuring\n' \
    "$(grep "measurement dealt over" "$tmp/one.log" | sed 's/^measurement dealt over 1 rank: //')" "$np" "${line#*: }" "$share" "$np"
done
median() { printf '%s\n' "$@" | sort -g | awk '{a[NR]=$1} END {print a[int((NR + 1) / 2)]}'; }
printf 'np %d / np 1 (median of %d): wall %.3f, busiest rank CPU %.3f (target <= 0.55 at np 2, wall, idle machine); load now %s\n' \
  "$np" "$reps" "$(median "${ratios[@]}")" "$(median "${cratios[@]}")" "$(cut -d' ' -f1-3 /proc/loadavg)"
