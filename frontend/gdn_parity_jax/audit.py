"""The `audit` command: what a context-parallel function moves, keeps and
computes per device, read from its compiled programs.

    gdn-parity-jax audit --impl MODULE:FUNCTION [--cp MODULE:FUNCTION]
        --shape B,T,H,D [--lengths T1,T2,T3] --devices 1,2,4,8 [--json F] ...

For the stock function (one device) and the context-parallel function on a
mesh of D devices for each D, forward and forward + backward (``jax.vjp``
through ``shard_map``, the program ``run --grad`` runs), at each length T:
lower and compile (nothing is executed: the inputs are abstract), then read
the compiled module's collectives (gdn_parity_jax.hlo), ``memory_analysis()``
and ``cost_analysis()``.  The judging (fits, checks, memory at scale) is
gdn_parity_jax.audit_judge; the document written is docs/audit-json.md.

Layouts: ``shard_map`` (default) calls the per-shard function as ``run``
does (gdn_parity_jax.mesh.sharded_fn); ``global`` calls the function with
globally shaped arrays under ``jit`` with the inputs sharded over the
context axis and the mesh set (``jax.set_mesh``), as a model layer is
called: GSPMD then chooses the collectives.

Exit status as everywhere: 0 every check PASS, 1 a check FAILs, 2 bad usage
or input, 3 internal error (including a function that raises while traced).
"""

from __future__ import annotations

import functools
import json
import math
import os
import time

from .args import _int_list, load_function, parse_shape
from .common import VERSION, UsageError

SCHEMA, SCHEMA_VERSION = "gdn-parity-audit", 1
NOTE = ("XLA-on-CPU buffer assignment is not a TPU's: absolute bytes differ per platform; "
        "the growth law in T and D is what carries over")
# Named heads (--model-heads): (Hk, Hv, D).
MODEL_HEADS = {"qwen3.5": (16, 32, 128), "qwen3-next": (16, 32, 128)}
GIB = 1 << 30
# Named accelerators (--hbm, --must-fit): memory per chip in bytes.
CHIPS = {"v5e": 16 * GIB, "v6e": 32 * GIB, "v5p": 95 * GIB, "h100": 80 * GIB, "h200": 141 * GIB}


def add_parser(sub):
    """The `audit` subcommand's options (cli.py calls this)."""
    a = sub.add_parser("audit", help="what a context-parallel function moves, keeps and computes "
                       "per device (compiled programs, no execution)")
    add_function_options(a)
    a.add_argument("--shape", required=True, help="B,T,H,D (T: the default lengths' base)")
    a.add_argument("--key-heads", type=int, help="Hk (default H)")
    a.add_argument("--dv", type=int, help="Dv (default D)")
    a.add_argument("--chunk", type=int, default=64, help="chunk size C (default 64)")
    a.add_argument("--devices", default="1,2,4,8", help="device counts D (two or more)")
    a.add_argument("--dtype", default="float32", choices=("float32", "bfloat16"),
                   help="compute dtype passed to the function")
    a.add_argument("--input-dtype", default="float32", choices=("float32", "bfloat16"))
    a.add_argument("--h0", action="store_true", help="the inputs have an initial state")
    a.add_argument("--l2norm", action="store_true", help="the kernel L2-normalises q and k")
    a.add_argument("--json", help="write the audit document here (docs/audit-json.md)")
    a.add_argument("--quiet", action="store_true", help="only the check lines and the verdict")
    add_limit_options(a)
    return a


def add_function_options(a):
    a.add_argument("--impl", required=True, help="MODULE:FUNCTION, the stock function")
    a.add_argument("--cp", help="MODULE:FUNCTION, the context-parallel function "
                   "(default: --impl when it takes cp_axis)")
    a.add_argument("--signature", default="maxtext", help="maxtext (default), or FILE.json (JAX)")
    a.add_argument("--cp-prefix", default="associative-scan",
                   choices=("sequential", "associative-scan", "hillis-steele"),
                   help="the declared prefix schedule (the affine minimum's rounds)")


