"""Finding and running the C tools (gdn-fixture, gdn-parity).

The front end never re-implements what the C side does: inputs come from
``gdn-fixture synth`` (so they are the C generator's, bit for bit), the
oracle from ``gdn-fixture regen``, the verdict from ``gdn-parity check``.

Where the binaries are found, first match wins:

1. ``--bin-dir DIR`` (an explicit choice: an error if the tools are not there);
2. the environment variable ``GDN_PARITY_BIN_DIR`` (likewise);
3. ``PATH`` (both ``gdn-parity`` and ``gdn-fixture`` must be on it);
4. the build folders of the repository this package lies in (editable
   install): ``build``, ``build-test``, ``build-release`` under the root.

A DIR holds the tools either directly or in meson's layout
(``DIR/parity/gdn-parity``, ``DIR/fixtures/gdn-fixture``).
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
from dataclasses import dataclass
from pathlib import Path

ENV = "GDN_PARITY_BIN_DIR"
REPO_BUILD_DIRS = ("build", "build-test", "build-release")
POLL_S = 0.25


class ToolError(RuntimeError):
    """The C tools cannot be found or run; the message says where it looked."""


@dataclass(frozen=True)
class Tools:
    parity: str
    fixture: str
    origin: str  # how they were found, for messages

    def run(self, which: str, args, capture_output=False, text=False) -> subprocess.CompletedProcess:
        """The tool with args; a signal that stops us (guard.Signalled) is
        passed on to it, so that it removes its own temporaries (gdn_atomic)
        before we go on (subprocess.run would SIGKILL it).  The wait wakes
        every POLL_S seconds: a signal the kernel hands to another thread
        (XLA's) does not interrupt a blocking wait, and its Python handler
        runs only when the main thread runs Python code."""
        exe = self.parity if which == "parity" else self.fixture
        pipe = subprocess.PIPE if capture_output else None
        with subprocess.Popen([exe, *args], stdout=pipe, stderr=pipe, text=text) as p:
            try:
                while True:
                    try:
                        out, err = p.communicate(timeout=POLL_S)
                        break
                    except subprocess.TimeoutExpired:
                        continue
            except BaseException as exc:
                _stop(p, getattr(exc, "signum", signal.SIGTERM))
                raise
        return subprocess.CompletedProcess(p.args, p.returncode, out, err)

    def supports(self, option: str) -> bool:
        """Whether gdn-parity's --help lists an option (for options other
        branches add, such as --shard)."""
        r = subprocess.run([self.parity, "--help"], capture_output=True, text=True)
        return option in r.stdout


def _stop(p: subprocess.Popen, signum: int, grace: float = 10.0) -> None:
    """Signal p and wait for it; SIGKILL after `grace` seconds."""
    try:
        p.send_signal(signum)
        p.wait(timeout=grace)
    except subprocess.TimeoutExpired:
        p.kill()
        p.wait()


def _in_dir(d: Path):
    for p, f in ((d / "gdn-parity", d / "gdn-fixture"),
                 (d / "parity" / "gdn-parity", d / "fixtures" / "gdn-fixture")):
        if p.is_file() and os.access(p, os.X_OK) and f.is_file() and os.access(f, os.X_OK):
            return str(p), str(f)
    return None


def repo_root() -> Path | None:
    """The gdn-parity checkout this package lies in, if any."""
    root = Path(__file__).resolve().parents[2]
    return root if (root / "meson.build").is_file() and (root / "parity").is_dir() else None


def find_tools(bin_dir: str | None = None) -> Tools:
    for origin, d in (("--bin-dir", bin_dir), (ENV, os.environ.get(ENV) or None)):
        if d is not None:
            hit = _in_dir(Path(d))
            if hit is None:
                raise ToolError(f"{origin} {d}: no executable gdn-parity and gdn-fixture there "
                                "(nor in its parity/ and fixtures/ subfolders, meson's layout)")
            return Tools(*hit, origin=f"{origin} {d}")
    p, f = shutil.which("gdn-parity"), shutil.which("gdn-fixture")
    if p and f:
        return Tools(p, f, origin="PATH")
    root = repo_root()
    tried = []
    if root is not None:
        for name in REPO_BUILD_DIRS:
            hit = _in_dir(root / name)
            tried.append(str(root / name))
            if hit:
                return Tools(*hit, origin=f"repository build {root / name}")
    raise ToolError("cannot find gdn-parity and gdn-fixture: give --bin-dir DIR or set "
                    f"{ENV}, put both on PATH, or build the repository "
                    f"(meson setup build && ninja -C build); looked in: PATH"
                    + (", " + ", ".join(tried) if tried else ""))
