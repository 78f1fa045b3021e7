#!/usr/bin/env bash
# gdn-parity under mpirun (parity/run/parity_dist.h, scripts/gdn-mpirun).
#   test_mpi_cli.sh GDN_PARITY GDN_MPIRUN GRID PART
# PART:
#   backend NP  --backend mpi on NP ranks (and a smoke run under plain
#               mpirun: exit 0): in every case the subject
#               affine-prefix-mpi has exactly the metrics of the simulated
#               affine-prefix (same values => same metrics, to the last bit
#               of every real, and the same worst positions), over the three
#               schedules and both shard modes, long-memory gates.  Negative
#               control: affine-prefix's metrics differ from the scan's in some
#               case, so equal metrics are not what any two subjects get.
#   sweep       a grid over 2 and 3 ranks gives the one-process results
#               document byte for byte (--reproducible).  Negative control: the
#               document of rank 0's entries alone differs (rank 1's parts are
#               in the merged one).
#   oracle NP   the oracle dealt over NP ranks (head b Hv + j on rank
#               (b Hv + j) mod NP), in cases of one key head (with as many
#               key heads as ranks a case is dealt by head group instead:
#               stream): a single case on NP ranks gives the
#               one-process results document byte for byte (--reproducible),
#               with --oracle mpfr and dd, 6 heads (so at 4 ranks some get 1,
#               some 2) and 1 head (one rank computes it, the rest none);
#               with --backend mpi, the oracle, inputs and every other
#               subject equal the one-process run with --devices NP.
#               --grad, both tiers (the VJP dealt by items (b, key head)):
#               the same.
#               `check` of a fixture without a stored oracle (packed
#               documents: both semantics' references dealt): the same.
#               Negative control: rank 1 computing rank 0's heads instead of
#               its own (GDN_TEST_MPI_DIE=1:oracle-deal) is caught by the
#               same comparison.
#   stream NP   a run streamed by head group (--group-heads 1: 3 and 4
#               groups) on NP ranks, each computing and measuring its groups:
#               the one-process whole run's document byte for byte.
#               Negative controls: a rank computing the next group's oracle
#               or kernels (stream-oracle, stream-deal) differs; an error
#               planted in rank 1's groups (stream-plant) fails the run with
#               the worst element named in a group rank 1 holds.  Without
#               --group-heads, a run and a check of NP key heads are dealt
#               by head group all the same (the note says so; the same
#               document); so is --backend mpi, its row run by every rank
#               together a group at a time (against the whole run, which
#               a scratch folder the ranks cannot use falls back to).  The
#               mutant gqa-tile planted, reading key heads across groups
#               (each group's tile view): FAIL, the whole run's document.
#               `check --fixture` of /outputs (with gradients; packed
#               documents) and a stored /oracle streamed on NP ranks (each
#               group's owner keeps and measures them): the one-process
#               whole check's document byte for byte; a stored /oracle wrong
#               at one head is not used, as in one process; an output wrong
#               in rank 1's group FAILs at that head and token; an output of
#               per-document final states (each group's rows' oracle and
#               model by its owner, the certificate's tallies merged): the
#               same document.
#   regen NP    gdn-parity regen of a fixture (MPFR and dd; --group-heads 1
#               and 2; the default groups) on NP ranks: gdn-fixture regen's
#               file with the same groups, byte for byte, and verify and
#               check accept it.  Negative control: rank 1 computing the
#               next group's heads (regen-deal) writes another file.  With
#               --grads (the oracle's gradients dealt with it) the same,
#               and a check of that file on NP ranks takes them: the
#               one-process document.
#               Failures: an existing /oracle refused on every rank (exit 2,
#               one line, the file untouched); a group failing on rank 1 or
#               0 (regen-fail, its last group: exit 3, one line naming its
#               heads, also under plain mpirun, the file untouched, no
#               temporary left); a rank unable to open the file
#               (regen-open: exit 2, one line naming the rank, no rank left
#               waiting); rank 1 killed while rank 0
#               writes (regen-die: exit 3, one line naming rank 1, the same).
#               A KDA fixture dealt the same way (MPFR and dd, groups of 1
#               and the default): gdn-fixture regen's file, byte for byte,
#               its check passing; regen-deal caught; an existing /oracle,
#               regen-fail and regen-open refused in one line, untouched.
#   faults      rank 1 killed (SIGKILL) before its exchange, rank 3 after it,
#               and rank 2's message made invalid: exit 3, one stderr line
#               naming that rank, no results file and no temporary left, an
#               existing results file untouched; in a sweep on 2 ranks,
#               rank 1 killed or its entry failing: the same.  A sweep whose
#               cases fail exits 1 (rank 0's verdict, through the wrapper's
#               status file).  Control: the same run
#               without a fault exits 0 and writes it.  Misuse: --backend mpi
#               outside mpirun, with a sweep, or with D != ranks: exit 2.
set -uo pipefail
G=$(realpath "$1") W=$(realpath "$2") GRID=$(realpath "$3") PART=$4 NP=${5:-2}
PY=/usr/bin/python3
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMP_WAIT_POLICY=passive
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
cd "$tmp" || exit 1
fail() { echo "FAIL: $*" >&2; exit 1; }
MR=("$W" --oversubscribe)
# `gdn-parity ARGS` on NP ranks writes the one-process document byte for
# byte; rank 1 computing rank 0's share of the oracle (oracle-deal) does
# not.  dealt_same WHAT SHARE ARGS...: WHAT names the run in a failure,
# SHARE what a rank is dealt (heads, items).
dealt_same() {
  local what=$1 share=$2
  shift 2
  "$G" "$@" --json one.json || fail "$what one process: exit $?"
  "${MR[@]}" -np "$NP" "$G" "$@" --json n.json || fail "$what on $NP ranks: exit $?"
  cmp one.json n.json || fail "$what on $NP ranks: the results document differs"
  GDN_TEST_MPI_DIE=1:oracle-deal "${MR[@]}" -np "$NP" "$G" "$@" --json bad.json >/dev/null
  cmp -s one.json bad.json && fail "$what: a rank computing the wrong $share went unnoticed"
}

