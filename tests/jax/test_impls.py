"""Our JAX implementations, in process, against the float64 token recurrence.

Shapes are small (T = 64, C = 8: 8 chunks, 2 per device at D = 4) so every
function compiles once per mesh in a few seconds on two cores."""

import jax.numpy as jnp
import numpy as np
import pytest

from gdn_parity_jax import broken, impls
from gdn_parity_jax.mesh import MeshPlan, run_sharded, run_stock
from gdn_parity_jax.signatures import ADAPTERS
from ref64 import rel_fro, token_reference

U32 = 2.0 ** -24
# float32 band of the policy (band-float32): 64u = 3.8e-6; measured ~3u here.
BAND32 = 64 * U32
NAMES = ("q", "k", "v", "g", "beta", "h0")


@pytest.fixture(scope="module")
def inputs(gqa64_inputs):
    x = dict(gqa64_inputs)
    return x, token_reference(x)


def _call(fn, x, cp_axis=None, compute_dtype=jnp.float32):
    return ADAPTERS["maxtext"].call(fn, x, chunk=8, l2norm=True, compute_dtype=compute_dtype,
                                    cp_axis=cp_axis)


def test_stock_matches_token_recurrence(inputs):
    x, (o_ref, h_ref) = inputs
    o, h = run_stock(lambda xs: _call(impls.chunk_gated_delta_rule, xs), x)
    assert rel_fro(o, o_ref) < BAND32 and rel_fro(h, h_ref) < BAND32
    # negative control: the same run with h0 dropped must leave the band.
    o2, _ = run_stock(lambda xs: _call(impls.chunk_gated_delta_rule,
                                       dict(xs, h0=jnp.zeros_like(xs["h0"]))), x)
    assert rel_fro(o2, o_ref) > 100 * BAND32


def test_stock_bfloat16_compute(inputs):
    x, (o_ref, h_ref) = inputs
    o, h = run_stock(lambda xs: _call(impls.chunk_gated_delta_rule, xs,
                                      compute_dtype=jnp.bfloat16), x)
    # bfloat16 band of the policy: 4u = 2^-6 = 1.56e-2; and bfloat16 rounding
    # must show: above the float32 band (else compute_dtype was ignored).
    e = rel_fro(o, o_ref)
    assert BAND32 < e < 2.0 ** -6


@pytest.mark.parametrize("fn", [impls.chunk_gated_delta_rule,
                                impls.chunk_gated_delta_rule_hillis_steele],
                         ids=["associative-scan", "hillis-steele"])
@pytest.mark.parametrize("D", [1, 2, 4, 8])
def test_context_parallel_on_a_mesh(inputs, fn, D):
    x, (o_ref, h_ref) = inputs
    o, h = run_sharded(lambda xl, ax: _call(fn, xl, cp_axis=ax), x, MeshPlan(D, 1, "context"), 1)
    # the core rule in miniature: no worse than the band (scan measures ~3u)
    assert rel_fro(o, o_ref) < BAND32 and rel_fro(h, h_ref) < BAND32


@pytest.mark.parametrize("cp_axis,D", [("context", 4), (("fsdp", "context"), 8)],
                         ids=["2d-mesh-context", "tuple-axis"])
def test_two_dimensional_mesh(inputs, cp_axis, D):
    x, (o_ref, h_ref) = inputs
    plan = MeshPlan(D, 2, cp_axis)
    assert plan.n_devices == 8
    o, h = run_sharded(lambda xl, ax: _call(impls.chunk_gated_delta_rule, xl, cp_axis=ax),
                       x, plan, 1)
    assert rel_fro(o, o_ref) < BAND32 and rel_fro(h, h_ref) < BAND32


@pytest.mark.parametrize("name", sorted(broken.VARIANTS))
def test_broken_variants_leave_the_band(inputs, name):
    """Negative controls of the tests above: each broken variant, on slow
    gates (state crosses every seam), is far outside the band at D = 4 and
    exactly the stock scan unsharded."""
    x, (o_ref, h_ref) = inputs
    fn = broken.VARIANTS[name]
    o, h = run_sharded(lambda xl, ax: _call(fn, xl, cp_axis=ax), x, MeshPlan(4, 1, "context"), 1)
    assert max(rel_fro(o, o_ref), rel_fro(h, h_ref)) > 100 * BAND32
    o1, h1 = run_stock(lambda xs: _call(fn, xs), x)
    o0, h0 = run_stock(lambda xs: _call(impls.chunk_gated_delta_rule, xs), x)
    np.testing.assert_array_equal(o1, o0)
    np.testing.assert_array_equal(h1, h0)
