"""Shared set-up of the JAX tests (pytest, run by scripts/test.sh).

JAX must be importable: a missing JAX is an error here, never a skip (the
point of these tests is to meet real JAX).  XLA is asked for 8 host devices
before jax is first imported, so in-process tests can build meshes of 1, 2,
4 and 8 devices; command-line runs get their own process.
"""

import os
import subprocess
import sys
from pathlib import Path

os.environ.setdefault("XLA_FLAGS", "--xla_force_host_platform_device_count=8")
os.environ.setdefault("JAX_PLATFORMS", "cpu")

import jax  # noqa: E402,F401  (ImportError here fails the run: no skip)
import pytest  # noqa: E402

from gdn_parity_jax import gdn_fixture_capture as cap  # noqa: E402
from gdn_parity_jax.tools import find_tools  # noqa: E402

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]


@pytest.fixture(autouse=True)
def _scratch_in_tmp_path(tmp_path, monkeypatch):
    """What a test leaves in the temporary folder goes to its own tmp_path
    (pytest keeps the last three runs' and removes the rest): a failing
    assert_gdn_parity keeps its fixture and reports for inspection, which
    the tests' negative controls do on purpose, and they are not to pile up
    in /tmp. Subprocesses get it through TMPDIR."""
    import tempfile
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))


@pytest.fixture(scope="session")
def tools():
    """The C tools (GDN_PARITY_BIN_DIR from scripts/test.sh, else the repo's build)."""
    return find_tools()


def run_cli(*args, timeout=600):
    """`gdn-parity-jax ARGS` in a fresh process; returns CompletedProcess (text)."""
    env = dict(os.environ)
    env.pop("XLA_FLAGS", None)  # the command sets its own device count
    env["PYTHONPATH"] = os.pathsep.join([str(HERE)] + [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p])
    return subprocess.run([sys.executable, "-m", "gdn_parity_jax", *map(str, args)],
                          capture_output=True, text=True, timeout=timeout, env=env)


def synth(tools, path, shape, *extra, chunk=8):
    r = tools.run("fixture", ["synth", "--shape", shape, "--out", str(path), "--chunk-size",
                              str(chunk), "--force", *map(str, extra)],
                  capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    return cap.read_fixture(str(path))


@pytest.fixture(scope="session")
def gqa64_inputs(tools, tmp_path_factory):
    """The inputs of the JAX gradient and implementation tests: B=1, T=64,
    Hk=2 key heads for Hv=4, Dk=Dv=16, an initial state, slow gates, seed 3
    (a fresh dict per test module: callers may add entries)."""
    fx = synth(tools, tmp_path_factory.mktemp("gqa64") / "x.h5", "1,64,4,16", "--key-heads", "2", "--h0",
               "--slow-gates", "--seed", "3")
    return fx["inputs"]


def assert_exit(r, code):
    """A `run_cli` result exited `code`; its output is the message otherwise."""
    assert r.returncode == code, f"exit {r.returncode}, expected {code}\n{r.stdout}\n{r.stderr}"


def only_fixture(out):
    """The one gdn-*.h5 fixture a `gdn-parity-jax run --out out` wrote, read."""
    files = sorted(out.glob("gdn-*.h5"))
    assert len(files) == 1, files
    return cap.read_fixture(str(files[0]))