case $PART in
backend)
  for shard in tokens chunks; do
    "${MR[@]}" -np "$NP" "$G" --shape 1,$((48 * NP)),2,16 --chunk 16 --gates slow --h0 --shard $shard \
      --prefix sequential,associative-scan,hillis-steele --backend mpi --threads 1 --oracle dd \
      --json b.json --reproducible --quiet || fail "backend $shard: exit $?"
    $PY - b.json "$shard" <<'PYEOF' || fail "backend $shard: metrics"
import json, sys
d = json.load(open(sys.argv[1]))
assert len(d["cases"]) == 3, len(d["cases"])
differs = 0
for c in d["cases"]:
    im = c["impls"]
    # a judged subject also records its own verdict ("pass"); the candidate's is the case's
    mpi = dict(im["affine-prefix-mpi"])
    assert mpi.pop("pass") is True, c["id"]
    assert mpi == im["affine-prefix"], c["id"]
    differs += im["affine-prefix"] != im["scan"]
# negative control: the metrics can tell subjects apart
assert differs >= 1, "affine-prefix == scan in every case: the comparison proves nothing"
print(sys.argv[2], "ok:", len(d["cases"]), "cases equal,", differs, "differ from the scan")
PYEOF
  done
  # smoke (no negative control: the other ranks' verdicts pass here too):
  # plain mpirun, no wrapper, exits with rank 0's status, 0
  mpirun --oversubscribe -np "$NP" "$G" --shape 1,$((48 * NP)),2,16 --chunk 16 --backend mpi --threads 1 \
    --oracle dd --quiet >/dev/null 2>err.txt || fail "plain mpirun --backend mpi: exit $?: $(head -3 err.txt)"
  ;;
sweep)
  "$G" sweep --grid "$GRID" --oracle dd --reproducible --json one.json --quiet || fail "one process: exit $?"
  for np in 2 3; do
    "${MR[@]}" -np $np "$G" sweep --grid "$GRID" --oracle dd --reproducible --json n$np.json --quiet ||
      fail "sweep on $np ranks: exit $?"
    cmp one.json n$np.json || fail "sweep on $np ranks: results document differs"
  done
  # negative control: rank 0's entries (0, 2, 4) alone
  $PY -c "import json,sys; g=json.load(open(sys.argv[1])); g['entries']=g['entries'][0::2]; json.dump(g,open('half.json','w'))" "$GRID"
  "$G" sweep --grid half.json --oracle dd --reproducible --json half-out.json --quiet || fail "half: exit $?"
  cmp -s one.json half-out.json && fail "rank 0's entries alone give the whole document"
  echo "sweep ok: 2 and 3 ranks byte-identical to one process ($(wc -c <one.json) bytes)"
  ;;
oracle)
  # one key head (fewer than the ranks): the case runs whole on every rank,
  # its oracle dealt by value head (a run of Hk >= NP key heads is dealt by
  # head group instead: part stream)
  for tier in mpfr dd; do
    for shape in 2,48,3,16 1,40,1,16; do
      a=(--shape $shape --key-heads 1 --chunk 16 --h0 --oracle $tier --threads 1 --reproducible --quiet)
      "$G" "${a[@]}" --json one.json || fail "$tier $shape one process: exit $?"
      "${MR[@]}" -np "$NP" "$G" "${a[@]}" --json n.json || fail "$tier $shape on $NP ranks: exit $?"
      cmp one.json n.json || fail "$tier $shape on $NP ranks: the results document differs"
      echo "$tier $shape: $NP ranks byte-identical to one process ($(wc -c <one.json) bytes)"
    done
    # negative control: rank 1 computes rank 0's heads (rank 1's are never computed)
    a=(--shape 2,48,3,16 --key-heads 1 --chunk 16 --h0 --oracle $tier --threads 1 --reproducible --quiet)
    "$G" "${a[@]}" --json one.json
    GDN_TEST_MPI_DIE=1:oracle-deal "${MR[@]}" -np "$NP" "$G" "${a[@]}" --json bad.json >/dev/null
    [[ -s bad.json ]] || fail "$tier oracle-deal: no document"
    cmp -s one.json bad.json && fail "$tier: a rank computing the wrong heads went unnoticed"
    # --backend mpi: the same oracle, and every subject but affine-prefix-mpi as with --devices NP
    b=(--shape 2,$((32 * NP)),3,16 --key-heads 1 --chunk 16 --oracle $tier --threads 1 --reproducible --quiet)
    "$G" "${b[@]}" --devices "$NP" --json one.json || fail "$tier --devices $NP: exit $?"
    "${MR[@]}" -np "$NP" "$G" "${b[@]}" --backend mpi --json n.json || fail "$tier --backend mpi: exit $?"
    $PY - one.json n.json <<'PYEOF' || fail "$tier --backend mpi: the dealt oracle differs"
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:3])
assert a["oracle"] == b["oracle"] and a["inputs"] == b["inputs"]
assert len(a["cases"]) == len(b["cases"])
for x, y in zip(a["cases"], b["cases"]):
    mpi = y["impls"].pop("affine-prefix-mpi")
    assert x["impls"] == y["impls"], x["id"]
    assert mpi["o"] == x["impls"]["affine-prefix"]["o"], x["id"]
