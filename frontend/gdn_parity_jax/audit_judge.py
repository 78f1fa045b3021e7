"""The audit's judgement: fits, checks, the affine minimum, memory at scale,
and the text lines (docs/audit-json.md says what each field means).

Checks are rows of :data:`CHECKS` (name -> function of the document state);
each returns check records, PASS or FAIL, the FAIL reason naming the op;
what a check cannot judge (a trend with one D >= 2, a device count whose
programs are unlike the others) goes to state["unjudged"], never a PASS.
"""

from __future__ import annotations

import math

from . import fit, hlo

TOKENS_AT = (262144, 1048576)
FIGURES = ("temp_bytes", "argument_bytes", "output_bytes", "flops", "bytes_accessed",
           "collective_bytes")
WORK_NOTE = ("work is counted from the compiled module's text, each instruction times the trip counts "
             "of the loops around it; XLA:CPU's cost_analysis() (programs[].cost) counts a while body "
             "once whatever its trip count, so a recurrence written as a scan is invisible to it")
# flops-fall-with-D and residuals-fall-with-D: the slope ratio b(D)/b(D') allowed
# (D' the smallest D >= 2 with a fit), over the ideal D'/D.
FLOPS_SLACK = 1.5


def _figure(p, name):
    if name == "work_flops":
        return p["work"]["flops"]
    if name == "temp_bytes_trend":
        return p["memory"]["temp_bytes"]
    if name in p["memory"]:
        return p["memory"][name]
    if name in p["cost"]:
        return p["cost"][name]
    return p[name]


def _series(programs):
    """{(function, pass, devices, heads): [programs by ascending T]}."""
    out = {}
    for p in programs:
        out.setdefault((p["function"], p["pass"], p["devices"], p["heads"]), []).append(p)
    for v in out.values():
        v.sort(key=lambda p: p["T"])
    return out


def _groups(p):
    """{group key: (bytes_total summed, largest record, count)} of one program."""
    g = {}
    for c in p["collectives"]:
        k = hlo.group_key(c)
        tot, big, n = g.get(k, (0, c, 0))
        g[k] = (tot + c["bytes_total"], c if c["bytes_total"] > big["bytes_total"] else big, n + 1)
    return g


def _like(p, chunk):
    """A program like the others of its series: two or more chunks per
    shard (one chunk per shard runs no loop over chunks: unlike the rest)."""
    return p["T"] // (p["devices"] * chunk) >= 2


def fits(series, chunk=1):
    """Every figure's a + b T fit per series; the trend figures
    (work_flops, and temp_bytes_trend in the backward) only over the
    programs like the others (their lengths left out in excluded_T)."""
    out = []
    for (fn, ps, d, heads), progs in sorted(series.items(), key=lambda kv: str(kv[0])):
        row = dict(function=fn, **{"pass": ps}, devices=d, heads=heads)
        for name in FIGURES:
            out.append({**row, "figure": name,
                        **fit.linear([(p["T"], _figure(p, name)) for p in progs])})
        like = [p for p in progs if _like(p, chunk)]
        excluded = [p["T"] for p in progs if not _like(p, chunk)]
        for name in ("work_flops", "temp_bytes_trend"):
            if (name == "temp_bytes_trend" and ps != "backward") or len({p["T"] for p in like}) < 2:
                continue
            if name == "work_flops" and any("work" not in p for p in like):
                continue
            out.append({**row, "figure": name, **fit.linear([(p["T"], _figure(p, name)) for p in like]),
                        "excluded_T": excluded})
        keys = sorted({k for p in progs for k in _groups(p)})
        for k in keys:
            pts = [(p["T"], _groups(p).get(k, (0,))[0]) for p in progs]
            out.append({**row, "figure": f"collective:{k}", **fit.linear(pts)})
    return out


def _fit_of(fitted, fn, ps, d, heads, figure):
    for f in fitted:
        if (f["function"], f["pass"], f["devices"], f["heads"], f["figure"]) == (fn, ps, d, heads, figure):
            return f
    return None


