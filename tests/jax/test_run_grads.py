"""`gdn-parity-jax run --grad` end to end: jax.vjp of the stock function and of
the context-parallel function through shard_map on 1, 2, 4, 8 host devices,
written to the fixture with the cotangents, judged by `gdn-parity check`
against the MPFR oracle's VJP.

Shape: B=1, T=64, H=2, Dk=Dv=16, C=8, slow gates, an initial state (the
forward tests' shape, test_run.py).  Each run is one process: JAX import,
compiles, the oracle and the check."""

import json
import shutil

import numpy as np
import pytest

from conftest import assert_exit as _ok, only_fixture as _fixture, run_cli
from gdn_parity_jax import assert_gdn_parity, broken, grads
from gdn_parity_jax import gdn_fixture_capture as cap

IMPLS = "gdn_parity_jax.impls"
BASE = ("--shape", "1,64,2,16", "--chunk", "8", "--h0", "--gates", "slow", "--grad")


def _verdicts(out, name="results.json"):
    """{impl name: {tensor: pass}} over the cases of a results JSON."""
    doc = json.loads((out / name).read_text())
    v = {}
    for case in doc["cases"]:
        for chk in case.get("tolerance", {}).get("checks", []):
            name, t = chk.get("subject"), chk.get("tensor")
            v.setdefault(name, {}).setdefault(t, True)
            v[name][t] &= bool(chk["pass"])
    return doc, v


@pytest.fixture(scope="module")
def correct_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("grad-run")
    r = run_cli("run", "--impl", f"{IMPLS}:chunk_gated_delta_rule", *BASE, "--seed", "5",
                "--out", out)
    return r, out


def test_correct_gradients_pass_on_1_2_4_8_devices(correct_run):
    r, out = correct_run
    _ok(r, 0)
    fx = _fixture(out)
    ct = fx["cotangents"]
    ref = grads.draw_cotangents(5, 1, 64, 2, 16, 16, with_dht=True)  # from --seed
    np.testing.assert_array_equal(ct["do"], ref["do"])
    np.testing.assert_array_equal(ct["dht"], ref["dht"])
    doc, v = _verdicts(out)
    assert doc["pass"] is True
    for name in ("jax_scan", "jax_cp_d1", "jax_cp_d2", "jax_cp_d4", "jax_cp_d8"):
        assert sorted(fx["outputs"][name]["grads"]) == sorted(grads.GRAD_NAMES), name
        assert f"PASS {name} " in r.stdout
        # every gradient was judged, and passed
        assert all(v[name].get(t) is True for t in grads.GRAD_NAMES), (name, v[name])


def test_planted_gradient_error_fails(correct_run, tools, tmp_path):
    """The correct run's fixture with a relative 1e-4 planted in one token's
    dk of jax_cp_d4 (device 3, token 3 of its shard), nothing else changed:
    gdn-parity check fails that output on dk alone (the per-token rule,
    row_rel 1e-4 against 3 x max(scan, 32u) = 5.7e-6), and the untouched
    outputs still pass.  Negative control: the same check on the unplanted
    copy passes."""
    _, out = correct_run
    src = sorted(out.glob("gdn-*.h5"))[0]
    path = tmp_path / "planted.h5"
    shutil.copy(src, path)
    g = dict(cap.read_fixture(str(path))["outputs"]["jax_cp_d4"]["grads"])
    g["dk"] = g["dk"].copy()
    g["dk"][0, 51] *= np.float32(1 + 1e-4)
    cap.write_gradients(str(path), "jax_cp_d4", g, replace=True)
    check = ["check", "--fixture", str(path), "--chunk", "8", "--devices", "4", "--shard",
             "tokens", "--json", str(tmp_path / "r.json")]
    r = tools.run("parity", check, capture_output=True, text=True)
    assert r.returncode == 1, r.stdout + r.stderr
    _, v = _verdicts(tmp_path, "r.json")
    assert v["jax_cp_d4"]["dk"] is False, v["jax_cp_d4"]
    assert all(ok for t, ok in v["jax_cp_d4"].items() if t != "dk"), v["jax_cp_d4"]
    assert all(all(v[n].values()) for n in v if n.startswith("jax_") and n != "jax_cp_d4")
    check[2], check[-1] = str(src), str(tmp_path / "r0.json")
    assert tools.run("parity", check, capture_output=True, text=True).returncode == 0


def test_backward_only_bug_fails_where_forward_passes(tmp_path):
    """seam_nograd (stop_gradient on the exclusive prefix pair at each seam):
    its forward is the correct function's, bit for bit, so every o and ht
    check passes; its gradients fail (measured at D = 4: dk, dv, dg off by
    O(0.1)).  test_grads.py shows the forward is bit-identical.  Run the way
    an upstream test file would: assert_gdn_parity(..., grad=True)."""
    with pytest.raises(AssertionError) as exc:
        assert_gdn_parity(broken.seam_nograd, shapes=[(1, 64, 2, 16)], chunk=8, devices=(4,),
                          grad=True, out_dir=str(tmp_path))
    msg = str(exc.value)
    assert "out of tolerance" in msg and "PASS jax_scan " in msg and "FAIL jax_cp_d4 " in msg
    assert sorted(_fixture(tmp_path)["outputs"]["jax_cp_d4"]["grads"]) == sorted(grads.GRAD_NAMES)
    _, v = _verdicts(tmp_path)
    assert v["jax_cp_d4"]["o"] and v["jax_cp_d4"]["ht"], v["jax_cp_d4"]  # the forward passes
    assert not (v["jax_cp_d4"]["dk"] or v["jax_cp_d4"]["dv"]), v["jax_cp_d4"]


def test_grad_usage_errors(tmp_path):
    r = run_cli("run", "--impl", f"{IMPLS}:chunk_gated_delta_rule", *BASE, "--dtype", "bfloat16",
                "--out", tmp_path)
    _ok(r, 2)
    assert "--grad: compute dtype bfloat16" in r.stderr
    assert not list(tmp_path.glob("*.h5"))
    # (torch functions are differentiated by torch.autograd: test_torch_grads.py)
