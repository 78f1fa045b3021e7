"""Verdict lines for the outputs of a run on another recurrence than GDN
(``--recurrence kda``), read from `gdn-parity check`'s recurrence-check
document (schema ``gdn-parity-recurrence-check``, docs/results-json.md).

That document holds one case per subject: our C kernels on the file's
inputs ("kda-recurrent", "kda-chunk", "kda-affine-prefix") and each of the
fixture's outputs as ``"output:NAME"``, each with the error of o and ht
against the recurrence's oracle (``err``), the band it is held to and the
element where |x - r| is largest.  One line per output asked for: PASS or
FAIL, the error of o and of ht against the band, and where each one's worst
element lies (batch, token, head, channel; for a context-parallel output the device
that held the token).  An output whose gradients the file holds (run --grad)
has a case ``"output:NAME"`` in the document's ``"grad"`` too: each of dq,
dk, dv, dg (per channel), dbeta, dh0 against the KDA VJP oracle; the line
then ends saying the gradients were judged, or naming each one over its
band with its error and worst element, and the output fails with any of
them.  A document that cannot be read is :class:`verdict.ResultsError`.
"""

from __future__ import annotations

import json

from .text import show
from .verdict import ResultsError, _dict, _fmt, _int, _where

SCHEMA = "gdn-parity-recurrence-check"
GRADS = ("dq", "dk", "dv", "dg", "dbeta", "dh0")


def read(results_path: str) -> dict:
    """The recurrence-check document (the first, when --json holds an array)."""
    try:
        with open(results_path, encoding="utf-8") as f:
            doc = json.load(f)
    except OSError as exc:
        raise ResultsError(f"its results {show(results_path)} cannot be read: {exc.strerror}") from None
    except (ValueError, RecursionError) as exc:
        raise ResultsError(f"its results {show(results_path)} are not a JSON document: "
                           f"{show(exc)}") from None
    if isinstance(doc, list) and len(doc) == 1:
        doc = doc[0]
    if not isinstance(doc, dict) or doc.get("schema") != SCHEMA or not isinstance(doc.get("cases"), list):
        raise ResultsError(f"its results {show(results_path)} are not a {SCHEMA} document "
                           "with a list of cases")
    return doc


def recurrence_lines(results_path: str, names, found=None) -> tuple[list[str], bool]:
    """(one line per output name, whether all of them passed); found as
    verdict.verdict_lines takes it (non-finite values, storage notes)."""
    doc = read(results_path)
    rec = show(doc.get("recurrence"))
    T = _int(_dict(doc.get("shape")).get("T"), 0)
    cases = {c.get("subject"): c for c in doc["cases"] if isinstance(c, dict)}
    gcases = {c.get("subject"): c for c in _dict(doc.get("grad")).get("cases") or []
              if isinstance(c, dict)}
    found = found or {}
    lines, ok = [], True
    for name in names:
        case = cases.get(f"output:{name}")
        if case is None:
            lines.append(f"MISSING {show(name)}: not judged by gdn-parity (no case holds it)")
            ok = False
            continue
        devices = _int(case.get("devices"), 1)
        passed = case.get("pass") is True
        mine = _dict(found.get(name))
        if mine.get("nonfinite"):
            passed = False
        head = f"{'PASS' if passed else 'FAIL'} {show(name)} ({devices} device{'s' * (devices > 1)})"
        parts = [f"{t} err {_fmt(e.get('err'))} (worst element {_where(e.get('worst'), devices, T)})"
                 for t, e in ((t, case.get(t)) for t in ("o", "ht")) if isinstance(e, dict)]
        lines.append(f"{head}: " + ("; ".join(parts) or "no tensor judged")
                     + f" vs band {_fmt(case.get('band'))} [{rec} oracle]")
        if case.get("ht") is None:
            lines[-1] += "; ht NOT JUDGED: no final state returned"
        gcase = gcases.get(f"output:{name}")
        lines[-1] += _grad_text(gcase, devices, T)
        passed &= gcase is None or gcase.get("pass") is True
        if not passed and lines[-1].startswith("PASS"):
            lines[-1] = "FAIL" + lines[-1][4:]
        ok &= passed
        lines += [f"  note: {show(name)}: {show(n)}" for n in mine.get("notes") or []]
    return lines, ok


def _grad_text(case, devices, T) -> str:
    """The end of an output's line: its gradients judged, or which are over
    the band (error, worst element)."""
    if case is None:
        return "; gradients not judged"
    band = case.get("band")
    judged = [g for g in GRADS if isinstance(case.get(g), dict)]
    if case.get("pass") is True:
        return f"; gradients judged ({' '.join(judged)}) vs band {_fmt(band)}"
    bad = [g for g in judged if not (isinstance(case[g].get("err"), (int, float))
                                     and case[g]["err"] <= (band or 0))] or ["(unknown)"]
    return "; GRADIENT FAIL " + "; ".join(
        f"{g} err {_fmt(_dict(case.get(g)).get('err'))} vs band {_fmt(band)} "
        f"(worst element {_where(_dict(case.get(g)).get('worst'), devices, T)})" for g in bad)
