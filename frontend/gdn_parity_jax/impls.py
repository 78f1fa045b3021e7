"""Our own JAX implementations of the chunked Gated DeltaNet, written from the
algorithm (docs/function-contract.md), not copied from upstream.

They are CI's subjects (does the front end judge a correct implementation
correct, on real JAX collectives?) and the base of the negative controls in
:mod:`gdn_parity_jax.broken`.  Signatures follow MaxText's later convention:

    chunk_gated_delta_rule(query, key, value, g, beta, chunk_size=64,
                           initial_state=None, use_qk_norm_in_gdn=False,
                           compute_dtype=jnp.bfloat16, cp_axis=None)
        -> (o, final_state or None)

query/key (B, T, Hk, Dk), value (B, T, Hv, Dv), g/beta (B, T, Hv), state
(B, Hv, Dk, Dv).  The final state is returned only when ``initial_state`` is
given (MaxText's rule).  ``cp_axis=None`` is the stock sequential scan;
``cp_axis=NAME`` (or a tuple of mesh axis names) is the per-shard entry of
context parallelism, called inside ``jax.shard_map`` with the sequence axis
sharded over that axis: each device gets T/D tokens and pads *its own* piece
to a multiple of C (token sharding, as upstream does).

Rounding points (MaxText's steps): the L2 norm in the input dtype; q, k, v,
beta cast to compute_dtype; ``q * scale`` with the scale cast to
compute_dtype; ``k * beta``, ``v * beta``, the Gram products ``(k beta) K^T``
and ``Q K^T`` and the solve's products U, W in compute_dtype; g, its cumulative
sum, the decay factors and the carried state in float32.  Every product passes
``precision=HIGHEST`` (on CPU: plain float32 dots).  The mask is applied
before ``exp`` so no ``exp`` of a positive difference is ever formed.
"""

from __future__ import annotations


import jax
import jax.numpy as jnp
from jax import lax

HIGHEST = lax.Precision.HIGHEST
F32 = jnp.float32


def _mm(a, b):
    return jnp.matmul(a, b, precision=HIGHEST)


def _t(x):
    return jnp.swapaxes(x, -1, -2)


def l2norm(x, eps=1e-6):
    """x * rsqrt(sum(x^2) + eps) over the last axis, in x's dtype."""
    return x * lax.rsqrt(jnp.sum(x * x, axis=-1, keepdims=True) + jnp.asarray(eps, x.dtype))


