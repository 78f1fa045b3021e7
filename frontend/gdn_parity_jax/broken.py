"""Deliberately broken context-parallel variants: the gate's negative controls.

Each is :func:`gdn_parity_jax.impls.chunk_gated_delta_rule` with one defect a
real implementation could ship, small enough that upstream's own
sharded-vs-unsharded test (atol 2e-4, rtol 2e-3 at B=1, H=2, Dk=Dv=16, C=8)
can still pass it on some inputs (tests/jax/test_run.py shows where), while
the oracle-backed gate must fail it:

* ``wrong_order``: the transition matrices of two segments multiplied in the
  wrong order (A1 A2 instead of A2 A1; B composed correctly).  Only the part
  of the state that comes from h0 is touched, so it needs an initial state.
* ``seam_decay``: the decay of the first token after each device boundary is
  dropped (its g taken as 0): the state arrives undecayed by one token.
* ``seam_state``: each device after the first replays from a zero state
  instead of the prefix-derived incoming state (the final state stays right).
* ``seam_nograd`` (backward only): ``lax.stop_gradient`` on the exclusive
  prefix pair (A, B) each device applies to h0 at its seam.  The forward is
  the correct function's, bit for bit; the gradient loses every path from a
  device's outputs back across its seam (to h0 and to the earlier devices'
  q, k, v, g, beta) -- the class of bug no forward test can see.

Unsharded (cp_axis=None) each is the stock scan, exactly.

Below them, the JAX variants of the C mutant catalogue (kernels/kern_mutant.h),
named as the C row with the same bug and selectable by that name
(:func:`variant`, :data:`C_NAMED`) or as MODULE:FUNCTION
(``gdn_parity_jax.broken:carry_zero``): compose-order, seam-decay
(``seam_decay_chunk``), carry-zero, prefix-inclusive, final-from-replay,
h0-ignored, h0-every, hs-reversed, scale-twice; tests/jax/test_variants.py
shows each equally far from the oracle as the C row of its name.  The later
families (:data:`FAMILIES`): hs-two-rounds, bf16-cast-added (pairs rounded
on the wire), final-device-0, h0-first-only and grad-seam-stopped
(``seam_nograd``); tests/jax/test_variant_families.py shows each failing
assert_gdn_parity's defaults.  The C rows the maxtext signature cannot express here: gqa-tile
(the layer repeats the key heads before the call, so the function never sees
Hk < Hv), shard-off-by-one and pad-unmasked (shard_map does the sharding and
the padding is the kernel's own), the packed-document and bfloat16 rows (no
segment ids; the rounding points are impls' own) and scale-none (the
kernel's scale cannot be removed from outside it).  ``seam_decay`` above is a
different bug from C seam-decay (one token's g dropped, not the first
chunk's decay of the carried state).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
from jax import lax

from . import impls


def _compose_wrong_order(earlier, later):
    A1, B1 = earlier
    A2, B2 = later
    return impls._mm(A1, A2), impls._mm(A2, B1) + B2


def wrong_order(query, key, value, g, beta, chunk_size=64, initial_state=None,
                use_qk_norm_in_gdn=False, compute_dtype=jnp.bfloat16, cp_axis=None):
    return impls._run(query, key, value, g, beta, chunk_size, initial_state, use_qk_norm_in_gdn,
                      compute_dtype, cp_axis, impls.prefix_associative, _compose_wrong_order)


def seam_decay(query, key, value, g, beta, chunk_size=64, initial_state=None,
               use_qk_norm_in_gdn=False, compute_dtype=jnp.bfloat16, cp_axis=None):
    if cp_axis is not None:
        first = jnp.arange(g.shape[1]) == 0
        seam = (lax.axis_index(cp_axis) > 0) & first
        g = jnp.where(seam[None, :, None], jnp.zeros_like(g), g)
    return impls.chunk_gated_delta_rule(query, key, value, g, beta, chunk_size, initial_state,
                                        use_qk_norm_in_gdn, compute_dtype, cp_axis)


def _prefix_state_dropped(pair, cp_axis, compose_fn):
    (A_ex, B_ex), last = impls.prefix_associative(pair, cp_axis, compose_fn)
    # the incoming state of every device r > 0 becomes A h0 + B with A = B = 0
    return (jnp.zeros_like(A_ex), jnp.zeros_like(B_ex)), last


def seam_state(query, key, value, g, beta, chunk_size=64, initial_state=None,
               use_qk_norm_in_gdn=False, compute_dtype=jnp.bfloat16, cp_axis=None):
    return impls._run(query, key, value, g, beta, chunk_size, initial_state, use_qk_norm_in_gdn,
                      compute_dtype, cp_axis, _prefix_state_dropped)


def _prefix_without_gradient(pair, cp_axis, compose_fn):
    exc, last = impls.prefix_associative(pair, cp_axis, compose_fn)
    return jax.tree.map(lax.stop_gradient, exc), last


def seam_nograd(query, key, value, g, beta, chunk_size=64, initial_state=None,
                use_qk_norm_in_gdn=False, compute_dtype=jnp.bfloat16, cp_axis=None):
    return impls._run(query, key, value, g, beta, chunk_size, initial_state, use_qk_norm_in_gdn,
                      compute_dtype, cp_axis, _prefix_without_gradient)


VARIANTS = {"wrong_order": wrong_order, "seam_decay": seam_decay, "seam_state": seam_state}


# ---------------------------------------------------------------------------
# JAX variants of the C mutant catalogue (kernels/kern_mutant.h; docs/coverage.md, "JAX variants").
#
# Each is the correct function except for one bug, written where a JAX
# context-parallel implementation would have it, and named as the C row with
# the same bug (C_NAMED below maps the C spelling to the function).  As
# above, only the context-parallel path (cp_axis given) carries the bug; the
# stock scan (cp_axis=None) is impls' exactly, so a gate comparing the two
# sees only the defect.  The fold of every variant is the correct one
# (impls.fold_chunks with impls.compose): the C mutants change the prefix,
# the seam or the replay, and so do these.

def _prefix_assoc_inclusive(pair, cp_axis, compose_fn=impls.compose):
    """As impls.prefix_associative, but device r gets the *inclusive* pair r
    (A_cum[r] instead of A_cum[r - 1]): its own shard applied twice."""
    A_all = lax.all_gather(pair[0], cp_axis, tiled=False)
    B_all = lax.all_gather(pair[1], cp_axis, tiled=False)
    A_cum, B_cum = lax.associative_scan(compose_fn, (A_all, B_all), axis=0)
    r = lax.axis_index(cp_axis)
    return (A_cum[r], B_cum[r]), (A_cum[-1], B_cum[-1])


def _prefix_hs_two_rounds(pair, cp_axis, compose_fn=impls.compose):
    """impls.prefix_hillis_steele unrolled for the meshes its author tried:
    ``for s in (1, 2)`` instead of ``while s < D``.  Exact up to 4 devices;
    from 5 on the stride-4 round is missing, so devices r >= 5 (and the last
    pair, hence ht) lack the pairs more than 3 devices back."""
    D = lax.axis_size(cp_axis)
    return impls.hillis_steele_rounds(pair, cp_axis, [s for s in (1, 2) if s < D], compose_fn)


def _prefix_pairs_bf16(pair, cp_axis, compose_fn=impls.compose):
    """impls.prefix_associative on pairs cast to bfloat16 for the
    all-gather (``all_gather(A.astype(jnp.bfloat16))``) and cast back: the
    prefix composes rounded maps."""
    wire = jax.tree.map(lambda x: x.astype(jnp.bfloat16).astype(x.dtype), pair)
    return impls.prefix_associative(wire, cp_axis, compose_fn)


def _prefix_hs_reversed(pair, cp_axis, compose_fn=impls.compose):
    """impls.prefix_hillis_steele with its rounds in reverse order (the
    longest stride first): `for s in reversed(strides)`.  With D = 2 there is
    one round, so the bug needs D >= 3 to show."""
    strides = impls.doubling_strides(lax.axis_size(cp_axis))
    return impls.hillis_steele_rounds(pair, cp_axis, strides[::-1], compose_fn)


def _compose_later_first(earlier, later):
    """combine(later, earlier): (A_e A_l, A_e B_l + B_e), the maps composed in
    the wrong order (C: compose-order)."""
    return impls.compose(later, earlier)


def _cp_mutant(terms, h0, cp_axis, *, prefix_fn=impls.prefix_associative, prefix_compose=impls.compose,
               device0_from_h0=True, h_in_fn=None, final_from_replay=False, final_device=None,
               prefix_h0=True):
    """impls.context_parallel with the hooks the variants need: the prefix
    (and the combine it uses), whether device 0 starts from h0 itself, a
    change of the incoming state h_in_fn(h_in, h0, r), the final state from
    the last device's replay instead of the composition (final_from_replay)
    or from device final_device's replay, and whether the prefix's maps are
    applied to h0 (prefix_h0=False: to zeros, for the carries and ht)."""
    pair = impls.fold_chunks(terms, impls.compose)
    (A_in, B_in), (A_last, B_last) = prefix_fn(pair, cp_axis, prefix_compose)
    r = lax.axis_index(cp_axis)
    h_map = h0 if prefix_h0 else jnp.zeros_like(h0)
    h_in = impls.apply_map(A_in, B_in, h_map)
    if device0_from_h0:
        h_in = jnp.where(r == 0, h0, h_in)
    if h_in_fn is not None:
        h_in = h_in_fn(h_in, h0, r)
    h_out, o = impls.scan_chunks(terms, h_in)
    if final_from_replay and final_device is None:
        final_device = lax.axis_size(cp_axis) - 1
    if final_device is not None:
        ht = lax.psum(jnp.where(r == final_device, h_out, jnp.zeros_like(h_out)), cp_axis)
    else:
        ht = impls.apply_map(A_last, B_last, h_map)
    return o, ht


def _terms_and_h0(query, key, value, g, beta, chunk_size, initial_state, use_qk_norm_in_gdn, compute_dtype):
    """What a mutant's chunked body starts from, as impls._run's: the chunk
    terms, T, and the initial state (zeros without one)."""
    terms, T = impls.chunk_terms(query, key, value, g, beta, chunk_size, use_qk_norm_in_gdn,
                                 compute_dtype)
    h0 = impls._zeros_state(query, value) if initial_state is None else initial_state.astype(impls.F32)
    return terms, T, h0


def _run_mutant(query, key, value, g, beta, chunk_size, initial_state, use_qk_norm_in_gdn,
                compute_dtype, cp_axis, **hooks):
    if cp_axis is None:
        return impls.chunk_gated_delta_rule(query, key, value, g, beta, chunk_size, initial_state,
                                            use_qk_norm_in_gdn, compute_dtype, None)
    terms, T, h0 = _terms_and_h0(query, key, value, g, beta, chunk_size, initial_state, use_qk_norm_in_gdn,
                                 compute_dtype)
    o, h = _cp_mutant(terms, h0, cp_axis, **hooks)
    o = impls.unchunk(o, T, value.dtype)
    return o, (h if initial_state is not None else None)


def compose_order(query, key, value, g, beta, chunk_size=64, initial_state=None,
                  use_qk_norm_in_gdn=False, compute_dtype=jnp.bfloat16, cp_axis=None):
    """C compose-order: the prefix's combine written as combine(later, earlier)
    -> (A_e A_l, A_e B_l + B_e), e.g. ``lax.associative_scan(lambda a, b:
    compose(b, a), ...)`` with a compose that means "first its first
    argument".  Shows at D >= 2 (B is wrong too, so no h0 is needed)."""
    return _run_mutant(query, key, value, g, beta, chunk_size, initial_state, use_qk_norm_in_gdn,
                       compute_dtype, cp_axis, prefix_compose=_compose_later_first)


