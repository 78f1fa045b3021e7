"""Functions the tests hand to gdn-parity-jax by MODULE:FUNCTION (this folder
is on PYTHONPATH in run_cli)."""


def raises(query, key, value, g, beta, chunk_size=64, initial_state=None,
           use_qk_norm_in_gdn=False):
    raise RuntimeError("deliberate failure inside the function under test")


def heads_first_beta_before_g(q, k, v, beta, g, *, state=None, chunk=64, normalize=False,
                              axis=None):
    """Our stock/cp function behind another signature: (B, H, T, D) layout,
    beta before g, other parameter names -- for a JSON mapping."""
    import jax.numpy as jnp

    from gdn_parity_jax import impls
    sw = lambda a: jnp.swapaxes(a, 1, 2)  # noqa: E731
    o, ht = impls.chunk_gated_delta_rule(sw(q), sw(k), sw(v), sw(g), sw(beta), chunk, state,
                                         normalize, jnp.float32, cp_axis=axis)
    return sw(o), ht


def stock_only(query, key, value, g, beta, chunk_size=64, initial_state=None,
               use_qk_norm_in_gdn=False, compute_dtype=None):
    """A correct stock function with no cp_axis: what a user writes first
    (MaxText's jax_chunk_gated_delta_rule before context parallelism)."""
    import jax.numpy as jnp

    from gdn_parity_jax import impls
    return impls.chunk_gated_delta_rule(query, key, value, g, beta, chunk_size, initial_state,
                                        use_qk_norm_in_gdn, compute_dtype or jnp.float32)