def add_limit_options(a):
    """Options shared with `run --audit`."""
    a.add_argument("--lengths", help="sequence lengths T1,T2,... (two or more; default T,2T,4T, T rounded up to "
                   "a multiple of every D x chunk with two chunks per shard)")
    a.add_argument("--passes", default="forward,backward",
                   help="forward, backward or forward,backward (default): the programs compiled")
    a.add_argument("--layout", default="shard_map", choices=("shard_map", "global"),
                   help="shard_map: the per-shard function as run calls it; global: globally "
                   "shaped arrays under jit, inputs sharded over the context axis")
    a.add_argument("--model-heads", help="qwen3.5, qwen3-next or Hk,Hv,D: memory at scale "
                   "compiled at these heads (default: the audited heads)")
    a.add_argument("--hbm", help="BYTES (an accelerator 'hbm' of that size) or a chip name "
                   f"(the table limited to it; one of {', '.join(CHIPS)})")
    a.add_argument("--max-residual-bytes-per-token", type=float,
                   help="FAIL when the backward temp bytes per local token exceed this")
    a.add_argument("--max-work-overhead", type=float,
                   help="FAIL when the cp function's work per local token exceeds this many times "
                   "the stock function's (at any D >= 2)")
    a.add_argument("--must-fit", help="T@CHIP: FAIL when T tokens do not fit per device on CHIP "
                   "(a chip name, hbm, or a byte count) at the largest D")


class Setup:
    """The audited functions and shapes, resolved from the options."""

    def __init__(self, args, shape, lengths, devices, passes):
        self.args = args
        self.passes = passes
        self.B, self.T0, self.H, self.D = shape
        self.Hk = args.key_heads or self.H
        self.Dv = args.dv or self.D
        self.lengths = lengths
        self.devices = devices
        self.chunk = args.chunk or 64
        self.l2norm = bool(getattr(args, "l2norm", False))
        self.model = model_heads(args.model_heads)
        self.chips = chips(args.hbm)
        self.must_fit = must_fit(args.must_fit, self.chips)


def model_heads(s):
    """--model-heads -> {name, Hk, Hv, Dk, Dv} or None."""
    if s is None:
        return None
    if s in MODEL_HEADS:
        hk, hv, d = MODEL_HEADS[s]
        return {"name": s, "Hk": hk, "Hv": hv, "Dk": d, "Dv": d}
    v = _int_list(s, "--model-heads")
    if len(v) != 3 or v[1] % v[0]:
        raise UsageError(f"--model-heads {s!r}: expected qwen3.5, qwen3-next or Hk,Hv,D "
                         "with Hv a multiple of Hk")
    return {"name": "custom", "Hk": v[0], "Hv": v[1], "Dk": v[2], "Dv": v[2]}


def chips(s):
    """--hbm -> {name: bytes} of the accelerators to set the memory against."""
    if s is None:
        return dict(CHIPS)
    if s.lower() in CHIPS:
        return {s.lower(): CHIPS[s.lower()]}
    try:
        n = int(s)
    except ValueError:
        raise UsageError(f"--hbm {s!r}: expected a byte count or one of {', '.join(CHIPS)}") from None
    if n < 1:
        raise UsageError(f"--hbm {s!r}: must be >= 1 byte")
    return {**CHIPS, "hbm": n}


def must_fit(s, table):
    """--must-fit T@CHIP -> (T, chip name, bytes) or None."""
    if s is None:
        return None
    t, sep, chip = s.partition("@")
    try:
        T = int(t)
    except ValueError:
        T = 0
    if not sep or T < 1 or not chip:
        raise UsageError(f"--must-fit {s!r}: expected T@CHIP (e.g. 262144@v5p)")
    name = chip.lower()
    if name in table:
        return T, name, table[name]
    if name in CHIPS:
        return T, name, CHIPS[name]
    try:
        return T, chip, int(chip)
    except ValueError:
        raise UsageError(f"--must-fit {s!r}: unknown chip {chip!r} (one of {', '.join(table)}, "
                         "or a byte count)") from None


