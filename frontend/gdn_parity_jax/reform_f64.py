"""The stock chunked algorithm in float64, rounded to float32 once at the
end: a correct reformulation (gdn_parity_jax.reform) that differs from every
float32 evaluation order by a float32 rounding of the exact result.

Importing this module turns on ``jax_enable_x64`` for the whole process (JAX
has no per-function switch), so it is a module of its own and is meant to be
named only as ``--impl gdn_parity_jax.reform_f64:float64``; the inputs stay
float32 as given and o, ht are returned as float32.
"""

import jax

jax.config.update("jax_enable_x64", True)

import jax.numpy as jnp  # noqa: E402

from gdn_parity_jax import reform  # noqa: E402


def float64(query, key, value, g, beta, chunk_size=64, initial_state=None, use_qk_norm_in_gdn=False,
            compute_dtype=jnp.bfloat16, cp_axis=None):
    """reform.run in float64 (inputs widened, every step float64), o and the
    final state rounded to float32.  compute_dtype is ignored: float64 is
    the point."""
    f64 = jnp.float64
    h0 = None if initial_state is None else initial_state.astype(f64)
    o, h = reform.run(query.astype(f64), key.astype(f64), value.astype(f64), g.astype(f64), beta.astype(f64),
                      chunk_size, h0, use_qk_norm_in_gdn, f64, cp_axis, wd=f64, out_dtype=jnp.float32)
    return o, h
