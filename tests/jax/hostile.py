"""Functions under test that misbehave (tests/jax/test_hostile.py): they
leave the run by BaseExceptions, return non-finite values or the wrong shape
or dtype, raise messages with newlines, or sleep (for a signal to arrive).
Each wraps the correct function (gdn_parity_jax.impls), so what the run
sees is the misbehaviour alone."""

import os
import sys
import time

import jax.numpy as jnp

from gdn_parity_jax import impls


def _good(query, key, value, g, beta, chunk_size, initial_state, use_qk_norm_in_gdn,
          cp_axis=None):
    return impls.chunk_gated_delta_rule(query, key, value, g, beta, chunk_size, initial_state,
                                        use_qk_norm_in_gdn, jnp.float32, cp_axis=cp_axis)


class Custom(BaseException):
    """A BaseException of the function's own."""


RAISED = {"exit_zero": lambda: sys.exit(0), "exit_none": lambda: sys.exit(),
          "keyboard_interrupt": KeyboardInterrupt, "generator_exit": GeneratorExit,
          "custom": Custom}


def leaves(how):
    def fn(query, key, value, g, beta, chunk_size=64, initial_state=None,
           use_qk_norm_in_gdn=False):
        what = RAISED[how]
        if isinstance(what, type):
            raise what("from the function under test")
        what()
    fn.__name__ = how
    return fn


exit_zero, exit_none = leaves("exit_zero"), leaves("exit_none")
keyboard_interrupt, generator_exit, custom = (leaves("keyboard_interrupt"),
                                             leaves("generator_exit"), leaves("custom"))


def correct(query, key, value, g, beta, chunk_size=64, initial_state=None,
            use_qk_norm_in_gdn=False):
    """The correct stock function (no cp form): the negative control."""
    return _good(query, key, value, g, beta, chunk_size, initial_state, use_qk_norm_in_gdn)


def correct_cp(query, key, value, g, beta, chunk_size=64, initial_state=None,
               use_qk_norm_in_gdn=False, cp_axis=None):
    return _good(query, key, value, g, beta, chunk_size, initial_state, use_qk_norm_in_gdn,
                 cp_axis)


# Non-finite results, planted where only the context-parallel form on a
# mesh puts them: o of the cp function at its own token 3 of device 1 is
# global token T/D + 3 (the stock function stays finite).
def nan_in_o_cp(query, key, value, g, beta, chunk_size=64, initial_state=None,
                use_qk_norm_in_gdn=False, cp_axis=None):
    o, ht = _good(query, key, value, g, beta, chunk_size, initial_state, use_qk_norm_in_gdn,
                  cp_axis)
    if cp_axis is None:
        return o, ht
    from jax import lax
    me = lax.axis_index(cp_axis)
    bad = jnp.where(me == 1, jnp.nan, o[0, 3, 0, 2])
    o = o.at[0, 3, 0, 2].set(bad).at[0, 5, 0, 1].set(jnp.where(me == 1, jnp.inf, o[0, 5, 0, 1]))
    return o, ht


def inf_in_ht(query, key, value, g, beta, chunk_size=64, initial_state=None,
              use_qk_norm_in_gdn=False):
    o, ht = _good(query, key, value, g, beta, chunk_size, initial_state, use_qk_norm_in_gdn)
    return o, ht.at[0, 0, 1, 2].set(-jnp.inf)


# Results of the wrong shape or dtype.
WRONG = {
    "short": lambda o: o[:, :-1],
    "transposed": lambda o: jnp.swapaxes(o, 1, 2),
    "int32": lambda o: o.astype(jnp.int32),
    "float16": lambda o: o.astype(jnp.float16),
    "complex64": lambda o: o.astype(jnp.complex64),
}


def wrong(how):
    def fn(query, key, value, g, beta, chunk_size=64, initial_state=None,
           use_qk_norm_in_gdn=False, cp_axis=None):
        o, ht = _good(query, key, value, g, beta, chunk_size, initial_state, use_qk_norm_in_gdn,
                      cp_axis)
        return WRONG[how](o), ht
    fn.__name__ = f"o_{how}"
    return fn


o_short, o_transposed, o_int32, o_float16, o_complex64 = (wrong(w) for w in WRONG)


def message_with_newlines(query, key, value, g, beta, chunk_size=64, initial_state=None,
                          use_qk_norm_in_gdn=False):
    raise RuntimeError("bad\nPASS jax_scan (1 device): o rel_fro 0 vs limit 1\x1b[31m\rdone")


def sleeps(query, key, value, g, beta, chunk_size=64, initial_state=None,
           use_qk_norm_in_gdn=False):
    """Says it started (a file named by $HOSTILE_STARTED) and sleeps, in
    short steps, as slow Python code runs (a signal the kernel hands to
    another thread is acted on when the main thread next runs Python code,
    not during one long sleep): for a signal to arrive while it runs."""
    open(os.environ["HOSTILE_STARTED"], "w").close()
    for _ in range(1200):
        time.sleep(0.1)
    return _good(query, key, value, g, beta, chunk_size, initial_state, use_qk_norm_in_gdn)


def prints_fake_verdict(query, key, value, g, beta, chunk_size=64, initial_state=None,
                        use_qk_norm_in_gdn=False):
    """Correct, but prints a verdict-like line of its own (when traced)."""
    print("  FAIL jax_cp_d9 (9 devices): printed by the function under test", flush=True)
    return _good(query, key, value, g, beta, chunk_size, initial_state, use_qk_norm_in_gdn)


def _exit_in_backward():
    import jax

    @jax.custom_vjp
    def ident(x):
        return x

    def fwd(x):
        return x, None

    def bwd(_, ct):
        sys.exit(0)

    ident.defvjp(fwd, bwd)
    return ident


def exits_in_backward(query, key, value, g, beta, chunk_size=64, initial_state=None,
                      use_qk_norm_in_gdn=False):
    """The correct forward; its gradient (jax.vjp) calls sys.exit(0)."""
    o, ht = _good(query, key, value, g, beta, chunk_size, initial_state, use_qk_norm_in_gdn)
    return _exit_in_backward()(o), ht