def carry_zero(query, key, value, g, beta, chunk_size=64, initial_state=None,
               use_qk_norm_in_gdn=False, compute_dtype=jnp.bfloat16, cp_axis=None):
    """C carry-zero: the replay of every device but the first called with
    ``initial_state=jnp.zeros_like(h0)`` (the gathered prefix computed, never
    passed in); the final state, from the composition, stays right."""
    return _run_mutant(query, key, value, g, beta, chunk_size, initial_state, use_qk_norm_in_gdn,
                       compute_dtype, cp_axis,
                       h_in_fn=lambda h, h0, r: jnp.where(r >= 1, jnp.zeros_like(h), h))


def prefix_inclusive(query, key, value, g, beta, chunk_size=64, initial_state=None,
                     use_qk_norm_in_gdn=False, compute_dtype=jnp.bfloat16, cp_axis=None):
    """C prefix-inclusive: device r indexes the inclusive scan at r instead of
    r - 1 (``A_cum[r]``): it starts from the state *after* its own shard, and
    device 0 from its shard applied to h0."""
    return _run_mutant(query, key, value, g, beta, chunk_size, initial_state, use_qk_norm_in_gdn,
                       compute_dtype, cp_axis, prefix_fn=_prefix_assoc_inclusive,
                       device0_from_h0=False)


