"""A planted wrong subject for the campaign's negative control: the token
loop reformulation (gdn_parity_jax.reform.token_loop) with beta scaled by
1 + 1e-3, an error well above any rounding's, small beside the outputs;
and one whose gradient misses h0."""

import jax
import jax.numpy as jnp

from gdn_parity_jax import reform


def beta_off(query, key, value, g, beta, chunk_size=64, initial_state=None, use_qk_norm_in_gdn=False,
             compute_dtype=jnp.bfloat16, cp_axis=None):
    return reform.run(query, key, value, g, beta * jnp.float32(1.001), chunk_size, initial_state,
                      use_qk_norm_in_gdn, compute_dtype, cp_axis, replay="tokens")


def h0_detached(query, key, value, g, beta, chunk_size=64, initial_state=None, use_qk_norm_in_gdn=False,
                compute_dtype=jnp.bfloat16, cp_axis=None):
    """The WY products in the other association (reform.wy_other_order)
    with no gradient through the initial state: o and ht right, dh0 = 0."""
    h0 = None if initial_state is None else jax.lax.stop_gradient(initial_state)
    return reform.run(query, key, value, g, beta, chunk_size, h0, use_qk_norm_in_gdn, compute_dtype, cp_axis,
                      wy="other")
