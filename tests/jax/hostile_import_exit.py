"""A module whose import calls sys.exit(0) (tests/jax/test_hostile.py)."""

import sys

sys.exit(0)


def fn(query, key, value, g, beta, chunk_size=64, initial_state=None, use_qk_norm_in_gdn=False):
    raise AssertionError("never reached")
