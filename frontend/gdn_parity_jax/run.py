"""The `run` command, step by step (see cli.py for the overview)."""

from __future__ import annotations

import os
import sys
import tempfile

import numpy as np

from . import gdn_fixture_capture as cap
from . import grads as gradmod
from .cli import (EXIT_INTERNAL, EXIT_USAGE, PASS_THROUGH, VERSION, UsageError, _int_list,
                  load_function, parse_shape, set_host_devices)
from .tools import ToolError, find_tools

PRODUCER = f"gdn-parity-jax {VERSION}"


def _say(args, msg):
    if not args.quiet:
        print(f"gdn-parity-jax: {msg}", flush=True)


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
        r = tools.run("fixture", ["verify", path], capture_output=True, text=True)
        if r.returncode not in (0, 1):  # 1: stale oracle only; we recompute it anyway
            raise UsageError(f"--from-fixture {path}: {(r.stderr or r.stdout).strip()}")
    else:
        if not args.shape:
            raise UsageError("give --shape B,T,H,D or --from-fixture F.h5")
        B, T, H, D = parse_shape(args.shape)
        path = os.path.join(workdir, "inputs.h5")
        cmd = ["synth", "--shape", args.shape, "--out", path, "--seed", str(args.seed),
               "--chunk-size", str(args.chunk or 64)]
        if args.key_heads:
            cmd += ["--key-heads", str(args.key_heads)]
        if args.dv:
            cmd += ["--dv", str(args.dv)]
        if args.h0:
            cmd.append("--h0")
        if args.gates == "slow":
            cmd.append("--slow-gates")
        if args.input_dtype == "bfloat16":
            cmd += ["--bf16", "q,k,v,beta"]
        r = tools.run("fixture", cmd, capture_output=True, text=True)
        if r.returncode:
            code = EXIT_USAGE if r.returncode == 2 else EXIT_INTERNAL
            raise _Exit(code, f"gdn-fixture synth: {(r.stderr or r.stdout).strip()}")
    fx = cap.read_fixture(path)
    chunk = args.chunk or int(fx["attrs"]["chunk_size"])
    q = fx["inputs"]["q"]
    scale = fx["attrs"].get("scale")
    if scale is not None and float(scale) != float(np.float64(q.shape[3]) ** -0.5):
        raise UsageError(f"{path}: scale {scale} is not Dk^-1/2; the functions judged here take "
                         "no scale parameter")
    return fx, chunk


class _Exit(Exception):
    def __init__(self, code, msg):
        super().__init__(msg)
        self.code = code


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
    try:
        return _run(args)
    except _Exit as exc:
        print(f"gdn-parity-jax: {exc}", file=sys.stderr)
        return exc.code
    except ToolError as exc:
        print(f"gdn-parity-jax: {exc}", file=sys.stderr)
        return EXIT_USAGE


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
    need = max(d * (args.fsdp if args.cp_axis == "context" else 1) for d in devices)
    set_host_devices(max(8, need))
    from .signatures import SignatureError, get_adapter

    tools = find_tools(args.bin_dir)
    os.makedirs(args.out, exist_ok=True)
    try:
        adapter = get_adapter(args.signature)
        impl = load_function(args.impl, "--impl")
        cp_fn = load_function(args.cp, "--cp") if args.cp else None
        if cp_fn is None and adapter.takes_cp(impl):
            cp_fn = impl  # upstream's later convention: the stock function with cp_axis=
        adapter.check(impl, cp=False)
        if cp_fn is not None:
            adapter.check(cp_fn, cp=True)
    except SignatureError as exc:
        raise UsageError(str(exc)) from None
    plans = _plans(args) if cp_fn is not None else []

    with tempfile.TemporaryDirectory(prefix="gdn-parity-jax-") as work:
        return _run_on_inputs(args, tools, adapter, impl, cp_fn, plans, devices, work)


