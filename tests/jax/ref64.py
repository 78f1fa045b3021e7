"""The token-level recurrence in float64 (numpy): the in-process tests'
reference.  float64 sits ~2^29 below float32's unit roundoff, so against
float32 kernels it is as good as the MPFR oracle (which the command-line
tests use through gdn-fixture regen)."""

import numpy as np


def token_reference(x, l2norm=True):
    f = {n: (None if x.get(n) is None else np.asarray(x[n], np.float64)) for n in x}
    q, k, v, g, beta = f["q"], f["k"], f["v"], f["g"], f["beta"]
    B, T, Hk, Dk = q.shape
    Hv, Dv = v.shape[2], v.shape[3]
    if l2norm:
        q = q / np.sqrt((q * q).sum(-1, keepdims=True) + 1e-6)
        k = k / np.sqrt((k * k).sum(-1, keepdims=True) + 1e-6)
    q = np.repeat(q, Hv // Hk, axis=2) * Dk ** -0.5
    k = np.repeat(k, Hv // Hk, axis=2)
    h = np.zeros((B, Hv, Dk, Dv)) if f.get("h0") is None else f["h0"].copy()
    o = np.zeros((B, T, Hv, Dv))
    for t in range(T):
        h *= np.exp(g[:, t])[..., None, None]
        kv = np.einsum("bhkv,bhk->bhv", h, k[:, t])
        d = beta[:, t][..., None] * (v[:, t] - kv)
        h += np.einsum("bhk,bhv->bhkv", k[:, t], d)
        o[:, t] = np.einsum("bhkv,bhk->bhv", h, q[:, t])
    return o, h


def rel_fro(x, ref):
    x = np.asarray(x, np.float64)
    return float(np.linalg.norm(x - ref) / np.linalg.norm(ref))