def check_collectives(state):
    """A cp collective group whose bytes grow from the smallest to the
    largest T (at D >= 2): the sequence moves."""
    out = []
    for (fn, ps, d, heads), progs in sorted(state["series"].items(), key=lambda kv: str(kv[0])):
        if fn != "cp" or d < 2 or heads != "audited":
            continue
        lo, hi = progs[0], progs[-1]
        base = {"check": "collective-grows-with-T", "function": fn, "pass": ps, "devices": d}
        hidden = [c for p in (hi, lo) for c in p["collectives"] if c.get("loops_unknown")]
        if hidden:
            rec = hidden[0]
            where = ", ".join(x for x in (rec.get("op_name"), rec.get("source")) if x) or "no metadata"
            out.append({**base, "verdict": "FAIL",
                        "reason": (f"{hlo.describe(rec)} runs in loop {', '.join(rec['loops_unknown'])} "
                                   f"whose trip count XLA cannot name: its bytes per device cannot be "
                                   f"bounded ({where})"),
                        "op": rec, "figures": {"bytes": rec["bytes"], "T": hi["T"]}})
            continue
        g_lo, g_hi = _groups(lo), _groups(hi)
        bad = [(k, g_lo.get(k, (0,))[0], tot, rec, n) for k, (tot, rec, n) in g_hi.items()
               if tot > g_lo.get(k, (0,))[0]]
        if not bad:
            n = sum(len(p["collectives"]) for p in (hi,))
            out.append({**base, "verdict": "PASS",
                        "reason": f"{n} collectives at T={hi['T']}, none grows with T "
                        f"({hi['collective_bytes']} bytes at T={hi['T']}, "
                        f"{lo['collective_bytes']} at T={lo['T']})",
                        "figures": {"bytes_lo": lo["collective_bytes"], "bytes_hi": hi["collective_bytes"]}})
            continue
        for k, b_lo, b_hi, rec, n in sorted(bad, key=lambda b: (-b[2], b[0])):
            where = ", ".join(x for x in (rec.get("op_name"), rec.get("source")) if x) or "no metadata"
            many = f" (the largest of {n} from one source)" if n > 1 else ""
            out.append({**base, "verdict": "FAIL",
                        "reason": f"{hlo.describe(rec)}{many}: {b_lo} -> {b_hi} bytes per device from "
                        f"T={lo['T']} to T={hi['T']}: the sequence moves ({where})",
                        "op": rec, "figures": {"bytes_lo": b_lo, "bytes_hi": b_hi,
                                               "T_lo": lo["T"], "T_hi": hi["T"]}})
    return out


def _unknown_loops(progs):
    """[(program, loop)] of the programs' loops whose trip count XLA cannot
    name and that hold work or collectives."""
    return [(p, lp) for p in progs for lp in (p.get("work") or {}).get("unknown_loops", [])]


def _loop_where(lp):
    return ", ".join(x for x in (lp.get("op_name"), lp.get("source")) if x) or "no metadata"


def _trend(state, ps, figure, check, what):
    """The trend of a per-device slope among the cp programs at D >= 2:
    b(D) / b(D') <= 1.5 D'/D against the smallest such D' with a fit.
    Returns (checks, unjudged)."""
    out, notes = [], []
    base = {"check": check, "function": "cp", "pass": ps}
    fitted = {}
    for d in state["devices"]:
        if d < 2:
            continue
        f = _fit_of(state["fits"], "cp", ps, d, "audited", figure)
        if f is None:
            notes.append({**base, "devices": d, "reason": f"D={d}: fewer than two lengths with two or more "
                          "chunks per shard: no fit (the others rest on a program unlike them)"})
            continue
        fitted[d] = f
    ds = sorted(fitted)
    if len(ds) < 2:
        have = ", ".join(f"D={d}" for d in ds) or "none"
        notes.append({**base, "devices": None,
                      "reason": f"{what} per token with D needs two device counts >= 2 with a fit "
                      f"({have}): the trend cannot be judged (e.g. --devices 1,2,4)"})
        return out, notes
    d0 = ds[0]
    f0 = fitted[d0]
    if f0["b"] <= 0:
        notes.append({**base, "devices": d0, "reason": f"{what} does not grow with T at D={d0} "
                      f"(slope {f0['b']:.4g}): nothing to divide"})
        return out, notes
    for d in ds[1:]:
        f = fitted[d]
        ratio = f["b"] / f0["b"]
        limit = FLOPS_SLACK * d0 / d
        ok = ratio <= limit
        out.append({**base, "devices": d, "verdict": "PASS" if ok else "FAIL",
                    "reason": (f"{what} per token per device {f['b']:.4g} at D={d} against "
                               f"{f0['b']:.4g} at D={d0}: ratio {ratio:.3f} "
                               f"({'<=' if ok else '>'} {limit:.3f}; token sharding gives "
                               f"{d0 / d:.3f}, every device holding the whole sequence ~1)"),
                    "figures": {"b": f["b"], "b_ref": f0["b"], "D_ref": d0, "b_ratio": ratio,
                                "limit": limit, "r2": f["r2"]}})
    return out, notes


