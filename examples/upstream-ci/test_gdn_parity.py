"""Copy into your JAX project's tests (e.g. tests/unit/test_gdn_parity.py).

The stock function runs on one device; the context-parallel path -- the stock
function with cp_axis=, called inside shard_map -- on meshes of the
recommended grid's device counts and 8 host CPU devices; every output and
its gradients (jax.vjp) are judged against the MPFR oracle by gdn-parity's
tolerance rule (grad=False: forward only).  Any callable will do: a
functools.partial fixing your config, a closure from a factory.  A failure
lists the verdict lines and keeps the fixture, results.json and report.html.

The imported function must take cp_axis (MaxText's context-parallel
version does); a stock function without it fails the test ("nothing
context-parallel was tested") unless the per-shard function is passed as
cp_fn=, or cp=False asks for the stock function alone.
"""

from gdn_parity_jax import assert_gdn_parity
from maxtext.models.qwen3 import jax_chunk_gated_delta_rule


def test_gdn_parity():
    assert_gdn_parity(jax_chunk_gated_delta_rule)
