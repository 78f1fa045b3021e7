#!/usr/bin/env bash
# Upstream, run for real: upstream's own Gated DeltaNet functions through
# gdn-parity-jax, at pinned versions, nothing of theirs committed.
#
#   scripts/upstream.sh            (about 5 minutes on 2 idle cores, plus the audit,
#                                   plus the seeds: hours on 2 cores, see 4.)
#   UPSTREAM_PARTS="runs audit distance seeds fla-kda"   the parts to run (default: all)
#   UPSTREAM_SEEDS=12                            seeds per function and shape in 4.
#   UPSTREAM_SEED_SHAPES="1,1024,4,64:2 1,1024,2,128:2"   B,T,H,D:Hk of 4.
#   UPSTREAM_RUN_TIMEOUT=3600                    seconds per run of 4. (exit 124: timed out)
#   UPSTREAM_OUT=out/upstream                    the output folder (two invocations at once:
#                                                two folders; each clears its own but seeds/)
#   UPSTREAM_SEED_FUNCS="maxtext hf-chunk hf-recurrent"   the functions of 4.
#   UPSTREAM_SEED_LIST="0 1 2"                   the seeds of 4. (default 0 .. UPSTREAM_SEEDS-1)
#   UPSTREAM_SEED_GRAD=1                         transformers' functions with --grad in 4. (the
#                                                default; 0: forward only, runs named hf-chunk-...,
#                                                with gradients hf-chunk-grad-..., hf-recurrent-grad-...)
#   Part 4 keeps earlier runs: a run whose folder holds results.json is not
#   run again (delete out/upstream/seeds/NAME to redo it); the other parts'
#   outputs are made afresh.
#
# 1. MaxText: the published `maxtext` wheel, downloaded without dependencies
#    for Python 3.12 (it declares >= 3.12; we do not install it), unpacked
#    under out/upstream/; `jax_chunk_gated_delta_rule` is taken out of
#    maxtext/models/qwen3.py with only what it needs (scripts/upstream_extract.py:
#    an AST extraction; maxtext/kernels/attention/gdn_cp.py, its
#    context-parallel path, is copied beside it).  It runs as the stock scan on
#    one device and, with cp_axis=, inside shard_map on 1, 2, 4, 8 host CPU
#    devices (a 1-D mesh; a 2-D fsdp x context mesh with a tuple axis name).
# 2. transformers: torch_chunk_gated_delta_rule and torch_recurrent_gated_delta_rule
#    with torch (CPU build) in .venv-upstream/.
# 3. The distance between our C kernels and MaxText's JAX run on the same
#    inputs, chunk, device count and prefix schedule (scripts/upstream_distance.py).
# 4. Across seeds: MaxText's stock and context-parallel functions (1 and 8
#    devices, gradients: jax.vjp) and transformers' chunk and recurrent
#    functions (gradients: torch.autograd) on UPSTREAM_SEEDS seeds
#    per shape, the model's initial gates, C 64, h0; every FAIL there is a
#    false FAIL (upstream's code is correct), and the summary gets the margins
#    per function and per rule (scripts/upstream_margins.py); docs/upstream.md
#    records them.
# 5. fla-kda: flash-linear-attention's Kimi Delta Attention references,
#    naive_recurrent_kda and naive_chunk_kda (fla-core, installed with --no-deps
#    beside the pinned torch: fla's own dependencies would pull another torch
#    and Triton; the naive functions need torch and einops only, and
#    fla/ops/kda/naive.py is loaded by its path, not through `import fla`),
#    through --signature fla-kda: float32 and bfloat16 inputs, h0, grouped
#    value heads, judged against the KDA oracle (forward).
# Results: out/upstream/summary.md (verdict lines, versions) and each run's
# folder (fixture, results.json).  Exit 1 if any run's exit status is not the expected one
# (0, except one run documented below that must fail).
set -euo pipefail
cd "$(dirname "$0")/.."
MAXTEXT_VERSION=${MAXTEXT_VERSION:-0.2.5}
TRANSFORMERS_VERSION=${TRANSFORMERS_VERSION:-5.17.0}
TORCH_VERSION=${TORCH_VERSION:-2.13.0}
FLA_VERSION=${FLA_VERSION:-0.6.0}
EINOPS_VERSION=${EINOPS_VERSION:-0.8.1}
work=${UPSTREAM_OUT:-out/upstream}
venv=.venv-upstream
PARTS=" ${UPSTREAM_PARTS:-runs audit distance seeds fla-kda} "
SEEDS=${UPSTREAM_SEEDS:-12}
SEED_SHAPES=${UPSTREAM_SEED_SHAPES:-1,1024,4,64:2 1,1024,2,128:2}
SEED_FUNCS=" ${UPSTREAM_SEED_FUNCS:-maxtext hf-chunk hf-recurrent} "
SEED_LIST=${UPSTREAM_SEED_LIST:-$(seq -s ' ' 0 $((SEEDS - 1)))}
HF_GRAD=() hfg=""
[[ ${UPSTREAM_SEED_GRAD:-1} == 1 ]] && HF_GRAD=(--grad) hfg=-grad
part() { [[ $PARTS == *" $1 "* ]]; }

