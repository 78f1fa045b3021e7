"""What assert_gdn_parity passes, and what it judges: only a results document
this run wrote, saying PASS for every output asked for (os._exit(0), a stale
document, SystemExit(0) in the audit's tracing never pass); the object the
test passed, not what its name imports as in a fresh process (monkeypatch,
a module flag).  The functions are tests/jax/hostile_judged.py; each case has
its control (the same call on a correct function passes)."""

import functools
import os

import pytest

import hostile_judged as hj
from conftest import assert_exit as _ok, run_cli
from gdn_parity_jax import assert_gdn_parity, broken, ship

KW = dict(shapes=["1,32,1,8"], devices=(2,), chunk=8, h0=True, gates="slow", grad=False)


def _leftovers(tmp):
    return sorted(p.name for p in tmp.iterdir() if p.name.startswith(("gdn-parity-", "gdn-parity-jax-")))


# --------------------------------------------- a pass needs this run's document

def test_os_exit_zero_before_the_verdict_is_no_pass(tmp_path):
    with pytest.raises(AssertionError) as e:
        assert_gdn_parity(hj.os_exit_zero, **KW)
    msg = str(e.value)
    assert "no verdict" in msg and "wrote no results document" in msg, msg
    assert_gdn_parity(hj.patched_target, **KW)  # control


def test_os_exit_zero_in_this_process_is_no_pass_and_no_exit():
    # a closure runs in this process (8 devices here): os._exit would end the
    # whole test session with status 0
    def closure(query, key, value, g, beta, chunk_size=64, initial_state=None,
                use_qk_norm_in_gdn=False, cp_axis=None):
        return hj.os_exit_zero(query, key, value, g, beta)
    with pytest.raises(AssertionError) as e:
        assert_gdn_parity(closure, **KW)
    assert "the function under test raised an exception" in str(e.value) and "os._exit(0)" in str(e.value)
    assert os._exit.__name__ == "_exit"  # restored


def test_a_stale_document_in_out_dir_is_no_pass(tmp_path):
    out = tmp_path / "out"
    assert_gdn_parity(hj.patched_target, out_dir=str(out), **KW)  # control: leaves its results
    assert (out / "results.json").is_file()
    with pytest.raises(AssertionError, match="wrote no results document|is the one that was there"):
        assert_gdn_parity(hj.os_exit_zero, out_dir=str(out), **KW)


def test_the_document_must_pass_every_output_asked_for(tmp_path):
    from gdn_parity_jax import results_doc
    out = tmp_path / "out"
    assert_gdn_parity(hj.patched_target, out_dir=str(out), **KW)
    path = str(out / "results.json")
    want = ["jax_scan", "jax_cp_d2"]
    lines = results_doc.check(path, None, str(out), want)  # control
    assert [ln.split(" ", 2)[:2] for ln in lines] == [["PASS", "jax_scan"], ["PASS", "jax_cp_d2"]]
    with pytest.raises(results_doc.RunNotJudged, match="MISSING jax_cp_d4"):
        results_doc.check(path, None, str(out), want + ["jax_cp_d4"])
    with pytest.raises(results_doc.RunNotJudged, match="does not judge the fixture"):
        results_doc.check(path, None, str(tmp_path), want)
    doc = open(path).read()
    open(path, "w").write(doc.replace('"pass": true', '"pass": false', 1))
    with pytest.raises(results_doc.RunNotJudged, match="says pass false"):
        results_doc.check(path, None, str(out), want)
    open(path, "w").write("{")
    with pytest.raises(results_doc.RunNotJudged, match="not a JSON document"):
        results_doc.check(path, None, str(out), want)


# ------------------------------------- the function judged is the one passed

def test_a_monkeypatched_function_is_judged_not_the_original(monkeypatch):
    lines = assert_gdn_parity(hj.patched_target, **KW)  # control: the name, verified
    assert any("JUDGED --impl hostile_judged:patched_target by name" in ln for ln in lines), lines

    @functools.wraps(hj.patched_target)
    def replaced(*a, **k):
        return broken.seam_state(*a[:8], compute_dtype=hj.jnp.float32, **k)
    monkeypatch.setattr(hj, "patched_target", replaced)
    with pytest.raises(AssertionError) as e:
        assert_gdn_parity(hj.patched_target, **KW)
    msg = str(e.value)
    assert "out of tolerance" in msg and "FAIL jax_cp_d2" in msg, msg
    assert "JUDGED --impl hostile_judged:patched_target shipped by value" in msg


