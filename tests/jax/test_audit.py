"""`gdn-parity-jax audit` on real compiled programs: the package's
implementation PASSes, each defect no number shows FAILs (the broken
variants and the seed's gathered-sequence layer), and the JSON holds the
numbers the checks judged.

Small shapes (B 1, H 2, Dk 16, C 16; T 256, 512, 1024; D 1, 2): the audit
compiles, it never runs the programs, so the cost is compile time.  Most
audits run in this process (conftest gives it 8 host devices); the
command-line paths run in their own.
"""

import contextlib
import io
import json
import sys

import numpy as np
import pytest

from conftest import ROOT, run_cli
from gdn_parity_jax import audit, audit_judge, broken, cli, impls

EXAMPLE = ROOT / "examples" / "gathered-sequence"
SMALL = ["--shape", "1,256,2,16", "--chunk", "16", "--devices", "1,2,4", "--lengths", "256,512,1024"]


def _audit(*args):
    """(exit status, stdout, document) of an in-process audit."""
    out = io.StringIO()
    argv = ["audit", *map(str, args)]
    ns = cli.build_parser().parse_args(argv)
    with contextlib.redirect_stdout(out):
        code = audit.main(ns)
    doc = None
    if ns.json:
        with open(ns.json) as fh:
            doc = json.load(fh)
    return code, out.getvalue(), doc


def _run_cli(*args, env_path):
    """run_cli with env_path first on PYTHONPATH (the example's module)."""
    import os
    old = os.environ.get("PYTHONPATH", "")
    os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (str(env_path), old) if p)
    try:
        return run_cli(*args)
    finally:
        os.environ["PYTHONPATH"] = old


def _program(doc, fn, ps, d, T):
    (p,) = [p for p in doc["programs"] if (p["function"], p["pass"], p["devices"], p["T"],
                                            p["heads"]) == (fn, ps, d, T, "audited")]
    return p


def _checks(doc, name, verdict=None):
    return [c for c in doc["checks"] if c["check"] == name and (verdict is None or c["verdict"] == verdict)]


@pytest.fixture(scope="module")
def good_backward(tmp_path_factory):
    """The correct function's backward at Dk 64 (the residuals a checkpoint
    saves are Dk^2 per chunk), D 1, 2, three lengths."""
    js = tmp_path_factory.mktemp("audit") / "good.json"
    code, out, doc = _audit("--impl", "gdn_parity_jax.impls:chunk_gated_delta_rule", *BACKWARD,
                            "--json", js)
    assert code == 0, out
    return doc


BACKWARD = ["--shape", "1,256,2,64", "--chunk", "16", "--devices", "1,2", "--lengths", "256,512,1024",
            "--passes", "backward"]


def test_correct_function_passes_with_its_numbers(tmp_path, good_backward):
    js = tmp_path / "a.json"
    code, out, doc = _audit("--impl", "gdn_parity_jax.impls:chunk_gated_delta_rule", *SMALL,
                            "--passes", "forward", "--json", js)
    assert code == 0, out
    assert (doc["schema"], doc["schema_version"], doc["verdict"]) == ("gdn-parity-audit", 1, "PASS")
    assert doc["lengths"] == [256, 512, 1024] and doc["devices"] == [1, 2, 4]
    assert len(doc["programs"]) == 3 * 4  # lengths x (stock + cp on D = 1, 2, 4)
    # what moves at D = 2: the two all-gathers of the affine pairs, nothing else
    for T in (256, 1024):
        cs = _program(doc, "cp", "forward", 2, T)["collectives"]
        assert [(c["kind"], c["shape"], c["bytes_total"]) for c in cs] == \
            [("all-gather", [2, 1, 2, 16, 16], 4096)] * 2
        assert all(c["replica_groups"] == [[0, 1]] and "prefix_associative" in c["source"] for c in cs)
    assert _program(doc, "stock", "forward", 1, 1024)["collectives"] == []
    (m,) = [m for m in doc["affine_minimum"] if (m["pass"], m["devices"]) == ("forward", 2)]
    assert (m["pair_bytes"], m["rounds"], m["minimum_bytes"], m["ratio"]) == (4096, 2, 8192, 1.0)
    (fl,) = _checks(doc, "flops-fall-with-D")  # D = 4 against D = 2
    assert fl["verdict"] == "PASS" and fl["figures"]["b_ratio"] == pytest.approx(0.5, abs=0.02)
    assert [c["verdict"] for c in _checks(doc, "collective-grows-with-T")] == ["PASS", "PASS"]
    assert doc["memory_at_scale"] is None  # no backward compiled
    assert "audit: PASS flops-fall-with-D cp forward D=4" in out
    assert "XLA-on-CPU buffer assignment is not a TPU's" in out
    # the backward: nothing grows with T, residuals linear in T; with one
    # D >= 2 the trend of work is not judged, and says so
    g = good_backward
    assert g["verdict"] == "PASS"
    assert [c["verdict"] for c in _checks(g, "collective-grows-with-T")] == ["PASS"]
    assert _checks(g, "flops-fall-with-D") == []
    assert {n["check"] for n in g["unjudged"]} == {"flops-fall-with-D", "residuals-fall-with-D"}
    rows = {(r["function"], r["devices"]): r for r in g["memory_at_scale"]["rows"]}
    assert set(rows) == {("stock", 1), ("cp", 1), ("cp", 2)}
    for r in rows.values():
        assert r["r2"] > 0.999 and r["temp_bytes_per_token"] > 0
        assert isinstance(r["longest_T"]["v5e"], int) and r["longest_T"]["v5e"] % r["devices"] == 0
        assert r["at"]["1048576"] == pytest.approx(r["resident_a"] + r["resident_b"] * 1048576)


