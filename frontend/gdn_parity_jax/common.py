"""What every part of the front end shares, at the bottom of the package
(it imports nothing of it): the exit statuses, the version, and the
exceptions that carry an exit -- bad usage (2), a failed step (its code), a
signal (128 + its number)."""

from __future__ import annotations

import signal

EXIT_OK, EXIT_FAIL, EXIT_USAGE, EXIT_INTERNAL = 0, 1, 2, 3
VERSION = "0.1.0"


class UsageError(Exception):
    """Bad usage or input: exit 2, one line."""


class _Exit(Exception):
    """A step that failed with its own exit status (run.py, audit.py)."""

    def __init__(self, code, msg):
        super().__init__(msg)
        self.code = code


class Signalled(BaseException):
    """A signal asked the run to stop (BaseException: no `except Exception` of
    user code or of a library on the way stops it)."""

    def __init__(self, signum: int):
        self.signum = int(signum)
        self.name = signal.Signals(signum).name
        super().__init__(self.name)

    @property
    def code(self) -> int:
        return 128 + self.signum