def final_from_replay(query, key, value, g, beta, chunk_size=64, initial_state=None,
                      use_qk_norm_in_gdn=False, compute_dtype=jnp.bfloat16, cp_axis=None):
    """C final-from-replay: the final state taken from the last device's
    replay (psum of its carry) instead of A_cum[D-1] h0 + B_cum[D-1]: equal in
    exact arithmetic, a different rounding -- not a bug a tolerance can see
    (the gate must pass it; tests/jax/test_variants.py asserts that)."""
    return _run_mutant(query, key, value, g, beta, chunk_size, initial_state, use_qk_norm_in_gdn,
                       compute_dtype, cp_axis, final_from_replay=True)


def h0_ignored(query, key, value, g, beta, chunk_size=64, initial_state=None,
               use_qk_norm_in_gdn=False, compute_dtype=jnp.bfloat16, cp_axis=None):
    """C h0-ignored: device 0's replay called without ``initial_state`` (the
    other devices still get h0 through the prefix).  Needs an h0."""
    return _run_mutant(query, key, value, g, beta, chunk_size, initial_state, use_qk_norm_in_gdn,
                       compute_dtype, cp_axis,
                       h_in_fn=lambda h, h0, r: jnp.where(r == 0, jnp.zeros_like(h), h))


def h0_every(query, key, value, g, beta, chunk_size=64, initial_state=None,
             use_qk_norm_in_gdn=False, compute_dtype=jnp.bfloat16, cp_axis=None):
    """C h0-every: every device's replay passed ``initial_state=h0`` with the
    carried prefix added on top (devices r >= 1 start from h_in + h0).
    Needs an h0 and D >= 2."""
    return _run_mutant(query, key, value, g, beta, chunk_size, initial_state, use_qk_norm_in_gdn,
                       compute_dtype, cp_axis,
                       h_in_fn=lambda h, h0, r: jnp.where(r >= 1, h + h0, h))


