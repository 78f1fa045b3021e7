"""The `run` command, step by step (see cli.py for the overview)."""

from __future__ import annotations

import os
import sys
import tempfile

import numpy as np

from . import captured
from . import gdn_fixture_capture as cap
from . import grads as gradmod
from . import guard, paths
from .args import GATES, PASS_THROUGH, _int_list, load_function, parse_shape, set_host_devices
from .common import EXIT_INTERNAL, EXIT_USAGE, VERSION, UsageError, _Exit
from .text import show
from .tools import find_tools

PRODUCER = f"gdn-parity-jax {VERSION}"


def _say(args, msg):
    if not args.quiet:
        print(f"gdn-parity-jax: {show(msg)}", flush=True)


def _cp_axis(s: str):
    names = tuple(n for n in s.split(",") if n)
    if not names or any(n not in ("fsdp", "context") for n in names):
        raise UsageError(f"--cp-axis {s!r}: expected context or fsdp,context")
    return names[0] if len(names) == 1 else names


def make_inputs(args, tools, workdir):
    """Returns (fixture dict as read_fixture gives it, chunk size)."""
    if args.from_fixture:
        if args.shape or args.h0 or args.key_heads or args.dv:
            raise UsageError("--from-fixture takes its shapes and h0 from the file: "
                             "drop --shape, --key-heads, --dv, --h0")
        path = args.from_fixture
        if getattr(args, "rec", "gdn") != "gdn":  # gdn-fixture verify reads GDN files only
            from .run_recur import check_file
            check_file(path)
            r = None
        else:
            r = tools.run("fixture", ["verify", path], capture_output=True, text=True)
        if r is not None and r.returncode not in (0, 1):  # 1: stale oracle only; we recompute it anyway
            raise UsageError(f"--from-fixture {show(path)}: {(r.stderr or r.stdout).strip()}")
    else:
        if not args.shape:
            raise UsageError("give --shape B,T,H,D or --from-fixture F.h5")
        B, T, H, D = parse_shape(args.shape)
        path = os.path.join(workdir, "inputs.h5")
        cmd = ["synth", "--shape", args.shape, "--out", path, "--seed", str(args.seed),
               "--chunk-size", str(args.chunk or 64)]
        if getattr(args, "rec", "gdn") != "gdn":
            cmd += ["--recurrence", args.rec]
        if args.key_heads:
            cmd += ["--key-heads", str(args.key_heads)]
        if args.dv:
            cmd += ["--dv", str(args.dv)]
        if args.h0:
            cmd.append("--h0")
        cmd += GATES[args.gates]
        if args.input_dtype == "bfloat16":
            cmd += ["--bf16", "q,k,v,beta"]
        r = tools.run("fixture", cmd, capture_output=True, text=True)
        if r.returncode:
            code = EXIT_USAGE if r.returncode == 2 else EXIT_INTERNAL
            raise _Exit(code, f"gdn-fixture synth: {(r.stderr or r.stdout).strip()}")
    fx = cap.read_fixture(path)
    fx["path"] = path
    chunk = args.chunk or int(fx["attrs"]["chunk_size"])
    q = fx["inputs"]["q"]
    scale = fx["attrs"].get("scale")
    if scale is not None and float(scale) != float(np.float64(q.shape[3]) ** -0.5):
        raise UsageError(f"{path}: scale {scale} is not Dk^-1/2; the functions judged here take "
                         "no scale parameter")
    return fx, chunk


def as_arrays(fx):
    """The fixture's inputs as numpy arrays a function can take (bfloat16 as
    ml_dtypes.bfloat16, as JAX gives and takes them)."""
    import ml_dtypes
    out = {}
    for n, a in fx["inputs"].items():
        out[n] = a.view(ml_dtypes.bfloat16) if fx["inputs_bf16"].get(n) else a
    out.setdefault("h0", None)
    return out


def run(args) -> int:
    from .outcome import exit_status  # one path with the audit's
    return exit_status(lambda: _run(args))


def _plans(args):
    from .mesh import MeshPlan
    devices = _int_list(args.devices, "--devices")
    if args.fsdp < 1:
        raise UsageError("--fsdp must be >= 1")
    cp_axis = _cp_axis(args.cp_axis)
    if args.layout == "global" and (args.fsdp != 1 or cp_axis != "context"):
        raise UsageError("--layout global: a 1-D context mesh only (no --fsdp, --cp-axis context)")
    if args.fsdp == 1 and cp_axis != "context":  # a tuple needs the fsdp axis
        raise UsageError("--cp-axis fsdp,context needs a 2-D mesh: give --fsdp F > 1")
    return [MeshPlan(d, args.fsdp, cp_axis) for d in dict.fromkeys(devices)]