scripts/deps.sh --jax
meson setup build-upstream -Dbuildtype=release >/dev/null 2>&1 || meson setup build-upstream --reconfigure -Dbuildtype=release >/dev/null
ninja -C build-upstream >/dev/null
export GDN_PARITY_BIN_DIR=$PWD/build-upstream

if [[ ! -x $venv/bin/python ]]; then
  "${PYTHON:-python3}" -m venv "$venv"
fi
# torch pinned to the CPU build (an unpinned torch pulls a multi-GB CUDA build)
$venv/bin/python -m pip install -q --disable-pip-version-check -r frontend/requirements-jax.txt \
  "torch==$TORCH_VERSION" "transformers==$TRANSFORMERS_VERSION"
$venv/bin/python -m pip install -q --disable-pip-version-check --no-deps -e ./frontend

# every output but part 4's seed runs (kept across invocations: hours of work)
mkdir -p "$work"
find "$work" -mindepth 1 -maxdepth 1 ! -name seeds ! -name seeds.log -exec rm -rf {} +
mkdir -p "$work/dl" "$work/maxtext" "$work/py"
$venv/bin/python -m pip download -q --disable-pip-version-check --no-deps --python-version 3.12 \
  --only-binary=:all: "maxtext==$MAXTEXT_VERSION" -d "$work/dl"
$venv/bin/python -m zipfile -e "$work"/dl/maxtext-"$MAXTEXT_VERSION"-*.whl "$work/maxtext"
$venv/bin/python scripts/upstream_extract.py "$work/maxtext" maxtext.models.qwen3 \
  jax_chunk_gated_delta_rule "$work/py" maxtext_gdn
has_cp=no
grep -q "cp_axis" "$work/py/maxtext_gdn.py" && [[ -f $work/maxtext/maxtext/kernels/attention/gdn_cp.py ]] && has_cp=yes

summary=$work/summary.md
{
  echo "# Upstream through gdn-parity-jax ($(date -u +%Y-%m-%d))"
  echo
  echo "maxtext $MAXTEXT_VERSION (gdn_cp.py and cp_axis: $has_cp), transformers $TRANSFORMERS_VERSION, torch $($venv/bin/python -c 'import torch; print(torch.__version__)'),"
  echo "jax $($venv/bin/python -c 'import jax; print(jax.__version__)') on $(nproc) CPU cores, gdn-parity $(git rev-parse --short HEAD)"
  echo
} >"$summary"

