#!/usr/bin/python3
"""Peer benchmark: the Gated DeltaNet token recurrence in mpmath against our
MPFR oracle (and the dd tier), same inputs, same precision.

    /usr/bin/python3 bench/peer_mpmath.py --exe BUILD/bench/bench_oracle_peer
        [--shape 1,24,1,64] [--prec 128] [--reps 3] [--json OUT]

Runs bench_oracle_peer (our MPFR token form and dd tier on synthetic inputs,
one thread, best of --reps), then the same recurrence in mpmath (Debian's
python3-mpmath) at the same precision on the same numbers, step for step as
oracle.h lists them: every operation an mpf operation rounded to nearest at
mp.prec bits, dots left to right from i = 0.  (mpmath has no correctly
rounded reciprocal square root: 1/sqrt(x) is two roundings where MPFR's
mpfr_rec_sqrt is one; the outputs are compared after rounding to binary64,
where that cannot show.)  Prints both times, the ratio and the agreement
of the binary64 outputs; --json writes the figures.  Not run by meson test.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

import mpmath
from mpmath import mp, mpf


def recurrence(d):
    """o (B,T,Hv,Dv) and ht (B,Hv,Dk,Dv) as lists of Python floats."""
    B, T, Hk, Hv, Dk, Dv = (d[k] for k in ("B", "T", "Hk", "Hv", "Dk", "Dv"))
    inp = d["inputs"]
    fx = float.fromhex
    q = [fx(x) for x in inp["q"]]
    k = [fx(x) for x in inp["k"]]
    v = [fx(x) for x in inp["v"]]
    g = [fx(x) for x in inp["g"]]
    beta = [fx(x) for x in inp["beta"]]
    h0 = [fx(x) for x in inp["h0"]]
    l2 = d["l2norm"]
    scale = mpf(1) / mp.sqrt(mpf(Dk))
    eps = mpf(1e-6)
    o = [0.0] * (B * T * Hv * Dv)
    ht = [0.0] * (B * Hv * Dk * Dv)

    def prep(row, is_q):
        X = [mpf(x) for x in row]  # exact: float32 values
        if l2:
            n = X[0] * X[0]
            for i in range(1, Dk):
                n = n + X[i] * X[i]
            r = mpf(1) / mp.sqrt(n + eps)
            if is_q:
                r = r * scale
            return [x * r for x in X]
        if is_q:
            return [x * scale for x in X]
        return X

    for b in range(B):
        for j in range(Hv):
            kh = j // (Hv // Hk)
            base = (b * Hv + j) * Dk * Dv
            h = [[mpf(h0[base + i * Dv + c]) for i in range(Dk)] for c in range(Dv)]
            for t in range(T):
                qk = ((b * T + t) * Hk + kh) * Dk
                K = prep(k[qk:qk + Dk], False)
                Q = prep(q[qk:qk + Dk], True)
                gi = (b * T + t) * Hv + j
                a = mp.exp(mpf(g[gi]))
                bt = mpf(beta[gi])
                vo = ((b * T + t) * Hv + j) * Dv
                for c in range(Dv):
                    hc = h[c]
                    hc[0] = hc[0] * a
                    kv = hc[0] * K[0]
                    for i in range(1, Dk):
                        hc[i] = hc[i] * a
                        kv = kv + hc[i] * K[i]
                    delta = (mpf(v[vo + c]) - kv) * bt
                    hc[0] = hc[0] + K[0] * delta
                    oc = hc[0] * Q[0]
                    for i in range(1, Dk):
                        hc[i] = hc[i] + K[i] * delta
                        oc = oc + hc[i] * Q[i]
                    o[vo + c] = float(oc)
            for c in range(Dv):
                for i in range(Dk):
                    ht[base + i * Dv + c] = float(h[c][i])
    return o, ht


def ulps(x, r):
    """Largest distance in binary64 ulps of r between x and r."""
    import math
    worst = 0.0
    for a, b in zip(x, r):
        if a == b:
            continue
        u = math.ulp(b) if b != 0 else math.ulp(0.0)
        worst = max(worst, abs(a - b) / u)
    return worst


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--exe", required=True, help="path of bench_oracle_peer")
    ap.add_argument("--shape", default="1,24,1,64", help="B,T,H,D (default 1,24,1,64)")
    ap.add_argument("--prec", type=int, default=128)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--json", help="write the figures here")
    a = ap.parse_args()

    with tempfile.TemporaryDirectory() as tmp:
        dump = os.path.join(tmp, "peer.json")
        ours = subprocess.run([a.exe, "--out", dump, "--shape", a.shape, "--prec", str(a.prec),
                               "--reps", str(a.reps)], check=True, capture_output=True, text=True)
        sys.stdout.write(ours.stdout)
        sys.stdout.flush()
        with open(dump) as f:
            d = json.load(f)

    mp.prec = a.prec
    best = float("inf")
    best_cpu = float("inf")
    for _ in range(max(1, min(a.reps, 2))):
        t0, c0 = time.perf_counter(), time.process_time()
        o, ht = recurrence(d)
        best = min(best, time.perf_counter() - t0)
        best_cpu = min(best_cpu, time.process_time() - c0)

    outs = d["outputs"]
    mo = [float.fromhex(x) for x in outs["mpfr_o"]]
    mh = [float.fromhex(x) for x in outs["mpfr_ht"]]
    same = sum(x == y for x, y in zip(o + ht, mo + mh))
    n = len(o) + len(ht)
    worst = max(ulps(o, mo), ulps(ht, mh))
    macs = d["macs"]
    res = {
        "peer": "mpmath %s (%s backend), /usr/bin/python3 %s" % (
            mpmath.__version__, mpmath.libmp.BACKEND, sys.version.split()[0]),
        "shape": a.shape, "prec": a.prec, "macs": macs,
        "mpmath_s": best, "mpmath_cpu_s": best_cpu, "mpmath_ns_per_mac": best * 1e9 / macs,
        "mpfr_s": d["mpfr_s"], "mpfr_cpu_s": d["mpfr_cpu_s"],
        "mpfr_ns_per_mac": d["mpfr_s"] * 1e9 / macs,
        "dd_s": d["dd_s"], "dd_cpu_s": d["dd_cpu_s"], "dd_ns_per_mac": d["dd_s"] * 1e9 / macs,
        "ratio_mpmath_over_mpfr": best / d["mpfr_s"],
        "ratio_mpmath_over_mpfr_cpu": best_cpu / d["mpfr_cpu_s"],
        "ratio_mpfr_over_dd": d["mpfr_s"] / d["dd_s"],
        "outputs_identical": same, "outputs": n, "max_ulps": worst,
    }
    print("peer mpmath, %s at %d bits (%.3g MACs), one thread:" % (a.shape, a.prec, macs))
    print("  mpmath      %9.4f s  %10.1f ns/MAC   (%s)" % (best, res["mpmath_ns_per_mac"], res["peer"]))
    print("  MPFR oracle %9.4f s  %10.1f ns/MAC   mpmath / MPFR = %.0f (CPU time %.0f)" % (
        d["mpfr_s"], res["mpfr_ns_per_mac"], res["ratio_mpmath_over_mpfr"],
        res["ratio_mpmath_over_mpfr_cpu"]))
    print("  dd tier     %9.4f s  %10.2f ns/MAC   MPFR / dd = %.1f" % (
        d["dd_s"], res["dd_ns_per_mac"], res["ratio_mpfr_over_dd"]))
    print("  binary64 outputs: %d of %d identical to the MPFR oracle's, worst %.0f ulp" % (same, n, worst))
    if a.json:
        with open(a.json, "w") as f:
            json.dump(res, f, indent=2)
            f.write("\n")
    # The same recurrence: a difference beyond 1 ulp means the peer computes something else.
    return 0 if worst <= 1 else 1


if __name__ == "__main__":
    sys.exit(main())