print("backend ok:", a["oracle"]["tier"], a["oracle"]["certified_bits"], "bits,", len(a["cases"]), "cases")
PYEOF
  done
  # --grad: the VJP dealt by items (b, key head), 2 x 1 items, both tiers
  for tier in mpfr dd; do
    a=(--shape 2,40,4,16 --key-heads 1 --chunk 16 --oracle $tier --grad --threads 1 --reproducible --quiet)
    dealt_same "--grad $tier" items "${a[@]}"
    echo "--grad ($tier VJP): $NP ranks byte-identical to one process"
  done
  # check: a fixture without a stored /oracle (packed documents, reset: the
  # other semantics' reference is computed too, also dealt), 6 heads over Hk = 1
  FX=$(dirname "$G")/../fixtures/gdn-fixture
  "$FX" synth --shape 2,40,3,16 --key-heads 1 --documents 2 --packing reset --h0 --out p.h5 >/dev/null ||
    fail "gdn-fixture synth: exit $?"
  c=(check --fixture p.h5 --oracle mpfr --threads 1 --reproducible --quiet)
  dealt_same check heads "${c[@]}"
  echo "check (fixture, packed): $NP ranks byte-identical to one process"
  echo "oracle ok"
  ;;
stream)
  # a run streamed by head group under mpirun: group g's oracle, kernels and
  # measurement on rank g mod N, the measurements merged: the one-process
  # whole run's document, byte for byte
  for a in "--shape 2,192,6,8 --key-heads 3 --h0 --grad --chunk 32 --devices 1,4" \
           "--shape 1,256,4,16 --h0 --oracle dd --devices 1,2,4,8"; do
    read -r -a args <<<"$a --threads 1 --reproducible --quiet"
    "$G" "${args[@]}" --json one.json || fail "$a one process: exit $?"
    "${MR[@]}" -np "$NP" "$G" "${args[@]}" --group-heads 1 --json n.json || fail "$a streamed on $NP ranks: exit $?"
    cmp one.json n.json || fail "$a streamed on $NP ranks: the results document differs"
    echo "$a: streamed on $NP ranks byte-identical to the one-process whole run"
    # negative controls: a rank computing the next group's oracle, a rank
    # producing the next group's kernel outputs
    for fault in stream-oracle stream-deal; do
      GDN_TEST_MPI_DIE=1:$fault "${MR[@]}" -np "$NP" "$G" "${args[@]}" --group-heads 1 --json bad.json >/dev/null
      [[ -s bad.json ]] || fail "$fault: no document"
      cmp -s one.json bad.json && fail "$a: $fault went unnoticed"
    done
    # each rank measures the groups it computed (nothing of theirs reaches
    # rank 0): an error planted in rank 1's groups (o + 1 at token T/2 of
    # the first case's candidate) fails the run, and the worst element
    # named is in a head group rank 1 holds
    GDN_TEST_MPI_DIE=1:stream-plant "${MR[@]}" -np "$NP" "$G" "${args[@]}" --group-heads 1 --json bad.json \
      >out.txt 2>&1
    rc=$?
    [[ $rc == 1 && -s bad.json ]] || fail "$a: a planted error on rank 1: exit $rc, want 1: $(tail -3 out.txt)"
    $PY - bad.json "$NP" <<'PYEOF' || fail "$a: the planted error is not named in rank 1's groups"
