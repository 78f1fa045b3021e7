#!/usr/bin/env bash
# gdn-parity --recurrence kda under mpirun (parity/run/parity_recur_stream.h):
# the key-head groups dealt over the ranks (group i on rank i mod N), the
# oracle's tallies and the measurements merged on every rank, rank 0
# writing: the one-process whole run's document byte for byte
# (--reproducible), forward with --backend mpi and --grad under plain
# mpirun, 3 key heads on N ranks (so at 2 ranks one rank holds 2 groups).
# Negative control: an error planted in rank 1's kernel outputs (o + 1 in the
# middle of each of its groups, GDN_TEST_MPI_DIE=1:kda-plant), which only
# rank 1 measures, fails the run (exit 1) and changes the document: rank 1's
# measurements reach the merged one.
#   test_mpi_kda.sh GDN_PARITY GDN_MPIRUN NP
G=$(realpath "$1") W=$(realpath "$2") NP=${3:-2}
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
cd "$tmp" || exit 1
fail() { echo "FAIL: $*" >&2; exit 1; }
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMP_WAIT_POLICY=passive
MR=("$W" --oversubscribe)
base=(--recurrence kda --shape 2,64,6,16 --key-heads 3 --dv 8 --h0 --chunk 32 --devices 1,2 --threads 1
      --reproducible --quiet)
for extra in "--backend mpi" "--grad"; do
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
exit 0