def check_flops(state):
    """Per-device work per token of the cp function must fall as 1/D among
    the device counts >= 2 (the work counted from the HLO with its loops);
    a loop of unknown trip count holding work is named and FAILs."""
    out = []
    for ps in ("forward", "backward"):
        progs = [p for (fn, pp, d, h), v in state["series"].items() for p in v
                 if fn == "cp" and pp == ps and h == "audited"]
        if not progs:
            continue
        hidden = [(p, lp) for p, lp in _unknown_loops(progs) if lp["flops_per_trip"]]
        if hidden:
            p, lp = max(hidden, key=lambda x: (x[0]["T"], x[1]["flops_per_trip"]))
            out.append({"check": "flops-fall-with-D", "function": "cp", "pass": ps, "devices": p["devices"],
                        "verdict": "FAIL",
                        "reason": (f"loop {lp['name']} has a trip count XLA cannot name and does "
                                   f"{lp['flops_per_trip']} flops per trip at T={p['T']}: its work "
                                   f"cannot be counted, so its fall with D cannot be judged "
                                   f"({_loop_where(lp)})"),
                        "figures": {"T": p["T"], "flops_per_trip": lp["flops_per_trip"]}, "loop": lp})
            continue
        checks, notes = _trend(state, ps, "work_flops", "flops-fall-with-D", "work (flops)")
        out += checks
        state["unjudged"] += notes
    return out


def check_residual_trend(state):
    """Backward temp bytes per token per device must fall with D among the
    device counts >= 2 (residuals that do not are kept whole on each)."""
    if not any(ps == "backward" for (_, ps, _, _) in state["series"]):
        return []
    checks, notes = _trend(state, "backward", "temp_bytes_trend", "residuals-fall-with-D",
                           "backward temp bytes")
    state["unjudged"] += notes
    return checks


def check_overhead(state):
    """--max-work-overhead: the cp function's work per local token over the
    stock function's, at each D >= 2, above the limit FAILs."""
    limit = state["limits"].get("max_overhead")
    if limit is None:
        return []
    out = []
    for row in state["work"]:
        if row["function"] != "cp" or row["devices"] < 2 or row["overhead"] is None:
            continue
        ok = row["overhead"] <= limit
        out.append({"check": "work-overhead", "function": "cp", "pass": row["pass"], "devices": row["devices"],
                    "verdict": "PASS" if ok else "FAIL",
                    "reason": (f"work per local token {row['flops_per_local_token']:.4g} flops, "
                               f"x{row['overhead']:.3f} the stock function's "
                               f"({'<=' if ok else '>'} {limit:g})"),
                    "figures": {"overhead": row["overhead"], "limit": limit}})
    return out


