"""Which files a run reads and writes, checked before any JAX work -- the
front end's twin of core/gdn_path.c and gdn_atomic_resolve.

Files are compared by identity, not spelling: an existing file by
(st_dev, st_ino) after following symlinks (so "./a.h5", a hard link and a
symlink to it are one file), a file still to be made by the real path of its
folder plus its name.  Refused with exit 2 (UsageError), naming both roles:

* an output that is an input (``--from-fixture``, ``--signature``,
  ``--policy``): the fixture written under ``--out`` (also through
  ``--name``), ``--json``, ``--report``, ``--junit``, ``--summary``;
* two outputs on one file;
* an output gdn_atomic would refuse: something that is not a regular file
  (``/dev/null``, a FIFO, a folder), a read-only file, a symbolic link to a
  missing file, a folder that is missing or that we cannot write (a
  read-only file system);
* ``--out`` that is not a folder (an existing file, a dangling link), or
  that cannot be made or written;
* an input that exists and is not a regular file (a FIFO would hang its
  reader, a folder gives a confusing error).  A missing input is left to its
  reader, which names it.

A symbolic link as an output is written through (the file it names gets the
data, the link stays), as the C tools do: :func:`output_target`.
"""

from __future__ import annotations

import os
import stat

from .common import UsageError
from .text import show

KINDS = ((stat.S_ISREG, "a file"), (stat.S_ISDIR, "a folder"), (stat.S_ISFIFO, "a FIFO"), (stat.S_ISSOCK, "a socket"),
         (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"))


def _kind(mode: int) -> str:
    return next((name for test, name in KINDS if test(mode)), "not a regular file")


def regular_input(role: str, path) -> None:
    """Refuses an input that exists and is not a regular file (before anything opens it)."""
    try:
        st = os.stat(path)
    except OSError:
        return  # missing or unreadable: its reader says so
    if not stat.S_ISREG(st.st_mode):
        raise UsageError(f"{role} {show(path)} is {_kind(st.st_mode)}, not a regular file")


def _writable_dir(role: str, path, d: str) -> None:
    d = d or "."
    if not os.path.isdir(d):
        raise UsageError(f"{role} {show(path)}: folder {show(d)} does not exist")
    if not os.access(d, os.W_OK | os.X_OK):
        raise UsageError(f"{role} {show(path)}: cannot write in folder {show(d)} "
                         "(no permission, or a read-only file system)")


def output_target(role: str, path, made_dirs=()) -> str:
    """The file an output path designates (path, or a symlink's target),
    refused as gdn_atomic_resolve refuses it.  made_dirs: folders the run
    will make itself (--out), taken as writable."""
    try:
        lst = os.lstat(path)
    except FileNotFoundError:
        d = os.path.dirname(os.path.abspath(path))
        if d not in made_dirs:
            _writable_dir(role, path, d)
        return str(path)
    except OSError as exc:
        raise UsageError(f"{role} {show(path)}: {exc.strerror}") from None
    target = str(path)
    if stat.S_ISLNK(lst.st_mode):
        target = os.path.realpath(path)
        if not os.path.exists(target):
            raise UsageError(f"{role} {show(path)}: a symbolic link to a missing file; not written")
    st = os.stat(target)
    if not stat.S_ISREG(st.st_mode):
        raise UsageError(f"{role} {show(path)} is {_kind(st.st_mode)}, not a regular file; "
                         "refusing to replace it")
    if not os.access(target, os.W_OK) or not st.st_mode & 0o222:
        raise UsageError(f"{role} {show(path)} is read-only (mode {st.st_mode & 0o7777:04o}); not "
                         "replaced (make it writable or write elsewhere)")
    _writable_dir(role, path, os.path.dirname(os.path.abspath(target)))
    return target


def out_folder(path) -> str:
    """--out: an existing writable folder, or one os.makedirs can make.
    Returns its absolute path (for output_target's made_dirs)."""
    role = "--out"
    if os.path.islink(path) and not os.path.exists(path):
        raise UsageError(f"{role} {show(path)}: a symbolic link to a missing folder")
    if os.path.exists(path):
        if not os.path.isdir(path):
            raise UsageError(f"{role} {show(path)} exists and is not a folder "
                             f"({_kind(os.stat(path).st_mode)})")
        _writable_dir(role, path, str(path))
        return os.path.abspath(path)
    up = os.path.dirname(os.path.abspath(path))
    while not os.path.exists(up):
        up = os.path.dirname(up)
    if not os.path.isdir(up) or not os.access(up, os.W_OK | os.X_OK):
        raise UsageError(f"{role} {show(path)}: cannot make it in {show(up)} (not a writable "
                         "folder, or a read-only file system)")
    return os.path.abspath(path)


def identity(path):
    """(st_dev, st_ino) of an existing file; else its folder's real path and its name."""
    try:
        st = os.stat(path)
        return ("inode", st.st_dev, st.st_ino)
    except OSError:
        d, name = os.path.split(os.path.abspath(path))
        return ("new", os.path.realpath(d), name)


def check_uses(uses) -> None:
    """uses: (role, path or None, is_output).  Refuses an output that is an
    input and two outputs on one file."""
    seen = []
    for role, path, output in uses:
        if path is None:
            continue
        me = identity(path)
        for r2, p2, out2, id2 in seen:
            if id2 != me or not (output or out2):
                continue
            if output and out2:
                raise UsageError(f"{role} {show(path)} and {r2} {show(p2)} are one file: the "
                                 "second output would overwrite the first")
            o_role, o_path, i_role, i_path = ((role, path, r2, p2) if output else (r2, p2, role, path))
            raise UsageError(f"{o_role} {show(o_path)} is the input {i_role} {show(i_path)}: "
                             "writing it would destroy what is read (write elsewhere)")
        seen.append((role, path, output, me))


# The files `gdn-parity-jax run` reads (role, option attribute) and writes
# through gdn-parity check (its --json default: results.json in --out).
RUN_INPUTS = (("--from-fixture", "from_fixture"), ("--signature", "signature"),
              ("--policy", "policy"))
RUN_OUTPUTS = (("--json", "json"), ("--report", "report"), ("--junit", "junit"),
               ("--summary", "summary"))


def fixture_stem(B, T, Hk, Hv, Dk, Dv, chunk) -> str:
    return f"gdn-B{B}-T{T}-Hk{Hk}-Hv{Hv}-Dk{Dk}-Dv{Dv}-C{chunk}"


def check_run(args, fixture=None) -> str:
    """Every file of a run, before any JAX work: --out (made here when
    missing), the inputs (regular files), the outputs (writable, none an
    input, no two on one file).  fixture: the fixture's path when known.
    Returns the --out folder's absolute path."""
    out = out_folder(args.out)
    uses = []
    for role, attr in RUN_INPUTS:
        p = getattr(args, attr, None)
        if p is not None and (attr != "signature" or str(p).endswith(".json")):
            regular_input(role, p)
            uses.append((role, p, False))
    if fixture is not None:
        output_target("the fixture", fixture, (out,))
        uses.append(("the fixture", fixture, True))
    results = getattr(args, "json", None) or os.path.join(args.out, "results.json")
    for role, attr in RUN_OUTPUTS:
        p = results if attr == "json" else getattr(args, attr, None)
        if p is not None:
            output_target(role if getattr(args, attr, None) else "the results (default --json)",
                          p, (out,))
            uses.append((role, p, True))
    check_uses(uses)
    return out
