"""`gdn-parity-jax run` against a hostile user: functions that leave by
BaseExceptions, outputs that are inputs, non-finite and wrong-shaped
results, unwritable outputs, hostile signature files, messages with
newlines, SIGTERM mid-run.  The functions
under test are tests/jax/hostile*.py.  Each refusal has its control: the
correct function (hostile.correct, hostile.correct_cp) on the same inputs
and paths passes.

Shapes are the smallest the front end takes (B=1, T=32, H=1, D=8, C=8,
devices 1 or 2): what is tested is the front end's handling, not numbers."""

import hashlib
import json
import math
import os
import signal
import subprocess
import sys
import time

import numpy as np
import pytest

from conftest import HERE, assert_exit as _ok, run_cli, synth
from gdn_parity_jax import gdn_fixture_capture as cap

# --devices 1: most functions here are stock ones (no cp_axis), which a run
# refuses more devices for; a test that runs a cp function names its own.
SHAPE = ("--shape", "1,32,1,8", "--chunk", "8", "--devices", "1")


def _run(impl, out, *extra, timeout=300):
    return run_cli("run", "--impl", impl, *extra, "--out", out, timeout=timeout)


def _sha(p):
    return hashlib.sha256(open(p, "rb").read()).hexdigest()


def _no_jax_work(r):
    """A refusal before any JAX work: no function ran."""
    assert "stock run" not in r.stdout and "context parallel" not in r.stdout, r.stdout


# ---------------------------------------------------------------- controls

def test_control_correct_function_passes(tmp_path):
    r = _run("hostile:correct_cp", tmp_path / "out", *SHAPE, "--devices", "1,2", "--h0")
    _ok(r, 0)
    for name in ("jax_scan", "jax_cp_d1", "jax_cp_d2"):
        assert f"  PASS {name} " in r.stdout
    assert "non-finite" not in r.stdout and "note:" not in r.stdout


# ---------------------------------- functions that leave by BaseExceptions

@pytest.mark.parametrize("how,exc", [("exit_zero", "SystemExit: 0"),
                                     ("keyboard_interrupt", "KeyboardInterrupt: from the function"),
                                     ("generator_exit", "GeneratorExit: from the function"),
                                     ("custom", "Custom: from the function")])
def test_base_exception_from_the_function_is_an_internal_error(tmp_path, how, exc):
    r = _run(f"hostile:{how}", tmp_path, *SHAPE)
    _ok(r, 3)
    assert f"gdn-parity-jax: --impl hostile:{how} (output jax_scan) raised {exc}" in r.stderr
    assert not list(tmp_path.iterdir())  # no fixture, no results: no verdict
    assert "PASS" not in r.stdout


def test_sys_exit_at_import_is_an_internal_error(tmp_path):
    r = _run("hostile_import_exit:fn", tmp_path, *SHAPE)
    _ok(r, 3)
    assert ("--impl hostile_import_exit:fn: importing hostile_import_exit raised SystemExit: 0"
            in r.stderr)
    assert not list(tmp_path.iterdir())


def test_sys_exit_in_the_gradient_is_an_internal_error(tmp_path):
    r = _run("hostile:exits_in_backward", tmp_path, *SHAPE, "--grad")
    _ok(r, 3)
    assert "--impl hostile:exits_in_backward (gradients of jax_scan) raised SystemExit: 0" in r.stderr
    assert not list(tmp_path.iterdir())
    # control: the same forward without --grad is judged (and passes)
    _ok(_run("hostile:exits_in_backward", tmp_path / "fwd", *SHAPE), 0)


# ------------------------------------------------- outputs that are inputs

@pytest.fixture()
def fixture_in(tools, tmp_path):
    """A judged fixture (inputs and outputs) in tmp_path/d, under the name a
    run on it would give its own fixture."""
    d = tmp_path / "d"
    d.mkdir()
    synth(tools, d / "gdn-B1-T32-Hk1-Hv1-Dk8-Dv8-C8.h5", "1,32,1,8")
    return d / "gdn-B1-T32-Hk1-Hv1-Dk8-Dv8-C8.h5"