def work_rows(st, series, fitted):
    """Per (function, pass, D): work per token from the HLO count, per local
    token (x D), and the overhead against the stock function."""
    rows = []
    for (fn, ps, d, heads) in sorted(series, key=lambda k: (k[1], k[0] != "stock", k[2])):
        if heads != "audited":
            continue
        f = _fit_of(fitted, fn, ps, d, heads, "work_flops")
        rows.append({"function": fn, "pass": ps, "devices": d,
                     "flops_per_token": f["b"] if f else None,
                     "flops_per_local_token": f["b"] * d if f else None,
                     "r2": f["r2"] if f else None, "overhead": None,
                     "excluded_T": (f or {}).get("excluded_T", [])})
    for r in rows:
        stock = next((s for s in rows if s["function"] == "stock" and s["pass"] == r["pass"]), None)
        if (r["function"] == "cp" and stock and stock["flops_per_token"] and r["flops_per_local_token"]
                is not None and stock["flops_per_token"] > 0):
            r["overhead"] = r["flops_per_local_token"] / stock["flops_per_token"]
    return rows


def check_residuals(state):
    limit = state["limits"].get("max_residual")
    if limit is None:
        return []
    out = []
    for row in state["memory"]["rows"]:
        if row["function"] != "cp" or row["devices"] < 2:
            continue
        v = row["temp_bytes_per_local_token"]
        ok = v <= limit
        out.append({"check": "max-residual-bytes-per-token", "function": "cp", "pass": "backward",
                    "devices": row["devices"], "verdict": "PASS" if ok else "FAIL",
                    "reason": (f"backward temp bytes per local token {v:.1f} "
                               f"({'<=' if ok else '>'} {limit:g}; {row['ratio_to_stock']:.2f} x "
                               f"the stock function's)" if row["ratio_to_stock"] is not None else
                               f"backward temp bytes per local token {v:.1f} vs {limit:g}"),
                    "figures": {"bytes_per_local_token": v, "limit": limit}})
    return out


def check_fit(state):
    want = state["limits"].get("must_fit")
    if want is None:
        return []
    T, chip, cap = want
    rows = [r for r in state["memory"]["rows"] if r["function"] == "cp"]
    row = max(rows, key=lambda r: r["devices"])
    need = row["resident_a"] + row["resident_b"] * T
    ok = need <= cap
    return [{"check": "must-fit", "function": "cp", "pass": "backward", "devices": row["devices"],
             "verdict": "PASS" if ok else "FAIL",
             "reason": (f"T={T}: {need / 2**30:.2f} GiB resident per device extrapolated "
                        f"({'<=' if ok else '>'} {chip} {cap / 2**30:.2f} GiB)"),
             "figures": {"T": T, "bytes": need, "chip": chip, "chip_bytes": cap}}]


CHECKS = {"collective-grows-with-T": check_collectives, "flops-fall-with-D": check_flops,
          "work-overhead": check_overhead, "residuals-fall-with-D": check_residual_trend,
          "max-residual-bytes-per-token": check_residuals, "must-fit": check_fit}


def rounds(prefix: str, d: int) -> int:
    """Pairs a device receives under the declared prefix schedule."""
    if d < 2:
        return 0
    return {"hillis-steele": math.ceil(math.log2(d)), "associative-scan": d,
            "sequential": d - 1}[prefix]


def affine_minimum(st, series, prefix):
    itemsize = 4  # the carried state and the pairs are float32
    pair = st.B * st.H * (st.D * st.D + st.D * st.Dv) * itemsize
    out = []
    for (fn, ps, d, heads), progs in sorted(series.items(), key=lambda kv: str(kv[0])):
        if fn != "cp" or heads != "audited":
            continue
        p = progs[0]
        r = rounds(prefix, d)
        mn = pair * r
        out.append({"pass": ps, "devices": d, "T": p["T"], "pair_bytes": pair, "rounds": r,
                    "minimum_bytes": mn, "measured_bytes": p["collective_bytes"],
                    "ratio": (p["collective_bytes"] / mn) if mn else None})
    return out


