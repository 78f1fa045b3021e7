"""The audit's judgement: fits, checks, the affine minimum, memory at scale,
and the text lines (docs/audit-json.md says what each field means).

Checks are rows of :data:`CHECKS` (name -> function of the document state);
each returns check records, PASS or FAIL, the FAIL reason naming the op.
"""

from __future__ import annotations

import math

from . import fit, hlo

TOKENS_AT = (262144, 1048576)
FIGURES = ("temp_bytes", "argument_bytes", "output_bytes", "flops", "bytes_accessed",
           "collective_bytes")
# flops-fall-with-D: the slope ratio b(D)/b(Dmin) allowed, over the ideal Dmin/D.
FLOPS_SLACK = 1.5


def _figure(p, name):
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


def fits(series):
    out = []
    for (fn, ps, d, heads), progs in sorted(series.items(), key=lambda kv: str(kv[0])):
        row = dict(function=fn, **{"pass": ps}, devices=d, heads=heads)
        for name in FIGURES:
            out.append({**row, "figure": name,
                        **fit.linear([(p["T"], _figure(p, name)) for p in progs])})
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
        g_lo, g_hi = _groups(lo), _groups(hi)
        bad = [(k, g_lo.get(k, (0,))[0], tot, rec, n) for k, (tot, rec, n) in g_hi.items()
               if tot > g_lo.get(k, (0,))[0]]
        base = {"check": "collective-grows-with-T", "function": fn, "pass": ps, "devices": d}
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


def check_flops(state):
    """Per-device flops per token of the cp function must fall as 1/D."""
    out = []
    devs = state["devices"]
    d0 = devs[0]
    for ps in ("forward", "backward"):
        f0 = _fit_of(state["fits"], "cp", ps, d0, "audited", "flops")
        if f0 is None:
            continue
        for d in devs[1:]:
            f = _fit_of(state["fits"], "cp", ps, d, "audited", "flops")
            ratio = f["b"] / f0["b"] if f0["b"] > 0 else math.inf
            limit = FLOPS_SLACK * d0 / d
            ok = ratio <= limit
            out.append({"check": "flops-fall-with-D", "function": "cp", "pass": ps, "devices": d,
                        "verdict": "PASS" if ok else "FAIL",
                        "reason": (f"flops per token per device {f['b']:.4g} at D={d} against "
                                   f"{f0['b']:.4g} at D={d0}: ratio {ratio:.3f} "
                                   f"({'<=' if ok else '>'} {limit:.3f}; token sharding gives "
                                   f"{d0 / d:.3f}, every device computing the whole sequence ~1)"),
                        "figures": {"b": f["b"], "b_min_D": f0["b"], "b_ratio": ratio, "limit": limit,
                                    "r2": f["r2"]}})
    return out


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


def document(st, programs, subject, platform, jax_version):
    series = _series(programs)
    fitted = fits(series)
    state = {"series": series, "fits": fitted, "devices": st.devices,
             "limits": {"max_residual": st.args.max_residual_bytes_per_token, "must_fit": st.must_fit}}
    state["memory"] = memory_at_scale(st, series, fitted, st.chips)
    checks = [c for fn in CHECKS.values() for c in fn(state)]
    fail = any(c["verdict"] == "FAIL" for c in checks)
    return {"schema": "gdn-parity-audit", "schema_version": 1, "producer": None,
            "platform": platform, "jax_version": jax_version,
            "note": ("XLA-on-CPU buffer assignment is not a TPU's: absolute bytes differ per platform; "
                     "the growth law in T and D is what carries over"),
            "subject": subject,
            "shape": {"B": st.B, "Hk": st.Hk, "Hv": st.H, "Dk": st.D, "Dv": st.Dv, "C": st.chunk,
                      "dtype": st.args.dtype, "itemsize": 4},
            "lengths": st.lengths, "devices": st.devices, "programs": programs, "fits": fitted,
            "affine_minimum": affine_minimum(st, series, subject["cp_prefix"]),
            "memory_at_scale": state["memory"], "checks": checks,
            "verdict": "FAIL" if fail else "PASS", "exit_status": 1 if fail else 0}


def _mib(x):
    return f"{x / 2**20:.2f} MiB"


def text(doc, quiet=False):
    """The audit's text lines: a table of programs at the largest T, the
    affine minimum, the memory at scale, then one line per check."""
    out = []
    if not quiet:
        out += _text_programs(doc) + (_text_memory(doc) if doc["memory_at_scale"] else [])
        out.append(f"audit: note: {doc['note']}")
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
                   f"flops {p['cost']['flops']:.4g}{aff}")
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
