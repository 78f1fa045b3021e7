"""assert_gdn_parity's default grid: grids/upstream-pr.json (the smallest
grid that kills the mutant catalogue).

The mapping from grid keys to `gdn-parity-jax run` options is checked
without JAX; then the gate end to end under the default grid: the correct
function passes its one expressible case (case 0: 1,200,4,32, Hk = 2, h0,
slow gates, C = 16, 4 devices, 50 tokens per device so every device pads;
under the defaults also 8 devices and the gradients)
and reports the packed-document case as skipped; a broken variant fails it
(the negative control)."""

import inspect
import json

import pytest

from conftest import ROOT
from gdn_parity_jax import assert_gdn_parity, broken, impls
from gdn_parity_jax import pytest_helper as ph


def test_the_default_grid_is_upstream_pr():
    assert inspect.signature(assert_gdn_parity).parameters["grid"].default == "upstream-pr"
    assert inspect.signature(assert_gdn_parity).parameters["shapes"].default is None
    assert ph.grid_path("upstream-pr") == ROOT / "grids" / "upstream-pr.json"
    (l0, runs0, why0), (l1, runs1, why1) = ph.grid_runs("upstream-pr")
    # the defaults: 8 devices besides the grid's 4, gradients judged
    assert runs0 == [["--shape", "1,200,4,32", "--key-heads", "2", "--h0", "--gates", "slow",
                      "--seed", "1", "--devices", "4,8", "--grad", "--chunk", "16"]] and why0 is None
    assert runs1 is None and "segment ids" in why1 and l1 == "upstream-pr case 1 (1,256,2,32)"
    # an explicit option overrides the grid's value in every case
    (_, runs, _), _ = ph.grid_runs("upstream-pr", {"devices": (2, 4), "dtype": "bfloat16"})
    assert "2,4" in runs[0] and runs[0][-2:] == ["--dtype", "bfloat16"]


def test_grid_errors(tmp_path, monkeypatch):
    g = tmp_path / "g.json"
    g.write_text(json.dumps({"entries": [{"shape": "1,64,2,16", "colour": "red"}]}))
    with pytest.raises(ValueError, match=r"entry 0: grid key 'colour' unknown"):
        ph.grid_runs(str(g))
    g.write_text(json.dumps({"entries": [{"shape": "1,64,2,16", "documents": 2}]}))
    with pytest.raises(ValueError, match="no case the JAX front end can run"):
        ph.grid_runs(str(g))
    with pytest.raises(FileNotFoundError, match="no-such-grid.json"):
        ph.grid_path("no-such-grid")
    with pytest.raises(FileNotFoundError, match="no such file"):
        ph.grid_path(str(tmp_path / "missing.json"))
    monkeypatch.setenv(ph.GRIDS_ENV, str(tmp_path))
    assert ph.grid_path("g") == g
    # a plain install finds grids/ next to the C tools' build folder
    monkeypatch.delenv(ph.GRIDS_ENV)
    (tmp_path / "grids").mkdir()
    (tmp_path / "grids" / "h.json").write_text("{}")
    monkeypatch.setenv("GDN_PARITY_BIN_DIR", str(tmp_path / "build"))
    assert ph.grid_path("h") == tmp_path / "grids" / "h.json"


def test_correct_function_passes_the_default_grid():
    lines = assert_gdn_parity(impls.chunk_gated_delta_rule)
    assert any(ln.startswith("upstream-pr case 0 (1,200,4,32): PASS jax_cp_d4 ") for ln in lines), lines
    assert any(ln.startswith("upstream-pr case 0 (1,200,4,32): PASS jax_cp_d8 ") for ln in lines), lines
    assert any(ln.startswith("upstream-pr case 1 (1,256,2,32): SKIP (documents=4") for ln in lines), lines


def test_broken_variant_fails_the_default_grid():
    # negative control: every device's replay also gets h0 (C h0-every)
    with pytest.raises(AssertionError) as exc:
        assert_gdn_parity(broken.h0_every, grad=False)  # a forward bug: the forward suffices
    msg = str(exc.value)
    assert "upstream-pr case 0 (1,200,4,32): out of tolerance" in msg and "FAIL jax_cp_d4" in msg


@pytest.mark.parametrize("doc,msg", [
    ({"entries": ["1,64,2,16"]}, "entry 0 is str, not a JSON object"),
    ({"entries": [{"shape": "1,64,2,16"}, 7]}, "entry 1 is int, not a JSON object"),
    ({"entries": {"shape": "1,64,2,16"}}, "'entries' must be a JSON array"),
])
def test_grid_entry_not_an_object_is_a_usage_error(tmp_path, doc, msg):
    g = tmp_path / "g.json"
    g.write_text(json.dumps(doc))
    with pytest.raises(ValueError, match=msg):
        ph.grid_runs(str(g))
    # control: the same entry as an object is accepted
    g.write_text(json.dumps({"entries": [{"shape": "1,64,2,16"}]}))
    assert ph.grid_runs(str(g))[0][1]