def _run(args) -> int:
    # XLA must learn how many host devices to make before jax is imported.
    devices = _int_list(args.devices, "--devices")
    # Recorded only when declared; the audit's minimum counts assume a schedule.
    args.declared_prefix, args.cp_prefix = args.cp_prefix, args.cp_prefix or "associative-scan"
    need = max(d * (args.fsdp if args.cp_axis == "context" else 1) for d in devices)
    set_host_devices(max(8, need))
    from .signatures import SignatureError, get_adapter

    from . import run_recur
    args.rec = run_recur.resolve(args)
    tools = find_tools(args.bin_dir)
    paths.check_run(args, early_fixture_path(args))  # every file, before any JAX work
    try:
        adapter = get_adapter(args.signature)
        impl = load_function(args.impl, "--impl")
        cp_fn = load_function(args.cp, "--cp") if args.cp else None
        if cp_fn is None and guard.call(f"--impl {args.impl}", lambda: adapter.takes_cp(impl)):
            cp_fn = impl  # upstream's later convention: the stock function with cp_axis=
        guard.call(f"--impl {args.impl}", lambda: adapter.check(impl, cp=False), (SignatureError,))
        if cp_fn is not None:
            guard.call(f"--cp {args.cp or args.impl}", lambda: adapter.check(cp_fn, cp=True),
                       (SignatureError,))
    except SignatureError as exc:
        raise UsageError(str(exc)) from None
    if cp_fn is None:
        _refuse_unrun_devices(args, devices)
    plans = _plans(args) if cp_fn is not None else []

    with tempfile.TemporaryDirectory(prefix="gdn-parity-jax-") as work:
        return _run_on_inputs(args, tools, adapter, impl, cp_fn, plans, devices, work)


def _refuse_unrun_devices(args, devices):
    """Without a context-parallel function only the stock one runs, on one
    device: a device count above 1 asked for (--devices, default 1,2,4,8)
    would be dropped and the run pass with nothing context-parallel tested;
    refused instead (exit 2)."""
    many = [d for d in dict.fromkeys(devices) if d > 1]
    if not many:
        return
    asked = "the default --devices 1,2,4,8" if args.devices == "1,2,4,8" else f"--devices {args.devices}"
    raise UsageError(
        f"{asked}: --impl {args.impl} takes no cp_axis (or axis_name) parameter and no --cp "
        f"was given, so nothing would run on {', '.join(map(str, many))} devices: nothing "
        "context-parallel would be tested.  Give --cp MODULE:FUNCTION (the per-shard function, "
        "which receives the mesh axis name as cp_axis), or --devices 1 to judge the stock "
        "function alone")


def _run_on_inputs(args, tools, adapter, impl, cp_fn, plans, devices, work) -> int:
    import jax
    import jax.numpy as jnp

    from . import mesh as meshmod

    fx, chunk = make_inputs(args, tools, work)
    x = as_arrays(fx)
    B, T, Hk, Dk = x["q"].shape
    Hv, Dv = x["v"].shape[2], x["v"].shape[3]
    stem = args.name or paths.fixture_stem(B, T, Hk, Hv, Dk, Dv, chunk)
    path = os.path.join(args.out, stem + ".h5")
    paths.check_run(args, path)  # again with the inputs' shapes (a fixture's, now read)
    for p in plans:
        why = meshmod.plan_error(p, B, T, len(jax.devices()))
        if why:
            raise UsageError(why)
    l2 = bool(fx["attrs"]["l2norm_in_kernel"])
    cdt = {"float32": jnp.float32, "bfloat16": jnp.bfloat16}[args.dtype]
    platform = cap.platform_string(jax.devices()[0])

    ct = _cotangents(args, fx, x, adapter) if args.grad else None
    outputs = {}
    common = dict(matmul_precision=args.matmul_precision, compute_dtype=args.dtype,
                  platform=platform)

    def call_stock(xs):
        return adapter.call(impl, xs, chunk=chunk, l2norm=l2, compute_dtype=cdt)

    _say(args, f"{args.impl}: stock run on 1 device ({platform})")
    stock = f"{adapter.framework}_scan"
    o, ht = _guard(f"--impl {args.impl} (output {stock})", lambda: adapter.run_stock(call_stock, x))
    outputs[stock] = dict(o=o, ht=ht, implementation="scan", devices=1, **common)
    if ct is not None:
        torch_fn = adapter.framework == "torch"
        _say(args, f"{args.impl}: {'torch.autograd' if torch_fn else 'jax.vjp'} on 1 device")
        vjp = gradmod.vjp_torch if torch_fn else gradmod.vjp_stock
        outputs[stock]["grads"] = _guard(f"--impl {args.impl} (gradients of {stock})",
                                         lambda: vjp(call_stock, x, ct))

    for p in plans:
        def call_cp(xl, axis):
            return adapter.call(cp_fn, xl, chunk=chunk, l2norm=l2, compute_dtype=cdt, cp_axis=axis)
        _say(args, f"{args.cp or args.impl}: context parallel on {p.devices} devices ({p.describe()})")
        name, who = f"jax_cp_d{p.devices}", f"{'--cp' if args.cp else '--impl'} {args.cp or args.impl}"
        placed = meshmod.run_global if args.layout == "global" else meshmod.run_sharded
        o, ht = _guard(f"{who} (output {name}, each device's call)",
                       lambda: placed(call_cp, x, p, B))
        outputs[name] = dict(o=o, ht=ht, implementation="affine-prefix",
                             devices=p.devices, prefix=getattr(args, "declared_prefix", None), **common)
        if ct is not None:
            _say(args, f"{args.cp or args.impl}: jax.vjp through shard_map on {p.devices} devices")
            outputs[name]["grads"] = _guard(f"{who} (gradients of {name})",
                                            lambda: gradmod.vjp_sharded(call_cp, x, p, B, ct))

    os.makedirs(args.out, exist_ok=True)  # made only now: a refused run leaves no folder
    if args.rec != "gdn":
        from . import run_recur
        found = run_recur.write_fixture(path, fx["path"], outputs, ct)
        return run_recur.judge(args, tools, path, args.rec, chunk, T, devices, list(outputs), found)
    found = write_results(path, fx, chunk, outputs, ct)
    return judge(args, tools, path, chunk, T, devices, list(outputs), found)


