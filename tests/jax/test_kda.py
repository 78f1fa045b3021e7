"""The KDA path of the JAX front end: `gdn-parity-jax run --recurrence kda [--grad]`
and assert_gdn_parity(fn, recurrence="kda"), on the KDA functions written
for the tests (kda_written.py): judged against the KDA oracle by
`gdn-parity check`, on 1 device and inside shard_map on 2, 4 and 8 host
devices, with their jax.vjp gradients (--grad, grad=True) against the KDA
VJP oracle; a port that applies the gate along the value axis fails, its
lines naming the output, the head and the token, and a backward that drops
dg's per-channel part fails naming dg.  Shapes kept small (CI runs this
on 2 cores): T = 64, two heads, Dk = Dv = 16, chunks of 16."""

import json

import pytest

import kda_written
from conftest import assert_exit as _ok, run_cli, synth
from gdn_parity_jax import assert_gdn_parity
from gdn_parity_jax import gdn_fixture_capture as cap
from gdn_parity_jax.signatures import BUILTIN_MAPPINGS

SHAPE = "1,64,2,16"
KDA = ("--recurrence", "kda", "--shape", SHAPE, "--chunk", "16", "--h0", "--gates", "slow")


def test_chunked_kda_passes_on_1_2_4_8_devices(tmp_path):
    out = tmp_path / "run"
    r = run_cli("run", "--impl", "kda_written:chunked", *KDA, "--key-heads", "1", "--out", out)
    _ok(r, 0)
    for name in ("jax_scan", "jax_cp_d1", "jax_cp_d2", "jax_cp_d4", "jax_cp_d8"):
        assert f"PASS {name} (" in r.stdout, r.stdout
    (path,) = sorted(out.glob("*.h5"))
    fx = cap.read_fixture(str(path))
    assert fx["attrs"]["recurrence"] == "kda" and fx["inputs"]["g"].shape == (1, 64, 2, 16)
    assert fx["oracle"] is None and sorted(fx["outputs"]) == [
        "jax_cp_d1", "jax_cp_d2", "jax_cp_d4", "jax_cp_d8", "jax_scan"]
    doc = json.loads((out / "results.json").read_text())
    assert doc["schema"] == "gdn-parity-recurrence-check" and doc["recurrence"] == "kda"
    mine = {c["subject"]: c for c in doc["cases"] if c["subject"].startswith("output:")}
    assert len(mine) == 5 and doc["pass"] is True
    for c in mine.values():  # float32 work against the oracle: far inside the band
        assert c["pass"] and c["o"]["err"] < 1e-6 and c["ht"]["err"] < 1e-6
        assert 1e-6 < c["band"] < 2.0**-12  # the kappa band: u (8 kappa_G + 64), tighter than the old fixed one


def test_assert_helper_kda_recurrent_passes():
    """Gradients by default, as for GDN: jax.vjp on 1 device and through
    shard_map on 2, each judged against the KDA VJP oracle (4 and 8 devices:
    test_kda_grad_on_1_2_4_8_devices_with_numbers, kept apart for CI time)."""
    lines = assert_gdn_parity(kda_written.recurrent, recurrence="kda", shapes=[(1, 64, 2, 16)],
                              devices=(1, 2))
    mine = [ln.split(": ", 1)[1] for ln in lines if ": PASS jax_" in ln]
    assert len(mine) == 3, lines
    assert all("gradients judged (dq dk dv dg dbeta dh0)" in ln for ln in mine), lines


def test_kda_grad_on_1_2_4_8_devices_with_numbers(tmp_path):
    """run --recurrence kda --grad: the written token loop's jax.vjp on one
    device and inside shard_map on 2, 4, 8 host devices, written into the
    fixture (/cotangents, dg per channel) and judged by gdn-parity check
    against the KDA VJP oracle: every gradient far inside the band."""
    out = tmp_path / "run"
    r = run_cli("run", "--impl", "kda_written:recurrent", *KDA, "--key-heads", "1", "--grad",
                "--out", out)
    _ok(r, 0)
    (path,) = sorted(out.glob("*.h5"))
    fx = cap.read_fixture(str(path))
    assert set(fx["outputs"]) == {"jax_scan", "jax_cp_d1", "jax_cp_d2", "jax_cp_d4", "jax_cp_d8"}
    doc = json.loads((out / "results.json").read_text())
    g = doc["grad"]
    assert g["n_cases"] == 5 and g["pass"] is True and doc["pass"] is True
    assert g["cotangents"]["dht"] is True and g["oracle"]["certified_bits"] >= 100
    for c in g["cases"]:
        assert c["pass"] and c["dg"]["worst"].keys() == {"b", "t", "h", "dk"}, c
        # float32 reverse scan (and its shard_map transpose) against the oracle: measured
        # 1.3e-7 .. 3.8e-7 (dh0 on 1 device the largest); the band u (8 kappa_G + 64)
        # 5.6e-6 (8 devices) .. 8.0e-6
        for n in ("dq", "dk", "dv", "dg", "dbeta", "dh0"):
            assert 0 < c[n]["err"] < 1e-6 < 5e-6 < c["band"], (n, c)
    assert r.stdout.count("gradients judged (dq dk dv dg dbeta dh0)") == 5, r.stdout