def test_sequence_gathered_exact_numbers_audit_fails(tmp_path):
    from gdn_parity_jax import mesh, signatures
    ad = signatures.get_adapter("maxtext")
    rng = np.random.default_rng(3)
    x = {n: rng.standard_normal(s).astype(np.float32) for n, s in
         (("q", (1, 64, 2, 16)), ("k", (1, 64, 2, 16)), ("v", (1, 64, 2, 16)))}
    x["g"] = -np.abs(rng.standard_normal((1, 64, 2))).astype(np.float32) * 0.1
    x["beta"] = rng.uniform(0, 1, (1, 64, 2)).astype(np.float32)
    x["h0"] = None

    def call(fn, cp):
        return lambda xs, axis=None: ad.call(fn, xs, chunk=16, l2norm=True, compute_dtype=np.float32,
                                             cp_axis=axis if cp else None)
    o_stock, _ = mesh.run_stock(call(impls.chunk_gated_delta_rule, False), x)
    o_gath, _ = mesh.run_sharded(call(broken.sequence_gathered, True), x, mesh.MeshPlan(2, 1, "context"), 1)
    np.testing.assert_array_equal(o_gath, o_stock)  # the stock scan's numbers, exactly
    code, out, doc = _audit("--impl", "gdn_parity_jax.broken:sequence_gathered", *SMALL,
                            "--passes", "forward", "--json", tmp_path / "a.json")
    assert code == 1 and doc["verdict"] == "FAIL"
    (bad, _) = _checks(doc, "collective-grows-with-T", "FAIL")  # D = 2 and 4
    assert bad["op"]["kind"] == "all-gather" and "broken.py" in bad["op"]["source"]
    assert bad["figures"]["bytes_hi"] == 4 * bad["figures"]["bytes_lo"]  # T x 4: bytes x 4
    assert "audit: FAIL collective-grows-with-T cp forward D=2: all-gather f32[" in out
    assert "sequence_gathered" in out
    (fl,) = _checks(doc, "flops-fall-with-D", "FAIL")
    assert fl["figures"]["b_ratio"] == pytest.approx(1.0, abs=0.02)


def test_whole_sequence_fails_the_flops_check_only(tmp_path):
    code, out, doc = _audit("--impl", "gdn_parity_jax.broken:whole_sequence", *SMALL,
                            "--passes", "forward", "--json", tmp_path / "a.json")
    assert code == 1
    assert _checks(doc, "collective-grows-with-T", "FAIL") == []  # only the pairs move
    (fl,) = _checks(doc, "flops-fall-with-D")
    assert fl["verdict"] == "FAIL" and fl["figures"]["b_ratio"] == pytest.approx(1.0, abs=0.05)
    assert "audit: FAIL flops-fall-with-D cp forward D=4" in out


def test_no_checkpoint_keeps_more_per_token(tmp_path, good_backward):
    """The variant's backward temp per local token against the correct
    one's; a limit between the two FAILs it and PASSes the correct one."""
    good = good_backward
    v_good = {r["devices"]: r for r in good["memory_at_scale"]["rows"] if r["function"] == "cp"}[2]
    limit = 1.05 * v_good["temp_bytes_per_local_token"]
    shape = BACKWARD[:BACKWARD.index("--lengths")] + ["--lengths", "256,512", "--passes", "backward"]
    code, out, bad = _audit("--impl", "gdn_parity_jax.broken:no_checkpoint", *shape,
                            "--max-residual-bytes-per-token", limit, "--json", tmp_path / "bad.json")
    v_bad = {r["devices"]: r for r in bad["memory_at_scale"]["rows"] if r["function"] == "cp"}[2]
    ratio = v_bad["temp_bytes_per_local_token"] / v_good["temp_bytes_per_local_token"]
    assert ratio > 1.1, ratio
    assert v_bad["ratio_to_stock"] > v_good["ratio_to_stock"]
    assert code == 1 and "audit: FAIL max-residual-bytes-per-token cp backward D=2" in out
    # the same limit judged on the correct function's programs: PASS
    ns = cli.build_parser().parse_args(["audit", "--impl", "x:y", *BACKWARD,
                                        "--max-residual-bytes-per-token", str(limit)])
    doc = audit_judge.document(audit.resolve(ns), good["programs"], good["subject"], "", "")
    assert [c["verdict"] for c in _checks(doc, "max-residual-bytes-per-token")] == ["PASS"]
    assert doc["verdict"] == "PASS"