def early_fixture_path(args):
    """The fixture's path as far as it is known before the inputs are read
    (--name, --shape, or the --from-fixture file's shapes); None if not."""
    if args.name:
        return os.path.join(args.out, args.name + ".h5")
    try:
        if args.from_fixture:
            if not os.path.isfile(args.from_fixture):  # a FIFO would block: check_run refuses it
                return None
            import h5py
            with h5py.File(args.from_fixture, "r") as f:
                q, v = f["inputs/q"].shape, f["inputs/v"].shape
                chunk = args.chunk or int(f.attrs["chunk_size"])
            B, T, Hk, Dk = q
            Hv, Dv = v[2], v[3]
        else:
            B, T, Hv, Dk = parse_shape(args.shape)
            Hk, Dv, chunk = args.key_heads or Hv, args.dv or Dk, args.chunk or 64
    except Exception:  # noqa: BLE001  unreadable or no shape: checked once the inputs are read
        return None
    return os.path.join(args.out, paths.fixture_stem(B, T, Hk, Hv, Dk, Dv, chunk) + ".h5")


def _cotangents(args, fx, x, adapter):
    """--grad: the fixture's cotangents when it has them, else drawn from
    --seed (grads.draw_cotangents); refuses what cannot be judged."""
    why = gradmod.refusal(x, args.dtype)
    if why is None and args.layout == "global":
        why = "--grad: --layout global runs the forward only (run --audit compiles its backward)"
    if why:
        raise UsageError(why)
    B, T, _, Dk = x["q"].shape
    Hv, Dv = x["v"].shape[2], x["v"].shape[3]
    has = fx.get("cotangents")
    if has:
        dht = has.get("dht") if x.get("h0") is not None else None
        return {"do": np.asarray(has["do"], np.float32),
                "dht": None if dht is None else np.asarray(dht, np.float32)}
    return gradmod.draw_cotangents(args.seed, B, T, Hv, Dk, Dv, with_dht=x.get("h0") is not None)


def _guard(what, thunk):
    """thunk() running user code `what`: anything it raises is its internal
    error (guard.FunctionError, exit 3) but a result of the wrong shape or
    dtype or a call the signature cannot make (exit 2, the message naming
    the output and what was given and expected)."""
    from .outcome import user_call  # one path with the audit's
    return user_call(what, thunk)


