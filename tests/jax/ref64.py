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


def token_vjp_reference(x, do, dht=None, l2norm=True):
    """The gradients {dq, dk, dv, dg, dbeta, dh0} of L = sum(do o) + sum(dht ht)
    for the token recurrence above, by jax.vjp in float64 (jax.enable_x64):
    an independent code path from the chunked kernels (no chunks, no solve,
    no prefix), differentiated by JAX's autodiff.  h0 absent: the zero state."""
    import jax
    import jax.numpy as jnp

    with jax.enable_x64(True):
        f64 = {n: jnp.asarray(np.asarray(x[n], np.float64)) for n in ("q", "k", "v", "g", "beta")}
        B, T, Hk, Dk = f64["q"].shape
        Hv, Dv = f64["v"].shape[2], f64["v"].shape[3]
        h0 = x.get("h0")
        f64["h0"] = jnp.zeros((B, Hv, Dk, Dv)) if h0 is None else jnp.asarray(np.asarray(h0, np.float64))

        def forward(p):
            q, k = p["q"], p["k"]
            if l2norm:
                q = q / jnp.sqrt((q * q).sum(-1, keepdims=True) + 1e-6)
                k = k / jnp.sqrt((k * k).sum(-1, keepdims=True) + 1e-6)
            q = jnp.repeat(q, Hv // Hk, axis=2) * Dk ** -0.5
            k = jnp.repeat(k, Hv // Hk, axis=2)

            def step(h, t):
                qt, kt, vt, gt, bt = t
                h = h * jnp.exp(gt)[..., None, None]
                d = bt[..., None] * (vt - jnp.einsum("bhkv,bhk->bhv", h, kt))
                h = h + jnp.einsum("bhk,bhv->bhkv", kt, d)
                return h, jnp.einsum("bhkv,bhk->bhv", h, qt)

            seq = tuple(jnp.moveaxis(a, 1, 0) for a in (q, k, p["v"], p["g"], p["beta"]))
            h, o = jax.lax.scan(step, p["h0"], seq)
            return jnp.moveaxis(o, 0, 1), h

        _, pull = jax.vjp(forward, f64)
        dht64 = jnp.zeros((B, Hv, Dk, Dv)) if dht is None else jnp.asarray(np.asarray(dht, np.float64))
        (g,) = pull((jnp.asarray(np.asarray(do, np.float64)), dht64))
        names = {"dq": "q", "dk": "k", "dv": "v", "dg": "g", "dbeta": "beta", "dh0": "h0"}
        return {n: np.asarray(g[w]) for n, w in names.items()}