def test_an_output_that_is_the_input_is_refused(fixture_in, tmp_path):
    src = fixture_in
    before = _sha(src)
    (tmp_path / "link.h5").symlink_to(src)
    os.link(src, tmp_path / "hard.h5")
    cases = [(src, ("--out", src.parent), "the fixture"),
             (tmp_path / "link.h5", ("--out", src.parent), "the fixture"),
             (tmp_path / "hard.h5", ("--out", src.parent), "the fixture"),
             (src, ("--out", tmp_path, "--name", "hard"), "the fixture"),
             (src, ("--out", tmp_path / "o", "--json", tmp_path / "link.h5"), "--json"),
             (src, ("--out", tmp_path / "o", "--report", src), "--report"),
             (src, ("--out", tmp_path / "o", "--junit", tmp_path / "hard.h5"), "--junit"),
             (src, ("--out", tmp_path / "o", "--summary", f"{src.parent}/./{src.name}"), "--summary")]
    for inp, extra, role in cases:
        r = run_cli("run", "--impl", "hostile:correct", "--from-fixture", inp, *extra)
        _ok(r, 2)
        assert f"gdn-parity-jax: {role} " in r.stderr and "is the input --from-fixture" in r.stderr
        _no_jax_work(r)
        assert _sha(src) == before
        assert not (tmp_path / "o").exists()
    # control: elsewhere, the same input is judged and left as it was
    r = run_cli("run", "--impl", "hostile:correct", "--from-fixture", tmp_path / "link.h5",
                "--devices", "1", "--out", tmp_path / "o")
    _ok(r, 0)
    assert _sha(src) == before


def test_two_outputs_on_one_file_are_refused(tmp_path):
    r = _run("hostile:correct", tmp_path / "o", *SHAPE, "--json", tmp_path / "r",
             "--summary", tmp_path / "." / "r")
    _ok(r, 2)
    assert "are one file" in r.stderr
    _no_jax_work(r)


# ------------------------------------------------------ non-finite results

def test_non_finite_o_is_a_fail_with_count_and_first_position(tmp_path):
    r = _run("hostile:nan_in_o_cp", tmp_path, *SHAPE, "--devices", "1,2")
    _ok(r, 1)
    assert "  PASS jax_scan " in r.stdout and "  PASS jax_cp_d1 " in r.stdout
    assert ("  FAIL jax_cp_d2 (2 devices): o has 2 non-finite values (1 nan, 1 inf), first nan "
            "at b=0 t=19 h=0 d=2 (device 1, token 3 of its shard)") in r.stdout
    assert "gdn-parity-jax: FAIL (exit 1)" in r.stdout
    # the position is the stored array's first non-finite value; C counts the same
    fx = cap.read_fixture(str(next(tmp_path.glob("gdn-*.h5"))))
    o = fx["outputs"]["jax_cp_d2"]["o"]
    assert np.unravel_index(np.flatnonzero(~np.isfinite(o))[0], o.shape) == (0, 19, 0, 2)
    doc = json.loads((tmp_path / "results.json").read_text())
    # judged once, in the case of its own 2 devices
    held = [c for c in doc["cases"] if "jax_cp_d2" in c["impls"]]
    assert [c["devices"] for c in held] == [2] and held[0]["impls"]["jax_cp_d2"]["o"]["nonfinite"] == 2


def test_non_finite_ht_is_a_fail(tmp_path):
    r = _run("hostile:inf_in_ht", tmp_path, *SHAPE, "--h0")
    _ok(r, 1)
    assert ("  FAIL jax_scan (1 device): ht has 1 non-finite value (1 inf), first -inf at "
            "b=0 h=0 dk=1 dv=2") in r.stdout


def test_float64_results_are_stored_as_float32_and_said_so(tmp_path):
    r = _run("hostile_x64:float64_beyond_float32", tmp_path / "big", *SHAPE)
    _ok(r, 1)
    assert ("  FAIL jax_scan (1 device): o has 1 non-finite value (1 inf), first inf at "
            "b=0 t=6 h=0 d=4") in r.stdout
    assert ("note: jax_scan: o returned as float64, stored rounded to float32 (the fixture holds "
            "float32); 1 value beyond float32's range became inf") in r.stdout
    # control: float64 holding float32 values passes, with the note
    r = _run("hostile_x64:float64_exact", tmp_path / "exact", *SHAPE)
    _ok(r, 0)
    assert "  PASS jax_scan " in r.stdout and "o returned as float64" in r.stdout


