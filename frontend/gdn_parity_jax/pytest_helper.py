"""assert_gdn_parity: the gate in three lines of an upstream test file.

    from gdn_parity_jax import assert_gdn_parity
    from maxtext.models.qwen3 import jax_chunk_gated_delta_rule

    def test_gdn_context_parallel_parity():
        assert_gdn_parity(jax_chunk_gated_delta_rule, devices=(1, 2, 4, 8))

What runs by default is the recommended grid, grids/upstream-pr.json (issue
22: the smallest set of cases that kills every killable mutant of the
catalogue): each of its cases the JAX front end can express is one run, with
the case's shape, heads, h0, gates, seed, chunk sizes, devices and dtypes
(GRID_KEYS says how each grid key is taken); a case it cannot express (packed
documents: the maxtext signature takes no segment ids) is skipped and
reported as a SKIP line.  ``grid=`` names another grid (a path, or a name in
the repository's grids/ folder); ``shapes=`` runs ad-hoc shapes instead, with
the options below.  An option given explicitly (devices, chunk, h0, dtype,
gates, seed) overrides the grid's value in every case.

Each run is one ``gdn-parity-jax run`` in a fresh Python process (XLA fixes
the number of host devices when jax is first imported, so a test process that
already imported jax cannot grow its own), with this process's ``sys.path`` as
its PYTHONPATH so the function imports there as here.  On failure the
AssertionError carries the verdict lines and the folder holding the fixture
and reports (kept); on success that folder is removed.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

DEFAULT_SHAPES = ((1, 128, 2, 16),)
DEFAULT_GRID = "upstream-pr"
# The options of an ad-hoc (shapes=) run the caller leaves unset.
SHAPE_DEFAULTS = dict(devices=(1, 2, 4, 8), chunk=16, h0=True, dtype="float32", gates="slow", seed=0)
GRIDS_ENV = "GDN_PARITY_GRIDS"

# How each key of a grid entry (parity/parity_grid.c, entry_keys) reaches a
# `gdn-parity-jax run`:
#   ("option", OPT)         the value as OPT's value
#   ("flag", OPT)           OPT when true
#   ("each", OPT)           a list: one run per value
#   ("list", OPT)           a list: comma-joined (one run, every value)
#   ("own", WHY)            the function's own choice, not the grid's (ignored)
#   ("skip", OK, WHY)       a value outside OK: the case cannot be expressed
#                           by the JAX front end and is skipped, with WHY
GRID_KEYS = {
    "shape": ("option", "--shape"),
    "key_heads": ("option", "--key-heads"),
    "dv": ("option", "--dv"),
    "seed": ("option", "--seed"),
    "h0": ("flag", "--h0"),
    "gates": ("option", "--gates"),
    "input_dtype": ("option", "--input-dtype"),
    "chunk": ("each", "--chunk"),
    "devices": ("list", "--devices"),
    "dtype": ("each", "--dtype"),
    "matmul_precision": ("each", "--matmul-precision"),
    "prefix": ("own", "the prefix schedule is the function's own (declare it with cp_prefix=)"),
    "solve": ("own", "the in-chunk solve is the function's own"),
    "ftz": ("own", "subnormal handling is XLA's"),
    "shard": ("skip", ("tokens",), "chunk sharding: shard_map gives every device T/D tokens"),
    "qk_norm": ("skip", ("in-kernel",), "pre-normalised q, k: synthetic inputs here are normalised in the kernel"),
    "prelude": ("skip", ("none",), "the bfloat16 prelude: not an input of the function"),
    "documents": ("skip", (), "packed documents: the maxtext signature takes no segment ids"),
    "packing": ("skip", (), "packed documents: the maxtext signature takes no segment ids"),
    "grad": ("skip", (False,), "gradients: not judged by gdn-parity-jax run"),
}
# explicit helper options -> the grid key they override
OVERRIDES = {"devices": "devices", "chunk": "chunk", "h0": "h0", "dtype": "dtype", "gates": "gates",
             "seed": "seed"}


def grid_path(grid) -> Path:
    """The grid file: a path to a file, or NAME for NAME.json in, first match
    wins, $GDN_PARITY_GRIDS, the grids/ folder of the repository this package
    lies in (editable install), or the grids/ folder next to the build folder
    $GDN_PARITY_BIN_DIR names (a plain `pip install frontend/`, as
    examples/upstream-ci does).  FileNotFoundError says where it looked."""
    p = Path(grid)
    if p.suffix == ".json" or os.sep in str(grid):
        if p.is_file():
            return p
        raise FileNotFoundError(f"assert_gdn_parity: grid {str(grid)!r}: no such file")
    dirs = [Path(os.environ[GRIDS_ENV])] if os.environ.get(GRIDS_ENV) else []
    dirs.append(Path(__file__).resolve().parents[2] / "grids")
    if os.environ.get("GDN_PARITY_BIN_DIR"):
        dirs.append(Path(os.environ["GDN_PARITY_BIN_DIR"]).resolve().parent / "grids")
    for d in dirs:
        if (d / f"{grid}.json").is_file():
            return d / f"{grid}.json"
    raise FileNotFoundError(f"assert_gdn_parity: grid {grid!r}: no {grid}.json in "
                            f"{', '.join(map(str, dirs))} (set {GRIDS_ENV} or pass a path)")


def _as_list(v):
    return list(v) if isinstance(v, (list, tuple)) else [v]


def _entry_runs(entry: dict, where: str, overrides: dict):
    """(list of argument lists, None) for one grid entry, or (None, why) when
    the JAX front end cannot express it.  ValueError for a key GRID_KEYS does
    not know."""
    e = dict(entry)
    e.update({OVERRIDES[k]: v for k, v in overrides.items() if v is not None})
    unknown = sorted(set(e) - set(GRID_KEYS))
    if unknown:
        raise ValueError(f"{where}: grid key {unknown[0]!r} unknown to assert_gdn_parity "
                         f"(known: {', '.join(GRID_KEYS)})")
    base, each = [], [[]]
    for key, val in e.items():
        kind, *rest = GRID_KEYS[key]
        if kind == "skip":
            ok, why = rest
            if val not in ok:
                return None, f"{key}={json.dumps(val)}: {why}"
        elif kind == "option":
            base += [rest[0], str(val)]
        elif kind == "flag":
            base += [rest[0]] if val else []
        elif kind == "list":
            base += [rest[0], ",".join(str(x) for x in _as_list(val))]
        elif kind == "each":
            each = [a + [rest[0], str(x)] for a in each for x in _as_list(val)]
    return [base + a for a in each], None


def grid_runs(grid, overrides=None):
    """For each entry of the grid: (label, list of argument lists or None,
    why skipped or None)."""
    path = grid_path(grid)
    with open(path, encoding="utf-8") as f:
        doc = json.load(f)
    out = []
    for i, entry in enumerate(doc.get("entries", [])):
        label = f"{path.stem} case {i} ({entry.get('shape', '?')})"
        runs, why = _entry_runs(entry, f"{path}: entry {i}", overrides or {})
        out.append((label, runs, why))
    if not any(r for _, r, _ in out):
        raise ValueError(f"assert_gdn_parity: grid {path}: no case the JAX front end can run")
    return out


def function_spec(fn) -> str:
    """MODULE:FUNCTION for a function (or the string itself)."""
    if isinstance(fn, str):
        return fn
    mod, qual = getattr(fn, "__module__", None), getattr(fn, "__qualname__", None)
    if not mod or not qual or "<locals>" in qual or "<lambda>" in qual or mod == "__main__":
        raise ValueError(f"assert_gdn_parity: {fn!r} is not importable by name "
                         "(define it at module level, or pass 'module:function')")
    return f"{mod}:{qual}"


def _shape(s) -> str:
    return s if isinstance(s, str) else ",".join(str(int(x)) for x in s)


def assert_gdn_parity(fn, cp_fn=None, shapes=None, devices=None, *, grid=DEFAULT_GRID,
                      chunk: int | None = None, h0: bool | None = None, dtype: str | None = None,
                      gates: str | None = None, seed: int | None = None, signature: str = "maxtext",
                      cp_prefix: str | None = None, fsdp: int = 1, cp_axis: str | None = None,
                      grad: bool = False, audit: bool = False, audit_options=(), extra=(),
                      out_dir: str | None = None, timeout: float = 1800) -> list[str]:
    """Runs the gate on every case of `grid` (default: grids/upstream-pr.json)
    or, given `shapes`, on those shapes; raises AssertionError with the
    verdict lines if any output is out of tolerance or a run fails.  Returns
    the verdict lines of a passing run (and a SKIP line per grid case the
    JAX front end cannot express).

    fn: the stock function (or 'module:function'); cp_fn: the per-shard
    context-parallel function (default: fn itself when it takes cp_axis).
    devices, chunk, h0, dtype, gates ('slow': long memory, state crosses
    every seam; 'init'), seed: None takes the grid's value (for shapes=:
    SHAPE_DEFAULTS); a value overrides it.  grad: also judge the functions'
    jax.vjp gradients (run --grad).  audit: also audit the compiled programs
    (run --audit: what the function moves, keeps and computes per device;
    audit_options, e.g. ("--lengths", "256,512,1024"), are passed to it);
    an audit FAIL fails the assertion with its lines naming the op."""
    fixed = ["--impl", function_spec(fn), "--signature", signature, "--fsdp", str(fsdp)]
    if cp_fn is not None:
        fixed += ["--cp", function_spec(cp_fn)]
    if cp_prefix:
        fixed += ["--cp-prefix", cp_prefix]
    if cp_axis:
        fixed += ["--cp-axis", cp_axis]
    if grad:
        fixed.append("--grad")
    if audit:
        fixed += ["--audit", *map(str, audit_options)]
    given = dict(devices=devices, chunk=chunk, h0=h0, dtype=dtype, gates=gates, seed=seed)
    if shapes is not None:
        o = {k: (v if v is not None else SHAPE_DEFAULTS[k]) for k, v in given.items()}
        cases = [(_shape(s), _entry_runs({"shape": _shape(s)}, "shapes", o)[0], None) for s in shapes]
    else:
        cases = grid_runs(grid, given)
    env = dict(os.environ)
    env.pop("XLA_FLAGS", None)
    env["PYTHONPATH"] = os.pathsep.join(p for p in sys.path if p)
    lines = []
    for label, runs, why in cases:
        if runs is None:
            lines.append(f"{label}: SKIP ({why})")
            continue
        for args in runs:
            lines += _run_one(label, fixed + args, env, extra, out_dir, timeout)
    return lines


def _run_one(label, args, env, extra, out_dir, timeout):
    out = out_dir or tempfile.mkdtemp(prefix="gdn-parity-")
    os.makedirs(out, exist_ok=True)
    cmd = [sys.executable, "-m", "gdn_parity_jax", "run", *args, "--out", out, *map(str, extra)]
    r = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=timeout)
    verdicts = [ln.strip() for ln in r.stdout.splitlines()
                if ln.strip().startswith(("PASS ", "FAIL ", "MISSING ", "audit: PASS ", "audit: FAIL "))]
    if r.returncode != 0:
        what = {1: "out of tolerance", 2: "bad usage or input", 3: "internal error"}.get(
            r.returncode, f"exit {r.returncode}")
        detail = "\n".join(verdicts) or (r.stderr.strip()[-4000:] or r.stdout.strip()[-4000:])
        raise AssertionError(f"gdn parity, {label}: {what}\n{detail}\n"
                             f"(fixture and reports kept in {out})")
    if out_dir is None:
        shutil.rmtree(out, ignore_errors=True)
    return [f"{label}: {v}" for v in verdicts]
