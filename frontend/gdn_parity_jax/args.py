"""The command line's pieces that the commands share (cli.py assembles
them): integer lists, shapes, fixture names, the options handed to
gdn-parity, the function a MODULE:FUNCTION names, and XLA's host devices."""

from __future__ import annotations

import argparse
import importlib
import os

from .common import UsageError


def _int_list(s: str, opt: str):
    try:
        vals = [int(x) for x in s.split(",")]
    except ValueError:
        raise UsageError(f"{opt} {s!r}: expected comma-separated integers") from None
    if not vals or min(vals) < 1:
        raise UsageError(f"{opt} {s!r}: values must be >= 1")
    return vals


def parse_shape(s: str):
    v = _int_list(s, "--shape")
    if len(v) != 4:
        raise UsageError(f"--shape {s!r}: expected B,T,H,D")
    return v


def fixture_name(s: str) -> str:
    """--name is a file stem inside --out, never a path: a '/' or '..' would
    write outside the folder the user named."""
    if not s or "/" in s or "\0" in s or s in (".", "..") or s.startswith("."):
        raise argparse.ArgumentTypeError(f"{s!r}: a file stem inside --out (no '/', not "
                                         "empty, not starting with '.')")
    return s


# --gates: the synthetic gate regimes, as `gdn-fixture synth` options.  The
# spike regimes are `gdn-parity trust`'s (slow gates, g = -G on every value
# head of 5 % of the tokens drawn from the seed): the very inputs it judges.
GATES = {"init": (), "slow": ("--slow-gates",),
         "spike-10": ("--slow-gates", "--spikes", "10"),
         "spike-40": ("--slow-gates", "--spikes", "40"),
         "spike-80": ("--slow-gates", "--spikes", "80")}


# Options handed to `gdn-parity check` unchanged: (option, takes a value).
PASS_THROUGH = (("--json", True), ("--report", True), ("--junit", True), ("--summary", True),
                ("--oracle", True), ("--oracle-bits", True), ("--policy", True),
                ("--threads", True), ("--prefix", True), ("--max-bytes", True),
                ("--quiet", False), ("--verbose", False), ("--reproducible", False))


def load_function(spec: str, opt: str):
    """The function MODULE:FUNCTION names.  Importing the module runs user
    code: whatever it raises but ImportError (bad usage) is the function's
    internal error (guard.FunctionError, exit 3), SystemExit included."""
    from . import guard
    from .text import show
    mod, sep, name = spec.partition(":")
    if not sep or not mod or not name:
        raise UsageError(f"{opt} {spec!r}: expected MODULE:FUNCTION")
    try:
        m = guard.call(f"{opt} {spec}: importing {mod}", lambda: importlib.import_module(mod),
                       passthrough=(ImportError,))
    except ImportError as exc:
        raise UsageError(f"{opt} {spec!r}: cannot import {mod!r}: {show(exc)}") from None

    def resolve():
        obj = m
        for part in name.split("."):
            if not hasattr(obj, part):
                raise UsageError(f"{opt} {spec!r}: module {mod!r} has no {name!r}")
            obj = getattr(obj, part)
        if not callable(obj):
            raise UsageError(f"{opt} {spec!r}: {name!r} is not callable")
        return obj
    from .ship import verify_loaded  # the object the test passed, not a later import's (ship.py)
    return verify_loaded(guard.call(f"{opt} {spec}", resolve, passthrough=(UsageError,)), opt, spec)


def set_host_devices(n: int):
    """Asks XLA for n host (CPU) devices and an intra-op thread pool of at
    least 4 n threads (PJRT_NPROC), and OpenBLAS for one thread per call
    (OPENBLAS_NUM_THREADS), each unless the caller set it; must run before
    jax is imported.

    Why: jaxlib's CPU client runs every device's program on one shared pool
    of max(cores, devices) threads; a device's independent operations run
    concurrently on it, and some block their thread until other work on the
    same pool is done: a collective waits for the other devices, and the
    batched triangular solve (jax.scipy.linalg.solve_triangular,
    lapack_strsm_ffi) splits its batch over the pool and waits for the
    pieces (jax::ParallelBatchMap).  With 8 host devices on 2 cores the pool
    has 8 threads, and MaxText's chunked function at 1,1024,4,64 on 8 devices
    deadlocked there at 0 % CPU, forward alone: gdb showed all 8 XLAEigen
    threads in ParallelBatchMap's BlockingCounter::Wait; with OpenBLAS
    single-threaded alone, 8 threads stuck in a collective-permute
    rendezvous instead (XLA aborts after 40 s).  With 32 threads both runs
    finish (the bits are the same; idle threads cost nothing).  OpenBLAS
    (scipy's, which jaxlib's LAPACK calls) threads each call itself: inside
    32 pool threads on 2 cores its workers spin against each other (a batch
    of 64x64 solves: over 100 s instead of 2)."""
    flags = os.environ.get("XLA_FLAGS", "")
    if "--xla_force_host_platform_device_count" not in flags:
        os.environ["XLA_FLAGS"] = (flags + f" --xla_force_host_platform_device_count={n}").strip()
    if "PJRT_NPROC" not in os.environ:
        cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
        os.environ["PJRT_NPROC"] = str(max(cores, 4 * n))
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