def _run_on_inputs(args, tools, adapter, impl, cp_fn, plans, devices, work) -> int:
    import jax
    import jax.numpy as jnp

    from . import mesh as meshmod

    fx, chunk = make_inputs(args, tools, work)
    x = as_arrays(fx)
    B, T, Hk, Dk = x["q"].shape
    Hv, Dv = x["v"].shape[2], x["v"].shape[3]
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
    o, ht = _guard(args.impl, lambda: adapter.run_stock(call_stock, x))
    outputs[f"{adapter.framework}_scan"] = dict(
        o=o, ht=ht, implementation="scan", devices=1, **common)
    if ct is not None:
        _say(args, f"{args.impl}: jax.vjp on 1 device")
        outputs[f"{adapter.framework}_scan"]["grads"] = _guard(
            args.impl, lambda: gradmod.vjp_stock(call_stock, x, ct))

    for p in plans:
        def call_cp(xl, axis):
            return adapter.call(cp_fn, xl, chunk=chunk, l2norm=l2, compute_dtype=cdt, cp_axis=axis)
        _say(args, f"{args.cp or args.impl}: context parallel on {p.devices} devices ({p.describe()})")
        placed = meshmod.run_global if args.layout == "global" else meshmod.run_sharded
        o, ht = _guard(args.cp or args.impl, lambda: placed(call_cp, x, p, B))
        outputs[f"jax_cp_d{p.devices}"] = dict(o=o, ht=ht, implementation="affine-prefix",
                                               devices=p.devices, prefix=args.cp_prefix, **common)
        if ct is not None:
            _say(args, f"{args.cp or args.impl}: jax.vjp through shard_map on {p.devices} devices")
            outputs[f"jax_cp_d{p.devices}"]["grads"] = _guard(
                args.cp or args.impl, lambda: gradmod.vjp_sharded(call_cp, x, p, B, ct))

    stem = args.name or (f"gdn-B{B}-T{T}-Hk{Hk}-Hv{Hv}-Dk{Dk}-Dv{Dv}-C{chunk}")
    path = os.path.join(args.out, stem + ".h5")
    write_results(path, fx, chunk, outputs, ct)
    return judge(args, tools, path, chunk, T, devices, list(outputs))


def _cotangents(args, fx, x, adapter):
    """--grad: the fixture's cotangents when it has them, else drawn from
    --seed (grads.draw_cotangents); refuses what cannot be judged."""
    why = gradmod.refusal(x, args.dtype)
    if why is None and args.layout == "global":
        why = "--grad: --layout global runs the forward only (run --audit compiles its backward)"
    if why is None and adapter.framework != "jax":
        why = f"--grad: {adapter.framework} functions are not differentiated here (JAX only)"
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
    try:
        return thunk()
    except (UsageError, _Exit):
        raise
    except Exception as exc:  # noqa: BLE001  the function under test failed
        import traceback
        traceback.print_exc()
        raise _Exit(EXIT_INTERNAL, f"{what} raised {type(exc).__name__}: {exc}") from None


def write_results(path, fx, chunk, outputs, cotangents=None):
    """The fixture: inputs, every output and, with --grad, the cotangents and
    each output's gradients (schema v3).  Built under a temporary name in the
    same folder and renamed over `path` only when complete, so a refused
    gradient leaves no fixture half-written."""
    from .signatures import to_numpy
    a = fx["attrs"]
    ins = {n: fx["inputs"][n] for n in fx["inputs"]}
    outs, grads = {}, {}
    for name, spec in outputs.items():
        spec = dict(spec)
        if spec.get("grads") is not None:
            grads[name] = spec.pop("grads")
        spec.pop("grads", None)
        spec["o"] = to_numpy(spec["o"])
        spec["ht"] = to_numpy(spec.get("ht"))
        if spec["ht"] is not None and spec["ht"].dtype != np.float32:
            spec["ht"] = spec["ht"].astype(np.float32)  # bfloat16 -> float32 is exact
        outs[name] = spec
    stage = os.path.join(os.path.dirname(path) or ".", f".{os.path.basename(path)}.partial")
    try:
        cap.write_fixture(stage, ins, outs, source=a.get("source", "synthetic"), chunk_size=chunk,
                          l2norm_in_kernel=int(a["l2norm_in_kernel"]), scale=a.get("scale"),
                          model=a.get("model"), layer=a.get("layer"), notes=a.get("notes"),
                          producer=PRODUCER, created="")
        if cotangents is not None:
            cap.write_cotangents(stage, cotangents["do"], cotangents.get("dht"))
            for name, g in grads.items():
                cap.write_gradients(stage, name, g)
        os.replace(stage, path)
    finally:
        if os.path.exists(stage):
            os.unlink(stage)


def judge(args, tools, path, chunk, T, devices, names) -> int:
    r = tools.run("fixture", ["regen", path, "--force"], capture_output=True, text=True)
    if r.returncode:
        raise _Exit(EXIT_INTERNAL if r.returncode == 3 else EXIT_USAGE,
                    f"gdn-fixture regen {path}: {(r.stderr or r.stdout).strip()}")
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
    sys.stdout.flush()
    r = tools.run("parity", cmd)
    if r.returncode in (0, 1) and os.path.exists(results):
        from .verdict import verdict_lines
        lines, _ = verdict_lines(results, names)
        print("gdn-parity-jax: the captured outputs (worst check over the cases above):")
        for line in lines:
            print("  " + line)
    print(f"gdn-parity-jax: {'PASS' if r.returncode == 0 else 'FAIL'} (exit {r.returncode}); "
          f"fixture {path}, results {results}", flush=True)
    return r.returncode
