"""Functions under test that return float64 (JAX with x64 enabled, as this
module's import does -- process-wide, so it has a module of its own):
tests/jax/test_hostile.py."""

import jax

jax.config.update("jax_enable_x64", True)

import jax.numpy as jnp  # noqa: E402

from hostile import _good  # noqa: E402


def float64_exact(query, key, value, g, beta, chunk_size=64, initial_state=None,
                  use_qk_norm_in_gdn=False):
    """The correct float32 result widened to float64: every value a float32."""
    o, ht = _good(query, key, value, g, beta, chunk_size, initial_state, use_qk_norm_in_gdn)
    return o.astype(jnp.float64), ht


def float64_beyond_float32(query, key, value, g, beta, chunk_size=64, initial_state=None,
                           use_qk_norm_in_gdn=False):
    """As float64_exact with 1e39 (finite in float64, inf in float32) at (0, 6, 0, 4)."""
    o, ht = float64_exact(query, key, value, g, beta, chunk_size, initial_state,
                          use_qk_norm_in_gdn)
    return o.at[0, 6, 0, 4].set(1e39), ht
