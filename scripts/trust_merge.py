#!/usr/bin/env python3
"""One campaign from several `gdn-parity trust --json` documents.

    trust_merge.py [--expect-pass] TRUST.json...

A campaign too long for one run is split into runs (`--first-seed`, one
shape per run); this adds them up and prints Markdown: each run's budget and
result, then per (rule, tensor) the checks, the false FAILs and the worst
value/limit with where it was met, then per subject.  Counts add exactly;
the worst of the worsts is exact; quantiles of the whole campaign are not
(each document keeps only its own), so only the per-document p90s' largest
is shown, labelled as such.

Refused (exit 2, naming the file): a file that is not a trust document
(schema "gdn-parity-trust", version 1), documents judged by different
policies (their sha256 differ: one campaign is one set of limits), and the
same seeds of the same shape, h0 modes, regimes, chunk and devices given
twice (a campaign counted twice is not a bigger one).  Exit 1 with
--expect-pass when any document holds a false FAIL, else 0.
"""

import argparse
import json
import sys


class MergeError(Exception):
    pass


def load(path):
    try:
        with open(path, encoding="utf-8") as f:
            d = json.load(f)
    except (OSError, ValueError) as exc:
        raise MergeError(f"{path}: cannot read a JSON document ({exc})") from None
    if not isinstance(d, dict) or d.get("schema") != "gdn-parity-trust" or d.get("version") != 1:
        raise MergeError(f"{path}: not a trust document (schema gdn-parity-trust, version 1)")
    for key in ("policy", "budget", "checks", "false_fails", "rules", "subjects", "fails"):
        if key not in d:
            raise MergeError(f"{path}: key {key!r} missing")
    return d


def ratio(x):
    return float("inf") if isinstance(x, str) else float(x)


def seed_cells(path, b):
    """The (shape, h0, regime, seed, chunk, devices) cells a document ran."""
    first, n = b["first_seed"], b["seeds"]
    key = (b["chunk"], tuple(b["devices"]), bool(b["grad"]))
    return [
        (shape, h0, regime, s) + key
        for shape in b["shapes"]
        for h0 in b["h0"]
        for regime in b["regimes"]
        for s in range(first, first + n)
    ]


def merge(paths):
    docs = [(p, load(p)) for p in paths]
    if not docs:
        raise MergeError("no trust document given")
    sha = docs[0][1]["policy"].get("sha256")
    seen = {}
    for p, d in docs:
        if d["policy"].get("sha256") != sha:
            raise MergeError(f"{p}: judged by another policy (sha256 {d['policy'].get('sha256')}, "
                             f"{docs[0][0]}: {sha}); one campaign is one set of limits")
        for cell in seed_cells(p, d["budget"]):
            if cell in seen:
                raise MergeError(f"{p}: {cell[0]} h0={cell[1]} {cell[2]} seed {cell[3]} "
                                 f"(chunk {cell[4]}, devices {','.join(map(str, cell[5]))}) is also in {seen[cell]}")
            seen[cell] = p
    rules, subjects = {}, {}
    for p, d in docs:
        for r in d["rules"]:
            k = (r["rule"], r["tensor"])
            m = rules.setdefault(k, {"checks": 0, "fails": 0, "max": -1.0, "p90": -1.0, "worst": None})
            m["checks"] += r["checks"]
            m["fails"] += r["fails"]
            m["p90"] = max(m["p90"], ratio(r["ratio"]["p90"]))
            if ratio(r["ratio"]["max"]) > m["max"]:
                m["max"], m["worst"] = ratio(r["ratio"]["max"]), r["worst"]
        for s in d["subjects"]:
            m = subjects.setdefault(s["name"], {"runs": 0, "failed_runs": 0, "worst": -1.0})
            m["runs"] += s["runs"]
            m["failed_runs"] += s["failed_runs"]
            m["worst"] = max(m["worst"], ratio(s["worst_ratio"]))
    return docs, rules, subjects, seen


def seeds_per_regime(cells):
    """regime -> number of distinct (shape, seed) pairs, and the shapes' seed counts."""
    per = {}
    for shape, _h0, regime, seed, *_ in cells:
        per.setdefault(regime, set()).add((shape, seed))
    order = ["slow", "init", "spike-10", "spike-40", "spike-80"]
    rank = {r: (order.index(r) if r in order else len(order), r) for r in per}
    return {r: len(per[r]) for r in sorted(per, key=rank.get)}


def fmt(x):
    return "inf" if x == float("inf") else f"{x:.3g}"


def where(w):
    if not w:
        return "-"
    return f"{w['subject']}, {w['run']}, D {w['devices']}"


def markdown(docs, rules, subjects, cells):
    out = ["| run (command) | runs | checks | false FAILs | worst value/limit |", "|---|---|---|---|---|"]
    checks = fails = 0
    for _p, d in docs:
        cmd = d["command"].replace("gdn-parity trust ", "")
        out.append(f"| `{cmd}` | {d['budget']['runs']} | {d['checks']:,} | {d['false_fails']} | "
                   f"{fmt(ratio(d['worst_ratio']))} |")
        checks += d["checks"]
        fails += d["false_fails"]
    worst = max((m["max"] for m in rules.values()), default=0.0)
    out.append(f"| **all** | {sum(d['budget']['runs'] for _, d in docs)} | {checks:,} | {fails} | {fmt(worst)} |")
    out += ["", "Seeds per gate regime (distinct shape and seed pairs): " +
            ", ".join(f"{r} {n}" for r, n in seeds_per_regime(cells).items()), ""]
    out += ["| rule | tensor | checks | false FAILs | worst value/limit | largest p90 of a run | where |",
            "|---|---|---|---|---|---|---|"]
    for (rule, tensor), m in sorted(rules.items(), key=lambda kv: -kv[1]["max"]):
        out.append(f"| {rule} | {tensor} | {m['checks']:,} | {m['fails']} | {fmt(m['max'])} | "
                   f"{fmt(m['p90'])} | {where(m['worst'])} |")
    out += ["", "| subject | runs | failed runs | worst value/limit |", "|---|---|---|---|"]
    for name, m in subjects.items():
        out.append(f"| {name} | {m['runs']} | {m['failed_runs']} | {fmt(m['worst'])} |")
    return "\n".join(out) + "\n", fails


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--expect-pass", action="store_true", help="exit 1 when any document holds a false FAIL")
    ap.add_argument("files", nargs="+", metavar="TRUST.json")
    a = ap.parse_args(argv)
    try:
        docs, rules, subjects, cells = merge(a.files)
    except MergeError as exc:
        print(f"trust_merge: {exc}", file=sys.stderr)
        return 2
    text, fails = markdown(docs, rules, subjects, cells)
    sys.stdout.write(text)
    return 1 if a.expect_pass and fails else 0


if __name__ == "__main__":
    sys.exit(main())
