"""A `gdn-parity-jax run` in the test's own process (the pytest helper's
route when this process has the devices a run needs): its output captured,
os._exit refused, the callables behind ship.slot_spec.  Above cli.py, which
it runs; ship.py (below cli) keeps what the run's loading needs."""

from __future__ import annotations

import contextlib
import io
import os
import sys
import tempfile

from . import ship


@contextlib.contextmanager
def _captured():
    """stdout and stderr, Python's and the file descriptors' (the C tools the
    run starts write to fd 1), into one temporary file; yields a callable
    returning the text so far."""
    with tempfile.TemporaryFile() as f:
        sys.stdout.flush()
        sys.stderr.flush()
        saved = os.dup(1), os.dup(2)
        old = sys.stdout, sys.stderr
        text = io.TextIOWrapper(open(os.dup(f.fileno()), "wb", buffering=0), write_through=True)
        try:
            os.dup2(f.fileno(), 1)
            os.dup2(f.fileno(), 2)
            sys.stdout = sys.stderr = text
            yield lambda: (f.seek(0), f.read().decode("utf-8", "replace"))[1]
        finally:
            text.flush()
            sys.stdout, sys.stderr = old
            os.dup2(saved[0], 1)
            os.dup2(saved[1], 2)
            os.close(saved[0])
            os.close(saved[1])
            text.close()


class ProcessExit(BaseException):
    """os._exit called by user code during an in-process run (guard.call
    makes it the function's internal error, exit 3)."""


@contextlib.contextmanager
def _no_process_exit():
    """Within: os._exit (and posix._exit) raise ProcessExit instead of
    ending this process -- the test's own, which would otherwise end with
    the status the function chose (0: a test session that "passed") before
    any verdict."""
    import posix
    real = os._exit

    def refused(status=0, *_):
        raise ProcessExit(f"os._exit({status!r}) called by the function under test: refused in "
                          "the test's process (no verdict)")
    os._exit = posix._exit = refused
    try:
        yield
    finally:
        os._exit = posix._exit = real


def run_in_process(argv, callables: dict):
    """`gdn-parity-jax run ARGV` in this process with callables (slot ->
    function) behind slot_spec(slot): (exit status, captured output)."""
    from . import cli
    saved = {k: os.environ.get(k) for k in ("XLA_FLAGS", "PJRT_NPROC", "OPENBLAS_NUM_THREADS")}
    ship._IN_PROCESS.update(callables)
    try:
        with _captured() as read, _no_process_exit():
            try:
                rc = cli.main(["run", *argv])
            except SystemExit as exc:  # argparse
                rc = exc.code if isinstance(exc.code, int) else 2
            out = read()
    finally:
        for k in callables:
            ship._IN_PROCESS.pop(k, None)
        for k, v in saved.items():  # the run asks XLA for host devices and threads: not for later
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
    return rc, out
