"""Finding and running the C tools (gdn-fixture, gdn-parity).

The front end never re-implements what the C side does: inputs come from
``gdn-fixture synth`` (so they are the C generator's, bit for bit), the
oracle from ``gdn-fixture regen``, the verdict from ``gdn-parity check``.

Where the binaries are found, first match wins:

1. ``--bin-dir DIR`` (an explicit choice: an error if the tools are not there);
2. the environment variable ``GDN_PARITY_BIN_DIR`` (likewise);
3. the tools of this package's own distribution (the gdn-parity wheel,
   ``pip install .``): the binaries auditwheel put in ``gdn_parity.scripts/``
   beside this package, then the scripts folder of the environment the
   package is installed in (a venv's ``bin/``) -- so a wheel's front end runs
   its own tools even when another gdn-parity is earlier on PATH;
4. ``PATH`` (both ``gdn-parity`` and ``gdn-fixture`` must be on it);
5. the build folders of the repository this package lies in (editable
   install): ``build``, ``build-test``, ``build-release`` under the root.

A DIR holds the tools either directly or in meson's layout
(``DIR/parity/gdn-parity``, ``DIR/fixtures/gdn-fixture``).
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sysconfig
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


def own_dirs(package_dir: Path | None = None) -> list[Path]:
    """The folders where the distribution this package came in keeps its
    tools: ``gdn_parity.scripts`` beside the package (a repaired wheel's real
    binaries), and the scripts folder of every install scheme whose library
    folder holds the package (a venv's or the user's ``bin/``)."""
    pkg = (package_dir or Path(__file__).resolve().parent)
    site = pkg.parent
    out = [site / "gdn_parity.scripts"]
    for scheme in dict.fromkeys((sysconfig.get_default_scheme(), sysconfig.get_preferred_scheme("user"))):
        paths = sysconfig.get_paths(scheme)
        libs = {Path(paths[k]).resolve() for k in ("purelib", "platlib") if paths.get(k)}
        if site.resolve() in libs and paths.get("scripts"):
            out.append(Path(paths["scripts"]))
    return out


def find_tools(bin_dir: str | None = None) -> Tools:
    for origin, d in (("--bin-dir", bin_dir), (ENV, os.environ.get(ENV) or None)):
        if d is not None:
            hit = _in_dir(Path(d))
            if hit is None:
                raise ToolError(f"{origin} {d}: no executable gdn-parity and gdn-fixture there "
                                "(nor in its parity/ and fixtures/ subfolders, meson's layout)")
            return Tools(*hit, origin=f"{origin} {d}")
    for d in own_dirs():
        hit = _in_dir(d)
        if hit:
            return Tools(*hit, origin=f"this distribution's {d}")
    p, f = shutil.which("gdn-parity"), shutil.which("gdn-fixture")
    if p and f:
        return Tools(p, f, origin="PATH")
    root = repo_root()
    tried = [str(d) for d in own_dirs()] + ["PATH"]
    if root is not None:
        for name in REPO_BUILD_DIRS:
            hit = _in_dir(root / name)
            tried.append(str(root / name))
            if hit:
                return Tools(*hit, origin=f"repository build {root / name}")
    raise ToolError("cannot find gdn-parity and gdn-fixture: give --bin-dir DIR or set "
                    f"{ENV}, put both on PATH, or build the repository "
                    f"(meson setup build && ninja -C build) or pip install the gdn-parity wheel; "
                    f"looked in: {', '.join(tried)}")
