"""Functions the tests hand to gdn-parity-jax by MODULE:FUNCTION (this folder
is on PYTHONPATH in run_cli)."""


def raises(query, key, value, g, beta, chunk_size=64, initial_state=None,
           use_qk_norm_in_gdn=False):
    raise RuntimeError("deliberate failure inside the function under test")
