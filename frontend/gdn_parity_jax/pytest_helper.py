"""assert_gdn_parity: the gate in three lines of an upstream test file.

    from gdn_parity_jax import assert_gdn_parity
    from maxtext.models.qwen3 import jax_chunk_gated_delta_rule

    def test_gdn_context_parallel_parity():
        assert_gdn_parity(jax_chunk_gated_delta_rule)

What runs by default is the recommended grid, grids/upstream-pr.json (the
smallest set of cases that kills every killable mutant of the catalogue): each of its cases the JAX front end can express is one run, with
the case's shape, heads, h0, gates, seed, chunk sizes, devices and dtypes
(GRID_KEYS says how each grid key is taken); a case it cannot express (packed
documents: the maxtext signature takes no segment ids) is skipped and
reported as a SKIP line.  ``grid=`` names another grid (a path, or a name in
the repository's grids/ folder); ``shapes=`` runs ad-hoc shapes instead, with
the options below.  An option given explicitly (devices, chunk, h0, dtype,
gates, seed, grad) overrides the grid's value in every case.

Defaults that catch what a test author forgets: gradients are
judged (``grad=False`` is the explicit opt-out; runs in bfloat16 compute,
which the C side cannot differentiate, go without and say so in a NOTE
line), and every grid case whose T is a multiple of 8 also runs on 8
devices besides the grid's own device counts (``devices=`` replaces both).

Each run is one ``gdn-parity-jax run`` in a fresh Python process (XLA fixes
the number of host devices when jax is first imported, so a test process that
already imported jax cannot grow its own), with this process's ``sys.path`` as
its PYTHONPATH so the function imports there as here.  A callable that does
not import by name (a closure, a functools.partial, a decorated function)
runs in this process when JAX here already has the devices the run needs,
else is serialized into the run's process (gdn_parity_jax/ship.py).  On
failure the AssertionError carries the verdict lines and the folder holding the fixture
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

from . import inprocess, results_doc, ship
from .text import show

DEFAULT_SHAPES = ((1, 128, 2, 16),)
DEFAULT_GRID = "upstream-pr"
# The options of an ad-hoc (shapes=) run the caller leaves unset.
SHAPE_DEFAULTS = dict(devices=(1, 2, 4, 8), chunk=16, h0=True, dtype="float32", gates="slow", seed=0,
                      grad=True)
# What a grid case gets unless the caller says otherwise: its
# gradients judged, and these device counts besides its own (where T allows).
GRID_DEFAULTS = dict(grad=True, extra_devices=(8,))
GRIDS_ENV = "GDN_PARITY_GRIDS"

# How each key of a grid entry (parity/run/parity_grid.c, entry_keys) reaches a
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
    "grad": ("flag", "--grad"),
}
# explicit helper options -> the grid key they override
OVERRIDES = {"devices": "devices", "chunk": "chunk", "h0": "h0", "dtype": "dtype", "gates": "gates",
             "seed": "seed", "grad": "grad"}


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
        if p.exists():  # a FIFO would block the read: refused before opening
            raise ValueError(f"assert_gdn_parity: grid {str(grid)!r}: not a regular file")
        raise FileNotFoundError(f"assert_gdn_parity: grid {str(grid)!r}: no such file")
    dirs = [Path(os.environ[GRIDS_ENV])] if os.environ.get(GRIDS_ENV) else []
    dirs.append(Path(__file__).resolve().parents[2] / "grids")
    dirs.append(Path(__file__).resolve().parent / "grids")  # the wheel's copy
    if os.environ.get("GDN_PARITY_BIN_DIR"):
        dirs.append(Path(os.environ["GDN_PARITY_BIN_DIR"]).resolve().parent / "grids")
    for d in dirs:
        if (d / f"{grid}.json").is_file():
            return d / f"{grid}.json"
    raise FileNotFoundError(f"assert_gdn_parity: grid {grid!r}: no {grid}.json in "
                            f"{', '.join(map(str, dirs))} (set {GRIDS_ENV} or pass a path)")


def _as_list(v):
    return list(v) if isinstance(v, (list, tuple)) else [v]


def _with_defaults(entry: dict, overrides: dict) -> dict:
    """The entry with GRID_DEFAULTS where the caller gave no value: grad
    (when the entry has none) and the extra device counts (added to the
    entry's own when T is a multiple of each)."""
    e = dict(entry)
    if overrides.get("grad") is None and "grad" not in e:
        e["grad"] = GRID_DEFAULTS["grad"]
    if overrides.get("devices") is None and "devices" in e:
        try:
            T = int(str(e.get("shape", "")).split(",")[1])
        except (IndexError, ValueError):
            T = 0
        own = _as_list(e["devices"])
        more = [d for d in GRID_DEFAULTS["extra_devices"] if T and T % d == 0 and d not in own]
        e["devices"] = own + more
    return e


def _entry_runs(entry: dict, where: str, overrides: dict):
    """(list of argument lists, None) for one grid entry, or (None, why) when
    the JAX front end cannot express it.  ValueError for a key GRID_KEYS does
    not know."""
    e = _with_defaults(entry, overrides)
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
    from .jsonfile import load_object
    path = grid_path(grid)
    doc = load_object(path, "assert_gdn_parity: grid", ValueError, path)
    out = []
    entries = doc.get("entries", [])
    if not isinstance(entries, list):
        raise ValueError(f"assert_gdn_parity: grid {path}: 'entries' must be a JSON array")
    for i, entry in enumerate(entries):
        if not isinstance(entry, dict):
            raise ValueError(f"assert_gdn_parity: grid {path}: entry {i} is "
                             f"{type(entry).__name__}, not a JSON object")
        shape = entry.get("shape", "?")
        label = show(f"{path.stem} case {i} ({shape})")
        runs, why = _entry_runs(entry, f"{path}: entry {i}", overrides or {})
        out.append((label, runs, why))
    if not any(r for _, r, _ in out):
        raise ValueError(f"assert_gdn_parity: grid {path}: no case the JAX front end can run")
    return out


def function_spec(fn) -> str:
    """MODULE:FUNCTION for a function that imports by name (or the string
    itself); ValueError otherwise (assert_gdn_parity ships such callables,
    see ship.py)."""
    spec = ship.importable_spec(fn)
    if spec is None:
        raise ValueError(f"assert_gdn_parity: {fn!r} is not importable by name "
                         "(define it at module level, or pass 'module:function')")
    return spec


def _shape(s) -> str:
    return s if isinstance(s, str) else ",".join(str(int(x)) for x in s)


def assert_gdn_parity(fn, cp_fn=None, shapes=None, devices=None, *, grid=DEFAULT_GRID,
                      chunk: int | None = None, h0: bool | None = None, dtype: str | None = None,
                      gates: str | None = None, seed: int | None = None, signature: str = "maxtext",
                      cp_prefix: str | None = None, fsdp: int = 1, cp_axis: str | None = None,
                      grad: bool | None = None, cp: bool | None = None, audit: bool = False,
                      audit_options=(), extra=(), out_dir: str | None = None,
                      timeout: float = 1800, recurrence: str = "gdn") -> list[str]:
    """Runs the gate on every case of `grid` (default: grids/upstream-pr.json)
    or, given `shapes`, on those shapes; raises AssertionError with the
    verdict lines if any output is out of tolerance or a run fails.  Returns
    the verdict lines of a passing run (and a SKIP line per grid case the
    JAX front end cannot express, a NOTE line per run whose gradients were
    not judged).

    fn: the stock function (or 'module:function'); cp_fn: the per-shard
    context-parallel function (default: fn itself when it takes cp_axis).
    Any callable: one that does not import by name (closure, partial,
    decorated function) runs in this process when JAX here has the devices,
    else is serialized into the run's process (ship.py; ValueError naming
    what cannot be serialized).  devices, chunk, h0, dtype, gates ('slow':
    long memory, state crosses every seam; 'init'), seed: None takes the
    grid's value (for shapes=: SHAPE_DEFAULTS); a value overrides it; devices
    None also adds 8 devices to each case (GRID_DEFAULTS).  grad: None (the
    default) judges the functions' jax.vjp gradients in every float32 run
    (run --grad); False: the forward only; True: every run, bfloat16 ones
    refused.  audit: also audit the compiled programs (run --audit: what the
    function moves, keeps and computes per device; audit_options, e.g.
    ("--lengths", "256,512,1024"), are passed to it); an audit FAIL fails the
    assertion with its lines naming the op.

    cp: None (the default) or True: something context-parallel must run --
    cp_fn, or fn taking cp_axis -- wherever a case asks for more than one
    device, else AssertionError saying nothing context-parallel was tested
    (a stock function alone never passes for a context-parallel gate).
    False: the stock function alone, judged on one device (devices=(1,) in
    every case; cp_fn and devices above 1 refused), its lines saying so.
    extra: further `gdn-parity-jax run` options (e.g. ("--policy", "p.json"));
    the folder kept on failure (or out_dir) holds the fixture, results.json
    and report.html (the HTML report) unless extra names another --report.

    recurrence: "gdn" (the default) or "kda" (Kimi Delta Attention: fn takes
    g per key channel, (B, T, Hv, Dk); run --recurrence kda, judged against
    the KDA oracle).  A KDA call runs `shapes` (default DEFAULT_SHAPES with
    SHAPE_DEFAULTS; the GDN grids are not KDA cases, so grid= is refused),
    gradients as for GDN (jax.vjp of fn, and inside shard_map of the
    context-parallel function, judged against the KDA VJP oracle with dg per
    channel); audit=True refused (ValueError)."""
    if recurrence not in ("gdn", "kda"):
        raise ValueError(f"assert_gdn_parity: recurrence={recurrence!r}: expected 'gdn' or 'kda'")
    if recurrence == "kda":
        shapes, grad = _kda_call(shapes, grid, grad, audit)
    if cp is False and cp_fn is not None:
        raise ValueError("assert_gdn_parity: cp=False judges the stock function alone; "
                         "drop cp_fn or cp=False")
    if cp is False:
        if devices is not None and any(int(d) > 1 for d in _as_list(devices)):
            raise ValueError(f"assert_gdn_parity: cp=False judges the stock function alone on one "
                             f"device; devices={tuple(devices)!r} asks for more (drop one of them)")
        devices = (1,)
    given = dict(devices=devices, chunk=chunk, h0=h0, dtype=dtype, gates=gates, seed=seed, grad=grad)
    if shapes is not None:
        o = {k: (v if v is not None else SHAPE_DEFAULTS[k]) for k, v in given.items()}
        cases = [(_shape(s), _entry_runs({"shape": _shape(s)}, "shapes", o)[0], None) for s in shapes]
    else:
        cases = grid_runs(grid, given)
    _check_lengths(cases, shapes is not None)
    if cp is not False and cp_fn is None:
        _require_cp(fn, signature, cases)
    with _Callables(fn, cp_fn) as calls:
        fixed = ["--impl", calls.spec("impl"), "--signature", signature, "--fsdp", str(fsdp)]
        if cp_fn is not None:
            fixed += ["--cp", calls.spec("cp")]
        if cp_prefix:
            fixed += ["--cp-prefix", cp_prefix]
        if cp_axis:
            fixed += ["--cp-axis", cp_axis]
        if recurrence != "gdn":
            fixed += ["--recurrence", recurrence]
        if audit:
            fixed += ["--audit", *map(str, audit_options)]
        lines = []
        if cp is False:
            lines.append("NOTE (cp=False: the stock function alone, on 1 device; nothing "
                         "context-parallel was tested)")
        for label, runs, why in cases:
            if runs is None:
                lines.append(f"{label}: SKIP ({why})")
                continue
            for args in runs:
                args, note = _grad_for_dtype(args, explicit=grad is not None)
                if note:
                    lines.append(f"{label}: NOTE ({note})")
                lines += _run_one(label, calls, fixed + args, extra, out_dir, timeout,
                                  _wanted(fn, cp_fn, signature))
    return lines


def _kda_call(shapes, grid, grad, audit):
    """(shapes, grad) of a recurrence="kda" call; ValueError for what the
    KDA path does not run (a grid, the audit)."""
    if grid != DEFAULT_GRID and shapes is None:
        raise ValueError(f"assert_gdn_parity: recurrence='kda' runs shapes=, not grid={grid!r} "
                         "(the grids hold GDN cases)")
    if audit:
        raise ValueError("assert_gdn_parity: recurrence='kda': the audit knows GDN only "
                         "(drop audit=True)")
    return (shapes if shapes is not None else DEFAULT_SHAPES), grad


def _arg(args, opt):
    return args[args.index(opt) + 1] if opt in args else None


def _asked_devices(cases) -> list[int]:
    """Every device count above 1 some run of `cases` asks for, sorted."""
    out = set()
    for _, runs, _ in cases:
        for args in runs or ():
            out |= {int(d) for d in (_arg(args, "--devices") or "1,2,4,8").split(",") if int(d) > 1}
    return sorted(out)


def _takes_cp(fn, signature):
    """Whether fn receives a mesh axis name under `signature` (True, False),
    or None when that cannot be told here (the run then decides: it refuses
    device counts it would not run)."""
    from .signatures import get_adapter
    try:
        f = fn
        if isinstance(fn, str):
            from .args import load_function
            f = load_function(fn, "fn")
        return bool(get_adapter(signature).takes_cp(f))
    except Exception:  # noqa: BLE001  an unloadable function is the run's to report
        return None


def _require_cp(fn, signature, cases):
    """AssertionError when the cases ask for devices above 1 and nothing
    context-parallel would run on them: fn takes no cp_axis and there is no
    cp_fn.  Without this the stock function alone passes a context-parallel
    gate (only it runs, on one device)."""
    many = _asked_devices(cases)
    if not many or _takes_cp(fn, signature) is not False:
        return
    name = fn if isinstance(fn, str) else show(getattr(fn, "__qualname__", None) or repr(fn))
    raise AssertionError(
        f"gdn parity: nothing context-parallel was tested: {name} takes no cp_axis (or "
        f"axis_name) parameter and no cp_fn was given, so the device counts asked for "
        f"({', '.join(map(str, many))}) would not run.  Pass cp_fn= (the per-shard function, "
        "called inside shard_map with cp_axis= the mesh axis name), or cp=False to judge the "
        "stock function alone on one device")


def _lcm(a, b):
    import math
    return a * b // math.gcd(a, b)


def _check_lengths(cases, ad_hoc: bool):
    """ValueError, in this call's terms, for a run whose T is not a multiple
    of one of its device counts (shard_map gives each device T/D tokens),
    with the nearest valid lengths."""
    for label, runs, _ in cases:
        for args in runs or ():
            shape, devs = _arg(args, "--shape"), _arg(args, "--devices")
            if not shape or not devs:
                continue
            T = int(shape.split(",")[1])
            ds = sorted({int(d) for d in devs.split(",")})
            bad = [d for d in ds if T % d]
            if not bad:
                continue
            m = 1
            for d in ds:
                m = _lcm(m, d)
            lo, hi = (T // m) * m, (T // m + 1) * m
            near = f"T = {lo} or {hi}" if lo else f"T = {hi}"
            where = (f"shapes: {label} has T = {T}" if ad_hoc else f"{label}: T = {T}")
            raise ValueError(f"assert_gdn_parity: {where}, not a multiple of devices "
                             f"{', '.join(map(str, bad))} (each device gets T/D tokens); "
                             f"take {near} (multiples of {m}), or devices= without "
                             f"{', '.join(map(str, bad))}")


VERDICT_HEAD = "gdn-parity-jax: the captured outputs"
# What run.py prints before the message of a function under test that raised.
FUNCTION_FAILED = "the function under test failed"


def verdict_block(stdout: str) -> list[str]:
    """The verdict lines of a run's output: only those the front end prints
    under its heading, after every function ran (a line the function under
    test prints itself, "PASS ..." or not, is never one)."""
    lines = stdout.split("\n")
    heads = [i for i, ln in enumerate(lines) if ln.startswith(VERDICT_HEAD)]
    if not heads:
        return []
    out = []
    for ln in lines[heads[-1] + 1:]:
        if not ln.startswith("  "):
            break
        if ln.strip().startswith(("PASS ", "FAIL ", "MISSING ", "note: ", "audit: PASS ",
                                  "audit: FAIL ")):
            out.append(ln.strip())
    return out


def _shown_lines(s: str) -> str:
    """Text of the run's own output for an AssertionError: each line escaped
    (control characters, a stray carriage return; text.py)."""
    return "\n".join(show(ln) for ln in s.split("\n"))


def _grad_for_dtype(args, explicit: bool):
    """(args, None), or without --grad and a note when gradients were asked
    by default of a run in bfloat16 (the C side has no bfloat16 backward)."""
    if "--grad" not in args or explicit:
        return args, None
    bf16 = [o for o in ("--dtype", "--input-dtype")
            if o in args and args[args.index(o) + 1] == "bfloat16"]
    if not bf16:
        return args, None
    return ([a for a in args if a != "--grad"],
            f"{bf16[0]} bfloat16: gradients not judged (float32 only); the forward is")


class _Callables:
    """The functions under test as the run's process gets them: by name, or
    (ship.py) in this process, or serialized into a private folder that
    lives as long as this object."""

    def __init__(self, fn, cp_fn):
        self.fns = {k: f for k, f in (("impl", fn), ("cp", cp_fn)) if f is not None}
        self.names = {k: ship.importable_spec(f) for k, f in self.fns.items()}
        self.unnamed = {k: f for k, f in self.fns.items() if self.names[k] is None}
        self.folder = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        if self.folder:
            shutil.rmtree(self.folder, ignore_errors=True)

    def spec(self, slot):
        return self.names[slot] or ship.slot_spec(slot)

    def in_process(self, args) -> bool:
        return bool(self.unnamed) and ship.devices_here() >= ship.devices_needed(args)

    def env(self):
        """The run's environment; the callables' folder made (and filled) on
        the first call: unnamed ones serialized, named ones' fingerprints and
        by-value copies (ship.dump_named) for the run to verify its import.
        A refusal (ship.ShipError) leaves no folder."""
        env = dict(os.environ)
        env.pop("XLA_FLAGS", None)
        env["PYTHONPATH"] = os.pathsep.join(p for p in sys.path if p)
        if self.folder is None:
            folder = tempfile.mkdtemp(prefix="gdn-parity-shipped-")
            try:
                for slot, f in self.fns.items():
                    if self.names[slot] is None:
                        ship.dump(f, slot, folder, {"impl": "fn", "cp": "cp_fn"}[slot])
                    elif not isinstance(f, str):
                        ship.dump_named(f, slot, folder)
            except BaseException:
                shutil.rmtree(folder, ignore_errors=True)
                raise
            self.folder = folder
        env[ship.SHIP_ENV] = self.folder
        return env

    def judged(self):
        """What the last run judged for each slot (SLOT.judged, written by
        the run's process), as lines."""
        out = []
        for slot, f in self.fns.items():
            path = os.path.join(self.folder, f"{slot}.judged") if self.folder else None
            if path and os.path.isfile(path):
                with open(path, encoding="utf-8", errors="replace") as fh:
                    out.append(f"JUDGED {'--impl' if slot == 'impl' else '--cp'} {show(fh.read())}")
                os.unlink(path)
        return out


def _run_one(label, calls, args, extra, out_dir, timeout, want=None):
    in_process = calls.in_process([*args, *map(str, extra)])
    env = None if in_process else calls.env()  # a refused callable: before any folder is made
    out = out_dir or tempfile.mkdtemp(prefix="gdn-parity-")
    os.makedirs(out, exist_ok=True)
    extra = list(map(str, extra))
    if "--report" not in extra and "--recurrence" not in args:  # the kept folder holds the HTML report too
        extra += ["--report", os.path.join(out, "report.html")]
    argv = [*args, "--out", out, *extra]
    results = results_doc.results_path(argv)
    before = results_doc.stamp(results)
    if in_process:
        rc, stdout = inprocess.run_in_process(argv, calls.unnamed)
        stderr = stdout
    else:
        cmd = [sys.executable, "-m", "gdn_parity_jax", "run", *argv]
        r = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=timeout,
                           errors="surrogateescape")
        rc, stdout, stderr = r.returncode, r.stdout, r.stderr
    judged = [f"{label}: {j}" for j in calls.judged()]
    # verdict lines only from a run that got to gdn-parity check's verdict
    verdicts = verdict_block(stdout) if rc in (0, 1) else []
    if rc == 0:  # an exit status proves nothing: the results document must say PASS
        try:
            results_doc.check(results, before, out, *(want or _wanted(None, None, "maxtext"))(argv))
        except results_doc.RunNotJudged as exc:
            raise AssertionError("\n".join([f"gdn parity, {label}: no verdict", show(exc), *judged,
                                            f"(fixture and reports kept in {out})"])) from None
    if rc != 0:
        what = {1: "out of tolerance", 2: "bad usage or input", 3: "internal error"}.get(
            rc, f"exit {rc}")
        if rc == 3 and FUNCTION_FAILED in stderr:
            what = "the function under test raised an exception (its error, not the tool's)"
        detail = "\n".join(verdicts) or _shown_lines(stderr.strip()[-4000:] or stdout.strip()[-4000:])
        raise AssertionError(f"gdn parity, {label}: {what}\n{detail}\n" + "".join(j + "\n" for j in judged)
                             + f"(fixture and reports kept in {out})")
    if out_dir is None:
        shutil.rmtree(out, ignore_errors=True)
    return [f"{label}: {v}" for v in verdicts] + judged


def _wanted(fn, cp_fn, signature):
    """A function argv -> (expected outputs, cp known, cp names) for
    results_doc.check: the stock output of the signature's framework, and the
    cp outputs when a context-parallel function runs (cp_fn given, or fn
    takes cp_axis; unknown for a function given by name)."""
    framework, runs_cp = "jax", True if cp_fn is not None else None
    try:
        from .signatures import get_adapter
        adapter = get_adapter(signature)
        framework = adapter.framework
        if runs_cp is None and fn is not None and not isinstance(fn, str):
            runs_cp = bool(adapter.takes_cp(fn))
    except Exception:  # noqa: BLE001  a bad signature or a function inspect cannot read: the run says
        pass
    return lambda argv: results_doc.expected_outputs(argv, framework, runs_cp)