def _doc(value, limit, worst, passed=False):
    return {"cases": [{"shape": {"T": 32}, "impls": {"x": {
        "pass": passed, "attrs": {"devices": 2}, "o": {"worst": worst, "nonfinite": "2"}}},
        "tolerance": {"checks": [{"subject": "x", "tensor": "o", "metric": "rel_fro",
                                  "value": value, "limit": limit, "rule": "r\nPASS x"}]}}]}


@pytest.mark.parametrize("value,limit,worst", [("nan", 1e-6, {"t": 17}), ("inf", "1e-6", None),
                                               (None, 1e-6, "x"), ("-inf", 1e-6, {"t": "3"}),
                                               ({"a": 1}, [1], {"t": 40})])
def test_verdict_reads_any_value_without_crashing(tmp_path, value, limit, worst):
    from gdn_parity_jax.verdict import verdict_lines
    p = tmp_path / "r.json"
    p.write_text(json.dumps(_doc(value, limit, worst)))
    lines, ok = verdict_lines(str(p), ["x", "y"])
    assert not ok and lines[0].startswith("FAIL x") and lines[1].startswith("MISSING y")
    assert all("\n" not in ln for ln in lines)


def test_verdict_of_non_finite_value_and_unreadable_documents(tmp_path):
    from gdn_parity_jax.verdict import ResultsError, verdict_lines
    p = tmp_path / "r.json"
    p.write_text(json.dumps(_doc("nan", 1e-6, {"b": 0, "t": 17})))
    lines, ok = verdict_lines(str(p), ["x"])
    assert lines == ["FAIL x (2 devices): o rel_fro nan vs limit 1e-06 [r\\nPASS x]; worst "
                     "element b=0 t=17 (device 1, token 1 of its shard); gradients not judged"]
    # control: a finite passing check reads as before
    p.write_text(json.dumps(_doc(2e-7, 1e-6, {"t": 1}, passed=True)))
    assert verdict_lines(str(p), ["x"])[0][0].startswith("PASS x (2 devices): o rel_fro 2e-07")
    for text in ("", "{", "[]", '{"cases": 3}', "[" * 100000):
        p.write_text(text)
        with pytest.raises(ResultsError, match="r.json"):
            verdict_lines(str(p), ["x"])
    with pytest.raises(ResultsError, match="cannot be read"):
        verdict_lines(str(tmp_path / "missing.json"), ["x"])
    assert math.isnan(__import__("gdn_parity_jax.verdict").verdict.number(None))


# ---------------------------------------------------- wrong-shaped results

@pytest.mark.parametrize("how,given", [("short", "shape (1, 31, 1, 8) dtype float32"),
                                       ("transposed", "shape (1, 1, 32, 8) dtype float32"),
                                       ("int32", "shape (1, 32, 1, 8) dtype int32"),
                                       ("float16", "shape (1, 32, 1, 8) dtype float16"),
                                       ("complex64", "shape (1, 32, 1, 8) dtype complex64")])
def test_wrong_result_is_bad_input_in_one_line(tmp_path, how, given):
    r = _run(f"hostile:o_{how}", tmp_path, *SHAPE, "--devices", "2")
    _ok(r, 2)
    assert r.stderr.strip() == (
        f"gdn-parity-jax: --impl hostile:o_{how} (output jax_scan): o has {given}; expected "
        "shape (1, 32, 1, 8) (B, T, Hv, Dv) dtype float32 or bfloat16 or float64")
    assert not list(tmp_path.iterdir())


def test_wrong_result_of_the_cp_function_names_it(tmp_path):
    r = _run("hostile:correct", tmp_path, *SHAPE, "--cp", "hostile:o_short", "--devices", "2")
    _ok(r, 2)
    assert r.stderr.strip() == (
        "gdn-parity-jax: --cp hostile:o_short (output jax_cp_d2, each device's call): o has shape "
        "(1, 15, 1, 8) dtype float32; expected shape (1, 16, 1, 8) (B, T, Hv, Dv) dtype float32 "
        "or bfloat16 or float64")


