"""Verdict lines for the JAX outputs, read from gdn-parity's results JSON.

`gdn-parity check` judges every ``/outputs/<name>`` of the fixture in every
case (one case per chunk size and device count of our C kernels); the limits
are the same across cases up to the C scan's error.  For each output this
module reports its worst check (largest value / limit) over all cases, and
where its worst element lies: batch, token, head, and for a context-parallel
output the device that held that token and how far past its seam it is.

Non-finite results: the C document writes a non-finite number as a string
("nan", "inf", "-inf"); any value that is not a finite number (a string,
null, a missing key) is read as such here and never breaks a line.  An
output the front end found non-finite values in (captured.py: their count
and the first one, lowest flat index) is a FAIL whatever the document says,
its line naming the tensor, the count and where the first one is.  Each
line ends saying which gradients were judged, or that none were.  Notes on
how an output was stored (float64 rounded to float32) follow its line.  An
output judged on o alone (it returned no final state: called without h0)
says so in its line (:data:`HT_NOT_JUDGED`).  A document that cannot be
read at all is :class:`ResultsError`.
"""

from __future__ import annotations

import json
import math

from .text import show

_WORDS = {"nan": math.nan, "inf": math.inf, "+inf": math.inf, "-inf": -math.inf,
          "infinity": math.inf, "-infinity": -math.inf}


# Appended to the verdict line of an output the C side judged on o alone:
# a function called without an initial state returns no final state
# (MaxText's does not), so its ht was never compared with anything.
HT_NOT_JUDGED = ("; ht NOT JUDGED: no final state returned (a function called without an initial "
                 "state returns none, as MaxText's does; run with h0 to judge it)")


# The gradient tensors a check may judge (parity/measure/parity_tensor.c's rows):
# a line says which of them were judged, or that none were.
GRAD_TENSORS = ("dq", "dk", "dv", "dg", "dbeta", "dh0")


class ResultsError(ValueError):
    """The results document is missing or unreadable."""


def number(v) -> float:
    """A JSON value as a float: numbers as they are, the C side's "nan" /
    "inf" / "-inf" strings as those, anything else (null, other text) NaN."""
    if isinstance(v, bool):
        return math.nan
    if isinstance(v, (int, float)):
        return float(v)
    if isinstance(v, str):
        return _WORDS.get(v.strip().lower(), math.nan)
    return math.nan


def _fmt(v) -> str:
    x = number(v)
    return f"{x:.3g}" if math.isfinite(x) else ("nan" if math.isnan(x) else str(x))


def _where(worst, devices: int, T: int) -> str:
    if not isinstance(worst, dict):
        return "unknown"
    parts = [f"{show(k)}={show(v)}" for k, v in worst.items()]
    t = worst.get("t")
    if devices > 1 and T and T % devices == 0 and isinstance(t, int) and not isinstance(t, bool):
        per = T // devices
        parts.append(f"(device {t // per}, token {t % per} of its shard)")
    return " ".join(parts) or "unknown"


def _dict(v) -> dict:
    return v if isinstance(v, dict) else {}


def _int(v, default: int) -> int:
    return v if isinstance(v, int) and not isinstance(v, bool) and v > 0 else default


def _ratio(ch: dict) -> float:
    """value / limit, NaN (a non-finite value) ranked worst."""
    v, lim = number(ch.get("value")), number(ch.get("limit"))
    if not lim or math.isnan(lim):
        return -math.inf
    r = v / lim
    return math.inf if math.isnan(r) else r


def _read(results_path: str) -> dict:
    try:
        with open(results_path, encoding="utf-8") as f:
            doc = json.load(f)
    except OSError as exc:
        raise ResultsError(f"its results {show(results_path)} cannot be read: {exc.strerror}") from None
    except (ValueError, RecursionError) as exc:
        raise ResultsError(f"its results {show(results_path)} are not a JSON document: "
                           f"{show(exc)}") from None
    if not isinstance(doc, dict) or not isinstance(doc.get("cases"), list):
        raise ResultsError(f"its results {show(results_path)} have no list of cases")
    return doc