def hs_reversed(query, key, value, g, beta, chunk_size=64, initial_state=None,
                use_qk_norm_in_gdn=False, compute_dtype=jnp.bfloat16, cp_axis=None):
    """C hs-reversed: the Hillis-Steele prefix with its rounds in reverse order
    (``for s in reversed(strides)``).  Judge it with --cp-prefix
    hillis-steele; it shows at D >= 3 only (D = 2 has one round)."""
    return _run_mutant(query, key, value, g, beta, chunk_size, initial_state, use_qk_norm_in_gdn,
                       compute_dtype, cp_axis, prefix_fn=_prefix_hs_reversed)


def hs_two_rounds(query, key, value, g, beta, chunk_size=64, initial_state=None,
                  use_qk_norm_in_gdn=False, compute_dtype=jnp.bfloat16, cp_axis=None):
    """C hs-two-rounds: the Hillis-Steele prefix unrolled for two rounds
    (``for s in (1, 2)``), right up to 4 devices and wrong from 5 on (the
    stride-4 round is missing).  Judge it with --cp-prefix hillis-steele on
    8 devices; bit-identical to the correct Hillis-Steele function at D <= 4
    (hs_reversed has every round, in the wrong order)."""
    return _run_mutant(query, key, value, g, beta, chunk_size, initial_state, use_qk_norm_in_gdn,
                       compute_dtype, cp_axis, prefix_fn=_prefix_hs_two_rounds)


