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


# A planted gradient error: the correct function, but on the last device of a
# context-parallel run the cotangent reaching one token's key is scaled by
# (1 + PLANT), so dk of that token carries a relative error of exactly PLANT
# (1e-4, the figure) and nothing else changes: the forward is exact
# and the stock (unsharded) function is untouched.
PLANT = 1e-4
PLANT_TOKEN = 3  # local token index on the last device


def _plant_on_key(key, cp_axis):
    import jax
    import jax.numpy as jnp
    from jax import lax

    @jax.custom_vjp
    def ident(x):
        return x

    def fwd(x):
        return x, None

    def bwd(_, ct):
        last = lax.axis_index(cp_axis) == lax.axis_size(cp_axis) - 1
        tok = (jnp.arange(ct.shape[1]) == PLANT_TOKEN)[None, :, None, None]
        return (jnp.where(last & tok, ct * (1 + PLANT), ct),)

    ident.defvjp(fwd, bwd)
    return ident(key)


def planted_dk(query, key, value, g, beta, chunk_size=64, initial_state=None,
               use_qk_norm_in_gdn=False, compute_dtype=None, cp_axis=None):
    import jax.numpy as jnp

    from gdn_parity_jax import impls
    if cp_axis is not None:
        key = _plant_on_key(key, cp_axis)
    return impls.chunk_gated_delta_rule(query, key, value, g, beta, chunk_size, initial_state,
                                        use_qk_norm_in_gdn, compute_dtype or jnp.bfloat16, cp_axis)
