"""Least-squares fit of y = a + b·T, and how well it fits.

In binary64 with the sums taken around the means (the figures are byte and
flop counts up to ~1e12 at the lengths audited; centring keeps the slope
exact for points on a line).  Deterministic: the points' order is theirs.
"""

from __future__ import annotations


def linear(points):
    """points: [(T, y), ...] with at least two distinct T.  Returns
    {a, b, r2, max_rel_residual, points}: r2 the coefficient of determination
    (1.0 when every y is equal: a constant is fitted exactly), and the
    largest |y - (a + b T)| over max |y| (0 when every y is 0)."""
    pts = [(float(t), float(y)) for t, y in points]
    n = len(pts)
    if n < 2 or len({t for t, _ in pts}) < 2:
        raise ValueError("a linear fit needs at least two distinct lengths")
    mt = sum(t for t, _ in pts) / n
    my = sum(y for _, y in pts) / n
    stt = sum((t - mt) ** 2 for t, _ in pts)
    sty = sum((t - mt) * (y - my) for t, y in pts)
    b = sty / stt
    a = my - b * mt
    ss_res = sum((y - (a + b * t)) ** 2 for t, y in pts)
    ss_tot = sum((y - my) ** 2 for _, y in pts)
    r2 = 1.0 if ss_tot == 0 else 1.0 - ss_res / ss_tot
    top = max(abs(y) for _, y in pts)
    worst = max(abs(y - (a + b * t)) for t, y in pts)
    return {"a": a, "b": b, "r2": r2, "max_rel_residual": (worst / top) if top else 0.0,
            "points": [[int(t) if t.is_integer() else t, y] for t, y in pts]}


def longest_t(a: float, b: float, limit: float, multiple: int = 1):
    """The largest T, a multiple of `multiple`, with a + b T <= limit; None
    when not even T = multiple fits; "unbounded" when b <= 0 and a fits
    (the figure does not grow with T)."""
    if b <= 0:
        return "unbounded" if a <= limit else None
    t = int((limit - a) // b)
    t -= t % multiple
    return t if t >= multiple else None
