"""The verdict line of an output the C side judged on o alone says, in the
line itself, that its final state was not judged: a function called without
an initial state returns none (MaxText's does not), and a PASS on o alone
must not read as a PASS on ht.  With h0 the words are absent (the control).
"""

import json

from gdn_parity_jax import assert_gdn_parity
from gdn_parity_jax.verdict import HT_NOT_JUDGED, verdict_lines


def _doc(tmp_path, judged_on):
    imp = {"pass": True, "attrs": {"devices": 2}, "o": {"worst": {"b": 0, "t": 3}}}
    if judged_on:
        imp["judged_on"] = "o alone: the output has no final state"
    case = {"shape": {"T": 32}, "impls": {"jax_cp_d2": imp},
            "tolerance": {"checks": [{"subject": "jax_cp_d2", "tensor": "o", "metric": "rel_fro",
                                      "value": 1e-7, "limit": 1e-6, "rule": "r"}]}}
    p = tmp_path / f"r{int(judged_on)}.json"
    p.write_text(json.dumps({"cases": [case]}))
    return str(p)


def test_the_line_says_ht_was_not_judged(tmp_path):
    lines, ok = verdict_lines(_doc(tmp_path, True), ["jax_cp_d2"])
    assert ok and len(lines) == 1 and lines[0].startswith("PASS jax_cp_d2 (2 devices)")
    assert lines[0].endswith(HT_NOT_JUDGED) and "ht NOT JUDGED" in lines[0]
    lines, ok = verdict_lines(_doc(tmp_path, False), ["jax_cp_d2"])
    assert ok and "NOT JUDGED" not in lines[0]


def test_a_run_without_h0_says_so_in_its_verdict_lines():
    kw = dict(shapes=["1,32,1,8"], devices=(2,), chunk=8, gates="slow", grad=False)
    lines = assert_gdn_parity("gdn_parity_jax.impls:chunk_gated_delta_rule", h0=False, **kw)
    judged = [ln for ln in lines if " PASS " in ln]
    assert judged and all("ht NOT JUDGED: no final state returned" in ln for ln in judged), lines
    lines = assert_gdn_parity("gdn_parity_jax.impls:chunk_gated_delta_rule", h0=True, **kw)
    assert lines and not any("NOT JUDGED" in ln for ln in lines), lines