status=0
run() { # [EXPECT=N] run NAME ARGS...: one gdn-parity-jax run, its verdict lines into the summary
  local name=$1 expect=${EXPECT:-0}; shift
  echo "== $name"
  local rc=0
  PYTHONPATH=$PWD/$work/py $venv/bin/gdn-parity-jax run --out "$work/$name" --quiet "$@" >"$work/$name.log" 2>&1 || rc=$?
  tail -n 12 "$work/$name.log"
  {
    echo "## $name (exit $rc, expected $expect)"
    echo
    echo '```'
    echo "gdn-parity-jax run $*"
    grep -E '^  (PASS|FAIL|MISSING) ' "$work/$name.log" || tail -n 5 "$work/$name.log"
    echo '```'
    echo
  } >>"$summary"
  ((rc == expect)) || status=1
}

MT=maxtext_gdn:jax_chunk_gated_delta_rule
HF=transformers.models.qwen3_next.modeling_qwen3_next
if part runs; then
# MaxText's unit-test numerics (float32 inputs, compute_dtype float32), long-memory gates.
run maxtext-f32-slow --impl $MT --cp-prefix hillis-steele --shape 1,256,4,32 --key-heads 2 \
  --chunk 16 --h0 --gates slow --devices 1,2,4,8
# Qwen 3.5 head size (Dk = Dv = 128), MaxText's chunk 64, the model's initial gates, one
# chunk per shard at D = 4 (kept small: the MPFR oracle dominates the run time).
run maxtext-f32-d128 --impl $MT --cp-prefix hillis-steele --shape 1,256,1,128 --chunk 64 --h0 \
  --devices 1,2,4
# Token sharding with padding inside the sequence: T/D = 25 tokens per device, C = 16.
run maxtext-f32-midpad --impl $MT --cp-prefix hillis-steele --shape 1,200,2,32 --chunk 16 --h0 \
  --gates slow --devices 1,2,4,8
# MaxText's default compute_dtype (bfloat16 rounding points), bfloat16 inputs.
run maxtext-bf16 --impl $MT --cp-prefix hillis-steele --shape 1,256,4,32 --key-heads 2 --chunk 16 \
  --h0 --gates slow --dtype bfloat16 --input-dtype bfloat16 --devices 1,2,4,8
# A 2-D mesh (fsdp x context) with a tuple axis name, as upstream's own test.
run maxtext-2d-tuple --impl $MT --cp-prefix hillis-steele --shape 2,256,2,32 --chunk 16 --h0 \
  --gates slow --fsdp 2 --cp-axis fsdp,context --devices 4,8
# bfloat16 inputs (a shipped fixture) with compute_dtype float32: MaxText L2-normalises q and k
# in the input dtype, before the cast, so the final state carries bfloat16-level error (2.5e-3)
# where the float32 rule expects ~1e-7: FAIL, expected.  The same kernel with q, k normalised in
# float32 by the caller (the JSON mapping below) passes: the L2 norm is the whole difference.
EXPECT=1 run maxtext-bf16in-f32 --impl $MT --cp-prefix hillis-steele \
  --from-fixture fixtures/data/small-b1-t130-hk1-hv2-d64-bf16-h0.h5 --devices 1,2
cat >"$work/f32norm.json" <<'JSON'
{"framework": "jax", "positional": ["q", "k", "v", "g", "beta"],
 "keywords": {"chunk_size": "chunk", "initial_state": "h0", "use_qk_norm_in_gdn": "l2norm",
              "compute_dtype": "compute_dtype", "cp_axis": "cp_axis"},
 "l2norm": "caller", "expand_heads": true}
JSON
run maxtext-bf16in-f32norm --impl $MT --signature "$work/f32norm.json" --cp-prefix hillis-steele \
  --from-fixture fixtures/data/small-b1-t130-hk1-hv2-d64-bf16-h0.h5 --devices 1,2
run hf-chunk --impl $HF:torch_chunk_gated_delta_rule --signature hf --shape 1,256,4,32 \
  --key-heads 2 --chunk 16 --h0 --gates slow --devices 1
