"""A function whose parameters name the inputs in another order than the
maxtext signature passes them (beta before g) is refused before it runs,
naming the parameter, its position and what that position receives; the
same function in MaxText's order, or with names that say nothing, is taken
(the negative controls).  docs/function-contract.md states the order."""

import pytest

from conftest import assert_exit as _ok, run_cli
from gdn_parity_jax.signatures import SignatureError, get_adapter


def beta_before_g(query, key, value, beta, g, chunk_size=64, initial_state=None,
                  use_qk_norm_in_gdn=False):
    raise AssertionError("never called")


def maxtext_order(query, key, value, g, beta, chunk_size=64, initial_state=None,
                  use_qk_norm_in_gdn=False):
    raise AssertionError("never called")


def unnamed(a0, a1, a2, a3, a4, chunk_size=64, initial_state=None, use_qk_norm_in_gdn=False):
    raise AssertionError("never called")


def value_first(value, query, key, g, beta):
    raise AssertionError("never called")


def test_beta_before_g_is_named():
    with pytest.raises(SignatureError) as e:
        get_adapter("maxtext").check(beta_before_g, cp=False)
    msg = str(e.value)
    assert ("beta_before_g: its parameter 'beta' is positional parameter 4, which receives g: "
            "the maxtext signature passes (query, key, value, g, beta) in this order") in msg
    assert "--signature fla" in msg
    with pytest.raises(SignatureError, match="'value' is positional parameter 1, which receives "
                                             "query"):
        get_adapter("maxtext").check(value_first, cp=False)


@pytest.mark.parametrize("fn", [maxtext_order, unnamed])
def test_control_maxtext_order_and_unknown_names_are_taken(fn):
    get_adapter("maxtext").check(fn, cp=False)


def test_run_refuses_it_with_exit_2(tmp_path):
    r = run_cli("run", "--impl", "test_signature_order:beta_before_g", "--shape", "1,32,1,8",
                "--chunk", "8", "--devices", "1", "--out", tmp_path)
    _ok(r, 2)
    assert "its parameter 'beta' is positional parameter 4, which receives g" in r.stderr
