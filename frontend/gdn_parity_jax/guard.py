"""What user code and signals may do to a run, and what the run does then.

User code: a function under test (and its module, at import) is anybody's
code.  Whatever it raises -- an Exception, or a BaseException: SystemExit
(``sys.exit(0)`` included), KeyboardInterrupt, GeneratorExit, a subclass of
its own -- is an internal error of that function (:class:`FunctionError`,
exit 3, the message naming the function and the exception).  It is never a
verdict: only ``gdn-parity check`` gives one, so no exit 0 without its
results.  (``os._exit`` ends the process without any Python code running;
nothing here can see it.)

Signals: SIGTERM, SIGHUP and SIGINT become :class:`Signalled` in the main
thread while :func:`signals_to_exceptions` is active -- the first one only;
one arriving while the run cleans up is ignored, so the cleanup finishes --
and the ``with`` blocks and ``finally`` clauses on the way out remove the
temporary inputs folder and a half-written fixture; the command then exits
128 + the signal's number (143 for SIGTERM, 130 for SIGINT), as a shell
reports a process the signal ended.  A real Ctrl-C therefore arrives as
Signalled, and a KeyboardInterrupt the function raises itself is the
function's own error (exit 3).  A signal the process inherited as ignored
(nohup) stays ignored.
"""

from __future__ import annotations

import contextlib
import signal
import sys
import threading
import traceback

from . import text
from .common import Signalled  # noqa: F401  (guard.Signalled: where callers look for it)

SIGNALS = tuple(getattr(signal, n) for n in ("SIGTERM", "SIGHUP", "SIGINT") if hasattr(signal, n))




class FunctionError(Exception):
    """The function under test (or its module) failed: exit 3."""


@contextlib.contextmanager
def signals_to_exceptions():
    """Within: SIGTERM, SIGHUP, SIGINT raise Signalled (the first one)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    got = []

    def handler(signum, frame):
        if got:  # cleaning up after the first one: let the cleanup finish
            return
        got.append(signum)
        raise Signalled(signum)

    old = {}
    for s in SIGNALS:
        if signal.getsignal(s) is not signal.SIG_IGN:
            old[s] = signal.signal(s, handler)
    try:
        yield
    finally:
        for s, h in old.items():
            signal.signal(s, h)


def print_user_traceback(exc: BaseException) -> None:
    """The traceback of user code's exception, its message escaped (a
    message may hold newlines: text.py)."""
    tb = "".join(traceback.format_tb(exc.__traceback__))
    print(f"Traceback (most recent call last):\n{tb}{text.exception(exc)}", file=sys.stderr,
          flush=True)


def call(what: str, thunk, passthrough=()):
    """thunk(), whose user code is `what` (e.g. "--impl m:f"); anything it
    raises but Signalled and the `passthrough` classes (our own errors,
    raised on the way through) becomes FunctionError."""
    try:
        return thunk()
    except Signalled:
        raise
    except passthrough:
        raise
    except BaseException as exc:  # noqa: BLE001  every failure of user code is named, exit 3
        print_user_traceback(exc)
        raise FunctionError(f"{text.show(what)} raised {text.exception(exc)}") from None
