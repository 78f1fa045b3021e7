"""The package's correct function, with gradients, at the small shape where
its dg used to miss grad-affine-no-worse-than-scan: B1 T32 H1 Dk8, C8, the
model's initial gates, no h0.  jax.vjp's dg is 5.78e-6 (97u) from the oracle
in XLA's summation order, our scan's 6.1e-7 (10u): the general rule's floor
(4 x 16u = 3.8e-6) failed a correct backward; the gates rule
(grad-affine-no-worse-than-scan-gates, floor 64u: 1.5e-5) passes it, and
its check names that rule.  The policy's negative controls are C unit tests
(tests/parity/test_policy gradient_gates_floor).
"""

import json

from gdn_parity_jax import assert_gdn_parity


def test_correct_dg_at_a_small_shape_with_initial_gates_passes(tmp_path):
    lines = assert_gdn_parity("gdn_parity_jax.impls:chunk_gated_delta_rule", shapes=["1,32,1,8"],
                              devices=(1, 2, 4), chunk=8, h0=False, gates="init", grad=True,
                              out_dir=str(tmp_path))
    assert lines and all(" PASS " in ln for ln in lines), lines
    doc = json.loads(next(tmp_path.rglob("results.json")).read_text())
    checks = [ch for case in doc["cases"] for ch in case["tolerance"]["checks"]
              if ch["subject"] == "jax_scan" and ch["tensor"] == "dg"]
    gates = [ch for ch in checks if ch["rule"] == "grad-affine-no-worse-than-scan-gates"]
    assert gates and all(ch["pass"] and ch["value"] > 4 * 16 * 2.0 ** -24 for ch in gates), gates
    assert not any(ch["rule"] == "grad-affine-no-worse-than-scan" for ch in checks), checks
