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
import sys
import traceback

from .args import GATES, PASS_THROUGH, fixture_name  # noqa: F401
from .common import EXIT_INTERNAL, EXIT_USAGE, VERSION, UsageError




def build_parser():
    ap = argparse.ArgumentParser(prog="gdn-parity-jax", description=__doc__.split("\n")[0])
    ap.add_argument("--version", action="version", version=f"gdn-parity-jax {VERSION}")
    sub = ap.add_subparsers(dest="command", required=True)
    r = sub.add_parser("run", help="judge a function on synthetic or fixture inputs")
    r.add_argument("--impl", required=True, help="MODULE:FUNCTION, the stock (unsharded) function")
    r.add_argument("--cp", help="MODULE:FUNCTION, the per-shard context-parallel function "
                   "(default: --impl itself when it takes cp_axis)")
    r.add_argument("--signature", default="maxtext",
                   help="maxtext (default), hf, fla, fla-kda (implies --recurrence kda) or FILE.json")
    r.add_argument("--recurrence", default=None, choices=("gdn", "kda"),
                   help="the recurrence the function computes: gdn (default), or kda (Kimi Delta "
                   "Attention: g per key channel, (B, T, Hv, Dk); with --grad its gradients too, dg "
                   "per channel, judged against the KDA VJP oracle)")
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
    r.add_argument("--gates", default="init", choices=tuple(GATES),
                   help="synthetic decay gates: init (the model's), slow (long memory), spike-10, "
                   "spike-40, spike-80 (slow, g = -10/-40/-80 on 5 %% of the tokens: gdn-parity "
                   "trust's regimes)")
    r.add_argument("--h0", action="store_true", help="synthetic inputs get an initial state")
    r.add_argument("--seed", type=int, default=0)
    r.add_argument("--grad", action="store_true",
                   help="also record the gradients of every function run (jax.vjp; torch.autograd "
                   "for torch functions: dq dk dv dg dbeta dh0, for cotangents do, dht drawn "
                   "from --seed or the fixture's) and judge them (float32 only; passed to "
                   "gdn-parity check)")
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
    from . import campaign
    campaign.add_parser(sub)
    return ap


def _add_audit(sub, run_parser):
    """The audit subcommand and run's --audit (gdn_parity_jax.audit)."""
    from . import audit
    audit.add_parser(sub)
    run_parser.add_argument("--audit", action="store_true", help="also audit the compiled "
                            "programs (audit.json in --out; see `audit --help`)")
    audit.add_limit_options(run_parser)


def main(argv=None) -> int:
    ap = build_parser()
    args = ap.parse_args(argv)
    from . import guard
    try:
        with guard.signals_to_exceptions():  # a signal cleans up, then exits 128 + its number
            if args.command == "campaign":
                from . import campaign
                return campaign.main(args)
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
