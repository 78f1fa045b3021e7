"""Kimi Delta Attention in JAX, written for the tests of the KDA path of
`gdn-parity-jax run --recurrence kda` and assert_gdn_parity(...,
recurrence="kda"), independently of the C kernels:

    S_t = (I - beta_t k_t k_t^T) Diag(exp(g_t)) S_{t-1} + beta_t k_t v_t^T,
    o_t = S_t^T (q_t / sqrt(Dk)),   g_t one log-decay per key channel.

MaxText's call convention (query, key, value, g, beta, chunk_size,
initial_state, use_qk_norm_in_gdn, compute_dtype, cp_axis), g of shape
(B, T, Hv, Dk); cp_axis=None is the stock function, else the per-shard
context-parallel form under shard_map (the affine prefix: each device folds
its tokens into one map S -> M S + N, the maps are all-gathered, each device
composes those of the devices before it (the exclusive prefix), applies it
to h0 and replays its tokens from that state).

* ``recurrent``: a token loop (lax.scan);
* ``chunked``: chunks of chunk_size tokens, per-channel cumulative decays
  G inside a chunk, the intra-chunk system (I + A) solved by a triangular
  solve (the WY form with the decay inside the channel sum);
* ``gate_on_value_axis``: the token loop with Diag(exp(g_t)) applied along
  the value axis of S instead of the key axis (needs Dk = Dv): a mistake a
  port from a scalar gate makes, which a scalar-gate test cannot see;
* ``dg_per_head_backward``: the token loop with a wrong backward (a
  custom_vjp on g): its forward is ``recurrent``'s, but dg loses its
  per-channel part (each channel gets the mean over the head's channels), a
  mistake a port from a scalar gate's backward makes.
"""

import jax
import jax.numpy as jnp
from jax import lax
from jax.scipy.linalg import solve_triangular

HIGHEST = lax.Precision.HIGHEST


def _ein(spec, *xs):
    return jnp.einsum(spec, *xs, precision=HIGHEST)


def _prepare(query, key, value, g, beta, use_qk_norm):
    """float32 (B, H, T, ...) arrays, key heads repeated to the value heads, q scaled."""
    f32 = jnp.float32
    q, k = query.astype(f32), key.astype(f32)
    if use_qk_norm:
        q = q * lax.rsqrt(jnp.sum(q * q, -1, keepdims=True) + 1e-6)
        k = k * lax.rsqrt(jnp.sum(k * k, -1, keepdims=True) + 1e-6)
    rep = value.shape[2] // key.shape[2]
    q, k = jnp.repeat(q, rep, axis=2), jnp.repeat(k, rep, axis=2)
    hf = lambda x: jnp.moveaxis(x, 1, 2)  # noqa: E731  (B, T, H, ...) -> (B, H, T, ...)
    return (hf(q) * query.shape[-1] ** -0.5, hf(k), hf(value.astype(f32)), hf(g.astype(f32)),
            hf(beta.astype(f32)))


def _tokens(x):
    return jnp.moveaxis(x, 2, 0)


def _decay_key(S, gt):
    return jnp.exp(gt)[..., :, None] * S


def _decay_value(S, gt):
    return S * jnp.exp(gt)[..., None, :]


def _scan(S, q, k, v, g, beta, decay=_decay_key):
    """The token loop from S: (o (B, H, T, Dv), final S)."""
    def step(S, t):
        qt, kt, vt, gt, bt = t
        S = decay(S, gt)
        delta = bt[..., None] * (vt - _ein("bhkv,bhk->bhv", S, kt))
        S = S + kt[..., :, None] * delta[..., None, :]
        return S, _ein("bhkv,bhk->bhv", S, qt)
    S, o = lax.scan(step, S, tuple(map(_tokens, (q, k, v, g, beta))))
    return jnp.moveaxis(o, 0, 2), S