def test_unwritable_outputs_are_refused_before_any_jax_work(tmp_path):
    (tmp_path / "file").write_text("x")
    (tmp_path / "dangling").symlink_to(tmp_path / "nowhere")
    ro = tmp_path / "ro.json"
    ro.write_text("{}")
    ro.chmod(0o444)
    cases = [(("--out", tmp_path / "file"), "--out", "exists and is not a folder (a file)"),
             (("--out", tmp_path / "dangling"), "--out", "a symbolic link to a missing folder"),
             (("--out", tmp_path / "o", "--json", "/dev/null"), "--json /dev/null",
              "is a character device, not a regular file"),
             (("--out", tmp_path / "o", "--report", tmp_path / "dangling"), "--report",
              "a symbolic link to a missing file"),
             (("--out", tmp_path / "o", "--junit", ro), "--junit", "is read-only (mode 0444)"),
             (("--out", tmp_path / "o", "--summary", tmp_path / "no" / "s.md"), "--summary",
              "does not exist"),
             (("--out", tmp_path / "o", "--json", tmp_path), "--json", "is a folder")]
    for extra, role, why in cases:
        r = run_cli("run", "--impl", "hostile:correct", *SHAPE, *extra)
        _ok(r, 2)
        assert r.stderr.startswith(f"gdn-parity-jax: {role}") and why in r.stderr, r.stderr
        assert r.stderr.count("\n") == 1
        _no_jax_work(r)
        assert not (tmp_path / "o").exists()
    assert ro.read_text() == "{}"
    # gdn-parity's own rule for --json /dev/null is the same refusal
    r = subprocess.run([*_tool("parity"), "--shape", "1,32,1,8", "--json", "/dev/null"],
                       capture_output=True, text=True)
    assert r.returncode == 2 and "not a regular file" in r.stderr
    # control: a writable --json in a new --out
    r = run_cli("run", "--impl", "hostile:correct", *SHAPE, "--out", tmp_path / "o", "--json",
                tmp_path / "o" / "r.json")
    _ok(r, 0)
    assert json.loads((tmp_path / "o" / "r.json").read_text())["pass"] is True


def _tool(which):
    from gdn_parity_jax.tools import find_tools
    t = find_tools()
    return [t.parity if which == "parity" else t.fixture]


def test_read_only_file_system_is_refused(tmp_path, monkeypatch):
    """A read-only file system: access(2) says EROFS, which os.access reads
    as False (as root too); simulated here for the folders under tmp_path
    (no mount in CI)."""
    from gdn_parity_jax import paths
    from gdn_parity_jax.cli import UsageError
    real = os.access
    monkeypatch.setattr(paths.os, "access",
                        lambda p, m: False if str(p).startswith(str(tmp_path)) else real(p, m))
    with pytest.raises(UsageError, match="read-only file system"):
        paths.output_target("--json", str(tmp_path / "r.json"))
    with pytest.raises(UsageError, match="read-only file system"):
        paths.out_folder(str(tmp_path / "new" / "out"))
    monkeypatch.setattr(paths.os, "access", real)  # control
    assert paths.output_target("--json", str(tmp_path / "r.json")) == str(tmp_path / "r.json")


@pytest.mark.parametrize("text,why", [
    ('{"positional": ["q", "k", "v", "g", "beta"], "positional": ["q"]}',
     "key 'positional' given twice in one object"),
    ("[" * 100000 + "]" * 100000, "nested too deeply to read"),
    ('{"a":' * 100000 + "1" + "}" * 100000, "nested too deeply to read"),
    ('{"layout": "BTHD"\x00}', "not JSON")])
def test_hostile_signature_json_is_bad_input(tmp_path, text, why):
    p = tmp_path / "sig.json"
    p.write_text(text)
    r = _run("hostile:correct", tmp_path / "o", *SHAPE, "--signature", p)
    _ok(r, 2)
    assert r.stderr.strip().startswith(f"gdn-parity-jax: --signature {p}: ") and why in r.stderr