def bf16_cast_added(query, key, value, g, beta, chunk_size=64, initial_state=None,
                    use_qk_norm_in_gdn=False, compute_dtype=jnp.bfloat16, cp_axis=None):
    """C bf16-cast-added: the folded pairs (A, B) rounded to bfloat16 on the
    wire (``all_gather(A_loc.astype(jnp.bfloat16))``, likewise B) and the
    prefix composed from the rounded maps -- a cast neither the float32 path
    nor a bfloat16 path that keeps the state in float32 has.  Shows at D >= 2
    in float32 compute (the carries and ht move by ~1e-3 relative)."""
    return _run_mutant(query, key, value, g, beta, chunk_size, initial_state, use_qk_norm_in_gdn,
                       compute_dtype, cp_axis, prefix_fn=_prefix_pairs_bf16)


def final_device_0(query, key, value, g, beta, chunk_size=64, initial_state=None,
                   use_qk_norm_in_gdn=False, compute_dtype=jnp.bfloat16, cp_axis=None):
    """C final-device-0: the final state read from the wrong device --
    device 0's replay carry (what ``out_specs=P()`` with the replication check
    off hands back when every device holds its own carry), the state after
    the first shard only.  o is right; ht is wrong at D >= 2 (final_from_replay
    reads the right device and differs by rounding only)."""
    return _run_mutant(query, key, value, g, beta, chunk_size, initial_state, use_qk_norm_in_gdn,
                       compute_dtype, cp_axis, final_device=0)


def h0_first_only(query, key, value, g, beta, chunk_size=64, initial_state=None,
                  use_qk_norm_in_gdn=False, compute_dtype=jnp.bfloat16, cp_axis=None):
    """C h0-first-only: h0 ignored past device 0 -- ``initial_state`` given
    to device 0's replay only and the prefix's maps applied to zeros, so
    devices r >= 1 start from B_cum[r-1] and ht = B_cum[D-1] (the A_cum h0
    terms dropped).  Needs an h0 and D >= 2; the mirror of h0_ignored."""
    return _run_mutant(query, key, value, g, beta, chunk_size, initial_state, use_qk_norm_in_gdn,
                       compute_dtype, cp_axis, prefix_h0=False)


def scale_twice(query, key, value, g, beta, chunk_size=64, initial_state=None,
                use_qk_norm_in_gdn=False, compute_dtype=jnp.bfloat16, cp_axis=None):
    """C scale-twice: q multiplied by Dk^-1/2 before the call (in the caller's
    context-parallel wrapper) and again inside the kernel.  Shows at any D.
    With the in-kernel L2 norm the first scale goes after the norm (else the
    norm would undo it): the kernel then sees a normalised, scaled query."""
    if cp_axis is not None:
        if use_qk_norm_in_gdn:
            query, key = impls.l2norm(query), impls.l2norm(key)
            use_qk_norm_in_gdn = False
        query = query * jnp.asarray(query.shape[-1] ** -0.5, query.dtype)
    return impls.chunk_gated_delta_rule(query, key, value, g, beta, chunk_size, initial_state,
                                        use_qk_norm_in_gdn, compute_dtype, cp_axis)


