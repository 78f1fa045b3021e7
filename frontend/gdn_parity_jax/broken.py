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
# Variants whose forward is exact and whose gradient is wrong (--grad's controls).
BACKWARD_VARIANTS = {"seam_nograd": seam_nograd}