def memory_at_scale(st, series, fitted, chips):
    if "backward" not in st.passes:
        return None
    label = "model" if st.model else "audited"
    hd = st.model or {"name": "audited", "Hk": st.Hk, "Hv": st.H, "Dk": st.D, "Dv": st.Dv}
    rows = []
    for (fn, ps, d, heads), progs in sorted(series.items(), key=lambda kv: (kv[0][0] != "stock", kv[0][2])):
        if ps != "backward" or heads != label:
            continue
        t = _fit_of(fitted, fn, ps, d, heads, "temp_bytes")
        res = fit.linear([(p["T"], sum(p["memory"][k] for k in ("argument_bytes", "output_bytes",
                                                               "temp_bytes"))) for p in progs])
        rows.append({"function": fn, "devices": d, "temp_bytes_per_token": t["b"],
                     "temp_bytes_per_local_token": t["b"] * d, "ratio_to_stock": None, "r2": t["r2"],
                     "resident_a": res["a"], "resident_b": res["b"], "resident_r2": res["r2"],
                     "at": {str(n): res["a"] + res["b"] * n for n in TOKENS_AT},
                     "longest_T": {c: fit.longest_t(res["a"], res["b"], b, d) for c, b in chips.items()}})
    stock = next((r for r in rows if r["function"] == "stock"), None)
    for r in rows:
        if r["function"] != "stock" and stock and stock["temp_bytes_per_local_token"] > 0:
            r["ratio_to_stock"] = r["temp_bytes_per_local_token"] / stock["temp_bytes_per_local_token"]
    return {"heads": {"name": hd["name"], "B": st.B, **{k: hd[k] for k in ("Hk", "Hv", "Dk", "Dv")}},
            "tokens": list(TOKENS_AT), "accelerators": dict(chips), "rows": rows}


