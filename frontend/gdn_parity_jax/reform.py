"""Correct reformulations of the chunked Gated DeltaNet: test subjects.

Each function below computes the same function as
:func:`gdn_parity_jax.impls.chunk_gated_delta_rule` (MaxText's signature,
``cp_axis`` for context parallelism inside ``jax.shard_map``) with one
evaluation order changed, the way another correct implementation may order
it.  None is wrong: a gate that FAILs one of them on the model's gates has
a limit tighter than a correct rounding.  They are what
``tests/jax/test_reform.py`` runs through ``gdn-parity-jax run`` over seeds,
gates and device counts (``docs/tolerance.md``).  Written from the algorithm
(shared/specs/algorithm.md), not copied from upstream.

    name                      what differs from the stock chunked scan
    cumsum_sequential         G = cumsum(g) inside a chunk as an explicit
                              left-to-right loop (lax.scan over the chunk)
    cumsum_hillis_steele      G by a Hillis-Steele log-depth prefix: round s
                              adds the value s positions back (s = 1, 2, 4..)
    cumsum_blelloch           G by Blelloch's work-efficient prefix (up-sweep,
                              down-sweep to an exclusive sum, plus g); C must
                              be a power of two
    inverse_forward           (I + L)^-1 by forward substitution row by row
                              (the form transformers and flash-linear-
                              attention's naive code use) instead of
                              triangular_solve against I
    inverse_solve_rhs         never forms (I + L)^-1: U and W by one
                              triangular solve with [v beta, k beta e^G] as
                              right-hand sides
    wy_other_order            W = (A diag(e^G)) (k beta) instead of
                              A (diag(e^G) k beta); o = q_g h + P U - (P W) h
                              and h' = e^g h + Kt^T U - (Kt^T W) h instead of
                              P (U - W h) and e^g h + Kt^T (U - W h)
    token_loop                o and the final state by the token recurrence
                              (lax.scan over tokens); under context
                              parallelism the device's incoming state still
                              comes from the chunk maps' prefix
    float64 (reform_f64.py)   the stock algorithm in float64, rounded to
                              float32 once at the end (its own module: it
                              turns on jax_enable_x64 process-wide)

Rounding points are the stock's otherwise (impls.py's docstring); float32
compute only is intended (compute_dtype is honoured as the stock does).
Gradients: by autodiff of these very functions (``--grad``).
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
from jax import lax

from gdn_parity_jax import impls

HIGHEST = lax.Precision.HIGHEST


def _mm(a, b):
    return jnp.matmul(a, b, precision=HIGHEST)


_t = impls._t


# ---- the gates' cumulative sum inside a chunk (last axis) -----------------

def cumsum_stock(x):
    return jnp.cumsum(x, axis=-1)


def cumsum_loop(x):
    """Left to right, one addition per position (lax.scan over the axis)."""
    def step(c, xi):
        c = c + xi
        return c, c
    _, ys = lax.scan(step, jnp.zeros_like(x[..., 0]), jnp.moveaxis(x, -1, 0))
    return jnp.moveaxis(ys, 0, -1)


def _shift(x, s):
    """x moved s positions later along the last axis, zeros in front."""
    return jnp.pad(x[..., :-s], [(0, 0)] * (x.ndim - 1) + [(s, 0)])


def cumsum_hs(x):
    """Hillis-Steele: ceil(log2 C) rounds, round s adds the value s back."""
    s = 1
    while s < x.shape[-1]:
        x = x + _shift(x, s)
        s *= 2
    return x


def cumsum_blelloch_fn(x):
    """Blelloch: up-sweep (a reduction tree), down-sweep to the exclusive
    prefix, then the element itself added (inclusive)."""
    C = x.shape[-1]
    if C & (C - 1):
        raise ValueError(f"cumsum_blelloch needs a power-of-two chunk size, not {C}")
    lead = x.shape[:-1]
    y = x
    s = 1
    while s < C:  # up-sweep: y[k*2s + 2s-1] += y[k*2s + s-1]
        v = y.reshape(lead + (C // (2 * s), 2 * s))
        v = v.at[..., 2 * s - 1].add(v[..., s - 1])
        y = v.reshape(lead + (C,))
        s *= 2
    y = y.at[..., C - 1].set(0)
    s = C // 2
    while s >= 1:  # down-sweep
        v = y.reshape(lead + (C // (2 * s), 2 * s))
        left, right = v[..., s - 1], v[..., 2 * s - 1]
        v = v.at[..., s - 1].set(right).at[..., 2 * s - 1].set(right + left)
        y = v.reshape(lead + (C,))
        s //= 2
    return y + x


# ---- the intra-chunk inverse A = (I + L)^-1 and the WY products -------------

def inverse_trsm(L, eye):
    return lax.linalg.triangular_solve(eye + L, jnp.broadcast_to(eye, L.shape), left_side=True,
                                       lower=True, unit_diagonal=True)


def inverse_forward_subst(L, eye):
    """T = -L; for i = 1 .. C-1: T[i, :i] += T[i, :] T[:, :i]; A = T + I."""
    C = L.shape[-1]
    cols = jnp.arange(C)

    def body(i, T):
        row = lax.dynamic_index_in_dim(T, i, axis=-2, keepdims=False)  # (..., C)
        upd = jnp.einsum("...j,...jk->...k", row, T, precision=HIGHEST)
        upd = jnp.where(cols < i, upd, 0.0)
        return lax.dynamic_update_index_in_dim(T, row + upd, i, axis=-2)

    T = lax.fori_loop(1, C, body, -L)
    return T + eye


def chunk_terms(query, key, value, g, beta, chunk_size, use_qk_norm, compute_dtype, wd,
                cumsum=cumsum_stock, inverse=inverse_trsm, wy="stock"):
    """impls.chunk_terms with the evaluation orders chosen; wd is the working
    dtype of the parts impls keeps in float32 (float64 for reform_f64)."""
    B, T, Hk, Dk = query.shape
    cd = compute_dtype
    q, k, v, b = impls.prepared(query, key, value, beta, use_qk_norm, cd)
    C = chunk_size
    pad = (-T) % C
    N = (T + pad) // C

    def chunks(x):
        x = jnp.pad(x, [(0, 0), (0, pad)] + [(0, 0)] * (x.ndim - 2))
        x = x.reshape((B, N, C) + x.shape[2:])
        x = jnp.moveaxis(x, 3, 2)
        return jnp.moveaxis(x, 1, 0)

    q, k, v, b = chunks(q), chunks(k), chunks(v), chunks(b)
    G = cumsum(chunks(g.astype(wd)))
    strict = jnp.tril(jnp.ones((C, C), bool), -1)
    lower = jnp.tril(jnp.ones((C, C), bool))
    diff = G[..., :, None] - G[..., None, :]
    k_beta = k * b[..., None]
    v_beta = v * b[..., None]
    S = _mm(k_beta, _t(k)).astype(wd)
    L = jnp.where(strict, S * jnp.exp(jnp.where(strict, diff, 0.0)), 0.0)
    eye = jnp.eye(C, dtype=wd)
    kbg = k_beta.astype(wd) * jnp.exp(G)[..., None]
    if inverse == "solve_rhs":
        Dv = v_beta.shape[-1]
        rhs = jnp.concatenate([v_beta.astype(wd), kbg], axis=-1)
        X = lax.linalg.triangular_solve(eye + L, rhs, left_side=True, lower=True, unit_diagonal=True)
        U, W = X[..., :Dv].astype(cd), X[..., Dv:].astype(cd)
    else:
        A = inverse(L, eye)
        U = _mm(A, v_beta.astype(wd)).astype(cd)
        if wy == "other":
            W = _mm(A * jnp.exp(G)[..., None, :], k_beta.astype(wd)).astype(cd)
        else:
            W = _mm(A, kbg).astype(cd)
    QK = _mm(q, _t(k)).astype(wd)
    P = jnp.where(lower, QK * jnp.exp(jnp.where(lower, diff, 0.0)), 0.0)
    return dict(q=q, k=k, G=G, U=U, W=W, P=P, g_last=G[..., -1]), T


def step_stock(h, c, wd):
    G = c["G"]
    q_g = c["q"].astype(wd) * jnp.exp(G)[..., None]
    v_new = c["U"].astype(wd) - _mm(c["W"].astype(wd), h)
    o = _mm(q_g, h) + _mm(c["P"], v_new)
    kt = c["k"].astype(wd) * jnp.exp(c["g_last"][..., None] - G)[..., None]
    h = jnp.exp(c["g_last"])[..., None, None] * h + _mm(_t(kt), v_new)
    return h, o


def step_other(h, c, wd):
    """The same chunk in the other association: products with U and W first."""
    G = c["G"]
    U, W = c["U"].astype(wd), c["W"].astype(wd)
    q_g = c["q"].astype(wd) * jnp.exp(G)[..., None]
    o = _mm(q_g, h) + _mm(c["P"], U) - _mm(_mm(c["P"], W), h)
    kt = c["k"].astype(wd) * jnp.exp(c["g_last"][..., None] - G)[..., None]
    h = jnp.exp(c["g_last"])[..., None, None] * h + _mm(_t(kt), U) - _mm(_mm(_t(kt), W), h)
    return h, o


def chunk_map(c, wd):
    G = c["G"]
    kt = c["k"].astype(wd) * jnp.exp(c["g_last"][..., None] - G)[..., None]
    Dk = kt.shape[-1]
    A = jnp.exp(c["g_last"])[..., None, None] * jnp.eye(Dk, dtype=wd) - _mm(_t(kt), c["W"].astype(wd))
    return A, _mm(_t(kt), c["U"].astype(wd))


def fold(terms, wd):
    A0, B0 = chunk_map(jax.tree.map(lambda x: x[0], terms), wd)
    ident = (A0 * 0 + jnp.eye(A0.shape[-1], dtype=wd), B0 * 0)

    @jax.checkpoint
    def body(acc, c):
        return impls.compose(acc, chunk_map(c, wd)), None

    acc, _ = lax.scan(body, ident, terms)
    return acc


def token_replay(query, key, value, g, beta, h, use_qk_norm, compute_dtype, wd):
    """o (B, T, Hv, Dv) and the final state by the token recurrence from h:
    h <- e^{g_t} h; u = beta_t (v_t - h^T k_t); h <- h + k_t u^T; o_t = h^T q_t."""
    B, T, Hk, Dk = query.shape
    q, k, v, b = (x.astype(wd) for x in impls.prepared(query, key, value, beta, use_qk_norm, compute_dtype))
    xs = [jnp.moveaxis(x, 1, 0) for x in (q, k, v, g.astype(wd), b)]  # token axis first

    def step(h, x):
        qt, kt, vt, gt, bt = x  # (B, H, D) / (B, H)
        h = jnp.exp(gt)[..., None, None] * h
        u = bt[..., None] * (vt - jnp.einsum("bhkv,bhk->bhv", h, kt, precision=HIGHEST))
        h = h + kt[..., :, None] * u[..., None, :]
        return h, jnp.einsum("bhkv,bhk->bhv", h, qt, precision=HIGHEST)

    h, o = lax.scan(step, h, xs)
    return jnp.moveaxis(o, 0, 1), h


def run(query, key, value, g, beta, chunk_size, initial_state, use_qk_norm_in_gdn, compute_dtype,
        cp_axis, *, wd=jnp.float32, cumsum=cumsum_stock, inverse=inverse_trsm, wy="stock",
        replay="chunks", out_dtype=None):
    """The stock algorithm (cp_axis None) or associative-scan context
    parallelism, with the reformulation's choices; o in out_dtype (default
    value's dtype), the final state in float32 when initial_state is given."""
    terms, T = chunk_terms(query, key, value, g, beta, chunk_size, use_qk_norm_in_gdn, compute_dtype, wd,
                           cumsum, inverse, wy)
    B, _, _, Dk = query.shape
    Hv, Dv = value.shape[2], value.shape[3]
    h0 = jnp.zeros((B, Hv, Dk, Dv), wd) if initial_state is None else initial_state.astype(wd)
    step = functools.partial(step_other if wy == "other" else step_stock, wd=wd)
    h_in, last = h0, None
    if cp_axis is not None:
        (A_ex, B_ex), (A_last, B_last) = impls.prefix_associative(fold(terms, wd), cp_axis)
        r = lax.axis_index(cp_axis)
        h_in = jnp.where(r == 0, h0, impls.apply_map(A_ex, B_ex, h0))
        last = impls.apply_map(A_last, B_last, h0)
    if replay == "tokens":
        o, h = token_replay(query, key, value, g, beta, h_in, use_qk_norm_in_gdn, compute_dtype, wd)
    else:
        h, o = lax.scan(step, h_in, terms)
        o = impls.unchunk(o, T, wd)
    if last is not None:
        h = last
    o = o.astype(out_dtype or value.dtype)
    return o, (h.astype(jnp.float32) if initial_state is not None else None)


