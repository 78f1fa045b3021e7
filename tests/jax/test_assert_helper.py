"""assert_gdn_parity, as an upstream test file calls it."""

import pytest

from gdn_parity_jax import assert_gdn_parity
from gdn_parity_jax import broken, impls
from gdn_parity_jax.pytest_helper import function_spec

SMALL = dict(shapes=[(1, 64, 2, 16)], chunk=8, devices=(1, 4))


def test_passes_a_correct_function():
    lines = assert_gdn_parity(impls.chunk_gated_delta_rule, **SMALL)
    assert any("PASS jax_cp_d4" in ln for ln in lines)
    assert sum("PASS" in ln for ln in lines) == 3  # jax_scan, jax_cp_d1, jax_cp_d4


def test_fails_a_broken_function_with_the_verdict_lines():
    # negative control: carried state dropped at the seams, long-memory gates
    with pytest.raises(AssertionError) as exc:
        assert_gdn_parity(broken.seam_state, grad=False, **SMALL)  # a forward bug
    msg = str(exc.value)
    assert "out of tolerance" in msg and "FAIL jax_cp_d4" in msg and "PASS jax_scan" in msg


def test_separate_cp_function():
    assert_gdn_parity(impls.chunk_gated_delta_rule, cp_fn=impls.chunk_gated_delta_rule_hillis_steele,
                      cp_prefix="hillis-steele", shapes=[(1, 64, 2, 16)], chunk=8, devices=(2,),
                      grad=False)


def test_function_spec_names_only_what_imports_by_name():
    # assert_gdn_parity itself takes any callable (test_any_callable.py)
    def local(query, key, value, g, beta):
        return query
    assert function_spec(impls.chunk_gated_delta_rule) == "gdn_parity_jax.impls:chunk_gated_delta_rule"
    with pytest.raises(ValueError, match="not importable by name"):
        function_spec(local)