def finite(x):
    """x with every non-finite float replaced by None (JSON has no inf/nan)."""
    if isinstance(x, float):
        return x if math.isfinite(x) else None
    if isinstance(x, dict):
        return {k: finite(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [finite(v) for v in x]
    return x


def document(st, programs, subject, platform, jax_version):
    series = _series(programs)
    fitted = fits(series, st.chunk)
    state = {"series": series, "fits": fitted, "devices": st.devices, "unjudged": [],
             "limits": {"max_residual": st.args.max_residual_bytes_per_token, "must_fit": st.must_fit,
                        "max_overhead": getattr(st.args, "max_work_overhead", None)}}
    state["memory"] = memory_at_scale(st, series, fitted, st.chips)
    state["work"] = work_rows(st, series, fitted)
    checks = [c for fn in CHECKS.values() for c in fn(state)]
    fail = any(c["verdict"] == "FAIL" for c in checks)
    return finite({"schema": "gdn-parity-audit", "schema_version": 1, "producer": None,
            "platform": platform, "jax_version": jax_version,
            "note": ("XLA-on-CPU buffer assignment is not a TPU's: absolute bytes differ per platform; "
                     "the growth law in T and D is what carries over"),
            "subject": subject,
            "shape": {"B": st.B, "Hk": st.Hk, "Hv": st.H, "Dk": st.D, "Dv": st.Dv, "C": st.chunk,
                      "dtype": st.args.dtype, "itemsize": 4},
            "lengths": st.lengths, "devices": st.devices, "programs": programs, "fits": fitted,
            "affine_minimum": affine_minimum(st, series, subject["cp_prefix"]),
            "memory_at_scale": state["memory"], "work": state["work"], "work_note": WORK_NOTE,
            "checks": checks, "unjudged": state["unjudged"],
            "verdict": "FAIL" if fail else "PASS", "exit_status": 1 if fail else 0})


def _mib(x):
    return f"{x / 2**20:.2f} MiB"


def text(doc, quiet=False):
    """The audit's text lines: a table of programs at the largest T, the
    affine minimum, the memory at scale, then one line per check."""
    out = []
    if not quiet:
        out += _text_programs(doc) + _text_work(doc) + (_text_memory(doc) if doc["memory_at_scale"] else [])
        out.append(f"audit: note: {doc['note']}")
        out.append(f"audit: note: {doc['work_note']}")
    for c in doc.get("unjudged", []):
        d = f" D={c['devices']}" if c.get("devices") is not None else ""
        out.append(f"audit: NOTE {c['check']} {c['function']} {c['pass']}{d}: {c['reason']}")
    for c in doc["checks"]:
        d = f" D={c['devices']}" if c.get("devices") is not None else ""
        out.append(f"audit: {c['verdict']} {c['check']} {c['function']} {c['pass']}{d}: {c['reason']}")
    out.append(f"gdn-parity-jax: audit {doc['verdict']} (exit {doc['exit_status']})")
    return out


def _text_programs(doc):
    T = doc["lengths"][-1]
    out = [f"audit: {doc['subject']['cp']} ({doc['subject']['layout']}), lengths "
           f"{','.join(map(str, doc['lengths']))}, devices {','.join(map(str, doc['devices']))}; "
           f"per device at T={T}:"]
    mins = {(m["pass"], m["devices"]): m for m in doc["affine_minimum"]}
    for p in doc["programs"]:
        if p["T"] != T or p["heads"] != "audited":
            continue
        kinds = {}
        for c in p["collectives"]:
            kinds[c["kind"]] = kinds.get(c["kind"], 0) + 1
        ks = ", ".join(f"{n} {k}" for k, n in sorted(kinds.items())) or "no collectives"
        m = mins.get((p["pass"], p["devices"])) if p["function"] == "cp" else None
        aff = (f"; at T={m['T']} {m['measured_bytes']} B vs affine minimum {m['minimum_bytes']} B "
               f"(x{m['ratio']:.2f})") if m and m["ratio"] is not None else ""
        out.append(f"audit:   {p['function']:5} {p['pass']:8} D={p['devices']}: {ks} "
                   f"({p['collective_bytes']} B); temp {_mib(p['memory']['temp_bytes'])}, "
                   f"work {_work(p)} flops (cost_analysis {p['cost']['flops']:.4g}){aff}")
    return out


def _work(p):
    w = p.get("work")
    if not w:
        return "?"
    lu = f", {len(w['unknown_loops'])} loop(s) of unknown trip count" if w["unknown_loops"] else ""
    return f"{w['flops']:.4g}{lu}"


def _text_work(doc):
    """Work per token from the HLO count and the overhead over the stock
    function, per pass and D; the largest source line of the largest D."""
    out = ["audit: work per token (flops counted from the HLO with loop trip counts), per device:"]
    for r in doc.get("work", []):
        if r["flops_per_token"] is None:
            continue
        ov = f", x{r['overhead']:.3f} the stock's per local token" if r["overhead"] is not None else ""
        out.append(f"audit:   {r['function']:5} {r['pass']:8} D={r['devices']}: {r['flops_per_token']:.4g} "
                   f"per token, {r['flops_per_local_token']:.4g} per local token{ov}")
    T = doc["lengths"][-1]
    for p in doc["programs"]:
        if p["function"] == "cp" and p["T"] == T and p["devices"] == doc["devices"][-1] and p.get("work") \
                and p["heads"] == "audited" and p["work"]["by_source"]:
            top = p["work"]["by_source"][0]
            share = top["flops"] / p["work"]["flops"] if p["work"]["flops"] else 0
            out.append(f"audit:   cp {p['pass']} D={p['devices']} T={T}: most work at {top['source']} "
                       f"({top['flops']:.4g} flops, {share:.0%})")
    return out


def _text_memory(doc):
    m = doc["memory_at_scale"]
    h = m["heads"]
    out = [f"audit: backward memory at scale, heads {h['name']} (B {h['B']}, Hk {h['Hk']}, "
           f"Hv {h['Hv']}, Dk {h['Dk']}, Dv {h['Dv']}), resident = argument + output + temp per device:"]
    for r in m["rows"]:
        at = ", ".join(f"T={t}: {float(v) / 2**30:.2f} GiB" for t, v in r["at"].items())
        lt = ", ".join(f"{c} {v}" for c, v in r["longest_T"].items())
        ratio = f", x{r['ratio_to_stock']:.2f} stock" if r["ratio_to_stock"] is not None else ""
        out.append(f"audit:   {r['function']:5} D={r['devices']}: temp {r['temp_bytes_per_local_token']:.1f} "
                   f"B per local token (r2 {r['r2']:.4f}{ratio}); {at}; longest T: {lt}")
    return out
