#!/usr/bin/env python3
"""Margins of upstream's functions over many seeds, from gdn-parity results.

    upstream_margins.py RUN_DIR...

Each RUN_DIR is one `gdn-parity-jax run --out RUN_DIR` (its results.json);
its name is FUNCTION-sSEED (scripts/upstream.sh: e.g. maxtext-d64-s7).  Only
the checks of the captured outputs count (every subject but our own scan,
affine-prefix and affine-prefix-mpi): each is a correct implementation, so
every FAIL among them is a false FAIL.  Prints two Markdown tables:

  per function: runs, runs that FAILed (their seeds), and the worst
                value/limit over every check of the function;
  per rule:     checks, false FAILs, worst value/limit and where
                (run, output, tensor); a check every case of a run
                repeats counts once.

value/limit is the check's value over its limit as results.json records
them (a FAIL is > 1); checks without a positive finite limit are left out.
Exit status 0 (it reports; upstream.sh decides what fails).
"""

from __future__ import annotations

import json
import math
import re
import sys
from collections import defaultdict
from pathlib import Path

OWN = {"scan", "affine-prefix", "affine-prefix-mpi"}


def checks_of(run_dir: Path):
    """(rule, output, tensor, value/limit, pass) of the captured outputs; a
    check that every case of the run repeats (an output is judged in each
    case) counts once, at its worst."""
    doc = json.loads((run_dir / "results.json").read_text())
    seen: dict[tuple, tuple] = {}
    for case in doc.get("cases", []):
        for c in case.get("tolerance", {}).get("checks", []):
            subj = c.get("subject", "")
            if subj in OWN or subj.startswith("mutant") or c.get("rule") is None:
                continue
            v, lim = c.get("value"), c.get("limit")
            if not isinstance(v, (int, float)) or not isinstance(lim, (int, float)) or not lim > 0 \
                    or not math.isfinite(lim):
                continue
            key = (c["rule"], subj, c.get("tensor", "?"), c.get("name"))
            got = (v / lim, bool(c.get("pass")))
            old = seen.get(key)
            seen[key] = got if old is None else (max(old[0], got[0]), old[1] and got[1])
    for (rule, subj, tensor, _), (ratio, ok) in seen.items():
        yield rule, subj, tensor, ratio, ok


def main(argv: list[str]) -> int:
    if not argv:
        print(__doc__, file=sys.stderr)
        return 2
    funcs: dict[str, dict] = defaultdict(lambda: {"runs": 0, "fail_seeds": [], "worst": 0.0, "missing": []})
    rules: dict[str, dict] = defaultdict(lambda: {"n": 0, "fails": 0, "worst": -1.0, "where": ""})
    for d in map(Path, argv):
        m = re.match(r"(.*)-s(\d+)$", d.name)
        fn, seed = (m.group(1), int(m.group(2))) if m else (d.name, -1)
        f = funcs[fn]
        f["runs"] += 1
        if not (d / "results.json").is_file():
            f["missing"].append(seed)
            continue
        failed = False
        for rule, subj, tensor, ratio, ok in checks_of(d):
            r = rules[rule]
            r["n"] += 1
            r["fails"] += not ok
            failed |= not ok
            if ratio > r["worst"]:
                r["worst"], r["where"] = ratio, f"{d.name} {subj} {tensor}"
            f["worst"] = max(f["worst"], ratio)
        if failed:
            f["fail_seeds"].append(seed)
    print("| function | runs | runs with a FAIL (seeds) | no results (seeds) | worst value/limit |")
    print("|---|---|---|---|---|")
    for fn in sorted(funcs):
        f = funcs[fn]
        seeds = ", ".join(map(str, sorted(f["fail_seeds"]))) or "-"
        miss = ", ".join(map(str, sorted(f["missing"]))) or "-"
        print(f"| {fn} | {f['runs']} | {len(f['fail_seeds'])} ({seeds}) | {miss} | {f['worst']:.3g} |")
    print()
    print("| rule | checks | false FAILs | worst value/limit | where (run, output, tensor) |")
    print("|---|---|---|---|---|")
    for rule in sorted(rules, key=lambda k: -rules[k]["worst"]):
        r = rules[rule]
        print(f"| {rule} | {r['n']} | {r['fails']} | {r['worst']:.3g} | {r['where']} |")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
