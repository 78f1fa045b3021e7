"""Signature adapters: a custom JSON mapping end to end, and its errors."""

import json

import pytest

from conftest import run_cli
from gdn_parity_jax.signatures import SignatureError, get_adapter

MAPPING = {"framework": "jax", "positional": ["q", "k", "v", "beta", "g"],
           "keywords": {"state": "h0", "chunk": "chunk", "normalize": "l2norm", "axis": "cp_axis"},
           "layout": "BHTD", "returns": ["o", "ht"]}


def test_json_mapping_runs_stock_and_context_parallel(tmp_path):
    m = tmp_path / "map.json"
    m.write_text(json.dumps(MAPPING))
    r = run_cli("run", "--impl", "subjects:heads_first_beta_before_g", "--signature", m,
                "--shape", "1,64,4,16", "--key-heads", "2", "--chunk", "8", "--h0",
                "--gates", "slow", "--devices", "1,4", "--out", tmp_path / "o")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "PASS jax_cp_d4 " in r.stdout and "PASS jax_scan " in r.stdout
    # negative control: the same mapping with beta and g swapped must fail the gate
    bad = dict(MAPPING, positional=["q", "k", "v", "g", "beta"])
    m.write_text(json.dumps(bad))
    r = run_cli("run", "--impl", "subjects:heads_first_beta_before_g", "--signature", m,
                "--shape", "1,64,4,16", "--key-heads", "2", "--chunk", "8", "--h0",
                "--gates", "slow", "--devices", "4", "--out", tmp_path / "b")
    assert r.returncode in (1, 3), r.stdout + r.stderr  # wrong numbers (1) or rejected values (3)


@pytest.mark.parametrize("spec,msg", [
    ({"positional": ["q", "k", "v", "gate", "beta"]}, "'gate' is not one of"),
    ({"framework": "numpy"}, "framework 'numpy'"),
    ({"layout": "TBHD"}, "layout 'TBHD'"),
    ({"positonal": []}, "unknown key(s) ['positonal']"),
])
def test_json_mapping_errors_name_the_key(tmp_path, spec, msg):
    m = tmp_path / "m.json"
    m.write_text(json.dumps(spec))
    with pytest.raises(SignatureError) as exc:
        get_adapter(str(m))
    assert msg in str(exc.value) and str(m) in str(exc.value)


def test_unknown_signature_and_torch_cp_refused():
    with pytest.raises(SignatureError, match="expected one of maxtext, hf, fla"):
        get_adapter("nope")
    with pytest.raises(SignatureError, match="no context-parallel form"):
        get_adapter("hf").check(print, cp=True)


def test_signature_errors_name_a_partial_and_a_callable_object():
    import functools

    def three(a, b, c):
        return a

    class Obj:
        def __call__(self, a, b):
            return a

    adapter = get_adapter("maxtext")
    with pytest.raises(SignatureError, match=r"three: takes 3 positional"):
        adapter.check(functools.partial(three), cp=False)
    with pytest.raises(SignatureError, match=r"Obj: takes 2 positional"):
        adapter.check(Obj(), cp=False)
    with pytest.raises(SignatureError, match=r"three: takes 3 positional"):
        adapter.check(three, cp=False)  # control: a plain function, as before
