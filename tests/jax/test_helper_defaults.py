"""assert_gdn_parity's defaults catch what a test author forgets.

Under the defaults (no options): every grid case also runs on 8 devices
(where T allows) and the gradients are judged.  Measured on functions written
for these tests (cp_written.py: a token-level recurrence with a Hillis-Steele
prefix over ppermute), not on the package's implementations or its mutant
catalogue:

* ``correct`` passes;
* ``two_rounds`` (2 prefix rounds whatever D: right up to 4 devices) fails,
  on 8 devices only -- and passes the old defaults (4 devices);
* ``seam_stop_gradient`` (forward exact, gradients cut at each seam) fails
  -- and passes forward-only (grad=False), the explicit opt-out.
"""

import json
import re

import pytest

import cp_written
from gdn_parity_jax import assert_gdn_parity
from gdn_parity_jax import pytest_helper as ph


def _status(text_or_lines, name):
    """The verdicts (PASS / FAIL) of output `name` in returned lines or an
    AssertionError's message."""
    text = text_or_lines if isinstance(text_or_lines, str) else "\n".join(text_or_lines)
    return re.findall(rf"\b(PASS|FAIL) {name} \(", text)


def test_default_runs_add_8_devices_and_gradients(tmp_path):
    (_, runs, _), _ = ph.grid_runs("upstream-pr")
    assert runs == [["--shape", "1,200,4,32", "--key-heads", "2", "--h0", "--gates", "slow", "--seed", "1",
                     "--devices", "4,8", "--grad", "--chunk", "16"]]
    # explicit values replace the defaults: devices= is the whole list, grad=False the opt-out
    (_, runs, _), _ = ph.grid_runs("upstream-pr", {"devices": (2,), "grad": False})
    assert "--grad" not in runs[0] and runs[0][runs[0].index("--devices") + 1] == "2"
    g = tmp_path / "g.json"
    g.write_text(json.dumps({"entries": [
        {"shape": "1,100,2,16", "devices": [2, 4]},               # T = 100: no 8 devices
        {"shape": "1,64,2,16", "devices": [8], "grad": False},    # the grid's own grad wins
        {"shape": "1,64,2,16", "dtype": ["float32", "bfloat16"]}]}))
    (_, r0, _), (_, r1, _), (_, r2, _) = ph.grid_runs(str(g))
    assert r0 == [["--shape", "1,100,2,16", "--devices", "2,4", "--grad"]]
    assert r1 == [["--shape", "1,64,2,16", "--devices", "8"]]
    assert [a[-1] for a in r2] == ["float32", "bfloat16"] and all("--grad" in a for a in r2)
    # bfloat16 runs cannot be differentiated by the C side: by default they
    # go forward-only with a note; asked explicitly, the run refuses.
    assert ph._grad_for_dtype(r2[0], explicit=False) == (r2[0], None)
    args, note = ph._grad_for_dtype(r2[1], explicit=False)
    assert "--grad" not in args and "gradients not judged" in note
    assert ph._grad_for_dtype(r2[1], explicit=True) == (r2[1], None)


def test_correct_function_passes_the_defaults():
    lines = assert_gdn_parity(cp_written.correct)
    assert _status(lines, "jax_cp_d8") == ["PASS"], lines
    assert _status(lines, "jax_cp_d4") == ["PASS"] and _status(lines, "jax_scan") == ["PASS"], lines


def test_a_bug_of_8_devices_fails_the_defaults():
    with pytest.raises(AssertionError) as exc:
        assert_gdn_parity(cp_written.two_rounds)
    msg = str(exc.value)
    assert "out of tolerance" in msg
    assert _status(msg, "jax_cp_d8") == ["FAIL"] and _status(msg, "jax_cp_d4") == ["PASS"], msg
    # the old defaults (the grid's 4 devices, forward only) let it through
    assert_gdn_parity(cp_written.two_rounds, devices=(4,), grad=False)


def test_a_gradient_only_bug_fails_the_defaults():
    with pytest.raises(AssertionError) as exc:
        assert_gdn_parity(cp_written.seam_stop_gradient)
    msg = str(exc.value)
    assert _status(msg, "jax_cp_d4") == ["FAIL"] and _status(msg, "jax_cp_d8") == ["FAIL"], msg
    assert _status(msg, "jax_scan") == ["PASS"], msg
    # the forward is exact: forward-only (the explicit opt-out) passes it
    lines = assert_gdn_parity(cp_written.seam_stop_gradient, grad=False)
    assert _status(lines, "jax_cp_d8") == ["PASS"], lines