def test_a_module_flag_set_by_the_test_is_judged(monkeypatch):
    assert_gdn_parity(hj.flagged, **KW)  # control
    monkeypatch.setattr(hj, "BREAK_SEAMS", True)
    with pytest.raises(AssertionError, match="FAIL jax_cp_d2"):
        assert_gdn_parity(hj.flagged, **KW)


def test_what_differs_and_cannot_be_shipped_is_refused(monkeypatch, tmp_path):
    import threading
    monkeypatch.setattr(hj, "BREAK_SEAMS", True)
    monkeypatch.setattr(hj, "LOCK", threading.Lock(), raising=False)  # cloudpickle refuses it

    def uses_lock(*a, **k):
        with hj.LOCK:
            return hj.flagged(*a, **k)
    monkeypatch.setattr(hj, "flagged", functools.wraps(hj.flagged)(uses_lock))
    with pytest.raises(AssertionError) as e:
        assert_gdn_parity(hj.flagged, **KW)
    msg = str(e.value)
    assert "bad usage or input" in msg and "is not the object the test passed" in msg, msg
    assert "cannot be shipped by value" in msg


# ---------------------------------- a refused callable leaves nothing behind

def test_a_refused_callable_leaves_no_folder_and_an_escaped_message(tmp_path, monkeypatch):
    import threading
    monkeypatch.setattr(ship, "devices_here", lambda: 0)

    class Hostile:
        lock = threading.Lock()

        def __reduce__(self):
            raise TypeError("no\nPASS jax_scan\x1b[31m")

        def __call__(self, *a, cp_axis=None, **k):  # takes cp_axis: a cp function
            return hj.patched_target(*a, cp_axis=cp_axis, **k)
    before = _leftovers(tmp_path)
    for _ in range(2):
        with pytest.raises(ValueError) as e:
            assert_gdn_parity(Hostile(), **KW)
    msg = str(e.value)
    assert "\n" not in msg and "\x1b" not in msg and "no\\nPASS jax_scan\\x1b[31m" in msg, msg
    assert _leftovers(tmp_path) == before == []


# ------------------------------------------------ the audit's exits: one path

AUDIT = ("--shape", "1,32,1,8", "--chunk", "8", "--devices", "1,2", "--lengths", "32,64",
         "--passes", "forward")


def test_system_exit_while_the_audit_traces_is_exit_3(tmp_path, monkeypatch):
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    r = run_cli("audit", "--impl", "hostile_judged:exits_when_long", *AUDIT)
    _ok(r, 3)
    assert "--impl hostile_judged:exits_when_long (cp forward D=1 T=64) raised SystemExit: 0" in r.stderr
    out = tmp_path / "out"
    r = run_cli("run", "--impl", "hostile_judged:exits_when_long", "--shape", "1,32,1,8", "--chunk",
                "8", "--devices", "1,2", "--gates", "slow", "--out", out, "--audit", "--lengths",
                "32,64", "--passes", "forward")
    _ok(r, 3)
    assert "raised SystemExit: 0" in r.stderr and not (out / "results.json").exists()
    assert _leftovers(tmp_path) == []
    # control: the audit of a correct function completes
    r = run_cli("audit", "--impl", "hostile_judged:patched_target", *AUDIT)
    assert r.returncode in (0, 1), r.stderr


def test_the_audit_escapes_user_messages_and_wrong_results_are_exit_2(tmp_path):
    r = run_cli("audit", "--impl", "hostile_judged:forged_message_cp", *AUDIT)
    _ok(r, 3)
    out = r.stdout + r.stderr
    assert "\x1b" not in out and "\r" not in out
    assert not any(ln.startswith("PASS") for ln in out.splitlines()), out
    assert "raised RuntimeError: bad\\nPASS: 1 case, 0 failed\\x1b[31m\\rdone" in r.stderr
    r = run_cli("audit", "--impl", "hostile_judged:short_cp", *AUDIT)
    _ok(r, 2)
    assert "Traceback" not in r.stderr and len(r.stderr.strip().splitlines()) == 1, r.stderr
    assert "short_cp (stock forward D=1 T=32): o has shape (1, 31, 1, 8)" in r.stderr