run hf-recurrent --impl $HF:torch_recurrent_gated_delta_rule --signature hf --shape 1,256,4,32 \
  --key-heads 2 --chunk 16 --h0 --gates slow --devices 1
fi

# The audit of MaxText's real gdn_cp path (compiled programs, forward and backward,
# nothing executed) and of a copy with jax.checkpoint removed from compose_local's scan body
# (patched under out/, never committed): what each device moves, keeps and computes.
audit() { # audit NAME PYDIR ARGS...: one gdn-parity-jax audit, its check lines into the summary
  local name=$1 py=$2; shift 2
  echo "== $name"
  local rc=0
  PYTHONPATH=$PWD/$py $venv/bin/gdn-parity-jax audit --json "$work/$name.json" "$@" \
    >"$work/$name.log" 2>&1 || rc=$?
  tail -n 8 "$work/$name.log"
  {
    echo "## $name (exit $rc, expected 0)"
    echo
    echo '```'
    echo "gdn-parity-jax audit $*"
    grep -E '^audit: ' "$work/$name.log" || tail -n 5 "$work/$name.log"
    echo '```'
    echo
  } >>"$summary"
  ((rc == 0)) || status=1
}
if [[ $has_cp == yes ]] && part audit; then
  mkdir -p "$work/py-nockpt" && cp "$work"/py/*.py "$work/py-nockpt/"
  sed -i '/^  @jax.checkpoint$/d' "$work/py-nockpt/gdn_cp.py"
  if grep -q '@jax.checkpoint' "$work/py-nockpt/gdn_cp.py"; then
    echo "upstream.sh: the checkpoint patch of gdn_cp.py did not apply" >&2
    status=1
  fi
  AUDIT=(--impl $MT --cp-prefix hillis-steele --shape 1,1024,2,128 --chunk 64 --devices 1,2,4,8
         --lengths 1024,2048,4096 --model-heads qwen3.5)
  audit audit-maxtext "$work/py" "${AUDIT[@]}"
  audit audit-maxtext-nockpt "$work/py-nockpt" "${AUDIT[@]}"
fi

# Our C kernels vs MaxText's JAX CPU run: same inputs, chunk, devices, schedule.
if part runs && part distance; then
{
  echo "## C kernels vs MaxText's JAX run (maxtext-f32-slow inputs: rel_fro, max_abs)"
  echo
  echo '| JAX output | C kernel | devices | o rel_fro | o max_abs | ht rel_fro | ht max_abs |'
  echo '|---|---|---|---|---|---|---|'
} >>"$summary"
fx=$(ls "$work"/maxtext-f32-slow/gdn-*.h5)
dist() { $venv/bin/python scripts/upstream_distance.py --markdown "$fx" "$1" "$GDN_PARITY_BIN_DIR/parity/gdn-parity" "${@:2}"; }
{
  dist jax_scan --devices 1 --chunk 16
  for d in 1 2 4 8; do dist "jax_cp_d$d" --devices $d --prefix hillis-steele --chunk 16; done
} >>"$summary"
fi

# 5. flash-linear-attention's KDA references, through --signature fla-kda.
if part fla-kda; then
  $venv/bin/python -m pip install -q --disable-pip-version-check --no-deps \
    "fla-core==$FLA_VERSION" "einops==$EINOPS_VERSION"
  # fla/ops/kda/naive.py by its path: `import fla` would import Triton
  cat >"$work/py/fla_kda_naive.py" <<'PY'
import importlib.util
import os

_root = os.path.dirname(importlib.util.find_spec("fla").origin)
_spec = importlib.util.spec_from_file_location("fla_kda_naive_upstream",
                                               os.path.join(_root, "ops", "kda", "naive.py"))
_mod = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_mod)
naive_recurrent_kda = _mod.naive_recurrent_kda
naive_chunk_kda = _mod.naive_chunk_kda
PY
  echo "fla-core $FLA_VERSION (fla/ops/kda/naive.py, --no-deps), einops $EINOPS_VERSION" >>"$summary"
  echo >>"$summary"
  KDA=(--signature fla-kda --shape 1,256,4,32 --key-heads 2 --chunk 64 --h0 --gates slow --devices 1)
  for f in recurrent chunk; do
    run "fla-kda-$f-f32" --impl "fla_kda_naive:naive_${f}_kda" "${KDA[@]}"
    run "fla-kda-$f-bf16" --impl "fla_kda_naive:naive_${f}_kda" "${KDA[@]}" --input-dtype bfloat16
  done
fi

# 4. Across seeds (the model's initial gates): every FAIL is a false FAIL.
# One folder per run, $work/seeds/FUNCTION-dD-sSEED; the verdict lines go to
# $work/seeds.log, the margins to the summary.
if part seeds && ((SEEDS > 0)); then
  mkdir -p "$work/seeds"
  seedrun() { # seedrun NAME ARGS...: one run into $work/seeds/NAME, quietly
    local name=$1 rc=0; shift
    local fn=${name%-d*}
    [[ $SEED_FUNCS == *" ${fn%-grad} "* ]] || return 0
    if [[ -f $work/seeds/$name/results.json ]]; then echo "== $name: kept"; return 0; fi
    rm -rf "$work/seeds/$name"
    # a time limit per run: one MaxText run (1,1024,4,64, devices 1,8, --grad) sat in a
    # futex wait at 0 % CPU for 17 minutes on a loaded 2-core machine (2026-12-05), and a
    # hung run ignores SIGTERM: KILL 60 s after
    timeout -k 60 "${UPSTREAM_RUN_TIMEOUT:-3600}" env PYTHONPATH=$PWD/$work/py \
      $venv/bin/gdn-parity-jax run --out "$work/seeds/$name" --quiet "$@" >"$work/seeds/$name.log" 2>&1 || rc=$?
    { echo "== $name (exit $rc)"; grep -E '^  (PASS|FAIL|MISSING) ' "$work/seeds/$name.log" ||
        tail -n 5 "$work/seeds/$name.log"; } >>"$work/seeds.log"
    echo "== $name: exit $rc"
    ((rc == 0)) || status=1
  }
  for spec in $SEED_SHAPES; do
    shape=${spec%%:*} hk=${spec#*:}
    dk=${shape##*,}
    common=(--shape "$shape" --key-heads "$hk" --chunk 64 --h0 --gates init)
    for s in $SEED_LIST; do
      seedrun "maxtext-d$dk-s$s" --impl $MT --cp-prefix hillis-steele "${common[@]}" --devices 1,8 --grad \
        --seed $s
      seedrun "hf-chunk$hfg-d$dk-s$s" --impl $HF:torch_chunk_gated_delta_rule --signature hf "${common[@]}" \
        --devices 1 "${HF_GRAD[@]}" --seed $s
      seedrun "hf-recurrent$hfg-d$dk-s$s" --impl $HF:torch_recurrent_gated_delta_rule --signature hf \
        "${common[@]}" --devices 1 "${HF_GRAD[@]}" --seed $s
    done
  done
  {
    echo "## Across seeds: $SEEDS per function, shapes $SEED_SHAPES (B,T,H,D:Hk), C 64, h0, initial gates"
    echo
    echo "MaxText on 1 and 8 devices with gradients (jax_scan: the stock function; jax_cp_dD: the"
    echo "context-parallel one); transformers with gradients (torch.autograd) unless"
    echo "UPSTREAM_SEED_GRAD=0.  Every FAIL is a false FAIL."
    echo
    $venv/bin/python scripts/upstream_margins.py "$work"/seeds/*/
    echo
  } >>"$summary"
fi

echo
cat "$summary"
exit $status
