"""The wheel's metadata and the front end's search for its own tools.
The wheel itself is built, installed into fresh venvs and run by
scripts/wheel_check.sh; here what can be checked in the checkout: the jax
extra pins what frontend/requirements-jax.txt pins, the build requirements
are scripts/requirements-wheel.txt's, and tools.py prefers the tools of its
own distribution to PATH while --bin-dir and GDN_PARITY_BIN_DIR still win."""

import sysconfig
import tomllib
from pathlib import Path

import pytest

from conftest import ROOT
from gdn_parity_jax import tools as T

RUNNER = {"pytest", "iniconfig", "packaging", "pluggy", "pygments"}  # the test runner's, not the extra's


def _pins(path):
    out = {}
    for line in Path(path).read_text().splitlines():
        line = line.split("#")[0].strip()
        if line:
            name, _, ver = line.partition("==")
            out[name.lower().replace("_", "-")] = ver
    return out


def _pyproject():
    with open(ROOT / "pyproject.toml", "rb") as f:
        return tomllib.load(f)


def test_the_jax_extra_pins_the_measured_stack():
    extra = {}
    for req in _pyproject()["project"]["optional-dependencies"]["jax"]:
        name, _, ver = req.partition("==")
        assert ver, f"pyproject.toml: jax extra {req!r} is not pinned"
        extra[name.lower().replace("_", "-")] = ver
    want = {k: v for k, v in _pins(ROOT / "frontend" / "requirements-jax.txt").items() if k not in RUNNER}
    assert extra == want
    assert "cloudpickle" in extra and "torch" not in extra


def test_build_requirements_and_options():
    doc = _pyproject()
    build = _pins(ROOT / "scripts" / "requirements-wheel.txt")
    for req in doc["build-system"]["requires"]:
        name, _, ver = req.partition("==")
        assert build.get(name.lower()) == ver, req
    setup = doc["tool"]["meson-python"]["args"]["setup"]
    for opt in ("-Dtests=false", "-Dbench=false", "-Dfuzz=false", "-Dmpi=disabled", "-Dnative=false"):
        assert opt in setup
    assert doc["project"]["scripts"]["gdn-parity-jax"] == "gdn_parity_jax.cli:main"


def _pair(d):
    d.mkdir(parents=True)
    for n in ("gdn-parity", "gdn-fixture"):
        (d / n).write_text("#!/bin/sh\n")
        (d / n).chmod(0o755)
    return d


def test_own_distribution_first_then_path(tmp_path, monkeypatch):
    site = tmp_path / "site"
    own = _pair(site / "gdn_parity.scripts")
    assert T.own_dirs(site / "gdn_parity_jax") == [own]  # not an install scheme's folder: no bin/
    real = Path(sysconfig.get_paths()["purelib"])
    assert Path(sysconfig.get_paths()["scripts"]) in T.own_dirs(real / "gdn_parity_jax")
    other = _pair(tmp_path / "other")
    monkeypatch.setattr(T, "own_dirs", lambda: [tmp_path / "absent", own])
    monkeypatch.delenv(T.ENV, raising=False)
    monkeypatch.setenv("PATH", str(other))
    got = T.find_tools()
    assert got.parity == str(own / "gdn-parity") and "gdn_parity.scripts" in got.origin
    # the explicit choices still come first
    monkeypatch.setenv(T.ENV, str(other))
    assert T.find_tools().parity == str(other / "gdn-parity")
    assert T.find_tools(str(other)).origin.startswith("--bin-dir")
    monkeypatch.delenv(T.ENV)
    # without its own tools: PATH, as before
    monkeypatch.setattr(T, "own_dirs", lambda: [tmp_path / "absent"])
    assert T.find_tools().origin == "PATH"
    monkeypatch.setenv("PATH", str(tmp_path / "nothing"))
    monkeypatch.setattr(T, "repo_root", lambda: None)
    with pytest.raises(T.ToolError) as exc:
        T.find_tools()
    assert str(tmp_path / "absent") in str(exc.value) and "pip install the gdn-parity wheel" in str(exc.value)