import json, sys
d = json.load(open(sys.argv[1])); np = int(sys.argv[2])
s = d["inputs"][0]["shape"]
r = s["Hv"] // s["Hk"]  # --group-heads 1: group k holds value heads [k r, (k + 1) r), on rank k mod np
c = d["cases"][0]
assert c["pass"] is False, "the planted case passed"
w = c["impls"]["affine-prefix"]["o"]["worst"]
assert w["t"] == s["T"] // 2 and (w["h"] // r) % np == 1, w
print("planted error found at", w, "(rank 1's group", w["h"] // r, ")")
PYEOF
  done
  # gqa-tile planted (value head hv reads key head hv mod Hk, across the
  # groups): each rank produces it on its groups' tile views, FAIL, the
  # one-process whole run's document byte for byte
  read -r -a args <<<"--shape 1,128,6,16 --key-heads 3 --h0 --mutant gqa-tile --threads 1 --reproducible --quiet"
  "$G" "${args[@]}" --json one.json >/dev/null
  rc=$?
  [[ $rc == 1 ]] || fail "gqa-tile one process: exit $rc, want 1"
  "${MR[@]}" -np "$NP" "$G" "${args[@]}" --group-heads 1 --json n.json >/dev/null
  rc=$?
  [[ $rc == 1 ]] || fail "gqa-tile streamed on $NP ranks: exit $rc, want 1"
  cmp one.json n.json || fail "gqa-tile streamed on $NP ranks: the results document differs"
  echo "gqa-tile: streamed on $NP ranks byte-identical to the one-process whole run (FAIL)"
  # no --group-heads, Hk >= NP key heads: a run and a check under mpirun
  # are dealt by head group all the same (groups of ceil(Hk / NP)), the
  # note says so, and the document is the one-process whole run's
  read -r -a args <<<"--shape 1,128,$((2 * NP)),16 --key-heads $NP --h0 --grad --chunk 32 --devices 1,2 --threads 1 --reproducible"
  "$G" "${args[@]}" --quiet --json one.json >/dev/null || fail "default dealing: one process: exit $?"
  "${MR[@]}" -np "$NP" "$G" "${args[@]}" --json n.json >out.txt 2>&1 || fail "default dealing on $NP ranks: exit $?"
  grep -q "streamed by head group" out.txt || fail "default dealing on $NP ranks: no note of the head groups: $(head -5 out.txt)"
  cmp one.json n.json || fail "default dealing on $NP ranks: the results document differs"
  echo "a run of $NP key heads on $NP ranks: dealt by head group by default, byte-identical to one process"
  # --backend mpi streamed: its row runs on every rank at once, group after
  # group, rank 0 sending each group's gathered o to the group's owner; the
  # whole run (a scratch folder the ranks cannot use: dealt only for the
  # ranks, so it falls back to whole) and the streamed one (by default and
  # with --group-heads 1) write the same document
  read -r -a args <<<"--shape 1,$((48 * NP)),$((2 * NP)),16 --key-heads $NP --chunk 16 --h0 --backend mpi --threads 1 --oracle dd --reproducible"
  "${MR[@]}" -np "$NP" -x TMPDIR=/nonexistent/gdn-mpi-scratch "$G" "${args[@]}" --json one.json >out.txt 2>&1 ||
    fail "--backend mpi whole on $NP ranks: exit $?: $(tail -3 out.txt)"
  grep -q "streamed by head group" out.txt && fail "--backend mpi without scratch room: streamed, not whole"
  for gh in "" "--group-heads 1"; do
    read -r -a x <<<"$gh"
    "${MR[@]}" -np "$NP" "$G" "${args[@]}" "${x[@]}" --json n.json >out.txt 2>&1 ||
      fail "--backend mpi streamed ($gh) on $NP ranks: exit $?: $(tail -3 out.txt)"
    grep -q "streamed by head group" out.txt || fail "--backend mpi ($gh) on $NP ranks: not streamed"
    cmp one.json n.json || fail "--backend mpi streamed ($gh) on $NP ranks: the document differs from the whole run's"
  done
  echo "--backend mpi: streamed on $NP ranks byte-identical to the whole run"
  # check of a fixture's /outputs streamed on NP ranks: each group's outputs
  # and stored /oracle kept and measured by its owner (the stored /oracle's
  # checks, the packing maxima and every pair merged): the one-process whole
  # check's document byte for byte, with gradients, packed documents, and a
  # stored /oracle the groups show untrusted (recomputed)
  FX=$(dirname "$G")/../fixtures/gdn-fixture PL=$(dirname "$G")/../fixtures/fixture_plant
  one_vs_np() { # one_vs_np WANT FILE ARGS...: the same exit WANT and document, one process whole and NP streamed
    local want=$1 f=$2 rc; shift 2
    "$G" check --fixture "$f" --threads 1 --reproducible --quiet --json one.json "$@" >/dev/null
    rc=$?
    [[ $rc == "$want" ]] || fail "check $f $*: one process: exit $rc, want $want"
    "${MR[@]}" -np "$NP" "$G" check --fixture "$f" --group-heads 1 --threads 1 --reproducible --quiet \
      --json n.json "$@" >/dev/null
    rc=$?
    [[ $rc == "$want" ]] || fail "check $f $*: streamed on $NP ranks: exit $rc, want $want"
    cmp one.json n.json || fail "check $f $*: streamed on $NP ranks: the document differs from one process's"
  }
  "$FX" synth --shape 1,128,6,16 --key-heads 3 --h0 --grad --kernel-outputs 1,2 --out o.h5 >/dev/null &&
    "$FX" regen --oracle mpfr o.h5 >/dev/null || fail "synth and regen o.h5"
  cp o.h5 bad.h5 && cp o.h5 orc.h5 || fail "copies"
  one_vs_np 0 o.h5
  # the same check without --group-heads: dealt by head group by default
  "${MR[@]}" -np "$NP" "$G" check --fixture o.h5 --threads 1 --reproducible --json n.json >out.txt 2>&1 ||
    fail "check o.h5 on $NP ranks without --group-heads: exit $?"
  grep -q "streamed by head group" out.txt || fail "check o.h5 on $NP ranks: not dealt by head group: $(head -5 out.txt)"
  cmp one.json n.json || fail "check o.h5 on $NP ranks without --group-heads: the document differs"
  echo "check o.h5 on $NP ranks without --group-heads: dealt by head group, byte-identical to one process"
  one_vs_np 0 o.h5 --grad
  echo "check (outputs with gradients, stored /oracle): streamed on $NP ranks byte-identical to one process"
  "$FX" synth --shape 2,128,6,16 --key-heads 3 --h0 --documents 3 --packing reset --kernel-outputs 1,2 \
    --out p.h5 >/dev/null || fail "synth p.h5"
  one_vs_np 0 p.h5
  echo "check (packed documents, outputs): streamed on $NP ranks byte-identical to one process"
  # per-document final states (final_state per_document): each group's owner
  # computes its rows' oracle and model and measures its slab of the
  # (N, Hv, Dk, Dv) ht; the tallies merged.  The states written are each
  # document's row-end state, wrong for every document but a row's last:
  # FAIL on ht, the same document as one process's
  cp p.h5 d.h5 || fail "copy d.h5"
  $PY - d.h5 <<'PYEOF' || fail "per-document ht into d.h5"
import sys, h5py, numpy as np
with h5py.File(sys.argv[1], "r+") as f:
    seg = f["/inputs/segment_ids"][...]
    g = f["/outputs/kernel-scan"]
    ht = g["ht"][...]
    rows = [b for b in range(seg.shape[0]) for t in range(seg.shape[1])
            if seg[b, t] != 0 and (t == 0 or seg[b, t] != seg[b, t - 1])]
    del g["ht"]
    g.create_dataset("ht", data=np.stack([ht[b] for b in rows]).astype(np.float32))
    g.attrs["final_state"] = "per_document"
    print(len(rows), "documents")
PYEOF
  one_vs_np 1 d.h5
  grep -q "ht judged per_document" n.json || fail "d.h5: the per-document states were not judged"
  echo "check (per-document final states): streamed on $NP ranks byte-identical to one process"
  "$PL" orc.h5 /oracle/o 5 70 71 0.01 >/dev/null || fail "plant /oracle/o"
  one_vs_np 0 orc.h5
  grep -q "spot check failed" n.json || fail "a wrong stored /oracle went unnoticed"
  echo "check (stored /oracle wrong at head 5): not used on $NP ranks, as in one process"
  # negative control: kernel-scan's o wrong at value head 3 (group 1, rank 1's), token 60
  "$PL" bad.h5 kernel-scan 3 60 61 0.001 >/dev/null || fail "plant kernel-scan o"
  one_vs_np 1 bad.h5
  $PY - n.json "$NP" <<'PYEOF' || fail "check: the planted output's error is not named at head 3, token 60"
import json, sys
d = json.load(open(sys.argv[1]))
c = [c for c in d["cases"] if not c["pass"]]
assert c, "no case failed"
w = c[0]["impls"]["kernel-scan"]["o"]["worst"]
assert w["h"] == 3 and w["t"] == 60, w
print("planted output error found at", w)
PYEOF
  echo "stream ok"
  ;;
faults)
  args=(--shape 1,256,2,16 --chunk 16 --backend mpi --oracle dd --json f.json --quiet)
  # rank 2 killed after its oracle heads, before their exchange (4 heads: ranks 0-3 one each)
  for extra in "--backend mpi" ""; do
    rm -f f.json
    GDN_TEST_MPI_DIE=2:oracle "${MR[@]}" -np 4 "$G" --shape 2,64,2,16 --chunk 16 --oracle mpfr --json f.json \
      --quiet $extra 2>err.txt >/dev/null
    rc=$?
    [[ $rc == 3 && $(wc -l <err.txt) == 1 ]] || fail "2:oracle $extra: exit $rc, want 3 and one line: $(cat err.txt)"
    grep -q "rank 2" err.txt || fail "2:oracle $extra: the line does not name rank 2: $(cat err.txt)"
    [[ -e f.json ]] && fail "2:oracle $extra: a results file was written"
    ls | grep -q '\.tmp\.' && fail "2:oracle $extra: a temporary was left: $(ls)"
    echo "2:oracle $extra: $(cat err.txt)"
  done
  for f in 1:fold 3:replay 2:message; do
    for p in sequential hillis-steele; do
      rm -f f.json
      echo sentinel >keep.json
      GDN_TEST_MPI_DIE=$f "${MR[@]}" -np 4 "$G" "${args[@]}" --prefix $p --junit keep.json 2>err.txt >/dev/null
      rc=$?
      [[ $rc == 3 ]] || fail "$f $p: exit $rc, want 3"
      [[ $(wc -l <err.txt) == 1 ]] || fail "$f $p: stderr is not one line: $(cat err.txt)"
      grep -q "rank ${f%%:*}" err.txt || fail "$f $p: the line does not name rank ${f%%:*}: $(cat err.txt)"
      [[ -e f.json ]] && fail "$f $p: a results file was written"
      ls | grep -q '\.tmp\.' && fail "$f $p: a temporary was left: $(ls)"
      [[ $(cat keep.json) == sentinel ]] || fail "$f $p: an existing output was touched"
      echo "$f $p: $(cat err.txt)"
    done
  done
  # a distributed sweep: rank 1 killed before its first entry; rank 1's entry failing
  for f in 1:sweep 1:entry-error; do
    echo sentinel >keep.json
    GDN_TEST_MPI_DIE=$f "${MR[@]}" -np 2 "$G" sweep --grid "$GRID" --oracle dd --json keep.json --quiet \
      2>err.txt >/dev/null
    rc=$?
    [[ $rc == 3 && $(wc -l <err.txt) == 1 ]] || fail "$f: exit $rc, want 3 and one line: $(cat err.txt)"
    grep -q "rank 1" err.txt || fail "$f: the line does not name rank 1: $(cat err.txt)"
    [[ $(cat keep.json) == sentinel ]] || fail "$f: the results file was touched"
    ls | grep -q '\.tmp\.' && fail "$f: a temporary was left: $(ls)"
    echo "$f: $(cat err.txt)"
  done
  # an entry over --max-bytes 200K: every rank validates the whole grid
  # (memory, policy) before any entry runs, so all refuse it alike: exit 2,
  # one line naming the entry, no results, no rank left waiting
  timeout 300 "${MR[@]}" -np 3 "$G" sweep --grid "$GRID" --oracle dd --max-bytes 200K --json m.json --quiet \
    >/dev/null 2>err.txt
  rc=$?
  [[ $rc == 2 && $(wc -l <err.txt) == 1 && ! -e m.json ]] || fail "entry over --max-bytes: exit $rc: $(cat err.txt)"
  grep -q "entry [0-9]*: .*--max-bytes" err.txt || fail "entry over --max-bytes: $(cat err.txt)"
  echo "max-bytes: $(cat err.txt)"
  # a case out of tolerance on rank 1's entries: exit 1 (rank 0's verdict), not mpirun's
  $PY -c "
