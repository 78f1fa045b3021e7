"""Context-parallel Gated DeltaNet functions written for the tests of
assert_gdn_parity's defaults, independently of the package's own
implementations (gdn_parity_jax.impls) and of its mutant catalogue
(gdn_parity_jax.broken): a token-by-token recurrence, each device's tokens
folded into one affine map h -> M h + N, the maps combined across devices by
a Hillis-Steele prefix over ppermute, and each device replaying its tokens
from the state that prefix gives it.

MaxText's signature (query, key, value, g, beta, chunk_size, initial_state,
use_qk_norm_in_gdn, compute_dtype, cp_axis); cp_axis=None is the stock
sequential recurrence.  Three functions:

* ``correct``: ceil(log2 D) prefix rounds;
* ``two_rounds``: always 2 rounds, which is right for up to 4 devices only
  (on 8, devices 4..7 never hear from devices 0..3): a bug that appears on 8
  devices alone;
* ``seam_stop_gradient``: the state carried into each device passes
  ``lax.stop_gradient``: the forward is exact on every mesh, the gradients
  of everything before a seam lose what flows through it.
"""

import math

import jax
import jax.numpy as jnp
from jax import lax

HIGHEST = lax.Precision.HIGHEST


def _dot(a, b):
    return jnp.matmul(a, b, precision=HIGHEST)


def _prepare(query, key, value, g, beta, use_qk_norm):
    """float32 (B, H, T, ...) arrays, grouped key heads repeated."""
    f32 = jnp.float32
    q, k = query.astype(f32), key.astype(f32)
    if use_qk_norm:
        q = q * lax.rsqrt(jnp.sum(q * q, -1, keepdims=True) + 1e-6)
        k = k * lax.rsqrt(jnp.sum(k * k, -1, keepdims=True) + 1e-6)
    rep = value.shape[2] // key.shape[2]
    q, k = jnp.repeat(q, rep, axis=2), jnp.repeat(k, rep, axis=2)
    heads_first = lambda x: jnp.moveaxis(x, 1, 2)  # noqa: E731  (B, T, H, ...) -> (B, H, T, ...)
    scale = query.shape[-1] ** -0.5
    return (heads_first(q) * scale, heads_first(k), heads_first(value.astype(f32)),
            heads_first(g.astype(f32)), heads_first(beta.astype(f32)))


def _tokens(x):
    """(B, H, T, ...) -> (T, B, H, ...): the scan axis first."""
    return jnp.moveaxis(x, 2, 0)


def _replay(h, q, k, v, g, beta):
    """The recurrence token by token from h: (o (B, H, T, Dv), final h)."""
    def step(h, t):
        qt, kt, vt, gt, bt = t
        h = jnp.exp(gt)[..., None, None] * h
        kv = jnp.einsum("bhkv,bhk->bhv", h, kt, precision=HIGHEST)
        delta = bt[..., None] * (vt - kv)
        h = h + kt[..., :, None] * delta[..., None, :]
        return h, jnp.einsum("bhkv,bhk->bhv", h, qt, precision=HIGHEST)
    h, o = lax.scan(step, h, tuple(map(_tokens, (q, k, v, g, beta))))
    return jnp.moveaxis(o, 0, 2), h


def _local_map(k, v, g, beta):
    """This device's tokens as one affine map h -> M h + N (M: Dk x Dk)."""
    B, H, _, Dk = k.shape
    Dv = v.shape[-1]

    def step(mn, t):
        M, N = mn
        kt, vt, gt, bt = t
        a = jnp.exp(gt)[..., None, None]
        kk = kt[..., :, None]
        M = a * (M - bt[..., None, None] * kk * jnp.einsum("bhk,bhkj->bhj", kt, M, precision=HIGHEST)[..., None, :])
        N = a * (N - bt[..., None, None] * kk * jnp.einsum("bhk,bhkj->bhj", kt, N, precision=HIGHEST)[..., None, :])
        N = N + bt[..., None, None] * kk * vt[..., None, :]
        return (M, N), None
    eye = jnp.broadcast_to(jnp.eye(Dk, dtype=jnp.float32), (B, H, Dk, Dk))
    (M, N), _ = lax.scan(step, (eye, jnp.zeros((B, H, Dk, Dv), jnp.float32)),
                         tuple(map(_tokens, (k, v, g, beta))))
    return M, N