def test_seed_sharded_layer_passes_numbers_and_audit(tools, tmp_path):
    """run --layout global --audit on the layer keeping the sequence sharded."""
    r = _run_cli("run", "--layout", "global", "--impl", "gdn_layer:sharded_layer", "--shape", "1,256,2,16",
                 "--chunk", "16", "--devices", "1,2", "--h0", "--gates", "slow", "--audit",
                 "--lengths", "256,512,1024", "--passes", "forward", "--out", tmp_path / "run",
                 env_path=EXAMPLE)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "gdn-parity-jax: PASS (exit 0)" in r.stdout and "PASS jax_cp_d2 (2 devices)" in r.stdout
    doc = json.loads((tmp_path / "run" / "audit.json").read_text())
    assert (doc["subject"]["layout"], doc["verdict"]) == ("global", "PASS")
    assert _checks(doc, "collective-grows-with-T", "FAIL") == []
    # handed to gdn-parity check: embedded in the results, joining the verdict
    res = json.loads((tmp_path / "run" / "results.json").read_text())
    assert res["audit"]["verdict"] == "PASS" and res["pass"] is True


def test_seed_gathered_layer_numbers_pass_audit_fails(tools, tmp_path):
    """The seed's failure (1) through assert_gdn_parity(audit=True): the
    numbers PASS, the audit FAILs naming the layer's constraint."""
    from gdn_parity_jax import assert_gdn_parity
    sys.path.insert(0, str(EXAMPLE))
    try:
        with pytest.raises(AssertionError) as e:
            assert_gdn_parity("gdn_layer:gathered_layer", shapes=[(1, 256, 2, 16)], devices=(1, 2),
                              chunk=16, audit=True, extra=("--layout", "global"),
                              grad=False,  # --layout global runs the forward only
                              audit_options=("--lengths", "256,512,1024", "--passes", "forward"),
                              out_dir=str(tmp_path / "o"))
    finally:
        sys.path.remove(str(EXAMPLE))
    msg = str(e.value)
    assert "out of tolerance" in msg  # exit 1: the audit's
    assert "PASS jax_cp_d2 (2 devices)" in msg  # the numbers
    assert "audit: FAIL collective-grows-with-T cp forward D=2: all-gather" in msg
    assert "gdn_layer.py" in msg
    doc = json.loads((tmp_path / "o" / "audit.json").read_text())
    fails = _checks(doc, "collective-grows-with-T", "FAIL")
    assert fails and all("gdn_layer.py" in c["op"]["source"] for c in fails)
    assert [n for n in doc["unjudged"] if n["check"] == "flops-fall-with-D"]  # one D >= 2
    # the results: every case within tolerance, the run failed by the audit
    res = json.loads((tmp_path / "o" / "results.json").read_text())
    assert res["audit"]["verdict"] == "FAIL" and res["pass"] is False
    assert all(c["pass"] for c in res["cases"])


@pytest.mark.parametrize("args, what", [
    (["--lengths", "256"], "--lengths"),
    (["--devices", "2"], "--devices"),
    (["--lengths", "256,257"], "not a multiple of D"),
    (["--lengths", "256,320", "--chunk", "64"], "not a multiple of the chunk"),
    (["--must-fit", "1000"], "--must-fit"),
    (["--must-fit", "1000@tpu9"], "unknown chip"),
    (["--model-heads", "16,33,128"], "--model-heads"),
    (["--hbm", "lots"], "--hbm"),
    (["--passes", "forward", "--max-residual-bytes-per-token", "5"], "--passes"),
    (["--passes", "sideways"], "--passes"),
    (["--max-residual-bytes-per-token", "nan"], "--max-residual-bytes-per-token"),
    (["--max-work-overhead", "-1"], "--max-work-overhead"),
])
def test_usage_errors_name_the_option(tmp_path, args, what):
    js = tmp_path / "a.json"
    r = run_cli("audit", "--impl", "gdn_parity_jax.impls:chunk_gated_delta_rule", "--shape", "1,256,2,16",
                "--devices", "1,2", "--lengths", "256,512", *args, "--json", js)
    assert r.returncode == 2, r.stdout + r.stderr
    assert what in r.stderr
    assert not js.exists()


def test_unimportable_function_is_a_usage_error():
    r = run_cli("audit", "--impl", "gdn_layer_missing:f", "--shape", "1,256,2,16", "--devices", "1,2")
    assert r.returncode == 2 and "--impl" in r.stderr