def _subject(doc, **choice):
    def fn(query, key, value, g, beta, chunk_size=64, initial_state=None, use_qk_norm_in_gdn=False,
           compute_dtype=jnp.bfloat16, cp_axis=None):
        return run(query, key, value, g, beta, chunk_size, initial_state, use_qk_norm_in_gdn, compute_dtype,
                   cp_axis, **choice)
    fn.__doc__ = doc
    return fn


cumsum_sequential = _subject("G by an explicit left-to-right loop.", cumsum=cumsum_loop)
cumsum_hillis_steele = _subject("G by a Hillis-Steele parallel prefix.", cumsum=cumsum_hs)
cumsum_blelloch = _subject("G by a Blelloch parallel prefix (C a power of two).", cumsum=cumsum_blelloch_fn)
inverse_forward = _subject("(I + L)^-1 by forward substitution.", inverse=inverse_forward_subst)
inverse_solve_rhs = _subject("U, W by a triangular solve with the right-hand sides.", inverse="solve_rhs")
wy_other_order = _subject("The WY and chunk products in the other association.", wy="other")
token_loop = _subject("o and the final state by the token recurrence.", replay="tokens")

#: name -> function, the float32 reformulations (reform_f64.float64 is apart)
SUBJECTS = {
    "cumsum_sequential": cumsum_sequential,
    "cumsum_hillis_steele": cumsum_hillis_steele,
    "cumsum_blelloch": cumsum_blelloch,
    "inverse_forward": inverse_forward,
    "inverse_solve_rhs": inverse_solve_rhs,
    "wy_other_order": wy_other_order,
    "token_loop": token_loop,
}