def _tag(name, imp, ch) -> str:
    """What a line is judged by: the rule's id, but for a stock (scan) output
    the check as it reads without the subject ("o rel_fro <= 2 x max(scan,
    8u)"): the rules that hold every output are named after the affine
    prefix, which the stock function is not."""
    if _dict(imp.get("attrs")).get("implementation") == "scan":
        text = ch.get("name")
        if isinstance(text, str) and text.startswith(f"{name} "):
            return show(text[len(name) + 1:])
    return show(ch.get("rule"))


def _nonfinite_line(name, devices, T, hits) -> str:
    parts = []
    for t, h in hits.items():
        kinds = ", ".join(f"{h[k]} {k}" for k in ("nan", "inf") if h.get(k))
        parts.append(f"{t} has {h['count']} non-finite value{'s' * (h['count'] > 1)} ({kinds}), "
                     f"first {show(h.get('value'))} at {_where(h.get('at'), devices, T)}")
    return f"FAIL {show(name)} ({devices} device{'s' * (devices > 1)}): " + "; ".join(parts)


def verdict_lines(results_path: str, names, found=None) -> tuple[list[str], bool]:
    """(one line per output name, whether all of them passed).  found:
    {name: captured.findings} from the run (non-finite values, notes)."""
    doc = _read(results_path)
    found = found or {}
    lines, ok = [], True
    for name in names:
        worst, meta, passed, no_ht, grads = None, None, True, False, set()
        for case in doc["cases"]:
            imp = _dict(_dict(case).get("impls")).get(name)
            if not isinstance(imp, dict):
                continue
            meta = (case, imp)
            passed &= imp.get("pass") is True
            no_ht |= imp.get("judged_on") is not None  # the C side: "o alone: ... no final state"
            for ch in _dict(case.get("tolerance")).get("checks") or []:
                if not isinstance(ch, dict) or ch.get("subject") != name:
                    continue
                if ch.get("tensor") in GRAD_TENSORS:
                    grads.add(ch["tensor"])
                r = _ratio(ch)
                if r > -math.inf and (worst is None or r > worst[0]):
                    worst = (r, ch)
        mine = _dict(found.get(name))
        if meta is None:
            lines.append(f"MISSING {show(name)}: not judged by gdn-parity (no case holds it)")
            ok = False
            continue
        case, imp = meta
        devices = _int(_dict(imp.get("attrs")).get("devices"), 1)
        T = _int(_dict(case.get("shape")).get("T"), 0)
        hits = _dict(mine.get("nonfinite"))
        if hits:
            lines.append(_nonfinite_line(name, devices, T, hits))
            passed = False
        elif worst is None:
            lines.append(f"{'PASS' if passed else 'FAIL'} {show(name)}")
        else:
            _, ch = worst
            t = ch.get("tensor")
            w = _dict(imp.get(t)).get("worst") if isinstance(t, str) else None
            lines.append(f"{'PASS' if passed else 'FAIL'} {show(name)} ({devices} "
                         f"device{'s' * (devices > 1)}): {show(t)} {show(ch.get('metric'))} "
                         f"{_fmt(ch.get('value'))} vs limit {_fmt(ch.get('limit'))} "
                         f"[{_tag(name, imp, ch)}]; worst element {_where(w, devices, T)}")
        if not hits and lines[-1].startswith(("PASS ", "FAIL ")):
            lines[-1] += (f"; gradients judged ({' '.join(t for t in GRAD_TENSORS if t in grads)})"
                          if grads else "; gradients not judged")
        if no_ht and not hits:
            lines[-1] += HT_NOT_JUDGED
        ok &= passed
        lines += [f"  note: {show(name)}: {show(n)}" for n in mine.get("notes") or []]
    return lines, ok