import json; r = {'id': 'impossible', 'kind': 'absolute', 'metric': 'rel_fro', 'limit': 1e-300, 'reason': 'test: fails every case'}
json.dump({'name': 'strict', 'version': 1, 'rules': [r]}, open('strict.json', 'w'))"
  "${MR[@]}" -np 2 "$G" sweep --grid "$GRID" --oracle dd --policy strict.json --json s.json --quiet >out.txt 2>err.txt
  rc=$?
  [[ $rc == 1 && -s s.json ]] || fail "failing sweep on 2 ranks: exit $rc, want 1 and the results: $(cat err.txt out.txt; ls)"
  "${MR[@]}" -np 4 "$G" "${args[@]}" >/dev/null 2>err.txt || fail "control: exit $? $(cat err.txt)"
  [[ -s f.json ]] || fail "control: no results file"
  # misuse: exit 2 with the reason
  "$G" "${args[@]}" 2>err.txt; rc=$?
  [[ $rc == 2 ]] && grep -q "not started by mpirun" err.txt || fail "outside mpirun: exit $rc $(cat err.txt)"
  "${MR[@]}" -np 2 "$G" sweep --grid "$GRID" --backend mpi 2>err.txt; rc=$?
  [[ $rc == 2 ]] && grep -q "drop --backend" err.txt || fail "sweep --backend mpi: exit $rc $(cat err.txt)"
  "${MR[@]}" -np 2 "$G" "${args[@]}" --devices 4 2>err.txt; rc=$?
  [[ $rc == 2 && $(wc -l <err.txt) == 1 ]] || fail "--devices 4 on 2 ranks: exit $rc $(cat err.txt)"
  echo "faults ok"
  ;;