def prepared(query, key, value, beta, use_qk_norm, compute_dtype):
    """q, k, v, beta as the recurrence takes them: q and k L2-normalised when
    asked (in their own dtype), repeated over the value heads that share a
    key head (value head j uses key head j // (Hv / Hk)), cast to the
    compute dtype, q scaled by Dk^-1/2 there."""
    Hk, Dk, Hv = query.shape[2], query.shape[3], value.shape[2]
    if use_qk_norm:
        query, key = l2norm(query), l2norm(key)
    if Hv != Hk:
        query = jnp.repeat(query, Hv // Hk, axis=2)
        key = jnp.repeat(key, Hv // Hk, axis=2)
    cd = compute_dtype
    q = query.astype(cd) * jnp.asarray(Dk ** -0.5, cd)
    return q, key.astype(cd), value.astype(cd), beta.astype(cd)


def chunk_terms(query, key, value, g, beta, chunk_size, use_qk_norm, compute_dtype):
    """The per-chunk quantities of one (local) sequence, chunk axis first.

    Returns (terms, T): terms is a dict of arrays shaped (N, B, H, C, ...) and
    T the unpadded length.  Padding (zeros in q, k, v, g, beta) sits at the
    end of the sequence given: g = 0 and k = 0 leave the state unchanged."""
    B, T, Hk, Dk = query.shape
    cd = compute_dtype
    q, k, v, b = prepared(query, key, value, beta, use_qk_norm, cd)
    C = chunk_size
    pad = (-T) % C
    N = (T + pad) // C

    def chunks(x):  # (B, T, H, ...) -> (N, B, H, C, ...)
        x = jnp.pad(x, [(0, 0), (0, pad)] + [(0, 0)] * (x.ndim - 2))
        x = x.reshape((B, N, C) + x.shape[2:])
        x = jnp.moveaxis(x, 3, 2)  # B, N, H, C, ...
        return jnp.moveaxis(x, 1, 0)

    q, k, v, b = chunks(q), chunks(k), chunks(v), chunks(b)
    G = jnp.cumsum(chunks(g.astype(F32)), axis=-1)  # restarts every chunk
    strict = jnp.tril(jnp.ones((C, C), bool), -1)
    lower = jnp.tril(jnp.ones((C, C), bool))
    diff = G[..., :, None] - G[..., None, :]
    k_beta = k * b[..., None]
    v_beta = v * b[..., None]
    S = _mm(k_beta, _t(k)).astype(F32)
    L = jnp.where(strict, S * jnp.exp(jnp.where(strict, diff, 0.0)), 0.0)
    eye = jnp.eye(C, dtype=F32)
    A = lax.linalg.triangular_solve(eye + L, jnp.broadcast_to(eye, L.shape), left_side=True,
                                    lower=True, unit_diagonal=True)
    U = _mm(A, v_beta.astype(F32)).astype(cd)
    W = _mm(A, (k_beta.astype(F32) * jnp.exp(G)[..., None])).astype(cd)
    QK = _mm(q, _t(k)).astype(F32)
    P = jnp.where(lower, QK * jnp.exp(jnp.where(lower, diff, 0.0)), 0.0)
    g_last = G[..., -1]
    terms = dict(q=q, k=k, G=G, U=U, W=W, P=P, g_last=g_last)
    return terms, T


def chunk_step(h, c):
    """One chunk of the stock scan body: (h, chunk terms) -> (h', O_chunk)."""
    G = c["G"]
    q_g = c["q"].astype(F32) * jnp.exp(G)[..., None]
    v_new = c["U"].astype(F32) - _mm(c["W"].astype(F32), h)
    o = _mm(q_g, h) + _mm(c["P"], v_new)
    kt = c["k"].astype(F32) * jnp.exp(c["g_last"][..., None] - G)[..., None]
    h = jnp.exp(c["g_last"])[..., None, None] * h + _mm(_t(kt), v_new)
    return h, o


def chunk_map(c):
    """The affine map h -> A h + B of one chunk: A = exp(G_C) I - Kt^T W, B = Kt^T U."""
    G = c["G"]
    kt = c["k"].astype(F32) * jnp.exp(c["g_last"][..., None] - G)[..., None]
    Dk = kt.shape[-1]
    A = jnp.exp(c["g_last"])[..., None, None] * jnp.eye(Dk, dtype=F32) - _mm(_t(kt), c["W"].astype(F32))
    B = _mm(_t(kt), c["U"].astype(F32))
    return A, B


def compose(earlier, later):
    """(A2, B2) o (A1, B1) = (A2 A1, A2 B1 + B2): first `earlier`, then `later`."""
    A1, B1 = earlier
    A2, B2 = later
    return _mm(A2, A1), _mm(A2, B1) + B2


def scan_chunks(terms, h):
    """The stock sequential scan over the chunk axis from state h."""
    return lax.scan(chunk_step, h, terms)


def fold_chunks(terms, compose_fn=compose):
    """The local fold: the composition of every chunk's map, from (I, 0), as a
    sequential lax.scan whose body is under jax.checkpoint: autodiff keeps
    only the carried pair per chunk and rebuilds the chunk's map from the
    terms (live anyway) in the backward.  A checkpoint around the whole scan
    instead saves almost nothing: the recomputed scan stacks every chunk's
    map and intermediates again for its own backward (the fold's gradient
    alone, B 1, H 2, Dk 64, C 16, XLA on CPU: 16.4 kB of temp per token with
    the whole scan checkpointed, 16.9 kB with no checkpoint, 10.8 kB with
    the body's; the seed issue's 103 GB at 262,144 tokens was this stack)."""
    A0, B0 = chunk_map(jax.tree.map(lambda x: x[0], terms))
    # (I, 0) built from A0, B0 so that under shard_map it varies over the
    # same mesh axes as the carry the body returns (a scan needs equal types).
    ident = (A0 * 0 + jnp.eye(A0.shape[-1], dtype=F32), B0 * 0)

    @jax.checkpoint
    def body(acc, c):
        return compose_fn(acc, chunk_map(c)), None

    acc, _ = lax.scan(body, ident, terms)
    return acc


def unchunk(o, T, dtype):
    """(N, B, H, C, Dv) -> (B, T, H, Dv), padding dropped, cast to dtype."""
    N, B, H, C, Dv = o.shape
    o = jnp.moveaxis(o, 0, 1)  # B, N, H, C, Dv
    o = jnp.moveaxis(o, 2, 3).reshape(B, N * C, H, Dv)
    return o[:, :T].astype(dtype)


def apply_map(A, B, h):
    return _mm(A, h) + B


def _zeros_state(query, value):
    B, _, _, Dk = query.shape
    _, _, Hv, Dv = value.shape
    return jnp.zeros((B, Hv, Dk, Dv), F32)


def prefix_associative(pair, cp_axis, compose_fn=compose):
    """all_gather of the local pairs, inclusive prefix by lax.associative_scan;
    returns (exclusive pair for this device or None on device 0 via mask,
    inclusive pair of the last device)."""
    A_all = lax.all_gather(pair[0], cp_axis, tiled=False)
    B_all = lax.all_gather(pair[1], cp_axis, tiled=False)
    A_cum, B_cum = lax.associative_scan(compose_fn, (A_all, B_all), axis=0)
    r = lax.axis_index(cp_axis)
    prev = jnp.maximum(r - 1, 0)
    return (A_cum[prev], B_cum[prev]), (A_cum[-1], B_cum[-1])


def hillis_steele_rounds(pair, cp_axis, strides, compose_fn=compose):
    """Hillis-Steele rounds at the given strides (each < D): in round s, device
    r >= s composes (received from r - s, own).  The exclusive prefix is one
    more shift; the last device's inclusive pair reaches all by a masked
    psum.  Returns (exclusive pair, last pair).  The stock prefix runs the
    strides 1, 2, 4, ... < D; broken.py's planted bugs run other lists."""
    D = lax.axis_size(cp_axis)
    r = lax.axis_index(cp_axis)
    inc = pair
    for s in strides:
        recv = jax.tree.map(lambda x, s=s: lax.ppermute(x, cp_axis, [(i, i + s) for i in range(D - s)]), inc)
        new = compose_fn(recv, inc)
        inc = jax.tree.map(lambda n, o, s=s: jnp.where(r >= s, n, o), new, inc)
    if D > 1:
        exc = jax.tree.map(lambda x: lax.ppermute(x, cp_axis, [(i, i + 1) for i in range(D - 1)]), inc)
    else:
        exc = inc
    last = jax.tree.map(lambda x: lax.psum(jnp.where(r == D - 1, x, jnp.zeros_like(x)), cp_axis), inc)
    return exc, last


def doubling_strides(D):
    """1, 2, 4, ... below D: ceil(log2 D) rounds."""
    strides = []
    s = 1
    while s < D:
        strides.append(s)
        s *= 2
    return strides


def prefix_hillis_steele(pair, cp_axis, compose_fn=compose):
    """Hillis-Steele over ceil(log2 D) ppermute rounds (hillis_steele_rounds
    at the doubling strides)."""
    return hillis_steele_rounds(pair, cp_axis, doubling_strides(lax.axis_size(cp_axis)), compose_fn)


def context_parallel(terms, h0, cp_axis, prefix_fn, compose_fn=compose):
    """Fold, exchange, replay.  Returns (o chunks, final state)."""
    pair = fold_chunks(terms, compose_fn)
    (A_ex, B_ex), (A_last, B_last) = prefix_fn(pair, cp_axis, compose_fn)
    r = lax.axis_index(cp_axis)
    h_in = jnp.where(r == 0, h0, apply_map(A_ex, B_ex, h0))
    _, o = scan_chunks(terms, h_in)
    return o, apply_map(A_last, B_last, h0)


def _run(query, key, value, g, beta, chunk_size, initial_state, use_qk_norm_in_gdn,
         compute_dtype, cp_axis, prefix_fn, compose_fn=compose):
    terms, T = chunk_terms(query, key, value, g, beta, chunk_size, use_qk_norm_in_gdn, compute_dtype)
    h0 = _zeros_state(query, value) if initial_state is None else initial_state.astype(F32)
    if cp_axis is None:
        h, o = scan_chunks(terms, h0)
    else:
        o, h = context_parallel(terms, h0, cp_axis, prefix_fn, compose_fn)
    o = unchunk(o, T, value.dtype)
    return o, (h if initial_state is not None else None)


def chunk_gated_delta_rule(query, key, value, g, beta, chunk_size=64, initial_state=None,
                           use_qk_norm_in_gdn=False, compute_dtype=jnp.bfloat16, cp_axis=None):
    """Stock chunked scan (cp_axis=None) or, inside shard_map, context
    parallelism by all_gather + lax.associative_scan over cp_axis."""
    return _run(query, key, value, g, beta, chunk_size, initial_state, use_qk_norm_in_gdn,
                compute_dtype, cp_axis, prefix_associative)


def chunk_gated_delta_rule_hillis_steele(query, key, value, g, beta, chunk_size=64,
                                         initial_state=None, use_qk_norm_in_gdn=False,
                                         compute_dtype=jnp.bfloat16, cp_axis=None):
    """As chunk_gated_delta_rule, the prefix by Hillis-Steele over ppermute rounds."""
    return _run(query, key, value, g, beta, chunk_size, initial_state, use_qk_norm_in_gdn,
                compute_dtype, cp_axis, prefix_hillis_steele)