# ------------------------------------------------------ non-regular inputs

def test_non_regular_inputs_are_refused_before_opening(tmp_path):
    fifo = tmp_path / "f.json"
    os.mkfifo(fifo)
    for opt in ("--signature", "--from-fixture"):
        r = run_cli("run", "--impl", "hostile:correct", opt, fifo, "--out", tmp_path / "o",
                    *(SHAPE if opt == "--signature" else ()), timeout=60)
        _ok(r, 2)
        assert f"{opt} {fifo} is a FIFO, not a regular file" in r.stderr
    (tmp_path / "d.json").mkdir()
    r = _run("hostile:correct", tmp_path / "o", *SHAPE, "--signature", tmp_path / "d.json")
    _ok(r, 2)
    assert "is a folder" in r.stderr
    from gdn_parity_jax import assert_gdn_parity
    with pytest.raises(ValueError, match="not a regular file"):
        assert_gdn_parity("hostile:correct", grid=str(fifo))
    # control: a regular grid file of the same name reaches the grid's reader
    os.unlink(fifo)
    fifo.write_text('{"entries": [], "entries": []}')
    with pytest.raises(ValueError, match="given twice"):
        assert_gdn_parity("hostile:correct", grid=str(fifo))


# -------------------------------------------------- messages with newlines

def test_messages_are_escaped(tmp_path):
    r = _run("hostile:message_with_newlines", tmp_path, *SHAPE)
    _ok(r, 3)
    out = r.stdout + r.stderr
    assert not any(ln.startswith("PASS") for ln in out.splitlines())
    assert "\x1b" not in out and "\r" not in out
    assert ("raised RuntimeError: bad\\nPASS jax_scan (1 device): o rel_fro 0 vs limit "
            "1\\x1b[31m\\rdone") in r.stderr


def test_assert_gdn_parity_escapes_and_reads_only_its_verdicts():
    from gdn_parity_jax import assert_gdn_parity
    # forward only: this test is about the text (a correct dg at this shape
    # with the initial gates: tests/jax/test_grad_gates_floor.py)
    kw = dict(shapes=["1,32,1,8"], devices=(1,), chunk=8, h0=False, gates="init", grad=False)
    with pytest.raises(AssertionError) as e:
        assert_gdn_parity("hostile:message_with_newlines", **kw)
    msg = str(e.value)
    assert "the function under test raised" in msg and "bad\\nPASS jax_scan" in msg
    assert not any(ln.startswith("PASS") for ln in msg.splitlines()) and "\x1b" not in msg
    # a verdict-like line the function prints itself is not a verdict
    lines = assert_gdn_parity("hostile:prints_fake_verdict", **kw)
    assert lines == ["1,32,1,8: PASS jax_scan (1 device): " + lines[0].split(": ", 2)[2]]
    assert not any("jax_cp_d9" in ln for ln in lines)


def test_show_escapes_as_the_c_side():
    from gdn_parity_jax.text import show
    assert show("a\nb\rc\td\x1b[0m\x7f\x85\u2028é") == \
        "a\\nb\\rc\\td\\x1b[0m\\x7f\\xc2\\x85\\u2028é"
    assert show(b"ok\xff") == "ok\\xff"
    assert show("x" * 5000).endswith("...") and len(show("x" * 5000)) <= 2003
    assert show("plain text, ünïcode") == "plain text, ünïcode"  # control


# --------------------------------------------------------- signals mid-run

