"""Finding the C tools (gdn_parity_jax.tools) and the verdict lines
(gdn_parity_jax.verdict): no JAX needed."""

import json
import os

import pytest

from gdn_parity_jax import tools as T
from gdn_parity_jax.verdict import verdict_lines


def _flat(tmp_path, tools):
    d = tmp_path / "flat"
    d.mkdir()
    os.symlink(tools.parity, d / "gdn-parity")
    os.symlink(tools.fixture, d / "gdn-fixture")
    return d


def test_order_bin_dir_then_env_then_path(tools, tmp_path, monkeypatch):
    flat = _flat(tmp_path, tools)
    meson = os.path.dirname(os.path.dirname(tools.parity))  # BUILD/parity/gdn-parity
    monkeypatch.setenv(T.ENV, meson)
    assert T.find_tools(str(flat)).parity == str(flat / "gdn-parity")  # --bin-dir first
    assert T.find_tools().parity == os.path.join(meson, "parity", "gdn-parity")  # then env
    monkeypatch.delenv(T.ENV)
    monkeypatch.setenv("PATH", str(flat))
    got = T.find_tools()
    assert got.origin == "PATH" and got.fixture == str(flat / "gdn-fixture")


def test_explicit_places_that_lack_the_tools_are_errors(tmp_path, monkeypatch):
    with pytest.raises(T.ToolError, match="--bin-dir"):
        T.find_tools(str(tmp_path))
    monkeypatch.setenv(T.ENV, str(tmp_path))
    with pytest.raises(T.ToolError, match=T.ENV):
        T.find_tools()
    # half a pair is not a pair: gdn-parity alone does not count
    (tmp_path / "gdn-parity").write_text("#!/bin/sh\n")
    (tmp_path / "gdn-parity").chmod(0o755)
    with pytest.raises(T.ToolError):
        T.find_tools(str(tmp_path))


def test_verdict_lines_pick_the_worst_check_and_locate_the_seam(tmp_path):
    def chk(subject, value, limit, rule):
        return {"subject": subject, "tensor": "o", "metric": "rel_fro", "value": value,
                "limit": limit, "rule": rule, "pass": value <= limit}
    doc = {"cases": [{"shape": {"T": 64}, "impls": {
        "jax_cp_d4": {"pass": False, "attrs": {"devices": 4},
                      "o": {"worst": {"b": 0, "t": 17, "h": 1, "d": 3}}},
        "jax_scan": {"pass": True, "attrs": {"devices": 1}, "o": {"worst": {"b": 0, "t": 2, "h": 0, "d": 0}}}},
        "tolerance": {"checks": [chk("jax_cp_d4", 2e-5, 3.8e-6, "band"), chk("jax_cp_d4", 2e-5, 9.5e-7, "core"),
                                 chk("jax_scan", 1e-7, 9.5e-7, "core")]}}]}
    p = tmp_path / "r.json"
    p.write_text(json.dumps(doc))
    lines, ok = verdict_lines(str(p), ["jax_scan", "jax_cp_d4", "absent"])
    assert not ok
    assert lines[0].startswith("PASS jax_scan (1 device)")
    assert lines[1].startswith("FAIL jax_cp_d4 (4 devices)") and "[core]" in lines[1]
    assert "(device 1, token 1 of its shard)" in lines[1]  # t = 17, 16 tokens per device
    assert lines[2].startswith("MISSING absent")
