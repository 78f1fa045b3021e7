"""The package's JAX variants of the new bug families (gdn_parity_jax.broken.
FAMILIES, the C rows of kernels/kern_mutant.h of the same names) against
assert_gdn_parity with its DEFAULT options: the recommended grid
(grids/upstream-pr.json case 0: h0, slow gates, Hk = 2 < Hv = 4, 4 devices
and the 8 the defaults add, gradients judged).  Each must FAIL them, on the
run where its bug is observable, and pass where it is not:

  hs-two-rounds      jax_cp_d8 FAIL, jax_cp_d4 PASS (two Hillis-Steele
                     rounds are all 4 devices need)
  bf16-cast-added    jax_cp_d4 and jax_cp_d8 FAIL (the pairs rounded to
                     bfloat16 on the wire: ~1e-3 relative in float32)
  final-device-0     both FAIL (ht from device 0's replay)
  h0-first-only      both FAIL (the carries and ht without A_cum h0)
  grad-seam-stopped  both FAIL on the gradients only: the forward is exact,
                     so grad=False (the explicit opt-out) passes it

The stock scan (jax_scan) is the correct one in every variant and passes;
the correct function passing the same defaults is
tests/jax/test_helper_defaults.py's control (cp_written.correct), repeated
here with the package's own implementation.  About 35 s of CPU a run.
"""

import re

import pytest

from gdn_parity_jax import assert_gdn_parity, broken


def _status(text_or_lines, name):
    text = text_or_lines if isinstance(text_or_lines, str) else "\n".join(text_or_lines)
    return re.findall(rf"\b(PASS|FAIL) {name} \(", text)


EXPECT = {  # name: (jax_cp_d4, jax_cp_d8)
    "hs-two-rounds": ("PASS", "FAIL"),
    "bf16-cast-added": ("FAIL", "FAIL"),
    "final-device-0": ("FAIL", "FAIL"),
    "h0-first-only": ("FAIL", "FAIL"),
    "grad-seam-stopped": ("FAIL", "FAIL"),
}


def test_the_families_are_c_rows():
    assert set(EXPECT) == set(broken.FAMILIES)
    assert broken.FAMILIES["grad-seam-stopped"] is broken.seam_nograd
    for name, fn in broken.FAMILIES.items():
        assert broken.variant(name) is fn


def test_the_correct_function_passes_the_defaults():
    lines = assert_gdn_parity("gdn_parity_jax.impls:chunk_gated_delta_rule")
    assert _status(lines, "jax_cp_d4") == ["PASS"] and _status(lines, "jax_cp_d8") == ["PASS"], lines


@pytest.mark.parametrize("name", sorted(EXPECT))
def test_the_defaults_fail_each_family(name):
    fn = f"gdn_parity_jax.broken:{broken.FAMILIES[name].__name__}"
    with pytest.raises(AssertionError) as exc:
        assert_gdn_parity(fn)
    msg = str(exc.value)
    assert "out of tolerance" in msg, msg
    d4, d8 = EXPECT[name]
    assert _status(msg, "jax_cp_d4") == [d4] and _status(msg, "jax_cp_d8") == [d8], msg
    assert _status(msg, "jax_scan") == ["PASS"], msg
    if name == "grad-seam-stopped":  # forward exact: the explicit opt-out passes it
        lines = assert_gdn_parity(fn, grad=False)
        assert _status(lines, "jax_cp_d8") == ["PASS"], lines
