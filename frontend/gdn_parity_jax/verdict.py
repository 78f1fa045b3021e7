"""Verdict lines for the JAX outputs, read from gdn-parity's results JSON.

`gdn-parity check` judges every ``/outputs/<name>`` of the fixture in every
case (one case per chunk size and device count of our C kernels); the limits
are the same across cases up to the C scan's error.  For each output this
module reports its worst check (largest value / limit) over all cases, and
where its worst element lies: batch, token, head, and for a context-parallel
output the device that held that token and how far past its seam it is.
"""

from __future__ import annotations

import json


def _where(worst: dict, devices: int, T: int) -> str:
    parts = [f"{k}={v}" for k, v in worst.items()]
    if devices > 1 and "t" in worst and T % devices == 0:
        per = T // devices
        t = int(worst["t"])
        parts.append(f"(device {t // per}, token {t % per} of its shard)")
    return " ".join(parts)


def verdict_lines(results_path: str, names) -> tuple[list[str], bool]:
    """(one line per output name, whether all of them passed)."""
    with open(results_path, encoding="utf-8") as f:
        doc = json.load(f)
    lines, ok = [], True
    for name in names:
        worst, meta, passed = None, None, True
        for case in doc.get("cases", []):
            imp = case.get("impls", {}).get(name)
            if imp is None:
                continue
            meta = (case, imp)
            passed &= bool(imp.get("pass", False))
            for ch in case.get("tolerance", {}).get("checks", []):
                if ch.get("subject") != name or not ch.get("limit"):
                    continue
                r = ch["value"] / ch["limit"]
                if worst is None or r > worst[0]:
                    worst = (r, ch)
        if meta is None:
            lines.append(f"MISSING {name}: not judged by gdn-parity (no case holds it)")
            ok = False
            continue
        case, imp = meta
        ok &= passed
        devices = int(imp.get("attrs", {}).get("devices", 1))
        T = int(case["shape"]["T"])
        if worst is None:
            lines.append(f"{'PASS' if passed else 'FAIL'} {name}")
            continue
        _, ch = worst
        t = ch["tensor"]
        w = imp.get(t, {}).get("worst", {})
        lines.append(f"{'PASS' if passed else 'FAIL'} {name} ({devices} device{'s' * (devices > 1)}): "
                     f"{t} {ch['metric']} {ch['value']:.3g} vs limit {ch['limit']:.3g} "
                     f"[{ch['rule']}]; worst element {_where(w, devices, T)}")
    return lines, ok
