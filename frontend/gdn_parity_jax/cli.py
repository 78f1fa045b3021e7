"""gdn-parity-jax: run a JAX (or torch) Gated DeltaNet on real devices and judge it.

    gdn-parity-jax run --impl MODULE:FUNCTION [--cp MODULE:FUNCTION] --shape B,T,H,D ...

Steps (each a separate function below):
1. inputs: ``gdn-fixture synth`` (the C generator, bit for bit) or a fixture's;
2. the stock function on one device; the context-parallel function under
   ``shard_map`` on a mesh of D devices for each D of --devices;
3. one fixture with every result as ``/outputs/<name>`` and its declared
   numerics (platform, devices, implementation, prefix, dtype, precision);
   with --grad also the cotangents and each function's ``jax.vjp`` gradients
   (``/cotangents``, ``/outputs/<name>/grads``; grads.py);
4. ``gdn-fixture regen`` (the MPFR oracle), ``gdn-parity check`` (the verdict,
   the reports); exit with its status.

Exit status as gdn-parity's: 0 within tolerance, 1 out of tolerance, 2 bad
usage or bad input (the message says what and where), 3 internal error
(including a function under test that raises anything, SystemExit too: guard.py);
128 + N after signal N (SIGTERM, SIGHUP, SIGINT), temporary files removed.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
import traceback

EXIT_OK, EXIT_FAIL, EXIT_USAGE, EXIT_INTERNAL = 0, 1, 2, 3
VERSION = "0.1.0"


class UsageError(Exception):
    pass


def _int_list(s: str, opt: str):
    try:
        vals = [int(x) for x in s.split(",")]
    except ValueError:
        raise UsageError(f"{opt} {s!r}: expected comma-separated integers") from None
    if not vals or min(vals) < 1:
        raise UsageError(f"{opt} {s!r}: values must be >= 1")
    return vals


def parse_shape(s: str):
    v = _int_list(s, "--shape")
    if len(v) != 4:
        raise UsageError(f"--shape {s!r}: expected B,T,H,D")
    return v


def fixture_name(s: str) -> str:
    """--name is a file stem inside --out, never a path: a '/' or '..' would
    write outside the folder the user named."""
    if not s or "/" in s or "\0" in s or s in (".", "..") or s.startswith("."):
        raise argparse.ArgumentTypeError(f"{s!r}: a file stem inside --out (no '/', not "
                                         "empty, not starting with '.')")
    return s


# Options handed to `gdn-parity check` unchanged: (option, takes a value).
PASS_THROUGH = (("--json", True), ("--report", True), ("--junit", True), ("--summary", True),
                ("--oracle", True), ("--oracle-bits", True), ("--policy", True),
                ("--threads", True), ("--prefix", True), ("--max-bytes", True),
                ("--quiet", False), ("--verbose", False), ("--reproducible", False))


def build_parser():
    ap = argparse.ArgumentParser(prog="gdn-parity-jax", description=__doc__.split("\n")[0])
    ap.add_argument("--version", action="version", version=f"gdn-parity-jax {VERSION}")
    sub = ap.add_subparsers(dest="command", required=True)
    r = sub.add_parser("run", help="judge a function on synthetic or fixture inputs")
    r.add_argument("--impl", required=True, help="MODULE:FUNCTION, the stock (unsharded) function")
    r.add_argument("--cp", help="MODULE:FUNCTION, the per-shard context-parallel function "
                   "(default: --impl itself when it takes cp_axis)")
    r.add_argument("--signature", default="maxtext", help="maxtext (default), hf, fla or FILE.json")
    r.add_argument("--shape", help="B,T,H,D (synthetic inputs)")
    r.add_argument("--key-heads", type=int, help="Hk (default H)")
    r.add_argument("--dv", type=int, help="Dv (default D)")
    r.add_argument("--chunk", type=int, default=None, help="chunk size C (default 64, or the fixture's)")
    r.add_argument("--devices", default="1,2,4,8", help="sequence shards D for the cp function")
    r.add_argument("--fsdp", type=int, default=1, help="fsdp axis size F: a 2-D mesh (fsdp, context)")
    r.add_argument("--cp-axis", default="context",
                   help="mesh axis name(s) given to the cp function: context, or fsdp,context (a tuple)")
    r.add_argument("--cp-prefix", default=None,
                   choices=("sequential", "associative-scan", "hillis-steele"),
                   help="the prefix schedule the cp function uses, declared in the fixture "
                   "(default: none declared; the audit then assumes associative-scan)")
    r.add_argument("--dtype", default="float32", choices=("float32", "bfloat16"),
                   help="compute dtype passed to the function (compute_dtype) and declared")
    r.add_argument("--input-dtype", default="float32", choices=("float32", "bfloat16"),
                   help="synthetic q, k, v, beta storage")
    r.add_argument("--matmul-precision", default="highest", choices=("default", "high", "highest"),
                   help="declared matmul precision of the function (MaxText passes HIGHEST)")
    r.add_argument("--gates", default="init", choices=("init", "slow"), help="synthetic decay gates")
    r.add_argument("--h0", action="store_true", help="synthetic inputs get an initial state")
    r.add_argument("--seed", type=int, default=0)
    r.add_argument("--grad", action="store_true",
                   help="also record jax.vjp of every function run (dq dk dv dg dbeta dh0, for "
                   "cotangents do, dht drawn from --seed or the fixture's) and judge them "
                   "(float32 only; passed to gdn-parity check)")
    r.add_argument("--from-fixture", help="take the inputs (and chunk size) of this fixture")
    r.add_argument("--out", required=True, help="folder for the fixture and the results")
    r.add_argument("--name", default=None, type=fixture_name, help="stem of the fixture file (default from the shape)")
    r.add_argument("--bin-dir", help="folder of gdn-parity and gdn-fixture (see tools.py)")
    for opt, val in PASS_THROUGH:
        if val:
            r.add_argument(opt, help="passed to gdn-parity check")
        else:
            r.add_argument(opt, action="store_true", help="passed to gdn-parity check")
    _add_audit(sub, r)
    return ap


def _add_audit(sub, run_parser):
    """The audit subcommand and run's --audit (gdn_parity_jax.audit)."""
    from . import audit
    audit.add_parser(sub)
    run_parser.add_argument("--audit", action="store_true", help="also audit the compiled "
                            "programs (audit.json in --out; see `audit --help`)")
    audit.add_limit_options(run_parser)


