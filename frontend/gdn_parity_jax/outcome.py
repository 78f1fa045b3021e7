"""How `run` and `audit` call user code and end: one path for both.

:func:`user_call` runs a thunk whose user code is ``what`` (``--impl m:f
(output jax_scan)``, ``--cp m:g (cp forward D=4 T=256)``): a result the
signature cannot take (wrong shape or dtype: signatures.SignatureError) is
bad input (UsageError, exit 2, one line naming the output and what was given
and expected); anything else it raises -- any BaseException, ``SystemExit(0)``
included, but a signal (guard.Signalled) and the front end's own errors
passed through -- is the function's internal error (guard.FunctionError,
exit 3, its traceback and message escaped: guard.print_user_traceback).

:func:`exit_status` is body()'s exit status, each failure as one escaped
line on stderr (text.show: no terminal escape, no forged line): bad usage
(2), a tool that cannot be found (2), a failed step (its code), a function
under test that failed (3).
"""

from __future__ import annotations

import sys

from . import guard
from .common import EXIT_INTERNAL, EXIT_USAGE, UsageError, _Exit
from .text import show


def user_call(what: str, thunk):
    """thunk(), whose user code is `what` (module docstring)."""
    from .signatures import SignatureError
    try:
        return guard.call(what, thunk, passthrough=(UsageError, _Exit, SignatureError))
    except SignatureError as exc:
        raise UsageError(f"{show(what)}: {exc}") from None


def exit_status(body, prefix: str = "") -> int:
    """body()'s exit status; a failure as one line on stderr, after prefix."""
    from .tools import ToolError
    try:
        return body()
    except UsageError as exc:
        code, msg = EXIT_USAGE, exc
    except _Exit as exc:
        code, msg = exc.code, exc
    except ToolError as exc:
        code, msg = EXIT_USAGE, exc
    except guard.FunctionError as exc:
        code, msg = EXIT_INTERNAL, exc
    print(f"gdn-parity-jax: {prefix}{show(msg)}", file=sys.stderr, flush=True)
    if isinstance(msg, guard.FunctionError):
        print("gdn-parity-jax: the function under test failed (exit 3: its error, not the tool's)",
              file=sys.stderr, flush=True)
    return code
