#!/usr/bin/env bash
# gdn-parity --recurrence kda under mpirun (parity/run/parity_recur_stream.h):
# the key-head groups dealt over the ranks (group i on rank i mod N), the
# oracle's tallies and the measurements merged on every rank, rank 0
# writing: the one-process whole run's document byte for byte
# (--reproducible), forward with --backend mpi, --grad, and --grad
# --oracle dd (the dd tiers' tallies merged) under plain mpirun, 3 key
# heads on N ranks (so at 2 ranks one rank holds 2 groups), and the
# mutant gate-other-head, whose groups read the next group's gate.
# Negative control: an error planted in rank 1's kernel outputs (o + 1 in the
# middle of each of its groups, GDN_TEST_MPI_DIE=1:kda-plant), which only
# rank 1 measures, fails the run (exit 1) and changes the document: rank 1's
# measurements reach the merged one.
# A budget's groups larger than the ranks' share are split again to it (3
# ranks: one key head each, where one process runs two groups of 2).
# Then `check` of a KDA fixture (kernel outputs D 1 and 2 with gradients,
# /cotangents, h0; with and without a stored /oracle) under mpirun: its
# key-head groups dealt the same way (parity/run/parity_recur_check_stream.h),
# the document the one-process check's byte for byte, also at --group-heads
# 1.  Negative control: dq at key head 2 and o at value head 5 of an output
# planted wrong (fixture_plant, one token each), a group that rank 0 does not own: FAIL
# on every rank count, the document the one-process FAIL's byte for byte.
#   test_mpi_kda.sh GDN_PARITY GDN_MPIRUN NP GDN_FIXTURE FIXTURE_PLANT
G=$(realpath "$1") W=$(realpath "$2") NP=${3:-2} F=$(realpath "$4") P=$(realpath "$5")
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
cd "$tmp" || exit 1
fail() { echo "FAIL: $*" >&2; exit 1; }
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMP_WAIT_POLICY=passive
MR=("$W" --oversubscribe)
base=(--recurrence kda --shape 2,64,6,16 --key-heads 3 --dv 8 --h0 --chunk 32 --devices 1,2 --threads 1
      --reproducible --quiet)
for extra in "--backend mpi" "--grad" "--grad --oracle dd"; do
  read -r -a x <<<"$extra"
  "$G" "${base[@]}" "${x[@]}" --json one.json >/dev/null || fail "$extra one process: exit $?"
  "${MR[@]}" -np "$NP" "$G" "${base[@]}" "${x[@]}" --json n.json >/dev/null || fail "$extra on $NP ranks: exit $?"
  cmp one.json n.json || fail "$extra on $NP ranks: the results document differs"
  echo "$extra: on $NP ranks byte-identical to the one-process run"
  GDN_TEST_MPI_DIE=1:kda-plant "${MR[@]}" -np "$NP" "$G" "${base[@]}" "${x[@]}" --json bad.json >/dev/null
  rc=$?
  [[ $rc == 1 && -s bad.json ]] || fail "$extra kda-plant: exit $rc, want 1 (FAIL) with a document"
  cmp -s one.json bad.json && fail "$extra: the error planted on rank 1 went unnoticed"
  echo "$extra: an error planted in rank 1's groups: FAIL, the document differs (negative control)"
done

# the mutant gate-other-head (each group's last value head reads the next
# group's gate: run on the extended group): FAIL, the one-process document
"$G" "${base[@]}" --mutant gate-other-head --json one.json >/dev/null
rc=$?
[[ $rc == 1 ]] || fail "gate-other-head one process: exit $rc, want 1"
"${MR[@]}" -np "$NP" "$G" "${base[@]}" --mutant gate-other-head --json n.json >/dev/null
rc=$?
[[ $rc == 1 ]] || fail "gate-other-head on $NP ranks: exit $rc, want 1"
cmp one.json n.json || fail "gate-other-head on $NP ranks: the results document differs"
echo "gate-other-head: on $NP ranks byte-identical to the one-process run (FAIL)"

# a budget's groups larger than the ranks' share split again to it
# (parity_stream_share): 3 key heads whose budget allows groups of 2 run
# one key head a rank on 3 ranks (two groups of 2 on 2 ranks), the
# document the one-process run's
bb=(--recurrence kda --shape 1,16384,6,32 --key-heads 3 --h0 --chunk 32 --devices 1 --threads 1 --reproducible
    --oracle dd --max-bytes 100M --json)
"$G" "${bb[@]}" one.json >one.err 2>&1 || fail "budget one process: exit $?"
grep -q "2 key heads (4 value heads) per group, 2 groups" one.err || fail "budget one process: $(cat one.err)"
"${MR[@]}" -np "$NP" "$G" "${bb[@]}" n.json >n.err 2>&1 || fail "budget on $NP ranks: exit $?"
want="2 key heads (4 value heads) per group, 2 groups"
[[ $NP -ge 3 ]] && want="1 key head (2 value heads) per group, 3 groups"
grep -q "$want" n.err || fail "budget on $NP ranks: want $want: $(cat n.err)"
cmp one.json n.json || fail "budget on $NP ranks: the results document differs"
echo "a budget's groups on $NP ranks: $want, byte-identical to the one-process run"

# check FILE on NP ranks against one process (ARGS...): the same exit status WANT and JSON bytes
same_check() {
  local want=$1 f=$2 rc; shift 2
  "$G" check "$f" --reproducible --quiet --threads 1 --json c1.json "$@" >/dev/null
  rc=$?
  [[ $rc == "$want" ]] || fail "check $f $* one process: exit $rc, want $want"
  "${MR[@]}" -np "$NP" "$G" check "$f" --reproducible --quiet --threads 1 --json cn.json "$@" >/dev/null
  rc=$?
  [[ $rc == "$want" ]] || fail "check $f $* on $NP ranks: exit $rc, want $want"
  cmp c1.json cn.json || fail "check $f $* on $NP ranks: the document differs from one process's"
}
for regen in none mpfr; do
  "$F" synth --recurrence kda --shape 1,64,6,8 --key-heads 3 --h0 --grad --kernel-outputs 1,2 --seed 5 \
    --out k.h5 >/dev/null || fail "synth"
  [[ $regen == none ]] || "$F" regen --oracle mpfr k.h5 >/dev/null || fail "regen"
  same_check 0 k.h5
  same_check 0 k.h5 --group-heads 1
  grep -q '"grad"' cn.json || fail "check on $NP ranks: no gradients judged"
  echo "check (/oracle: $regen): on $NP ranks byte-identical to one process, PASS"
  "$P" k.h5 kernel-scan/grads/dq 2 40 41 1.0 >/dev/null && "$P" k.h5 kernel-scan 5 21 22 1.0 >/dev/null ||
    fail "plant"
  same_check 1 k.h5
  python3 - <<'PY' || fail "check on $NP ranks: the FAIL is not the planted dq (key head 2) and o (head 5)"
import json
d = json.load(open("cn.json"))
g = [c for c in d["grad"]["cases"] if c["subject"] == "output:kernel-scan"][0]
o = [c for c in d["cases"] if c["subject"] == "output:kernel-scan"][0]
assert "dq" in g["failed"] and g["dq"]["worst"]["h"] == 2 and g["dq"]["worst"]["t"] == 40
assert not o["pass"] and o["o"]["worst"]["h"] == 5 and o["o"]["worst"]["t"] == 21
PY
  echo "check (/oracle: $regen): errors planted at key head 2: FAIL on $NP ranks as in one process"
  rm -f k.h5
done
exit 0