def _after(earlier, later):
    """The map `earlier` then `later`."""
    (M1, N1), (M2, N2) = earlier, later
    return _dot(M2, M1), _dot(M2, N1) + N2


def _prefix(pair, cp_axis, rounds):
    """Hillis-Steele over cp_axis with `rounds` rounds: the map of all the
    devices before this one (the identity on device 0)."""
    D = lax.axis_size(cp_axis)
    r = lax.axis_index(cp_axis)
    inc = pair
    for i in range(rounds):
        s = 1 << i
        if s >= D:
            break
        recv = jax.tree.map(lambda x: lax.ppermute(x, cp_axis, [(j, j + s) for j in range(D - s)]), inc)
        both = _after(recv, inc)
        inc = jax.tree.map(lambda a, b: jnp.where(r >= s, a, b), both, inc)
    shifted = jax.tree.map(lambda x: lax.ppermute(x, cp_axis, [(j, j + 1) for j in range(D - 1)]), inc)
    M, N = pair
    ident = (jnp.broadcast_to(jnp.eye(M.shape[-1], dtype=M.dtype), M.shape), jnp.zeros_like(N))
    exc = jax.tree.map(lambda a, b: jnp.where(r == 0, a, b), ident, shifted)
    return exc


def _gdn(query, key, value, g, beta, initial_state, use_qk_norm, compute_dtype, cp_axis,
         rounds_for, seam):
    q, k, v, gg, b = _prepare(query, key, value, g, beta, use_qk_norm)
    B, H, _, Dk = k.shape
    h0 = (jnp.zeros((B, H, Dk, v.shape[-1]), jnp.float32) if initial_state is None
          else initial_state.astype(jnp.float32))
    if cp_axis is None:
        o, h = _replay(h0, q, k, v, gg, b)
    else:
        D = lax.axis_size(cp_axis)
        M, N = _prefix(_local_map(k, v, gg, b), cp_axis, rounds_for(D))
        o, h = _replay(seam(_dot(M, h0) + N), q, k, v, gg, b)
        r = lax.axis_index(cp_axis)
        h = lax.psum(jnp.where(r == D - 1, h, jnp.zeros_like(h)), cp_axis)
    o = jnp.moveaxis(o, 1, 2).astype(compute_dtype)
    return o, (h if initial_state is not None else None)


def _log2_rounds(D):
    return max(0, math.ceil(math.log2(D)))


def correct(query, key, value, g, beta, chunk_size=64, initial_state=None,
            use_qk_norm_in_gdn=False, compute_dtype=jnp.float32, cp_axis=None):
    return _gdn(query, key, value, g, beta, initial_state, use_qk_norm_in_gdn, compute_dtype,
                cp_axis, _log2_rounds, lambda h: h)


def two_rounds(query, key, value, g, beta, chunk_size=64, initial_state=None,
               use_qk_norm_in_gdn=False, compute_dtype=jnp.float32, cp_axis=None):
    return _gdn(query, key, value, g, beta, initial_state, use_qk_norm_in_gdn, compute_dtype,
                cp_axis, lambda D: 2, lambda h: h)


def seam_stop_gradient(query, key, value, g, beta, chunk_size=64, initial_state=None,
                       use_qk_norm_in_gdn=False, compute_dtype=jnp.float32, cp_axis=None):
    return _gdn(query, key, value, g, beta, initial_state, use_qk_norm_in_gdn, compute_dtype,
                cp_axis, _log2_rounds, lax.stop_gradient)