@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_a_signal_removes_the_temporary_inputs_and_exits_128_plus_n(tmp_path, sig):
    """SIGTERM: 143; SIGINT (a real Ctrl-C): 130, unlike a KeyboardInterrupt
    the function raises itself (exit 3, above)."""
    tmp, out, started = tmp_path / "tmp", tmp_path / "out", tmp_path / "started"
    tmp.mkdir()
    env = dict(os.environ, TMPDIR=str(tmp), HOSTILE_STARTED=str(started))
    env.pop("XLA_FLAGS", None)
    env["PYTHONPATH"] = os.pathsep.join([str(HERE), env.get("PYTHONPATH", "")])
    # a terminal's disposition in the child, whatever this test was started
    # under: a job started in the background by a non-interactive shell (or
    # nohup'd) inherits SIGINT ignored, which the run rightly keeps ignoring
    p = subprocess.Popen([sys.executable, "-m", "gdn_parity_jax", "run", "--impl", "hostile:sleeps",
                          *SHAPE, "--out", str(out)], env=env, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True,
                         preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    try:
        deadline = time.monotonic() + 120
        while not started.exists() and p.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        assert started.exists(), p.communicate()
        # control: the run's temporary inputs are there while the function runs
        assert [d.name for d in tmp.iterdir() if d.name.startswith("gdn-parity-jax-")]
        p.send_signal(sig)
        so, se = p.communicate(timeout=60)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    assert p.returncode == 128 + sig, (so, se)
    assert f"stopped by {sig.name}; temporary files removed" in se
    assert not list(tmp.iterdir())
    assert not out.exists() or not list(out.iterdir())


def test_a_signal_while_writing_leaves_no_partial_fixture(tools, tmp_path, monkeypatch):
    """write_results stopped by a signal (guard.Signalled) part way: no
    .partial, no fixture; control: the same write completes."""
    from gdn_parity_jax import guard, run
    fx = synth(tools, tmp_path / "in.h5", "1,32,1,8")
    o = np.zeros((1, 32, 1, 8), np.float32)
    outs = {"jax_scan": dict(o=o, ht=None, implementation="scan", devices=1)}
    ct = {"do": np.ones_like(o), "dht": None}

    def stop(*a, **k):
        raise guard.Signalled(signal.SIGTERM)
    monkeypatch.setattr(run.cap, "write_cotangents", stop)
    (tmp_path / "out").mkdir()
    with pytest.raises(guard.Signalled):
        run.write_results(str(tmp_path / "out" / "f.h5"), fx, 8, outs, ct)
    assert not list((tmp_path / "out").iterdir())
    monkeypatch.undo()
    run.write_results(str(tmp_path / "out" / "f.h5"), fx, 8, outs)
    assert [p.name for p in (tmp_path / "out").iterdir()] == ["f.h5"]


def test_a_signal_during_the_c_check_is_passed_on_to_it(tmp_path):
    """SIGTERM to the front end while `gdn-parity check` runs: the tool gets
    it too (and removes its own temporaries, gdn_atomic) instead of being
    left running or SIGKILLed; the front end exits 143.  The tool here is a
    stand-in that waits for the signal and records it."""
    real = _tool("parity")[0]
    fake = tmp_path / "bin"
    fake.mkdir()
    (fake / "gdn-fixture").symlink_to(_tool("fixture")[0])
    started, got = tmp_path / "check-started", tmp_path / "check-got-TERM"
    (fake / "gdn-parity").write_text(
        f'#!/bin/sh\nif [ "$1" != check ]; then exec "{real}" "$@"; fi\n'
        f"trap 'touch \"{got}\"; exit 143' TERM\ntouch \"{started}\"\n"
        "i=0; while [ $i -lt 1200 ]; do sleep 0.1; i=$((i+1)); done\nexit 0\n")
    (fake / "gdn-parity").chmod(0o755)
    env = dict(os.environ, TMPDIR=str(tmp_path))
    env.pop("XLA_FLAGS", None)
    env["PYTHONPATH"] = os.pathsep.join([str(HERE), env.get("PYTHONPATH", "")])
    p = subprocess.Popen([sys.executable, "-m", "gdn_parity_jax", "run", "--impl", "hostile:correct",
                          *SHAPE, "--bin-dir", str(fake), "--out", str(tmp_path / "out")],
                         env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 120
        while not started.exists() and p.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        assert started.exists(), p.communicate()
        p.send_signal(signal.SIGTERM)
        so, se = p.communicate(timeout=60)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    assert p.returncode == 143, (so, se)
    assert got.exists()  # the check was told, not killed
    assert not [d for d in tmp_path.iterdir() if d.name.startswith("gdn-parity-jax-")]
