"""`gdn-parity-jax run --grad` on a torch function (--signature hf):
torch.autograd's gradients, with the cotangents drawn from --seed, judged by
`gdn-parity check` against the MPFR oracle's VJP.  A torch token loop written
in the tests passes on every gradient; the same loop behind a wrong backward
(token 3's dk scaled by 1 + 1e-3, the forward unchanged) FAILs on dk alone.

Needs torch (scripts/upstream.sh's .venv-upstream has it; the front end's
.venv does not, and skips).  Shape B=1, T=64, Hk=2 key heads for Hv=4,
Dk=Dv=16, C=8, slow gates, h0: one process each, seconds."""

import json

import numpy as np
import pytest

from conftest import assert_exit as _ok, only_fixture as _fixture, run_cli
from gdn_parity_jax import grads

pytest.importorskip("torch")

BASE = ("--signature", "hf", "--shape", "1,64,4,16", "--key-heads", "2", "--chunk", "8", "--h0",
        "--gates", "slow", "--devices", "1", "--grad", "--seed", "4")


def _verdicts(out):
    """{tensor: pass} of the torch output's checks, and the checks themselves."""
    doc = json.loads((out / "results.json").read_text())
    v, checks = {}, []
    for case in doc["cases"]:
        for c in case.get("tolerance", {}).get("checks", []):
            if c.get("subject") == "torch_scan":
                v[c["tensor"]] = v.get(c["tensor"], True) and bool(c["pass"])
                checks.append(c)
    return v, checks


def test_torch_gradients_pass(tmp_path):
    r = run_cli("run", "--impl", "torch_subjects:recurrent", *BASE, "--out", tmp_path)
    _ok(r, 0)
    fx = _fixture(tmp_path)
    ct = grads.draw_cotangents(4, 1, 64, 4, 16, 16, with_dht=True)
    np.testing.assert_array_equal(fx["cotangents"]["do"], ct["do"])
    g = fx["outputs"]["torch_scan"]["grads"]
    assert sorted(g) == sorted(grads.GRAD_NAMES)
    assert g["dq"].shape == (1, 64, 2, 16) and g["dk"].shape == (1, 64, 2, 16)  # key heads
    assert g["dh0"].shape == (1, 4, 16, 16) and np.abs(g["dh0"]).max() > 0
    v, _ = _verdicts(tmp_path)
    assert all(v.get(t) is True for t in grads.GRAD_NAMES + ("o", "ht")), v
    assert "PASS torch_scan " in r.stdout


def test_torch_wrong_backward_fails(tmp_path):
    """Negative control: the same forward, a wrong dk at one token."""
    r = run_cli("run", "--impl", "torch_subjects:recurrent_wrong_dk", *BASE, "--out", tmp_path)
    _ok(r, 1)
    v, checks = _verdicts(tmp_path)
    assert v["o"] and v["ht"] and v["dq"] and v["dv"] and v["dg"], v
    assert v["dk"] is False, v
    worst = max(c["value"] / c["limit"] for c in checks
                if c["tensor"] == "dk" and not c["pass"] and c.get("limit"))
    assert worst > 10, worst  # 1e-3 relative on one token: far above the limit
