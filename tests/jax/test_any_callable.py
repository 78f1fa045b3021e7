"""assert_gdn_parity takes any callable: a closure made by a
factory, a functools.partial, a decorated function (with or without
functools.wraps), a bound method.  This test process already has JAX with
8 host devices (conftest.py), so such a callable runs here, in-process; with
ship.devices_here() patched to 0 it is serialized (cloudpickle) into the
run's process instead.  Each way has its negative control (the same kind of
callable around a broken function fails), and what cannot be serialized is
refused with the part named, before anything runs."""

import functools
import inspect
import subprocess
import sys
import threading

import jax.numpy as jnp
import pytest

from gdn_parity_jax import assert_gdn_parity, broken, impls, ship

SMALL = dict(shapes=[(1, 64, 2, 16)], chunk=8, devices=(1, 4), grad=False)


def make_closure(base):
    def gdn(query, key, value, g, beta, chunk_size=64, initial_state=None,
            use_qk_norm_in_gdn=False, compute_dtype=jnp.bfloat16, cp_axis=None):
        return base(query, key, value, g, beta, chunk_size, initial_state, use_qk_norm_in_gdn,
                    compute_dtype, cp_axis)
    return gdn


def logged(fn):  # a decorator without functools.wraps: qualname logged.<locals>.wrapper
    def wrapper(*args, **kw):
        return fn(*args, **kw)
    wrapper.__signature__ = inspect.signature(fn)  # what the adapter reads
    return wrapper


def wrapped(fn):  # with functools.wraps: the name says impls, the object is not impls'
    @functools.wraps(fn)
    def wrapper(*args, **kw):
        return fn(*args, **kw)
    return wrapper


class Holder:
    def __init__(self, base):
        self.base = base

    def gdn(self, query, key, value, g, beta, chunk_size=64, initial_state=None,
            use_qk_norm_in_gdn=False, compute_dtype=jnp.bfloat16, cp_axis=None):
        return self.base(query, key, value, g, beta, chunk_size, initial_state, use_qk_norm_in_gdn,
                         compute_dtype, cp_axis)


KINDS = {
    "closure": make_closure,
    "partial": lambda base: functools.partial(base, compute_dtype=jnp.float32),
    "decorated": logged,
    "wraps": wrapped,
    "method": lambda base: Holder(base).gdn,
}


def _is_run_process(cmd):
    return list(cmd[1:3]) == ["-m", "gdn_parity_jax"]


@pytest.fixture
def no_subprocess(monkeypatch):
    """Fails any `python -m gdn_parity_jax` the helper starts (the C tools
    the in-process run starts are let through)."""
    real = subprocess.run

    def refuse(cmd, *a, **k):
        if _is_run_process(cmd):
            raise AssertionError(f"a run process was started: {cmd}")
        return real(cmd, *a, **k)
    monkeypatch.setattr(subprocess, "run", refuse)


@pytest.fixture
def ship_only(monkeypatch):
    """As if JAX here lacked the devices: every unnamed callable is shipped."""
    monkeypatch.setattr(ship, "devices_here", lambda: 0)
    calls = []
    real = subprocess.run

    def spy(cmd, *a, **k):
        if _is_run_process(cmd):
            calls.append((k.get("env") or {}).get(ship.SHIP_ENV))
        return real(cmd, *a, **k)
    monkeypatch.setattr(subprocess, "run", spy)
    return calls


def test_none_of_these_imports_by_name():
    for name, make in KINDS.items():
        assert ship.importable_spec(make(impls.chunk_gated_delta_rule)) is None, name
    assert ship.importable_spec(impls.chunk_gated_delta_rule) == \
        "gdn_parity_jax.impls:chunk_gated_delta_rule"
    assert ship.devices_needed(["--devices", "1,4", "--fsdp", "2"]) == 8
    assert ship.devices_needed(["--fsdp", "2", "--cp-axis", "fsdp,context", "--devices", "4"]) == 4


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_each_kind_runs_in_process(kind, no_subprocess):
    lines = assert_gdn_parity(KINDS[kind](impls.chunk_gated_delta_rule), **SMALL)
    assert sum(" PASS jax_" in ln for ln in lines) == 3, lines  # jax_scan, jax_cp_d1, jax_cp_d4


def test_in_process_negative_control(no_subprocess):
    with pytest.raises(AssertionError) as exc:
        assert_gdn_parity(make_closure(broken.seam_state), **SMALL)
    assert "out of tolerance" in str(exc.value) and "FAIL jax_cp_d4" in str(exc.value)


@pytest.mark.parametrize("kind", ["closure", "partial", "wraps"])
def test_shipped_to_the_run_process(kind, ship_only):
    lines = assert_gdn_parity(KINDS[kind](impls.chunk_gated_delta_rule), **SMALL)
    assert sum(" PASS jax_" in ln for ln in lines) == 3, lines
    assert ship_only and all(ship_only), "the run's process got no shipped callable"


def test_shipped_negative_control_and_separate_cp(ship_only):
    # the shipped callable is the one judged: a closure over a broken function fails
    with pytest.raises(AssertionError) as exc:
        assert_gdn_parity(impls.chunk_gated_delta_rule, cp_fn=make_closure(broken.seam_state), **SMALL)
    assert "FAIL jax_cp_d4" in str(exc.value) and "PASS jax_scan" in str(exc.value)


def test_what_cannot_be_shipped_is_named(ship_only, tmp_path):
    lock = threading.Lock()

    def locked(query, key, value, g, beta, chunk_size=64, initial_state=None,
               use_qk_norm_in_gdn=False, compute_dtype=jnp.bfloat16, cp_axis=None):
        with lock:
            return impls.chunk_gated_delta_rule(query, key, value, g, beta, chunk_size,
                                                initial_state, use_qk_norm_in_gdn, compute_dtype, cp_axis)
    with pytest.raises(ValueError, match=r"fn function .*locked cannot be shipped.*closure variable "
                                         r"'lock' \(a _thread\.lock\).*cannot be serialized"):
        assert_gdn_parity(locked, **SMALL)
    with open(tmp_path / "log.txt", "w") as log:
        bad = functools.partial(lambda *a, out=None, **k: impls.chunk_gated_delta_rule(*a, **k), out=log)
        with pytest.raises(ValueError, match=r"the partial's keyword 'out' \(a _io\.TextIOWrapper\)"):
            assert_gdn_parity(bad, cp_fn=impls.chunk_gated_delta_rule, **SMALL)
    assert ship_only == []  # refused before any run started


def test_without_cloudpickle_the_message_says_what_to_install(ship_only, monkeypatch):
    monkeypatch.setitem(sys.modules, "cloudpickle", None)
    with pytest.raises(ValueError, match=r"cloudpickle .*is not installed: pip install 'gdn-parity\[jax\]'"):
        assert_gdn_parity(make_closure(impls.chunk_gated_delta_rule), **SMALL)
    # a function that imports by name needs no cloudpickle
    assert_gdn_parity(impls.chunk_gated_delta_rule, **SMALL)