def _first_chunk_w_undecayed(query, key, beta, g, chunk_size, use_qk_norm, compute_dtype):
    """W of the local sequence's first chunk with exp(G) taken as 1: A (k beta)
    instead of A (k beta exp(G)), A the chunk's solve (I + L)^-1.  The steps
    and rounding points are impls.chunk_terms', on the first chunk only
    (zero padded when the shard is shorter than a chunk)."""
    C = chunk_size
    T, Hk, Hv = query.shape[1], query.shape[2], beta.shape[2]
    take = min(C, T)
    pad = [(0, 0), (0, C - take)]
    k = key[:, :take]
    if use_qk_norm:
        k = impls.l2norm(k)
    if Hv != Hk:
        k = jnp.repeat(k, Hv // Hk, axis=2)
    k = jnp.pad(k.astype(compute_dtype), pad + [(0, 0), (0, 0)])
    b = jnp.pad(beta[:, :take].astype(compute_dtype), pad + [(0, 0)])
    G = jnp.cumsum(jnp.pad(g[:, :take].astype(impls.F32), pad + [(0, 0)]), axis=1)
    k, b, G = jnp.moveaxis(k, 2, 1), jnp.moveaxis(b, 2, 1), jnp.moveaxis(G, 2, 1)  # B, H, C, ...
    strict = jnp.tril(jnp.ones((C, C), bool), -1)
    k_beta = k * b[..., None]
    S = impls._mm(k_beta, impls._t(k)).astype(impls.F32)
    diff = G[..., :, None] - G[..., None, :]
    L = jnp.where(strict, S * jnp.exp(jnp.where(strict, diff, 0.0)), 0.0)
    eye = jnp.eye(C, dtype=impls.F32)
    A = lax.linalg.triangular_solve(eye + L, jnp.broadcast_to(eye, L.shape), left_side=True,
                                    lower=True, unit_diagonal=True)
    return impls._mm(A, k_beta.astype(impls.F32)).astype(compute_dtype)


def _undecayed(c, W1):
    """One chunk's terms with the carried state's decay taken as 1: G = 0
    where it multiplies the state (q exp(G), W, exp(G_last) h), kept in
    k exp(G_last - G) and in the in-chunk products P, U."""
    c = dict(c)
    c["W"] = W1
    c["q_g"] = c["q"].astype(impls.F32)
    return c


def _step_undecayed(h, c):
    v_new = c["U"].astype(impls.F32) - impls._mm(c["W"].astype(impls.F32), h)
    o = impls._mm(c["q_g"], h) + impls._mm(c["P"], v_new)
    kt = c["k"].astype(impls.F32) * jnp.exp(c["g_last"][..., None] - c["G"])[..., None]
    return h + impls._mm(impls._t(kt), v_new), o


def _map_undecayed(c):
    kt = c["k"].astype(impls.F32) * jnp.exp(c["g_last"][..., None] - c["G"])[..., None]
    Dk = kt.shape[-1]
    return (jnp.eye(Dk, dtype=impls.F32) - impls._mm(impls._t(kt), c["W"].astype(impls.F32)),
            impls._mm(impls._t(kt), c["U"].astype(impls.F32)))


def seam_decay_chunk(query, key, value, g, beta, chunk_size=64, initial_state=None,
                     use_qk_norm_in_gdn=False, compute_dtype=jnp.bfloat16, cp_axis=None):
    """C seam-decay: on every device r >= 1 the local scan starts its first
    chunk with exp(G) taken as 1 for the carried state -- h_in not multiplied
    by the chunk's cumulative decay (q exp(G) -> q, W = A (k beta exp(G)) ->
    A k beta, exp(G_last) h -> h) -- in the fold and the replay alike, as a
    shard-local scan would that reset its decay bookkeeping at the shard's
    first token.  Shows at D >= 2 with state crossing the seam."""
    if cp_axis is None:
        return impls.chunk_gated_delta_rule(query, key, value, g, beta, chunk_size, initial_state,
                                            use_qk_norm_in_gdn, compute_dtype, None)
    terms, T, h0 = _terms_and_h0(query, key, value, g, beta, chunk_size, initial_state, use_qk_norm_in_gdn,
                                 compute_dtype)
    first = jax.tree.map(lambda x: x[0], terms)
    bad = _undecayed(first, _first_chunk_w_undecayed(query, key, beta, g, chunk_size,
                                                     use_qk_norm_in_gdn, compute_dtype))
    r = lax.axis_index(cp_axis)
    seam = r >= 1
    # the fold: the first chunk's map (undecayed on r >= 1), then the rest
    A0, B0 = impls.chunk_map(first)
    A1, B1 = _map_undecayed(bad)
    pair = (jnp.where(seam, A1, A0), jnp.where(seam, B1, B0))
    for n in range(1, terms["G"].shape[0]):
        pair = impls.compose(pair, impls.chunk_map(jax.tree.map(lambda x, n=n: x[n], terms)))
    (A_ex, B_ex), (A_last, B_last) = impls.prefix_associative(pair, cp_axis)
    h_in = jnp.where(r == 0, h0, impls.apply_map(A_ex, B_ex, h0))
    # the replay: the first chunk (undecayed on r >= 1), then the stock scan
    h_ok, o_ok = impls.chunk_step(h_in, first)
    h_bad, o_bad = _step_undecayed(h_in, bad)
    h1, o_first = jnp.where(seam, h_bad, h_ok), jnp.where(seam, o_bad, o_ok)
    rest = jax.tree.map(lambda x: x[1:], terms)
    _, o_rest = impls.scan_chunks(rest, h1)
    o = jnp.concatenate([o_first[None], o_rest], axis=0)
    o = impls.unchunk(o, T, value.dtype)
    ht = impls.apply_map(A_last, B_last, h0)
    return o, (ht if initial_state is not None else None)


# The variant each C mutant name selects (the same bug), plus the three
# earlier negative controls under their own names (their bugs differ from the
# C rows': wrong_order swaps only A; seam_decay drops the first token's g, C
# seam-decay the first chunk's decay of the carried state; seam_state is the
# same bug as carry-zero, kept under its old name).
C_NAMED = {
    "compose-order": compose_order,
    "seam-decay": seam_decay_chunk,
    "carry-zero": carry_zero,
    "prefix-inclusive": prefix_inclusive,
    "final-from-replay": final_from_replay,
    "h0-ignored": h0_ignored,
    "h0-every": h0_every,
    "hs-reversed": hs_reversed,
    "scale-twice": scale_twice,
}
# The C rows of the bug families a CP author makes beyond those (kernels/
# kern_mutant.h): judged by tests/jax/test_variant_families.py through
# assert_gdn_parity's defaults (the recommended grid on 4 and 8 devices,
# gradients judged), each of which must fail them.  grad-seam-stopped is
# seam_nograd above (the prefix pair under lax.stop_gradient: the forward
# exact, no cotangent across a seam).  Not here: carry-late (the C fold
# takes one token of the next shard; under shard_map that is a halo
# exchange of one token, which the chunked terms cannot express without
# re-chunking the shard).
FAMILIES = {
    "hs-two-rounds": hs_two_rounds,
    "bf16-cast-added": bf16_cast_added,
    "final-device-0": final_device_0,
    "h0-first-only": h0_first_only,
    "grad-seam-stopped": seam_nograd,
}
# VARIANTS stays the three older negative controls (tests/jax/test_impls
# holds each of them far outside the band; final-from-replay is not).

# The prefix schedule each variant's context-parallel path uses (declared to
# the gate with --cp-prefix); associative-scan for the others.
PREFIX = {"hs-reversed": "hillis-steele", "hs-two-rounds": "hillis-steele"}


def variant(name: str):
    """The broken function called `name` (a C mutant name or an older
    variant's name); ValueError naming the choices otherwise."""
    every = {**VARIANTS, **C_NAMED, **FAMILIES}
    try:
        return every[name]
    except KeyError:
        raise ValueError(f"no broken variant {name!r} (one of: {', '.join(sorted(every))})") from None

# Variants whose forward is exact and whose gradient is wrong (--grad's controls).
BACKWARD_VARIANTS = {"seam_nograd": seam_nograd}


# ---------------------------------------------------------------------------
# The audit's: defects no number shows, the negative controls of
# `gdn-parity-jax audit`.  Each computes what the correct function computes
# (the gate's numbers pass them); what is wrong is what a device moves, keeps
# or computes.  Unsharded (cp_axis=None) each is the stock scan, exactly.

def sequence_gathered(query, key, value, g, beta, chunk_size=64, initial_state=None,
                      use_qk_norm_in_gdn=False, compute_dtype=jnp.bfloat16, cp_axis=None):
    """The seed's failure (1) inside shard_map: every device all-gathers the
    whole sequence of q, k, v, g, beta, runs the stock scan over all of it
    and keeps its own tokens' outputs.  Exact numbers (the stock scan's);
    the audit sees collectives whose bytes grow with T and per-device flops
    that do not fall with D."""
    if cp_axis is None:
        return impls.chunk_gated_delta_rule(query, key, value, g, beta, chunk_size, initial_state,
                                            use_qk_norm_in_gdn, compute_dtype, None)
    Tl = query.shape[1]
    q, k, v, gg, b = (lax.all_gather(a, cp_axis, axis=1, tiled=True)
                      for a in (query, key, value, g, beta))
    o, ht = impls.chunk_gated_delta_rule(q, k, v, gg, b, chunk_size, initial_state,
                                         use_qk_norm_in_gdn, compute_dtype, None)
    o = lax.dynamic_slice_in_dim(o, lax.axis_index(cp_axis) * Tl, Tl, axis=1)
    return o, ht


def whole_sequence(query, key, value, g, beta, chunk_size=64, initial_state=None,
                   use_qk_norm_in_gdn=False, compute_dtype=jnp.bfloat16, cp_axis=None):
    """Each device does the work of the whole sequence: its own T/D tokens
    padded with zeros to the global length T before the fold and the replay
    (a shard sized from the global length).  Zero tokens (g = 0, k = v = 0)
    map the state to itself, so the numbers are the correct function's; no
    collective moves more, but per-device flops do not fall with D."""
    if cp_axis is None:
        return impls.chunk_gated_delta_rule(query, key, value, g, beta, chunk_size, initial_state,
                                            use_qk_norm_in_gdn, compute_dtype, None)
    Tl = query.shape[1]
    extra = Tl * (lax.axis_size(cp_axis) - 1)

    def grow(a):
        return jnp.pad(a, [(0, 0), (0, extra)] + [(0, 0)] * (a.ndim - 2))
    o, ht = impls.chunk_gated_delta_rule(grow(query), grow(key), grow(value), grow(g), grow(beta),
                                         chunk_size, initial_state, use_qk_norm_in_gdn,
                                         compute_dtype, cp_axis)
    return o[:, :Tl], ht


def _fold_unchecked(terms):
    """impls.fold_chunks without jax.checkpoint: autodiff keeps every chunk's
    composition (A, B) and the chunk maps' intermediates as residuals."""
    A0, B0 = impls.chunk_map(jax.tree.map(lambda x: x[0], terms))
    ident = (A0 * 0 + jnp.eye(A0.shape[-1], dtype=impls.F32), B0 * 0)

    def body(acc, c):
        return impls.compose(acc, impls.chunk_map(c)), None

    acc, _ = lax.scan(body, ident, terms)
    return acc


def no_checkpoint(query, key, value, g, beta, chunk_size=64, initial_state=None,
                  use_qk_norm_in_gdn=False, compute_dtype=jnp.bfloat16, cp_axis=None):
    """The local composition without jax.checkpoint (the seed's failure (3):
    residuals of 103 GB at 262,144 tokens).  The numbers are the correct
    function's; the backward keeps more bytes per token (the audit reports
    the ratio to the stock function's; --max-residual-bytes-per-token
    judges it)."""
    terms, T, h0 = _terms_and_h0(query, key, value, g, beta, chunk_size, initial_state, use_qk_norm_in_gdn,
                                 compute_dtype)
    if cp_axis is None:
        h, o = impls.scan_chunks(terms, h0)
    else:
        pair = _fold_unchecked(terms)
        (A_ex, B_ex), (A_last, B_last) = impls.prefix_associative(pair, cp_axis)
        r = lax.axis_index(cp_axis)
        h_in = jnp.where(r == 0, h0, impls.apply_map(A_ex, B_ex, h0))
        _, o = impls.scan_chunks(terms, h_in)
        h = impls.apply_map(A_last, B_last, h0)
    o = impls.unchunk(o, T, value.dtype)
    return o, (h if initial_state is not None else None)


# The audit's negative controls (tests/jax/test_audit.py): each FAILs it.
AUDIT_VARIANTS = {"sequence_gathered": sequence_gathered, "whole_sequence": whole_sequence,
                  "no_checkpoint": no_checkpoint}