regen)
  # gdn-parity regen: a fixture's key-head groups dealt over the ranks,
  # rank 0 writing the file: gdn-fixture regen's file with the same
  # groups, byte for byte, MPFR and dd, several groups per rank too
  FX=$(dirname "$G")/../fixtures/gdn-fixture
  "$FX" synth --shape 1,128,8,16 --key-heads 4 --h0 --slow-gates --kernel-outputs 1,2 --out a.h5 >/dev/null ||
    fail "gdn-fixture synth: exit $?"
  for t in mpfr dd; do
    for gh in 1 2; do
      cp a.h5 one.h5 && cp a.h5 n.h5 && cp a.h5 bad.h5 || fail "copy"
      "$FX" regen one.h5 --oracle $t --group-heads $gh --threads 1 --quiet || fail "$t gdn-fixture regen: exit $?"
      "${MR[@]}" -np "$NP" "$G" regen n.h5 --oracle $t --group-heads $gh --threads 1 >out.txt ||
        fail "$t --group-heads $gh on $NP ranks: exit $?"
      grep -q "($NP ranks)" out.txt || fail "$t: the line does not say the ranks: $(cat out.txt)"
      cmp one.h5 n.h5 || fail "$t --group-heads $gh on $NP ranks: the file differs from gdn-fixture regen's"
      "$FX" verify n.h5 >/dev/null || fail "$t --group-heads $gh on $NP ranks: gdn-fixture verify: exit $?"
      # negative control: rank 1 computing the next group's heads in place
      # of its own writes another file, which the comparison must see
      GDN_TEST_MPI_DIE=1:regen-deal "${MR[@]}" -np "$NP" "$G" regen bad.h5 --oracle $t --group-heads $gh \
        --threads 1 --quiet || fail "$t regen-deal: exit $?"
      cmp -s one.h5 bad.h5 && fail "$t --group-heads $gh: a rank computing the wrong group went unnoticed"
      echo "$t --group-heads $gh: $NP ranks byte-identical to one process; a misdealt group caught"
    done
  done
  # regen --grads: each owner's VJP and its tally dealt with its forward:
  # gdn-fixture regen --grads's file, byte for byte (regen-deal: another
  # file); a check of it under mpirun takes the stored gradients, the
  # one-process document byte for byte
  "$FX" synth --shape 1,64,4,8 --key-heads 4 --h0 --grad --kernel-outputs 1,2 --out gr.h5 >/dev/null ||
    fail "synth --grad: exit $?"
  for t in mpfr dd; do
    cp gr.h5 gone.h5 && cp gr.h5 gn.h5 && cp gr.h5 gbad.h5 || fail "copy"
    "$FX" regen gone.h5 --grads --oracle $t --group-heads 1 --threads 1 --quiet || fail "$t regen --grads: exit $?"
    "${MR[@]}" -np "$NP" "$G" regen gn.h5 --grads --oracle $t --group-heads 1 --threads 1 --quiet ||
      fail "$t regen --grads on $NP ranks: exit $?"
    cmp gone.h5 gn.h5 || fail "$t regen --grads on $NP ranks: the file differs from gdn-fixture regen's"
    GDN_TEST_MPI_DIE=1:regen-deal "${MR[@]}" -np "$NP" "$G" regen gbad.h5 --grads --oracle $t --group-heads 1 \
      --threads 1 --quiet || fail "$t regen --grads regen-deal: exit $?"
    cmp -s gone.h5 gbad.h5 && fail "$t regen --grads: a rank computing the wrong group went unnoticed"
  done
  # check FILE in one process and on NP ranks: the same document (in n.json)
  same_doc() {
    "$G" check --fixture "$1" --threads 1 --reproducible --json one.json --quiet >/dev/null ||
      fail "check of $1 ($2): exit $?"
    "${MR[@]}" -np "$NP" "$G" check --fixture "$1" --threads 1 --reproducible --json n.json --quiet >/dev/null ||
      fail "check of $1 ($2) on $NP ranks: exit $?"
    cmp one.json n.json || fail "check of $1 ($2) on $NP ranks: not the one-process document"
  }
  same_doc gn.h5 "regen --grads"
  grep -q '"oracle_grad_from_fixture"' n.json || fail "check on $NP ranks: the stored gradients were not taken"
  # a stored gradient wrong at key head 0 (its spot check fails: the VJP
  # computed in a second pass, the stored forward not checked twice), and
  # the stored forward wrong (neither it nor its gradients used): the
  # one-process document on NP ranks, each saying why
  PL=$(dirname "$G")/../fixtures/fixture_plant
  for what in /oracle/grads/dk /oracle/o; do
    cp gn.h5 gp.h5 || fail "copy"
    "$PL" gp.h5 "$what" 0 0 8 0.001 >/dev/null || fail "fixture_plant $what: exit $?"
    same_doc gp.h5 "$what planted"
    grep -q '"oracle_grad_note"' n.json || fail "check with $what planted: no oracle_grad_note"
    grep -q '"oracle_grad_from_fixture"' n.json && fail "check with $what planted: the stored gradients were taken"
  done
  echo "regen --grads: $NP ranks byte-identical to one process; a misdealt group caught; check takes them"
  # the default groups (ceil(Hk / ranks) key heads) are gdn-fixture
  # regen --group-heads's with that many, and a check of the file passes
  cp a.h5 d.h5 && cp a.h5 g.h5 || fail "copy"
  "${MR[@]}" -np "$NP" "$G" regen d.h5 --oracle dd --threads 1 --quiet || fail "default groups: exit $?"
  "$FX" regen g.h5 --oracle dd --group-heads $(((4 + NP - 1) / NP)) --threads 1 --quiet || fail "regen: exit $?"
  cmp d.h5 g.h5 || fail "default groups on $NP ranks: not gdn-fixture regen's with ceil(Hk / $NP) key heads"
  "$G" check --fixture d.h5 --threads 1 --quiet >/dev/null || fail "check of the dealt regen's file: exit $?"
  # failures: an existing /oracle without --force (every rank refuses it
  # alike: exit 2, one line, the file untouched)
  refuses_existing() {
    cp "$1" keep.h5
    "$W" --oversubscribe -np "$NP" "$G" regen "$1" --threads 1 2>err.txt >/dev/null
    local rc=$?
    [[ $rc == 2 && $(wc -l <err.txt) == 1 ]] || fail "$2existing /oracle: exit $rc, want 2 and one line: $(cat err.txt)"
    grep -q "already has an /oracle" err.txt || fail "$2existing /oracle: $(cat err.txt)"
    cmp -s "$1" keep.h5 || fail "$2existing /oracle: the file was touched"
  }
  refuses_existing d.h5 ""
  # a group failing on rank R (its last group: for rank 0 while the others
  # send, in a later round), and rank R unable to open the file: exit 3 /
  # 2, one line under plain mpirun too (not one per rank; gdn-mpirun
  # folds equal lines), naming the group or the rank, the file untouched,
  # no temporary left, no rank left waiting (timeout)
  cp a.h5 f.h5
  for R in 1 0; do
    last=$((R + NP * ((3 - R) / NP)))
    GDN_TEST_MPI_DIE=$R:regen-fail timeout 300 mpirun --oversubscribe -np "$NP" "$G" regen f.h5 --group-heads 1 \
      --threads 1 2>err.txt >/dev/null; rc=$?
    n=$(grep -c '^gdn-parity: error:' err.txt)
    [[ $rc != 0 && $rc != 124 && $n == 1 ]] || fail "$R:regen-fail: exit $rc, $n error lines: $(cat err.txt)"
    grep -q "oracle (key heads $last to $last): failed on purpose" err.txt ||
      fail "$R:regen-fail: the line does not name group $last: $(cat err.txt)"
    GDN_TEST_MPI_DIE=$R:regen-fail "$W" --oversubscribe -np "$NP" "$G" regen f.h5 --group-heads 1 --threads 1 \
      2>err.txt >/dev/null; rc=$?
    [[ $rc == 3 && $(wc -l <err.txt) == 1 ]] || fail "$R:regen-fail: exit $rc, want 3 and one line: $(cat err.txt)"
    cmp -s f.h5 a.h5 || fail "$R:regen-fail: the file was touched"
    ls -a | grep -q '\.tmp' && fail "$R:regen-fail: a temporary was left: $(ls -a)"
    echo "$R:regen-fail: $(cat err.txt)"
    GDN_TEST_MPI_DIE=$R:regen-open timeout 300 mpirun --oversubscribe -np "$NP" "$G" regen f.h5 --threads 1 \
      2>err.txt >/dev/null; rc=$?
    n=$(grep -c '^gdn-parity: error:' err.txt)
    [[ $rc != 0 && $rc != 124 && $n == 1 ]] || fail "$R:regen-open: exit $rc, $n error lines: $(cat err.txt)"
    want="f.h5: not readable here"
    [[ $R != 0 ]] && want="rank $R: $want"
    grep -q "$want" err.txt || fail "$R:regen-open: the line does not say '$want': $(cat err.txt)"
    GDN_TEST_MPI_DIE=$R:regen-open "$W" --oversubscribe -np "$NP" "$G" regen f.h5 --threads 1 2>err.txt >/dev/null
    rc=$?
    [[ $rc == 2 && $(wc -l <err.txt) == 1 ]] || fail "$R:regen-open: exit $rc, want 2 and one line: $(cat err.txt)"
    cmp -s f.h5 a.h5 || fail "$R:regen-open: the file was touched"
    echo "$R:regen-open: $(cat err.txt)"
  done
  # rank 1 killed as it hands its group over (rank 0 writing the
  # temporary): exit 3, one line naming rank 1, the file untouched, no
  # temporary left (mpirun's SIGTERM to rank 0 removes it)
  GDN_TEST_MPI_DIE=1:regen-die "$W" --oversubscribe -np "$NP" "$G" regen f.h5 --group-heads 1 --threads 1 \
    2>err.txt >/dev/null; rc=$?
  [[ $rc == 3 && $(wc -l <err.txt) == 1 ]] || fail "regen-die: exit $rc, want 3 and one line: $(cat err.txt)"
  grep -q "rank 1" err.txt || fail "regen-die: the line does not name rank 1: $(cat err.txt)"
  cmp -s f.h5 a.h5 || fail "regen-die: the file was touched"
  ls -a | grep -q '\.tmp' && fail "regen-die: a temporary was left: $(ls -a)"
  # a Kimi Delta Attention fixture is dealt the same way (its rounds are
  # fix_regen_rounds'): gdn-fixture regen's file with the same groups,
  # MPFR and dd, groups of 1 and the default ceil(Hk / ranks); a check of
  # it passes; negative control: regen-deal writes another file; failures:
  # an existing /oracle, a group failing on rank 1, rank 1 unable to read
  # the file (exit 2 / 3, one line under plain mpirun, untouched)
  "$FX" synth --shape 1,64,4,8 --key-heads 4 --recurrence kda --h0 --kernel-outputs 1,2 --out k.h5 >/dev/null ||
    fail "kda synth"
  for t in mpfr dd; do
    for gh in 1 0; do
      ghf=$gh && [[ $gh == 0 ]] && ghf=$(((4 + NP - 1) / NP))
      cp k.h5 kone.h5 && cp k.h5 kn.h5 && cp k.h5 kbad.h5 || fail "copy"
      more=() && [[ $gh != 0 ]] && more=(--group-heads "$gh")
      "$FX" regen kone.h5 --oracle $t --group-heads "$ghf" --threads 1 --quiet || fail "kda $t regen: exit $?"
      "${MR[@]}" -np "$NP" "$G" regen kn.h5 --oracle $t "${more[@]}" --threads 1 >out.txt ||
        fail "kda $t groups $ghf on $NP ranks: exit $?"
      grep -q "($NP ranks)" out.txt || fail "kda $t: the line does not say the ranks: $(cat out.txt)"
      cmp kone.h5 kn.h5 || fail "kda $t groups $ghf on $NP ranks: the file differs from gdn-fixture regen's"
      "$G" check --fixture kn.h5 --threads 1 --quiet >/dev/null || fail "kda $t: check of the dealt file: exit $?"
      GDN_TEST_MPI_DIE=1:regen-deal "${MR[@]}" -np "$NP" "$G" regen kbad.h5 --oracle $t "${more[@]}" \
        --threads 1 --quiet || fail "kda $t regen-deal: exit $?"
      cmp -s kone.h5 kbad.h5 && fail "kda $t groups $ghf: a rank computing the wrong group went unnoticed"
      echo "kda $t groups of $ghf: $NP ranks byte-identical to one process; a misdealt group caught"
    done
  done
  # regen --grads of a KDA fixture: its VJP's gradients (dg per channel)
  # dealt with the forward as GDN's: gdn-fixture regen --grads's file with
  # the same groups, byte for byte, MPFR and dd, groups of 1 and the
  # default (regen-deal: another file); a check of it on NP ranks takes
  # them (key_heads: the gradients' spot check), the one-process document
  "$FX" synth --shape 1,64,4,8 --key-heads 4 --recurrence kda --h0 --grad --kernel-outputs 1,2 --out kg.h5 \
    >/dev/null || fail "kda synth --grad"
  for t in mpfr dd; do
    for gh in 1 0; do
      ghf=$gh && [[ $gh == 0 ]] && ghf=$(((4 + NP - 1) / NP))
      cp kg.h5 kgone.h5 && cp kg.h5 kgn.h5 && cp kg.h5 kgbad.h5 || fail "copy"
      more=() && [[ $gh != 0 ]] && more=(--group-heads "$gh")
      "$FX" regen kgone.h5 --grads --oracle $t --group-heads "$ghf" --threads 1 --quiet ||
        fail "kda $t regen --grads: exit $?"
      "${MR[@]}" -np "$NP" "$G" regen kgn.h5 --grads --oracle $t "${more[@]}" --threads 1 --quiet ||
        fail "kda $t regen --grads, groups of $ghf on $NP ranks: exit $?"
      cmp kgone.h5 kgn.h5 || fail "kda $t regen --grads, groups of $ghf on $NP ranks: not gdn-fixture regen's file"
      GDN_TEST_MPI_DIE=1:regen-deal "${MR[@]}" -np "$NP" "$G" regen kgbad.h5 --grads --oracle $t "${more[@]}" \
        --threads 1 --quiet || fail "kda $t regen --grads regen-deal: exit $?"
      cmp -s kgone.h5 kgbad.h5 && fail "kda $t regen --grads, groups of $ghf: a misdealt group went unnoticed"
    done
  done
  same_doc kgn.h5 "kda regen --grads"
  grep -q '"key_heads": 1' n.json || fail "kda check on $NP ranks: the stored gradients were not taken"
  echo "kda regen --grads: $NP ranks byte-identical to one process; a misdealt group caught; check takes them"
  refuses_existing kn.h5 "kda "
  cp k.h5 kf.h5
  GDN_TEST_MPI_DIE=1:regen-fail "$W" --oversubscribe -np "$NP" "$G" regen kf.h5 --group-heads 1 --threads 1 \
    2>err.txt >/dev/null; rc=$?
  [[ $rc == 3 && $(wc -l <err.txt) == 1 ]] || fail "kda regen-fail: exit $rc, want 3 and one line: $(cat err.txt)"
  last=$((1 + NP * ((3 - 1) / NP)))
  grep -q "oracle (key heads $last to $last): failed on purpose" err.txt ||
    fail "kda regen-fail: the line does not name group $last: $(cat err.txt)"
  cmp -s kf.h5 k.h5 || fail "kda regen-fail: the file was touched"
  ls -a | grep -q '\.tmp' && fail "kda regen-fail: a temporary was left: $(ls -a)"
  GDN_TEST_MPI_DIE=1:regen-open timeout 300 mpirun --oversubscribe -np "$NP" "$G" regen kf.h5 --threads 1 \
    2>err.txt >/dev/null; rc=$?
  n=$(grep -c '^gdn-parity: error:' err.txt)
  [[ $rc != 0 && $rc != 124 && $n == 1 ]] || fail "kda regen-open: exit $rc, $n error lines: $(cat err.txt)"
  grep -q "rank 1: kf.h5: not readable here" err.txt || fail "kda regen-open: $(cat err.txt)"
  cmp -s kf.h5 k.h5 || fail "kda regen-open: the file was touched"
  echo "kda: $(cat err.txt)"
  echo "regen on $NP ranks ok: $(cat err.txt)"
  ;;
*) fail "unknown part $PART" ;;
esac
