"""The seed issue's failure (1), as a model layer calls the kernel: globally
shaped q, k, v, g, beta under jit, the sequence sharded over the mesh's
'context' axis (`gdn-parity-jax audit --layout global` calls these so).

* ``gathered_layer``: the layer pins q, k, v and g, beta to partition specs
  with ``None`` in the sequence position (the seed's qkv_pspec and
  g_beta_pspec: (batch, None, heads, None)) and calls the stock sequential
  scan.  XLA gathers the whole sequence onto every device to honour the
  constraint: the numbers are the stock scan's, exactly; nothing is parallel.
  The audit FAILs it (an all-gather whose bytes grow with T, flops that do
  not fall with D).
* ``sharded_layer``: the same layer keeping the sequence sharded and calling
  the kernel's context-parallel entry through ``jax.shard_map`` with
  ``cp_axis``: what moves is D affine pairs.  The audit PASSes it.

Both take the maxtext signature plus ``cp_axis`` (the mesh axis the
sequence is sharded over; None: one device, the stock scan) and need the
mesh set (``jax.set_mesh``), as a model's layers do.

    gdn-parity-jax audit --layout global --impl gdn_layer:gathered_layer \\
        --shape 1,256,2,16 --chunk 16 --devices 1,2,4 --lengths 256,512,1024
"""

import jax
import jax.numpy as jnp
from jax.sharding import PartitionSpec as P

from gdn_parity_jax import impls


def _constrain(xs, seq):
    """q, k, v to (batch, seq, heads, dim), g and beta to (batch, seq, heads)."""
    four, three = P(None, seq, None, None), P(None, seq, None)
    return [jax.lax.with_sharding_constraint(a, four if a.ndim == 4 else three) for a in xs]


def gathered_layer(query, key, value, g, beta, chunk_size=64, initial_state=None,
                   use_qk_norm_in_gdn=False, compute_dtype=jnp.bfloat16, cp_axis=None):
    if cp_axis is not None:  # the seed's pspecs: None at the sequence
        query, key, value, g, beta = _constrain((query, key, value, g, beta), None)
    return impls.chunk_gated_delta_rule(query, key, value, g, beta, chunk_size, initial_state,
                                        use_qk_norm_in_gdn, compute_dtype, None)


def sharded_layer(query, key, value, g, beta, chunk_size=64, initial_state=None,
                  use_qk_norm_in_gdn=False, compute_dtype=jnp.bfloat16, cp_axis=None):
    if cp_axis is None:
        return impls.chunk_gated_delta_rule(query, key, value, g, beta, chunk_size, initial_state,
                                            use_qk_norm_in_gdn, compute_dtype, None)
    query, key, value, g, beta = _constrain((query, key, value, g, beta), cp_axis)
    four, three, state = P(None, cp_axis, None, None), P(None, cp_axis, None), P()
    has_h0 = initial_state is not None
    h0 = initial_state if has_h0 else jnp.zeros((), jnp.float32)

    def local(q, k, v, gg, b, h):
        o, ht = impls.chunk_gated_delta_rule(q, k, v, gg, b, chunk_size, h if has_h0 else None,
                                             use_qk_norm_in_gdn, compute_dtype, cp_axis)
        return o, (ht if has_h0 else jnp.zeros((), jnp.float32))

    o, ht = jax.shard_map(local, in_specs=(four, four, four, three, three, state),
                          out_specs=(four, state), check_vma=False)(query, key, value, g, beta, h0)
    return o, (ht if has_h0 else None)