def test_dropped_per_channel_dg_fails_naming_dg():
    """A custom_vjp that gives each channel the head's mean dg: the forward
    passes, the gradients fail, the line naming dg (and only dg)."""
    with pytest.raises(AssertionError) as e:
        assert_gdn_parity(kda_written.dg_per_head_backward, recurrence="kda",
                          shapes=[(1, 64, 2, 16)], devices=(1, 2), grad=True)
    msg = str(e.value)
    line = next(ln for ln in msg.split("\n") if ln.startswith("FAIL jax_cp_d2 (2 devices)"))
    assert "GRADIENT FAIL dg err" in line and "dk=" in line, line
    assert "dq err" not in line and "dv err" not in line, line


def test_gate_on_value_axis_fails_naming_output_head_token():
    with pytest.raises(AssertionError) as e:
        assert_gdn_parity(kda_written.gate_on_value_axis, recurrence="kda",
                          shapes=[(1, 64, 2, 16)], devices=(1, 2), grad=False)
    msg = str(e.value)
    assert "out of tolerance" in msg, msg
    line = next(ln for ln in msg.split("\n") if ln.startswith("FAIL jax_cp_d2 (2 devices)"))
    assert " h=" in line and " t=" in line and "(device " in line and "kda oracle" in line, line


def test_fla_kda_row_calls_fla_order(tmp_path):
    """The fla-kda row's mapping (q, k, v, g, beta by position, scale,
    initial_state, output_final_state by name; q, k with their own Hk = 1
    heads, shared by the 2 value heads in the function) on a JAX function of
    fla's parameter order: PASS.  The same
    mapping as a JSON signature with framework jax (torch is not in the
    test environment; scripts/upstream.sh runs fla's own functions), with
    its gradients (--grad) judged through the row's mapping."""
    spec = dict(BUILTIN_MAPPINGS["fla-kda"], framework="jax")
    sig = tmp_path / "fla-kda-jax.json"
    sig.write_text(json.dumps(spec))
    r = run_cli("run", "--impl", "kda_written:fla_order", "--signature", sig, *KDA,
                "--key-heads", "1", "--devices", "1", "--grad", "--out", tmp_path / "run")
    _ok(r, 0)
    assert "PASS jax_scan (1 device)" in r.stdout, r.stdout
    assert "gradients judged (dq dk dv dg dbeta dh0)" in r.stdout, r.stdout


@pytest.mark.parametrize("extra, words", [
    (("--signature", "fla-kda", "--recurrence", "gdn"), "--signature fla-kda computes kda"),
    (("--recurrence", "kda", "--policy", "p.json"), "--policy: gdn-parity check of a kda"),
])
def test_refused(tmp_path, extra, words):
    r = run_cli("run", "--impl", "kda_written:recurrent", "--shape", SHAPE, "--devices", "1",
                *extra, "--out", tmp_path / "run")
    _ok(r, 2)
    assert words in r.stderr, r.stderr
    assert not (tmp_path / "run").exists()


def test_helper_refuses_kda_grid():
    with pytest.raises(ValueError, match="grid="):
        assert_gdn_parity(kda_written.recurrent, recurrence="kda", grid="upstream-pr-kda")


def test_from_kda_fixture_recurrence_from_the_file(tools, tmp_path):
    """A KDA fixture's recurrence comes from its root attribute (no
    --recurrence); a GDN fixture run as KDA is refused, naming the file."""
    kda, gdn = tmp_path / "kda.h5", tmp_path / "gdn.h5"
    synth(tools, kda, "1,32,2,16", "--recurrence", "kda", "--h0", chunk=16)
    synth(tools, gdn, "1,32,2,16", chunk=16)
    r = run_cli("run", "--impl", "kda_written:recurrent", "--from-fixture", kda, "--devices", "1",
                "--out", tmp_path / "run")
    _ok(r, 0)
    assert "PASS jax_scan (1 device)" in r.stdout and "kda oracle" in r.stdout, r.stdout
    r = run_cli("run", "--impl", "kda_written:recurrent", "--from-fixture", gdn, "--recurrence",
                "kda", "--devices", "1", "--out", tmp_path / "run2")
    _ok(r, 2)
    assert "a gdn fixture, but the run judges kda" in r.stderr, r.stderr


def test_reports_name_the_failing_gradient_and_no_h0_has_no_ht(tmp_path):
    """--report/--junit/--summary pass through to the KDA check: a wrong
    backward's reports name dg at the top.  Without h0 the function returns
    no final state; the check judges o alone (a missing ht was once read as
    zeros and failed at err 1)."""
    r = run_cli("run", "--impl", "kda_written:dg_per_head_backward", "--recurrence", "kda",
                "--shape", SHAPE, "--chunk", "16", "--devices", "1", "--grad",
                "--report", tmp_path / "r.html", "--junit", tmp_path / "r.xml",
                "--summary", tmp_path / "r.md", "--out", tmp_path / "run")
    _ok(r, 1)
    md = (tmp_path / "r.md").read_text()
    assert "check): FAIL" in md, md
    failing = next(ln for ln in md.split("\n") if ln.startswith("**Failing**"))
    assert "backward: dg err" in failing, failing
    assert "dg err" in (tmp_path / "r.xml").read_text()
    assert "backward" in (tmp_path / "r.html").read_text()
    doc = json.loads((tmp_path / "run" / "results.json").read_text())
    outs = [c for c in doc["cases"] if c["subject"].startswith("output:")]
    assert outs and all(c["ht"] is None and c["pass"] for c in outs), outs
    assert doc["grad"]["n_failed"] == len(outs)
