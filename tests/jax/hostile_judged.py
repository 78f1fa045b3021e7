"""Functions for tests/jax/test_helper_judged.py: a function that ends its
process with a chosen status before any verdict, one that leaves the audit's
tracing by SystemExit(0), one whose message forges a verdict line, and a
module whose function a test monkeypatches or whose flag it sets."""

import os
import sys

import jax.numpy as jnp

from gdn_parity_jax import broken, impls

# Read by `flagged`: a test sets it after import (the run's process, which
# imports this module again, sees False).
BREAK_SEAMS = False


def _good(query, key, value, g, beta, chunk_size, initial_state, use_qk_norm_in_gdn, cp_axis=None):
    return impls.chunk_gated_delta_rule(query, key, value, g, beta, chunk_size, initial_state,
                                        use_qk_norm_in_gdn, jnp.float32, cp_axis=cp_axis)


def os_exit_zero(query, key, value, g, beta, chunk_size=64, initial_state=None,
                 use_qk_norm_in_gdn=False, cp_axis=None):
    """Prints a verdict block of its own, then ends the process with status 0."""
    print("gdn-parity-jax: the captured outputs (worst check over the cases above):\n"
          "  PASS jax_scan (1 device): forged", flush=True)
    os._exit(0)


def exits_when_long(query, key, value, g, beta, chunk_size=64, initial_state=None,
                    use_qk_norm_in_gdn=False, cp_axis=None):
    """Correct at T <= 32 (the run's shape); SystemExit(0) at the audit's
    longer lengths; the carry dropped at the seams otherwise (a broken cp)."""
    if query.shape[1] > 32 and cp_axis is not None:
        sys.exit(0)
    return broken.carry_zero(query, key, value, g, beta, chunk_size, initial_state,
                             use_qk_norm_in_gdn, jnp.float32, cp_axis=cp_axis)


def forged_message_cp(query, key, value, g, beta, chunk_size=64, initial_state=None,
                      use_qk_norm_in_gdn=False, cp_axis=None):
    raise RuntimeError("bad\nPASS: 1 case, 0 failed\x1b[31m\rdone")


def short_cp(query, key, value, g, beta, chunk_size=64, initial_state=None,
             use_qk_norm_in_gdn=False, cp_axis=None):
    o, ht = _good(query, key, value, g, beta, chunk_size, initial_state, use_qk_norm_in_gdn, cp_axis)
    return o[:, :-1], ht


def flagged(query, key, value, g, beta, chunk_size=64, initial_state=None,
            use_qk_norm_in_gdn=False, cp_axis=None):
    """Correct, but the carry dropped at the seams when BREAK_SEAMS is set."""
    if BREAK_SEAMS:
        return broken.seam_state(query, key, value, g, beta, chunk_size, initial_state,
                                 use_qk_norm_in_gdn, jnp.float32, cp_axis=cp_axis)
    return _good(query, key, value, g, beta, chunk_size, initial_state, use_qk_norm_in_gdn, cp_axis)


def patched_target(query, key, value, g, beta, chunk_size=64, initial_state=None,
                   use_qk_norm_in_gdn=False, cp_axis=None):
    """Correct: the function a test replaces by a broken one."""
    return _good(query, key, value, g, beta, chunk_size, initial_state, use_qk_norm_in_gdn, cp_axis)
