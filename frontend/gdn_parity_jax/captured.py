"""What the fixture stores of a function's results, and what is worth saying
about it in the verdict.

Storage (the fixture's outputs are float32, o also bfloat16; the result's
dtype was checked right after the call: signatures.RESULT_DTYPES):

* float32 and bfloat16 are stored as returned (a bfloat16 ht widened to
  float32, exactly);
* float64 is rounded to the nearest float32 -- what the fixture can hold --
  and the verdict says so; a finite value beyond float32's range becomes
  +-inf there, and is counted as such (:func:`store`).

Non-finite values (NaN, +-inf) in o, ht or a gradient are found here, before
the fixture is written, from the arrays as stored: their count and the first
one (lowest flat index), at the index names gdn-parity's results use
(parity/measure/parity_tensor.c), so the verdict line can say where
(:func:`nonfinite`).  gdn-parity check counts them too and fails the output.
"""

from __future__ import annotations

import numpy as np

# Index names per tensor, as parity/measure/parity_tensor.c gives them ("_": a
# trailing axis of length 1 is not stored here).
INDEX_NAMES = {"o": ("b", "t", "h", "d"), "ht": ("b", "h", "dk", "dv"),
               "dq": ("b", "t", "h", "d"), "dk": ("b", "t", "h", "d"),
               "dv": ("b", "t", "h", "d"), "dg": ("b", "t", "h"), "dbeta": ("b", "t", "h"),
               "dh0": ("b", "h", "dk", "dv")}


def store(a):
    """(array as the fixture takes it, note or None) for a result array."""
    if a is None:
        return None, None
    a = np.asarray(a)
    if a.dtype != np.float64:
        return a, None
    with np.errstate(over="ignore"):
        f = a.astype(np.float32)
    over = int(np.count_nonzero(np.isfinite(a) & ~np.isfinite(f)))
    note = "returned as float64, stored rounded to float32 (the fixture holds float32)"
    if over:
        note += f"; {over} value{'s' * (over > 1)} beyond float32's range became inf"
    return f, note


def _float_view(a):
    a = np.asarray(a)
    if a.dtype.name == "bfloat16":
        return a.astype(np.float32)
    return a


def nonfinite(tensor: str, a):
    """None, or {"count", "nan", "inf", "at": {index name: position}} for the
    non-finite values of one stored tensor."""
    if a is None:
        return None
    a = _float_view(a)
    if a.dtype.kind != "f":
        return None
    bad = ~np.isfinite(a)
    n = int(np.count_nonzero(bad))
    if not n:
        return None
    first = int(np.flatnonzero(bad.ravel())[0])
    idx = np.unravel_index(first, a.shape)
    names = INDEX_NAMES.get(tensor, tuple(f"i{k}" for k in range(a.ndim)))
    return {"count": n, "nan": int(np.count_nonzero(np.isnan(a))),
            "inf": n - int(np.count_nonzero(np.isnan(a))),
            "value": str(a.ravel()[first]),
            "at": {k: int(i) for k, i in zip(names, idx)}}


def findings(spec: dict) -> dict:
    """{"notes": [...], "nonfinite": {tensor: nonfinite()}} for one output's
    stored o, ht and gradients (spec as run.write_results holds it)."""
    found = {}
    for t in ("o", "ht"):
        hit = nonfinite(t, spec.get(t))
        if hit:
            found[t] = hit
    for t, g in (spec.get("grads") or {}).items():
        hit = nonfinite(t, g)
        if hit:
            found[t] = hit
    return {"notes": list(spec.get("notes", [])), "nonfinite": found}
