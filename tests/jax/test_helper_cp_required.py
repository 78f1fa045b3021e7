"""A context-parallel gate never passes without a context-parallel run.

A stock function (no cp_axis parameter) and no cp_fn: only the stock scan
can run, on one device.  Asked for more devices, the helper fails saying
nothing context-parallel was tested and `gdn-parity-jax run` refuses the
devices it would not run (exit 2); cp=False is the explicit way to judge the
stock function alone.  Also here: what the helper passes through of a run
(notes, whether gradients were judged, the HTML report in the kept folder,
a crash labelled as the function's) and its length check in Python terms."""

import os

import pytest

from conftest import assert_exit as _ok, run_cli
from gdn_parity_jax import assert_gdn_parity, impls

STOCK = "subjects:stock_only"
TINY = dict(shapes=[(1, 32, 1, 8)], chunk=8, h0=True, gates="init", grad=False)


def test_stock_function_with_devices_fails_naming_what_was_not_tested():
    with pytest.raises(AssertionError) as e:
        assert_gdn_parity(STOCK, devices=(1, 4), **TINY)
    msg = str(e.value)
    assert "nothing context-parallel was tested" in msg
    assert "stock_only takes no cp_axis" in msg and "(4)" in msg
    assert "cp_fn=" in msg and "cp=False" in msg


def test_stock_function_with_the_default_grid_fails_before_any_run():
    # the README's first example: the grid's devices (1, 4 and the 8 added)
    with pytest.raises(AssertionError, match=r"nothing context-parallel was tested.*\(4, 8\)"):
        assert_gdn_parity(STOCK)


def test_cp_false_judges_the_stock_function_alone_and_says_so():
    lines = assert_gdn_parity(STOCK, cp=False, **TINY)
    assert lines[0].startswith("NOTE (cp=False: the stock function alone, on 1 device; nothing "
                               "context-parallel was tested)")
    assert any("PASS jax_scan (1 device)" in ln for ln in lines)
    assert not any("jax_cp_d" in ln for ln in lines)
    # the stock output's line shows its check, not the affine rule's id
    scan = next(ln for ln in lines if "PASS jax_scan" in ln)
    assert "[o rel_fro <= 2 x max(scan, 8u)]" in scan and "core-affine" not in scan, scan
    with pytest.raises(ValueError, match="cp=False judges the stock function alone"):
        assert_gdn_parity(STOCK, cp=False, devices=(1, 4), **TINY)
    with pytest.raises(ValueError, match="drop cp_fn or cp=False"):
        assert_gdn_parity(STOCK, cp_fn=impls.chunk_gated_delta_rule, cp=False, **TINY)


def test_control_a_cp_function_passes_with_the_same_devices():
    # negative control of the refusal: the same devices with something
    # context-parallel to run (cp_fn) pass, with a jax_cp_d4 line
    lines = assert_gdn_parity(STOCK, cp_fn=impls.chunk_gated_delta_rule, devices=(1, 4), **TINY)
    assert any("PASS jax_cp_d4 (4 devices)" in ln for ln in lines)
    # control of the tag: the context-parallel output keeps the rule's id
    assert any("PASS jax_cp_d4" in ln and "[core-affine-no-worse-than-scan]" in ln for ln in lines)


def test_run_refuses_devices_it_will_not_run(tmp_path):
    base = ("run", "--impl", STOCK, "--shape", "1,32,1,8", "--chunk", "8", "--h0")
    r = run_cli(*base, "--devices", "1,4", "--out", tmp_path / "a")
    _ok(r, 2)
    assert ("--devices 1,4: --impl subjects:stock_only takes no cp_axis (or axis_name) parameter "
            "and no --cp was given, so nothing would run on 4 devices") in r.stderr
    assert not (tmp_path / "a").exists()
    r = run_cli(*base, "--out", tmp_path / "b")  # the default 1,2,4,8 too
    _ok(r, 2)
    assert "the default --devices 1,2,4,8: " in r.stderr and "on 2, 4, 8 devices" in r.stderr
    # control: one device asked, the stock function alone is judged
    r = run_cli(*base, "--devices", "1", "--out", tmp_path / "c")
    _ok(r, 0)
    assert "PASS jax_scan (1 device)" in r.stdout


def test_length_not_a_multiple_of_devices_in_python_terms():
    with pytest.raises(ValueError) as e:
        assert_gdn_parity(impls.chunk_gated_delta_rule, shapes=[(1, 100, 1, 8)], devices=(1, 8),
                          chunk=8, grad=False)
    msg = str(e.value)
    assert "shapes: 1,100,1,8 has T = 100, not a multiple of devices 8" in msg
    assert "take T = 96 or 104 (multiples of 8)" in msg and "--" not in msg


def test_notes_and_gradients_reach_the_lines_and_the_kept_folder_has_the_html(tmp_path):
    lines = assert_gdn_parity("hostile_x64:float64_exact", cp=False, out_dir=str(tmp_path), **TINY)
    assert any(ln.endswith("note: jax_scan: o returned as float64, stored rounded to float32 "
                           "(the fixture holds float32)") for ln in lines), lines
    assert any("PASS jax_scan" in ln and "gradients not judged" in ln for ln in lines), lines
    assert os.path.isfile(tmp_path / "report.html")
    # control: a float32 result has no note; gradients judged say so
    lines = assert_gdn_parity(STOCK, cp=False, **dict(TINY, grad=True))
    assert not any("note:" in ln for ln in lines)
    assert any("PASS jax_scan" in ln and "gradients judged" in ln for ln in lines), lines


def test_a_crash_in_the_function_is_labelled_as_the_function_s(tmp_path):
    with pytest.raises(AssertionError) as e:
        assert_gdn_parity("subjects:raises", cp=False, **TINY)
    msg = str(e.value)
    assert "the function under test raised an exception (its error, not the tool's)" in msg
    assert "internal error" not in msg.split("\n")[0]
