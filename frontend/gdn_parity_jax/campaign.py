"""The `campaign` command: correct JAX functions over many seeds and gate
regimes, each function compiled once, every run judged by `gdn-parity check`.

    gdn-parity-jax campaign --subjects all --shape 1,256,2,32 --chunk 32 --h0 \\
        --seeds 50 --regimes init,slow,spike-10,spike-40,spike-80 --devices 1,8 \\
        --grad --json trust.json

`gdn-parity-jax run` judges one (function, gates, seed) per process: a fresh
JIT compile of every function and its jax.vjp, two subprocesses and an
interpreter start each time.  Here each subject's stock function (one
device) and context-parallel function (under shard_map, per device count),
forward and jax.vjp, are jitted once for the shape and chunk and reused for
every seed and regime.  A *run* is one input set (the shape, h0, a gate
regime, a seed): `gdn-fixture synth` draws it (the spike regimes: the very
inputs `gdn-parity trust` judges), every subject's outputs at every device
count go into one fixture (/outputs/<subject>_d<D>, with --grad their
gradients), `gdn-fixture regen` computes the oracle (dd by default) and one
`gdn-parity check` (its own C kernels on one device: the limits do not
depend on the device count) judges them all.

The result is a `gdn-parity-trust` document (docs/trust-json.md): every
check of every subject counted, its value / limit, the false FAILs listed
(nothing run is wrong: every FAIL is a false FAIL), so that
scripts/trust_merge.py adds campaign parts up.  Subjects: the
reformulations of gdn_parity_jax.reform and float64 (reform_f64, which turns
on jax_enable_x64: it runs in a process of its own), or any MODULE:FUNCTION
(--subject-spec, for a negative control).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import tempfile
import time

from .args import GATES, _int_list, parse_shape, set_host_devices
from .common import VERSION, UsageError

REGIMES = ("slow", "init", "spike-10", "spike-40", "spike-80")  # gdn-parity trust's order
F64 = "float64"


def add_parser(sub):
    c = sub.add_parser("campaign", help="correct functions over many seeds and gate regimes, compiled "
                       "once; a gdn-parity-trust document")
    c.add_argument("--subjects", default="all",
                   help="all (every gdn_parity_jax.reform subject and float64) or NAME,NAME...")
    c.add_argument("--subject-spec", action="append", default=[], metavar="NAME=MODULE:FUNCTION",
                   help="also judge this function (maxtext signature, cp_axis=) under NAME; repeatable")
    c.add_argument("--shape", required=True, help="B,T,H,D")
    c.add_argument("--key-heads", type=int, help="Hk (default H)")
    c.add_argument("--chunk", type=int, default=64, help="chunk size C (default 64)")
    c.add_argument("--devices", default="1,8", help="device counts (default 1,8; 1: the stock function)")
    c.add_argument("--regimes", default=",".join(REGIMES),
                   help="gate regimes: init, slow, spike-10, spike-40, spike-80 (default all)")
    c.add_argument("--seeds", type=int, default=3, help="how many seeds (default 3)")
    c.add_argument("--first-seed", type=int, default=0, help="the first seed (default 0)")
    c.add_argument("--h0", action="store_true", help="inputs with an initial state")
    c.add_argument("--grad", action="store_true", help="also judge the jax.vjp gradients")
    c.add_argument("--oracle", default="dd", choices=("dd", "mpfr"), help="the oracle tier (default dd)")
    c.add_argument("--policy", help="passed to gdn-parity check")
    c.add_argument("--json", help="write the gdn-parity-trust document here")
    c.add_argument("--keep", help="keep every run's fixture and results in this folder")
    c.add_argument("--bin-dir", help="folder of gdn-parity and gdn-fixture (see tools.py)")
    c.add_argument("--quiet", action="store_true", help="no progress line per run")
    c.add_argument("--records", help=argparse.SUPPRESS)  # a child's records (float64 apart), for its parent
    return c


def _subjects(args):
    from . import reform
    known = sorted(reform.SUBJECTS) + [F64]
    names = known if args.subjects == "all" else [s for s in args.subjects.split(",") if s]
    if args.subjects == "none":
        names = []
    for n in names:
        if n not in known:
            raise UsageError(f"--subjects: {n!r} is not one of all, none, {', '.join(known)}")
    specs = {}
    for s in args.subject_spec:
        name, eq, spec = s.partition("=")
        if not eq or not name or ":" not in spec or name in known or name in specs:
            raise UsageError(f"--subject-spec {s!r}: expected NEW_NAME=MODULE:FUNCTION")
        specs[name] = spec
    if not names and not specs:
        raise UsageError("--subjects: nothing to judge")
    return names, specs


def _regimes(s):
    out = [r for r in s.split(",") if r]
    for r in out:
        if r not in GATES:
            raise UsageError(f"--regimes: {r!r} is not one of {', '.join(GATES)}")
    if not out or len(set(out)) != len(out):
        raise UsageError(f"--regimes {s!r}: give each regime once")
    return out


def main(args) -> int:
    names, specs = _subjects(args)
    regimes = _regimes(args.regimes)
    devices = list(dict.fromkeys(_int_list(args.devices, "--devices")))
    B, T, H, D = parse_shape(args.shape)
    if args.seeds < 1 or args.first_seed < 0:
        raise UsageError("--seeds must be >= 1 and --first-seed >= 0")
    if T % args.chunk or any(T % d or (T // d) % args.chunk for d in devices):
        raise UsageError(f"--shape {args.shape}: T must be a multiple of C x D for every device count")
    t0 = time.monotonic()
    if F64 in names and (len(names) > 1 or specs):  # x64 is process-wide: float64 in a process of its own
        records = []
        with tempfile.TemporaryDirectory(prefix="gdn-parity-campaign-") as work:
            for i, group in enumerate(([n for n in names if n != F64], [F64])):
                part = os.path.join(work, f"records{i}.json")
                argv = _child_argv(args, group, specs if i == 0 else {}, part)
                r = subprocess.run([sys.executable, "-m", "gdn_parity_jax", *argv])
                if r.returncode:
                    return r.returncode
                with open(part, encoding="utf-8") as f:
                    records += json.load(f)
    else:
        def checkpoint(recs, done):  # a complete document after every seed: a stopped campaign keeps its seeds
            if args.json and not args.records and done < args.seeds:
                _write(args.json, trust_doc(args, recs, names + list(specs), regimes, devices,
                                            time.monotonic() - t0, seeds=done))
        records = _produce(args, names, specs, regimes, devices, checkpoint)
    if args.records:
        with open(args.records, "w", encoding="utf-8") as f:
            json.dump(records, f)
        return 0
    doc = trust_doc(args, records, names + list(specs), regimes, devices, time.monotonic() - t0)
    if args.json:
        _write(args.json, doc)
    if not args.quiet:
        for ln in summary_lines(doc):
            print(ln)
    return 0


def _write(path, doc):
    part = path + ".partial"
    with open(part, "w", encoding="utf-8") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")
    os.replace(part, path)


def _child_argv(args, names, specs, records):
    argv = ["campaign", "--subjects", ",".join(names) or "none", "--shape", args.shape, "--chunk", str(args.chunk),
            "--devices", args.devices, "--regimes", args.regimes, "--seeds", str(args.seeds),
            "--first-seed", str(args.first_seed), "--oracle", args.oracle, "--records", records]
    for n, s in specs.items():
        argv += ["--subject-spec", f"{n}={s}"]
    for opt in ("key_heads", "policy", "keep", "bin_dir"):
        if getattr(args, opt):
            argv += ["--" + opt.replace("_", "-"), str(getattr(args, opt))]
    argv += [f for f, on in (("--h0", args.h0), ("--grad", args.grad), ("--quiet", args.quiet)) if on]
    return argv


# ---- producing the outputs: each function compiled once ------------------

class _Subject:
    """One function's jitted stock forward and pullback, and per device
    count its shard_map forward and pullback: built on first use, reused for
    every run (the same Python callables, so jax.jit's cache hits)."""

    def __init__(self, name, fn, chunk, devices, B):
        import jax
        import jax.numpy as jnp

        from .mesh import MeshPlan, sharded_fn
        from .signatures import ADAPTERS
        ad = ADAPTERS["maxtext"]
        self.name = name
        self.call = lambda xs: ad.call(fn, xs, chunk=chunk, l2norm=True, compute_dtype=jnp.float32)
        self.fwd = jax.jit(self.call)
        self.cp = {}
        for d in devices:
            if d == 1:
                continue
            call_cp = (lambda xl, ax: ad.call(fn, xl, chunk=chunk, l2norm=True, compute_dtype=jnp.float32,
                                              cp_axis=ax))
            names = ["q", "k", "v", "g", "beta", "h0"]
            f, mesh, specs = sharded_fn(call_cp, MeshPlan(d, 1, "context"), B, names)
            self.cp[d] = (f, jax.jit(f), mesh, specs)

    def outputs(self, x, ct, devices, common):
        import jax
        from jax.sharding import NamedSharding

        from . import grads as gradmod
        out = {}
        primals, has_h0 = gradmod._primals(x)
        for d in devices:
            if d == 1:
                dev = jax.devices()[0]
                p = {n: jax.device_put(a, dev) for n, a in primals.items()}
                o, ht = self.fwd(p)
                spec = dict(implementation="scan", devices=1)
                f = self.call
            else:
                f, jf, mesh, specs = self.cp[d]
                p = {n: jax.device_put(a, NamedSharding(mesh, specs[n])) for n, a in primals.items()}
                o, ht = jf(p)
                spec = dict(implementation="affine-prefix", devices=d, prefix=None)
            spec.update(o=jax.device_get(o), ht=None if ht is None else jax.device_get(ht), **common)
            if ct is not None:
                spec["grads"] = gradmod._vjp(f, p, ct, has_h0)
            out[f"{self.name}_d{d}"] = spec
        return out


def _load_subjects(names, specs, chunk, devices, B):
    from . import reform
    from .args import load_function
    fns = {}
    for n in names:
        if n == F64:
            from . import reform_f64
            fns[n] = reform_f64.float64
        else:
            fns[n] = reform.SUBJECTS[n]
    for n, s in specs.items():
        fns[n] = load_function(s, "--subject-spec")
    return [_Subject(n, f, chunk, devices, B) for n, f in fns.items()]


def _produce(args, names, specs, regimes, devices, checkpoint=None):
    set_host_devices(max(8, max(devices)))
    from . import gdn_fixture_capture as cap
    from . import grads as gradmod
    from .run import as_arrays, write_results
    from .tools import find_tools
    import jax
    tools = find_tools(args.bin_dir)
    B, T, H, D = parse_shape(args.shape)
    subjects = _load_subjects(names, specs, args.chunk, devices, B)
    platform = cap.platform_string(jax.devices()[0])
    common = dict(matmul_precision="highest", compute_dtype="float32", platform=platform)
    records = []
    keep = args.keep
    if keep:
        os.makedirs(keep, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="gdn-parity-campaign-") as work:
        folder = keep or work
        for seed in range(args.first_seed, args.first_seed + args.seeds):
            if checkpoint and seed > args.first_seed:
                checkpoint(records, seed - args.first_seed)
            for regime in regimes:
                t0 = time.monotonic()
                stem = f"{regime}-s{seed}" + ("-" + "-".join(s.name for s in subjects) if keep else "")
                path = os.path.join(folder, stem + ".h5")
                fx = _synth(args, tools, regime, seed, os.path.join(work, "inputs.h5"))
                x = as_arrays(fx)
                Hv, Dv, Dk = x["v"].shape[2], x["v"].shape[3], x["q"].shape[3]
                ct = (gradmod.draw_cotangents(seed, B, T, Hv, Dk, Dv, with_dht=x.get("h0") is not None)
                      if args.grad else None)
                outputs = {}
                for s in subjects:
                    outputs.update(s.outputs(x, ct, devices, common))
                write_results(path, fx, args.chunk, outputs, ct)
                results = os.path.join(folder, stem + ".results.json")
                _judge(args, tools, path, results)
                records.append(_record(args, regime, seed, results, outputs))
                if not keep:
                    os.unlink(path)
                    os.unlink(results)
                if not args.quiet:
                    n_fail = sum(1 for r in records for c in r["checks"] if not c["pass"])
                    print(f"campaign: {records[-1]['run']}: {len(outputs)} outputs judged in "
                          f"{time.monotonic() - t0:.1f} s; {n_fail} false FAIL{'s' * (n_fail != 1)} so far",
                          flush=True)
    return records


def _synth(args, tools, regime, seed, path):
    from . import gdn_fixture_capture as cap
    cmd = ["synth", "--shape", args.shape, "--out", path, "--seed", str(seed), "--chunk-size", str(args.chunk),
           "--force", *GATES[regime]]
    if args.key_heads:
        cmd += ["--key-heads", str(args.key_heads)]
    if args.h0:
        cmd.append("--h0")
    r = tools.run("fixture", cmd, capture_output=True, text=True)
    if r.returncode:
        raise UsageError(f"gdn-fixture synth: {(r.stderr or r.stdout).strip()}")
    fx = cap.read_fixture(path)
    fx["path"] = path
    return fx


def _judge(args, tools, path, results):
    r = tools.run("fixture", ["regen", path, "--force", "--quiet", "--oracle", args.oracle],
                  capture_output=True, text=True)
    if r.returncode:
        raise RuntimeError(f"gdn-fixture regen {path}: {(r.stderr or r.stdout).strip()}")
    cmd = ["check", "--fixture", path, "--chunk", str(args.chunk), "--devices", "1", "--dtype", "float32",
           "--matmul-precision", "highest", "--json", results, "--quiet"]
    if args.policy:
        cmd += ["--policy", args.policy]
    r = tools.run("parity", cmd, capture_output=True, text=True)
    if r.returncode not in (0, 1) or not os.path.isfile(results):
        raise RuntimeError(f"gdn-parity check {path} exited {r.returncode}: {(r.stderr or r.stdout).strip()}")


def _label(args, regime, seed):
    return f"{_shape_name(args)}{' h0' if args.h0 else ''} {regime} seed {seed}"


def _shape_name(args):
    B, T, H, D = parse_shape(args.shape)
    return f"B{B}-T{T}-Hk{args.key_heads or H}-Hv{H}-Dk{D}-Dv{D}"


def _record(args, regime, seed, results, outputs):
    """The checks of this run's outputs (not the C kernels' own rows)."""
    with open(results, encoding="utf-8") as f:
        doc = json.load(f)
    mine = set(outputs)
    checks = []
    for case in doc.get("cases", []):
        for k in (case.get("tolerance") or {}).get("checks", []):
            name = k.get("subject")
            if name in mine:
                checks.append(dict(output=name, subject=name.rsplit("_d", 1)[0],
                                   devices=outputs[name]["devices"], rule=k.get("rule"), tensor=k.get("tensor"),
                                   metric=k.get("metric"), value=k.get("value"), limit=k.get("limit"),
                                   **{"pass": k.get("pass") is True}))
    return dict(run=_label(args, regime, seed), regime=regime, seed=seed, policy=doc.get("policy"),
                outputs=sorted(mine), checks=checks)


# ---- the trust document ---------------------------------------------------

def _num(v):
    try:
        x = float(v)
    except (TypeError, ValueError):
        x = {"inf": math.inf, "-inf": -math.inf}.get(v, math.nan) if isinstance(v, str) else math.nan
    return x


def margin(value, limit) -> float:
    """value / limit as report_summary_margin computes it (a non-finite
    value: infinite)."""
    v, lim = _num(value), _num(limit)
    if not math.isfinite(v) or math.isnan(lim):
        return math.inf
    v = abs(v)
    if math.isinf(lim):
        return 0.0
    lim = abs(lim)
    if lim == 0:
        return 0.0 if v == 0 else math.inf
    return v / lim


def _out(x):
    return x if math.isfinite(x) else ("nan" if math.isnan(x) else ("inf" if x > 0 else "-inf"))


def _quantile(xs, q):
    k = math.ceil(q * len(xs))
    return xs[k - 1 if k else 0]


def trust_doc(args, records, subjects, regimes, devices, seconds, seeds=None):
    """The gdn-parity-trust document of the records (seeds: how many of the
    seeds asked for have run, all by default)."""
    rules, fails, n_checks = {}, [], 0
    subj = {n: dict(runs={}, failed={}, worst={}) for n in subjects}
    for rec in records:
        per_out = {}
        for k in rec["checks"]:
            m = margin(k["value"], k["limit"])
            key = (k["rule"], k["tensor"])
            r = rules.setdefault(key, dict(metric=k["metric"], ratios=[], fails=0, worst=None, worst_ratio=-math.inf))
            row = dict(subject=k["subject"], run=rec["run"], devices=k["devices"], rule=k["rule"],
                       tensor=k["tensor"], metric=k["metric"], value=k["value"], limit=k["limit"], ratio=_out(m))
            r["ratios"].append(m)
            n_checks += 1
            if m > r["worst_ratio"]:
                r["worst"], r["worst_ratio"] = row, m
            if not k["pass"]:
                r["fails"] += 1
                fails.append(row)
            o = per_out.setdefault(k["output"], dict(subject=k["subject"], failed=False, worst=-math.inf))
            o["failed"] |= not k["pass"]
            o["worst"] = max(o["worst"], m)
        for o in per_out.values():
            s = subj[o["subject"]]
            for col in (rec["regime"], None):
                s["runs"][col] = s["runs"].get(col, 0) + 1
                s["failed"][col] = s["failed"].get(col, 0) + int(o["failed"])
                s["worst"][col] = max(s["worst"].get(col, -math.inf), o["worst"])
    policy = next((r["policy"] for r in records if r.get("policy")), None) or {}
    rule_rows = []
    for (rule, tensor), r in rules.items():
        xs = sorted(r["ratios"])
        rule_rows.append(dict(rule=rule, tensor=tensor, metric=r["metric"], checks=len(xs), fails=r["fails"],
                              ratio=dict(min=_out(xs[0]), median=_out(_quantile(xs, 0.5)),
                                         p90=_out(_quantile(xs, 0.9)), max=_out(xs[-1])), worst=r["worst"]))
    subj_rows = []
    for n in subjects:
        s = subj[n]
        by = {g: dict(runs=s["runs"][g], failed_runs=s["failed"][g], worst_ratio=_out(s["worst"][g]))
              for g in REGIMES if g in s["runs"]}
        subj_rows.append(dict(name=n, doc=_subject_doc(n), backward=True, runs=s["runs"].get(None, 0),
                              failed_runs=s["failed"].get(None, 0),
                              worst_ratio=_out(s["worst"].get(None, -math.inf)), regimes=by))
    worst = max((r["worst_ratio"] for r in rules.values()), default=-math.inf)
    d = dict(schema="gdn-parity-trust", version=1, tool="gdn-parity-jax", tool_version=VERSION,
             command=_command(args),
             policy=dict(name=policy.get("name"), source=policy.get("source"), builtin=policy.get("builtin"),
                         sha256=policy.get("sha256")),
             budget=dict(campaign=True, shapes=[_shape_name(args)], chunk=args.chunk, devices=devices,
                         regimes=list(regimes), h0=[bool(args.h0)], seeds=seeds or args.seeds, first_seed=args.first_seed,
                         grad=bool(args.grad), oracle=args.oracle, runs=len(records) // max(1, _groups(records))),
             checks=n_checks, false_fails=len(fails), worst_ratio=_out(worst), **{"pass": not fails},
             rules=rule_rows, subjects=subj_rows, fails=fails, seconds=round(seconds, 1))
    return d


def _groups(records):
    """How many processes' records cover each run (float64 apart: two)."""
    runs = {}
    for r in records:
        runs[r["run"]] = runs.get(r["run"], 0) + 1
    return max(runs.values(), default=1)


def _subject_doc(n):
    from . import reform
    if n == F64:
        return "the stock algorithm in float64, rounded to float32 once (reform_f64)"
    fn = reform.SUBJECTS.get(n)
    return (fn.__doc__ or "").strip() if fn else "a function named by --subject-spec"


def _command(args):
    argv = sys.argv[1:] if sys.argv and sys.argv[0].endswith(("gdn-parity-jax", "__main__.py")) else []
    skip = {"--json", "--quiet", "--keep", "--bin-dir", "--records"}
    out, drop = [], False
    for a in argv:
        if drop:
            drop = False
            continue
        if a.split("=")[0] in skip:
            drop = "=" not in a and a not in ("--quiet",)
            continue
        out.append(a)
    return "gdn-parity-jax " + " ".join(out) if out else None


def summary_lines(doc):
    lines = [f"{'rule':<44} {'tensor':<6} {'checks':>7} {'FAILs':>6}  {'median':>9} {'p90':>9} {'max':>9}"]
    for r in doc["rules"]:
        d = r["ratio"]
        lines.append(f"{r['rule']:<44} {r['tensor']:<6} {r['checks']:>7} {r['fails']:>6}  "
                     f"{_num(d['median']):>9.3g} {_num(d['p90']):>9.3g} {_num(d['max']):>9.3g}")
    lines.append("")
    for s in doc["subjects"]:
        per = " ".join(f"{g} {v['failed_runs']}/{v['runs']}" for g, v in s["regimes"].items())
        lines.append(f"{s['name']:<22} {s['runs']:>5} runs, {s['failed_runs']} failed, worst "
                     f"{_num(s['worst_ratio']):.3g}  {per}")
    lines.append(f"campaign: {doc['false_fails']} false FAIL{'s' * (doc['false_fails'] != 1)} in {doc['checks']} "
                 f"checks; worst value/limit {_num(doc['worst_ratio']):.3g}")
    return lines