def write_results(path, fx, chunk, outputs, cotangents=None):
    """The fixture: inputs, every output and, with --grad, the cotangents and
    each output's gradients (schema v3).  Built under a temporary name in the
    same folder and renamed over `path` (through a symlink: its target) only
    when complete, so a refused gradient or a signal leaves no fixture
    half-written.  Returns {output: captured.findings} (notes on storage,
    non-finite values)."""
    from .signatures import to_numpy
    a = fx["attrs"]
    ins = {n: fx["inputs"][n] for n in fx["inputs"]}
    outs, grads, found = {}, {}, {}
    for name, spec in outputs.items():
        spec = dict(spec)
        g = spec.pop("grads", None)
        if g is not None:
            grads[name] = g
        notes = []
        for t in ("o", "ht"):
            spec[t], note = captured.store(to_numpy(spec.get(t)))
            if note:
                notes.append(f"{t} {note}")
        if spec["ht"] is not None and spec["ht"].dtype != np.float32:
            spec["ht"] = spec["ht"].astype(np.float32)  # bfloat16 -> float32 is exact
        outs[name] = spec
        found[name] = captured.findings(dict(spec, grads=g, notes=notes))
    target = paths.output_target("the fixture", path)
    stage = os.path.join(os.path.dirname(target) or ".", f".{os.path.basename(target)}.partial")
    try:
        cap.write_fixture(stage, ins, outs, source=a.get("source", "synthetic"), chunk_size=chunk,
                          l2norm_in_kernel=int(a["l2norm_in_kernel"]), scale=a.get("scale"),
                          model=a.get("model"), layer=a.get("layer"), notes=a.get("notes"),
                          producer=PRODUCER, created="")
        if cotangents is not None:
            cap.write_cotangents(stage, cotangents["do"], cotangents.get("dht"))
            for name, g in grads.items():
                cap.write_gradients(stage, name, g)
        os.replace(stage, target)
    finally:
        if os.path.exists(stage):
            os.unlink(stage)
    return found


def _audit_for_check(args, cmd):
    """run --audit: the audit of the run's functions (audit.py; its lines
    printed, its document written as audit.json in --out), handed to
    `gdn-parity check --audit`, which embeds it in the results and every
    report and fails the run on its FAIL.  Returns the document, or None
    without --audit; an audit that could not run ends the run (its status)."""
    if not getattr(args, "audit", False):
        return None
    import json

    from . import audit as auditmod
    status = auditmod.from_run(args)
    if status not in (0, 1):
        raise _Exit(status, "run --audit: the audit did not complete (its message is above)")
    path = os.path.join(args.out, "audit.json")
    cmd += ["--audit", path]
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def _audit_lines(doc):
    """The audit's check lines for the verdict block (audit_judge.text)."""
    if doc is None:
        return []
    from .audit_judge import text
    return [show(ln) for ln in text(doc, quiet=True) if ln.startswith(("audit: PASS ", "audit: FAIL "))]


def judge(args, tools, path, chunk, T, devices, names, found=None) -> int:
    """gdn-fixture regen, gdn-parity check, the verdict lines; the exit
    status: check's, but never 0 without a readable results document, nor
    with a non-finite value in any output."""
    r = tools.run("fixture", ["regen", path, "--force"], capture_output=True, text=True)
    if r.returncode:
        raise _Exit(EXIT_INTERNAL if r.returncode == 3 else EXIT_USAGE,
                    f"gdn-fixture regen {show(path)}: {(r.stderr or r.stdout).strip()}")
    n_chunks = -(-T // chunk)
    tokens = tools.supports("--shard")
    ours = [d for d in devices if (T % d == 0 if tokens else d <= n_chunks)] or [1]
    cmd = ["check", "--fixture", path, "--chunk", str(chunk),
           "--devices", ",".join(map(str, ours)), "--dtype", args.dtype,
           "--matmul-precision", args.matmul_precision]
    if tokens:
        cmd += ["--shard", "tokens"]
    results = args.json or os.path.join(args.out, "results.json")
    if not args.json:
        cmd += ["--json", results]
    for opt, val in PASS_THROUGH:
        v = getattr(args, opt[2:].replace("-", "_"))
        if val and v is not None:
            cmd += [opt, str(v)]
        elif not val and v:
            cmd.append(opt)
    audit_doc = _audit_for_check(args, cmd)
    sys.stdout.flush()
    r = tools.run("parity", cmd)
    code = r.returncode
    if code in (0, 1):
        from .verdict import ResultsError, verdict_lines
        try:
            lines, ok = verdict_lines(results, names, found)
        except ResultsError as exc:
            raise _Exit(EXIT_INTERNAL, f"gdn-parity check exited {code} but {exc}") from None
        print("gdn-parity-jax: the captured outputs (worst check over the cases above):")
        for line in lines + _audit_lines(audit_doc):
            print("  " + line)
        if code == 0 and not ok:  # a non-finite or missing output never passes
            code = 1
    print(f"gdn-parity-jax: {'PASS' if code == 0 else 'FAIL'} (exit {code}); "
          f"fixture {show(path)}, results {show(results)}", flush=True)
    return code