def load_function(spec: str, opt: str):
    """The function MODULE:FUNCTION names.  Importing the module runs user
    code: whatever it raises but ImportError (bad usage) is the function's
    internal error (guard.FunctionError, exit 3), SystemExit included."""
    from . import guard
    from .text import show
    mod, sep, name = spec.partition(":")
    if not sep or not mod or not name:
        raise UsageError(f"{opt} {spec!r}: expected MODULE:FUNCTION")
    try:
        m = guard.call(f"{opt} {spec}: importing {mod}", lambda: importlib.import_module(mod),
                       passthrough=(ImportError,))
    except ImportError as exc:
        raise UsageError(f"{opt} {spec!r}: cannot import {mod!r}: {show(exc)}") from None

    def resolve():
        obj = m
        for part in name.split("."):
            if not hasattr(obj, part):
                raise UsageError(f"{opt} {spec!r}: module {mod!r} has no {name!r}")
            obj = getattr(obj, part)
        if not callable(obj):
            raise UsageError(f"{opt} {spec!r}: {name!r} is not callable")
        return obj
    from .ship import verify_loaded  # the object the test passed, not a later import's (ship.py)
    return verify_loaded(guard.call(f"{opt} {spec}", resolve, passthrough=(UsageError,)), opt, spec)


def set_host_devices(n: int):
    """Asks XLA for n host (CPU) devices; must run before jax is imported."""
    flags = os.environ.get("XLA_FLAGS", "")
    if "--xla_force_host_platform_device_count" not in flags:
        os.environ["XLA_FLAGS"] = (flags + f" --xla_force_host_platform_device_count={n}").strip()


def main(argv=None) -> int:
    ap = build_parser()
    args = ap.parse_args(argv)
    from . import guard
    try:
        with guard.signals_to_exceptions():  # a signal cleans up, then exits 128 + its number
            if args.command == "audit":
                from . import audit
                return audit.main(args)
            from . import run as runmod
            return runmod.run(args)
    except guard.Signalled as sig:
        print(f"gdn-parity-jax: stopped by {sig.name}; temporary files removed", file=sys.stderr)
        return sig.code
    except UsageError as exc:
        from .text import show
        print(f"gdn-parity-jax: {show(exc)}", file=sys.stderr)
        return EXIT_USAGE
    except Exception:  # noqa: BLE001  internal error: say so, exit 3
        traceback.print_exc()
        print("gdn-parity-jax: internal error (above)", file=sys.stderr)
        return EXIT_INTERNAL


if __name__ == "__main__":
    sys.exit(main())