def resolve(args, lengths_default=None):
    """Setup from the options; UsageError naming the option otherwise."""
    if not args.shape:
        raise UsageError("the audit needs --shape B,T,H,D (it compiles at shapes, not a fixture's data)")
    shape = parse_shape(args.shape)
    B, T, H, D = shape
    devices = sorted(dict.fromkeys(_int_list(args.devices, "--devices")))
    if args.chunk is not None and args.chunk < 1:
        raise UsageError("--chunk must be >= 1")
    _limits(args)
    lengths = (_int_list(args.lengths, "--lengths") if args.lengths
               else (lengths_default or default_lengths(T, devices, args.chunk or 64)))
    lengths = sorted(dict.fromkeys(lengths))
    if len(lengths) < 2:
        raise UsageError(f"--lengths {args.lengths!r}: the growth laws need two or more lengths")
    passes = tuple(dict.fromkeys(p for p in args.passes.split(",") if p))
    if not passes or any(p not in ("forward", "backward") for p in passes):
        raise UsageError(f"--passes {args.passes!r}: expected forward, backward or forward,backward")
    if (args.max_residual_bytes_per_token is not None or args.must_fit) and "backward" not in passes:
        raise UsageError("--max-residual-bytes-per-token and --must-fit judge the backward: "
                         "--passes must include backward")
    if len(devices) < 2:
        raise UsageError(f"--devices {args.devices!r}: the flops check needs two or more device counts")
    if args.key_heads and H % args.key_heads:
        raise UsageError(f"--key-heads {args.key_heads}: H = {H} is not a multiple of it")
    C = args.chunk or 64
    for t in lengths:
        for d in devices:
            if t % d:
                raise UsageError(f"--lengths: T = {t} is not a multiple of D = {d} (token sharding)")
    for t in lengths:
        for d in devices:
            if (t // d) % C:
                raise UsageError(f"--lengths: T/D = {t}/{d} is not a multiple of the chunk {C} "
                                 "(each shard's padding would hide the growth laws)")
    return Setup(args, shape, lengths, devices, passes)


def _limits(args):
    """The numeric limits: finite and positive, else a usage error."""
    for opt in ("max_residual_bytes_per_token", "max_work_overhead"):
        v = getattr(args, opt, None)
        if v is not None and not (math.isfinite(v) and v > 0):
            raise UsageError(f"--{opt.replace('_', '-')} {v!r}: expected a finite number > 0")


def default_lengths(T, devices, chunk):
    """T, 2T, 4T with T rounded up to a multiple of lcm(devices) x chunk, and
    to at least two chunks per shard at the largest D (the grid's lengths,
    e.g. 200 on 4 and 8 devices with chunk 16, become 256, 512, 1024)."""
    base = chunk
    for d in devices:
        base = base * (d * chunk) // math.gcd(base, d * chunk)
    t = max(T, 2 * max(devices) * chunk)
    t = -(-t // base) * base
    return [t, 2 * t, 4 * t]


def functions(args):
    """(adapter, stock function, cp function) as `run` resolves them."""
    from . import guard
    from .outcome import user_call
    from .signatures import SignatureError, get_adapter
    try:
        adapter = get_adapter(args.signature)
        if adapter.framework != "jax":
            raise UsageError(f"--signature {args.signature}: the audit compiles JAX functions only")
        impl = load_function(args.impl, "--impl")
        cp_fn = load_function(args.cp, "--cp") if args.cp else None
        if cp_fn is None and user_call(f"--impl {args.impl}", lambda: adapter.takes_cp(impl)):
            cp_fn = impl
        guard.call(f"--impl {args.impl}", lambda: adapter.check(impl, cp=False), (SignatureError,))
        if cp_fn is None:
            raise UsageError(f"--impl {args.impl}: takes no cp_axis and no --cp was given: "
                             "there is no context-parallel function to audit")
        guard.call(f"--cp {args.cp or args.impl}", lambda: adapter.check(cp_fn, cp=True),
                   (SignatureError,))
    except SignatureError as exc:
        raise UsageError(str(exc)) from None
    return adapter, impl, cp_fn


def _reported(body, usage_prefix: str) -> int:
    """body()'s exit status, a failure as one escaped line on stderr
    (outcome.exit_status: the path `run` ends by too)."""
    from .outcome import exit_status
    return exit_status(body, usage_prefix)


def main(args) -> int:
    """`gdn-parity-jax audit`."""
    from .args import set_host_devices

    def body():
        st = resolve(args)
        set_host_devices(max(8, max(st.devices)))
        adapter, impl, cp_fn = functions(args)
        return audit(args, st, adapter, impl, cp_fn)
    return _reported(body, "")


def from_run(args) -> int:
    """`run --audit`: the audit of run's functions beside the parity run
    (its document as audit.json in --out)."""
    def body():
        st = resolve(args)
        adapter, impl, cp_fn = functions(args)
        if not args.quiet:
            print("gdn-parity-jax: audit (compiled programs, nothing executed)", flush=True)
        return audit(args, st, adapter, impl, cp_fn, os.path.join(args.out, "audit.json"))
    return _reported(body, "audit: ")


def audit(args, st, adapter, impl, cp_fn, json_path=None) -> int:
    import jax

    from . import audit_judge as judge
    need = max(st.devices)
    if len(jax.devices()) < need:
        raise UsageError(f"--devices: {need} devices needed, JAX has {len(jax.devices())}")
    programs = []
    heads = {"Hk": st.Hk, "Hv": st.H, "Dk": st.D, "Dv": st.Dv}
    series = [("audited", heads, st.passes)]
    if st.model and "backward" in st.passes:
        series.append(("model", st.model, ("backward",)))
    for label, hd, passes in series:
        for T in st.lengths:
            for ps in passes:
                programs.append(compile_program(st, adapter, impl, "stock", ps, 1, T, hd, label))
                for D in st.devices:
                    programs.append(compile_program(st, adapter, cp_fn, "cp", ps, D, T, hd, label))
    doc = judge.document(st, programs, subject(args, st), platform(), jax.__version__)
    doc["producer"] = f"gdn-parity-jax {VERSION}"
    for line in judge.text(doc, quiet=getattr(args, "quiet", False)):
        print(line, flush=True)
    path = json_path or (args.json if args.command == "audit" else None)
    if path:
        write_json(path, doc)
    return doc["exit_status"]


def subject(args, st):
    return {"impl": args.impl, "cp": args.cp or args.impl, "layout": args.layout,
            "cp_prefix": args.cp_prefix, "signature": args.signature, "cp_axis": "context"}


def platform():
    import jax
    d = jax.devices()[0]
    return f"{d.platform} ({getattr(d, 'device_kind', d.platform)})"


def write_json(path, doc):
    """Written under a temporary name and renamed: never half-written."""
    stage = os.path.join(os.path.dirname(path) or ".", f".{os.path.basename(path)}.partial")
    try:
        with open(stage, "w") as fh:
            json.dump(doc, fh, indent=1, allow_nan=False)
            fh.write("\n")
        os.replace(stage, path)
    finally:
        if os.path.exists(stage):
            os.unlink(stage)


# ---------------------------------------------------------------------------
# Lowering and compiling one program.

def _avals(st, T, hd):
    """Abstract inputs {q, k, v, g, beta[, h0]} at length T and heads hd."""
    import jax
    import jax.numpy as jnp
    dt = {"float32": jnp.float32, "bfloat16": jnp.bfloat16}[st.args.input_dtype]
    B, Hk, Hv, Dk, Dv = st.B, hd["Hk"], hd["Hv"], hd["Dk"], hd["Dv"]
    x = {"q": ((B, T, Hk, Dk), dt), "k": ((B, T, Hk, Dk), dt), "v": ((B, T, Hv, Dv), dt),
         "g": ((B, T, Hv), jnp.float32), "beta": ((B, T, Hv), dt)}
    if st.args.h0:
        x["h0"] = ((B, Hv, Dk, Dv), jnp.float32)
    return {n: jax.ShapeDtypeStruct(s, d) for n, (s, d) in x.items()}


def _call(st, adapter, fn, cp):
    import jax.numpy as jnp
    cdt = {"float32": jnp.float32, "bfloat16": jnp.bfloat16}[st.args.dtype]

    def call(xs, axis=None):
        return adapter.call(fn, xs, chunk=st.chunk, l2norm=st.l2norm, compute_dtype=cdt,
                            cp_axis=axis if cp else None)
    return call


def compile_program(st, adapter, fn, which, ps, D, T, hd, label):
    """One program's record (docs/audit-json.md, programs[])."""
    from . import hlo_walk
    from .outcome import user_call
    t0 = time.perf_counter()
    who = st.args.impl if which == "stock" else (st.args.cp or st.args.impl)
    what = f"{'--cp' if which == 'cp' and st.args.cp else '--impl'} {who} ({which} {ps} D={D} T={T})"
    # tracing runs the function: whatever it raises (SystemExit(0) too) is its error, exit 3
    compiled = user_call(what, lambda: _lower(st, adapter, fn, which, ps, D, T, hd).compile())
    secs = time.perf_counter() - t0
    walked = hlo_walk.walk(compiled.as_text())
    return {"function": which, "pass": ps, "devices": D, "T": T, "heads": label,
            "memory": memory(compiled), "work": walked["work"], "cost": cost(compiled),
            "collectives": walked["collectives"], "collective_bytes": walked["collective_bytes"],
            "compile_seconds": round(secs, 3)}


def _lower(st, adapter, fn, which, ps, D, T, hd):
    import jax
    from jax.sharding import NamedSharding

    from .mesh import MeshPlan, sharded_fn
    x = _avals(st, T, hd)
    if ps == "backward":
        x = _with_h0(x)
    if which == "stock":
        f = _stock_fn(_call(st, adapter, fn, False))
        return _lower_pass(jax.jit, f, x, ps, None)
    plan = MeshPlan(D, 1, "context")
    if st.args.layout == "global":
        return _lower_global(st, adapter, fn, plan, x, ps)
    f, mesh, spec = sharded_fn(_call(st, adapter, fn, True), plan, st.B, list(x))
    xs = {n: jax.ShapeDtypeStruct(a.shape, a.dtype, sharding=NamedSharding(mesh, spec[n]))
          for n, a in x.items()}
    return _lower_pass(jax.jit, f, xs, ps, (mesh, spec))


def _with_h0(x):
    """The backward differentiates at h0 (zero when absent), as grads does."""
    import jax
    import jax.numpy as jnp
    if "h0" not in x:
        B, _, _, Dk = x["q"].shape
        Hv, Dv = x["v"].shape[2], x["v"].shape[3]
        x = dict(x, h0=jax.ShapeDtypeStruct((B, Hv, Dk, Dv), jnp.float32))
    return x


def _stock_fn(call):
    def f(xs):
        return call(xs)
    return f


def _lower_pass(jit, f, xs, ps, placed, out_shardings=None):
    """Lower f(xs) (forward) or its jax.vjp pullback (backward) under jit;
    placed: (mesh, specs) for the cotangents' shardings (do like v, dht like
    h0), or None (one device)."""
    import jax
    from jax.sharding import NamedSharding

    from .grads import _pullback
    if ps == "forward":
        j = jit(f) if out_shardings is None else jit(f, out_shardings=out_shardings)
        return j.lower(xs)
    o_aval, ht_aval = jax.eval_shape(f, xs)

    def ct(aval, name):
        if aval is None:
            return None
        sh = NamedSharding(placed[0], placed[1][name]) if placed else None
        return jax.ShapeDtypeStruct(aval.shape, aval.dtype, sharding=sh)
    do, dht = ct(o_aval, "v"), ct(ht_aval, "h0")
    g = functools.partial(_pullback, f)
    if placed is not None and out_shardings is not None:
        mesh, spec = placed
        j = jit(g, out_shardings={n: NamedSharding(mesh, spec[n]) for n in xs})
    else:
        j = jit(g)
    return j.lower(xs, do, dht)


def _lower_global(st, adapter, fn, plan, x, ps):
    """The function on globally shaped arrays under jit, inputs sharded over
    the context axis, the mesh set: GSPMD chooses the collectives."""
    import jax
    from jax.sharding import NamedSharding

    from .mesh import global_fn
    f, mesh, spec, outs = global_fn(_call(st, adapter, fn, True), plan, list(x))
    xs = {n: jax.ShapeDtypeStruct(a.shape, a.dtype, sharding=NamedSharding(mesh, spec[n]))
          for n, a in x.items()}
    with jax.set_mesh(mesh):
        return _lower_pass(jax.jit, f, xs, ps, (mesh, spec), outs)


def memory(compiled):
    m = compiled.memory_analysis()
    if m is None:
        return None
    return {"argument_bytes": int(m.argument_size_in_bytes), "output_bytes": int(m.output_size_in_bytes),
            "temp_bytes": int(m.temp_size_in_bytes), "alias_bytes": int(m.alias_size_in_bytes),
            "generated_code_bytes": int(m.generated_code_size_in_bytes)}


def cost(compiled):
    c = compiled.cost_analysis()
    if isinstance(c, (list, tuple)):
        c = c[0] if c else {}
    c = c or {}
    return {"flops": float(c.get("flops", 0.0)), "bytes_accessed": float(c.get("bytes accessed", 0.0)),
            "transcendentals": float(c.get("transcendentals", 0.0))}