def _chunks(S, q, k, v, g, beta, C):
    """The chunked form from S; T padded to a multiple of C with tokens that
    leave the state as it is (g = 0, beta = 0)."""
    B, H, T, Dk = k.shape
    n = -(-T // C)
    pad = n * C - T
    cut = lambda x: jnp.moveaxis(  # noqa: E731  (B, H, T, ...) -> (n, B, H, C, ...)
        jnp.pad(x, [(0, 0), (0, 0), (0, pad)] + [(0, 0)] * (x.ndim - 3)).reshape(
            (B, H, n, C) + x.shape[3:]), 2, 0)
    strict = jnp.tril(jnp.ones((C, C), bool), -1)
    incl = jnp.tril(jnp.ones((C, C), bool))

    def chunk(S, t):
        qc, kc, vc, gc, bc = t
        G = jnp.cumsum(gc, axis=-2)                                  # (B, H, C, Dk)
        diff = G[..., :, None, :] - G[..., None, :, :]               # G_i - G_j
        dec = jnp.exp(jnp.where(incl[..., None], diff, -jnp.inf))    # 0 above the diagonal
        A = bc[..., :, None] * _ein("bhid,bhjd,bhijd->bhij", kc, kc, dec) * strict
        L = jnp.eye(C, dtype=A.dtype) + A
        eG = jnp.exp(G)
        u = solve_triangular(L, bc[..., None] * vc, lower=True, unit_diagonal=True)
        w = solve_triangular(L, bc[..., None] * kc * eG, lower=True, unit_diagonal=True)
        delta = u - _ein("bhcd,bhdv->bhcv", w, S)
        P = _ein("bhid,bhjd,bhijd->bhij", qc, kc, dec)
        o = _ein("bhcd,bhdv->bhcv", qc * eG, S) + _ein("bhij,bhjv->bhiv", P, delta)
        tail = jnp.exp(G[..., -1:, :] - G)                            # exp(G_C - G_j)
        S = eG[..., -1, :, None] * S + _ein("bhjd,bhjv->bhdv", kc * tail, delta)
        return S, o
    S, o = lax.scan(chunk, S, tuple(map(cut, (q, k, v, g, beta))))
    o = jnp.moveaxis(o, 0, 2).reshape(B, H, n * C, -1)[:, :, :T]
    return o, S


def _local_map(k, v, g, beta):
    """This device's tokens as one affine map S -> M S + N (M: Dk x Dk)."""
    B, H, _, Dk = k.shape

    def step(mn, t):
        M, N = mn
        kt, vt, gt, bt = t
        a = jnp.exp(gt)[..., :, None]
        M, N = a * M, a * N
        b = bt[..., None, None] * kt[..., :, None]
        M = M - b * _ein("bhk,bhkj->bhj", kt, M)[..., None, :]
        N = N - b * _ein("bhk,bhkj->bhj", kt, N)[..., None, :] + b * vt[..., None, :]
        return (M, N), None
    eye = jnp.broadcast_to(jnp.eye(Dk, dtype=jnp.float32), (B, H, Dk, Dk))
    (M, N), _ = lax.scan(step, (eye, jnp.zeros((B, H, Dk, v.shape[-1]), jnp.float32)),
                         tuple(map(_tokens, (k, v, g, beta))))
    return M, N


def _exclusive_prefix(M, N, cp_axis):
    """All-gather every device's map, compose those of the devices before
    this one, in order (the identity on device 0)."""
    Ms, Ns = lax.all_gather(M, cp_axis), lax.all_gather(N, cp_axis)
    r = lax.axis_index(cp_axis)
    Pm = jnp.broadcast_to(jnp.eye(M.shape[-1], dtype=M.dtype), M.shape)
    Pn = jnp.zeros_like(N)
    for i in range(Ms.shape[0]):
        take = i < r
        Pm = jnp.where(take, _ein("bhij,bhjk->bhik", Ms[i], Pm), Pm)
        Pn = jnp.where(take, _ein("bhij,bhjv->bhiv", Ms[i], Pn) + Ns[i], Pn)
    return Pm, Pn


def _kda(query, key, value, g, beta, initial_state, use_qk_norm, compute_dtype, cp_axis, local):
    q, k, v, gg, b = _prepare(query, key, value, g, beta, use_qk_norm)
    B, H, _, Dk = k.shape
    h0 = (jnp.zeros((B, H, Dk, v.shape[-1]), jnp.float32) if initial_state is None
          else initial_state.astype(jnp.float32))
    if cp_axis is None:
        o, S = local(h0, q, k, v, gg, b)
    else:
        Pm, Pn = _exclusive_prefix(*_local_map(k, v, gg, b), cp_axis)
        o, S = local(_ein("bhij,bhjv->bhiv", Pm, h0) + Pn, q, k, v, gg, b)
        D, r = lax.axis_size(cp_axis), lax.axis_index(cp_axis)
        S = lax.psum(jnp.where(r == D - 1, S, jnp.zeros_like(S)), cp_axis)
    o = jnp.moveaxis(o, 1, 2).astype(compute_dtype)
    return o, (S if initial_state is not None else None)


def recurrent(query, key, value, g, beta, chunk_size=64, initial_state=None,
              use_qk_norm_in_gdn=False, compute_dtype=jnp.float32, cp_axis=None):
    return _kda(query, key, value, g, beta, initial_state, use_qk_norm_in_gdn, compute_dtype,
                cp_axis, _scan)


def chunked(query, key, value, g, beta, chunk_size=64, initial_state=None,
            use_qk_norm_in_gdn=False, compute_dtype=jnp.float32, cp_axis=None):
    return _kda(query, key, value, g, beta, initial_state, use_qk_norm_in_gdn, compute_dtype,
                cp_axis, lambda *a: _chunks(*a, chunk_size))


def gate_on_value_axis(query, key, value, g, beta, chunk_size=64, initial_state=None,
                       use_qk_norm_in_gdn=False, compute_dtype=jnp.float32, cp_axis=None):
    return _kda(query, key, value, g, beta, initial_state, use_qk_norm_in_gdn, compute_dtype,
                cp_axis, lambda *a: _scan(*a, decay=_decay_value))


def fla_order(q, k, v, g, beta, scale=None, initial_state=None, output_final_state=False):
    """The token loop in flash-linear-attention's KDA call convention
    (naive_recurrent_kda's parameters: q, k with Hk heads, v, g, beta with Hv,
    scale, initial_state, output_final_state) -> (o, final state or None),
    for the tests of the fla-kda signature row without torch."""
    dk = q.shape[-1]
    q = q * ((dk ** -0.5 if scale is None else scale) / dk ** -0.5)  # _prepare scales by Dk^-1/2
    o, S = recurrent(q, k, v, g, beta, initial_state=(
        initial_state if initial_state is not None else jnp.zeros(
            (q.shape[0], v.shape[2], dk, v.shape[-1]), jnp.float32)))
    return o, (S if output_final_state else None)


@jax.custom_vjp
def _g_per_head_grad(g):
    return g


def _g_fwd(g):
    return g, None


def _g_bwd(_, dg):
    return (jnp.broadcast_to(jnp.mean(dg, -1, keepdims=True), dg.shape),)


_g_per_head_grad.defvjp(_g_fwd, _g_bwd)


def dg_per_head_backward(query, key, value, g, beta, chunk_size=64, initial_state=None,
                         use_qk_norm_in_gdn=False, compute_dtype=jnp.float32, cp_axis=None):
    return recurrent(query, key, value, _g_per_head_grad(g), beta, chunk_size, initial_state,
                     use_qk_norm_in_gdn, compute_dtype, cp_axis)
