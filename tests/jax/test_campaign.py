"""`gdn-fixture synth --spikes` (the spike regimes' inputs) and
`gdn-parity-jax campaign` (gdn_parity_jax.campaign): correct functions over
seeds and gate regimes, compiled once, counted as a gdn-parity-trust
document.  The campaign itself runs in tests/jax/test_reform.py."""

import json

import numpy as np

from conftest import run_cli, synth

SHAPE = "2,2048,3,8"  # tests/parity/test_trust.c's spikes_hit_five_percent: B 2, T 2048, Hk 1, Hv 3, D 8
SPIKE40_SEED7_SHA = "e4c6256692db288d47483d24bc1e61233edabe67540c4bd7531add795bbf6cfb"


def _g(tools, tmp_path, name, *extra):
    fx = synth(tools, tmp_path / f"{name}.h5", SHAPE, "--key-heads", 1, "--slow-gates", *extra)
    return fx["inputs"]["g"]


def test_synth_spikes_are_trusts_spike_regime(tools, tmp_path):
    """--slow-gates --spikes 40 --seed 7 draws what gdn-parity trust's
    spike-40 regime judges for seed 7: the tokens and count pinned here are
    pinned in test_trust.c against parity_trust_spike itself; every other
    value is the slow-gates draw's.  Negative controls: --spikes 10 puts -10
    on the same tokens, seed 8 other tokens, and without --spikes none."""
    g = _g(tools, tmp_path, "s40", "--seed", 7, "--spikes", 40)
    slow = _g(tools, tmp_path, "slow", "--seed", 7)
    on = (g == -40).all(axis=-1)
    assert np.array_equal((g == -40).any(axis=-1), on)  # every value head of a chosen token
    assert on.sum() == 209 and list(np.flatnonzero(on)[:5]) == [9, 48, 67, 84, 101]
    assert np.array_equal(g[~on], slow[~on]) and not (slow == -40).any()
    r = tools.run("fixture", ["synth", "--shape", SHAPE, "--key-heads", "1", "--slow-gates", "--seed", "7",
                              "--spikes", "40", "--out", str(tmp_path / "x.h5")], capture_output=True, text=True)
    assert f"inputs_sha256 {SPIKE40_SEED7_SHA}" in r.stdout  # pinned: the whole input set
    g10 = _g(tools, tmp_path, "s10", "--seed", 7, "--spikes", 10)
    assert np.array_equal((g10 == -10).all(axis=-1), on) and not (g10 == -40).any()
    g8 = _g(tools, tmp_path, "s40b", "--seed", 8, "--spikes", 40)
    assert not np.array_equal((g8 == -40).all(axis=-1), on)


def test_synth_spikes_refused_where_it_cannot_apply(tools, tmp_path):
    r = tools.run("fixture", ["synth", "--shape", "1,64,2,8", "--recurrence", "kda", "--spikes", "40",
                              "--out", str(tmp_path / "k.h5")], capture_output=True, text=True)
    assert r.returncode == 2 and "--spikes" in r.stderr
    r = tools.run("fixture", ["synth", "--shape", "1,64,2,8", "--spikes", "0", "--out", str(tmp_path / "k.h5")],
                  capture_output=True, text=True)
    assert r.returncode == 2 and "--spikes" in r.stderr


def campaign(tmp_path, *args):
    out = tmp_path / "trust.json"
    r = run_cli("campaign", "--json", out, *map(str, args), timeout=900)
    assert r.returncode == 0, r.stdout + r.stderr
    return json.loads(out.read_text(encoding="utf-8")), r.stdout


def test_campaign_counts_a_planted_wrong_subject(tmp_path):
    """One correct subject and a planted wrong one (campaign_planted.beta_off:
    beta x (1 + 1e-3)) in one campaign: the wrong one's runs all FAIL, the
    correct one's none; the document is a gdn-parity-trust document."""
    doc, out = campaign(tmp_path, "--subjects", "token_loop", "--subject-spec",
                        "planted=campaign_planted:beta_off", "--shape", "1,64,2,16", "--chunk", 8, "--h0",
                        "--devices", "1,8", "--regimes", "spike-80", "--seeds", 1)
    assert doc["schema"] == "gdn-parity-trust" and doc["version"] == 1
    assert doc["budget"]["runs"] == 1 and doc["budget"]["regimes"] == ["spike-80"]
    by = {s["name"]: s for s in doc["subjects"]}
    assert by["token_loop"]["runs"] == 2 and by["token_loop"]["failed_runs"] == 0
    assert by["planted"]["runs"] == 2 and by["planted"]["failed_runs"] == 2
    assert by["planted"]["regimes"]["spike-80"]["failed_runs"] == 2
    assert doc["false_fails"] == len(doc["fails"]) > 0 and not doc["pass"]
    assert {f["subject"] for f in doc["fails"]} == {"planted"}
    assert {f["devices"] for f in doc["fails"]} == {1, 8}
    assert doc["checks"] == sum(r["checks"] for r in doc["rules"])
    assert "false FAIL" in out


def _rule_max(doc, rule, tensor):
    for r in doc["rules"]:
        if r["rule"] == rule and r["tensor"] == tensor:
            return r["ratio"]["max"]
    raise AssertionError(f"no {rule} on {tensor}")


def test_jax_vjp_dg_tokens_follow_the_model(tools, tmp_path):
    """jax.vjp of a correct chunked function (the Blelloch cumsum subject;
    its backward is XLA's and masks the attention's decay after the
    exponential, so exp(G_t - G_t) is differentiated on both sides) at the
    initial gates, seed 11: one dg token's error was 0.957 of the per-token
    rule's limit (43 of the model's sigmas) before dg's own sums joined the
    error model (parity_kappa_model.h); with them 0.123.  Negative control:
    the same run judged with that rule's model removed reaches the old
    0.957, above the campaign's 0.7."""
    common = ["--subjects", "cumsum_blelloch", "--shape", "1,256,2,32", "--chunk", 32, "--h0", "--grad",
              "--devices", 1, "--regimes", "init", "--seeds", 1, "--first-seed", 11]
    doc, _ = campaign(tmp_path, *common)
    assert doc["false_fails"] == 0
    assert _rule_max(doc, "grad-per-token-float32-gates", "dg") <= 0.3
    r = tools.run("parity", ["--print-policy"], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    pol = json.loads(r.stdout)
    for r in pol["rules"]:
        if r["id"] == "grad-per-token-float32-gates":
            del r["model"]
    pp = tmp_path / "no-model.json"
    pp.write_text(json.dumps(pol), encoding="utf-8")
    (tmp_path / "trust.json").unlink()
    doc, _ = campaign(tmp_path, *common, "--policy", pp)
    assert _rule_max(doc, "grad-per-token-float32-gates", "dg") > 0.7
