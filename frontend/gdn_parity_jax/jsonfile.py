"""Reading a user's JSON file (a --signature mapping, a grid) strictly.

Refused with ValueError (the message names the file and what): a file that
is not a regular file (a FIFO would block the read forever; a folder),
unreadable bytes, text that is not JSON, a key given twice in one object
(json's default keeps the last silently: a mapping would not mean what its
reader sees first), and nesting too deep for the parser (RecursionError).
"""

from __future__ import annotations

import json
import os
import stat

from .text import show


class JSONFileError(ValueError):
    pass


def _no_duplicates(pairs):
    out = {}
    for k, v in pairs:
        if k in out:
            raise JSONFileError(f"key {show(k)!r} given twice in one object")
        out[k] = v
    return out


def load(path) -> object:
    try:
        st = os.stat(path)
        if not stat.S_ISREG(st.st_mode):
            kind = "a folder" if stat.S_ISDIR(st.st_mode) else "not a regular file"
            raise JSONFileError(f"{show(path)} is {kind}")
        with open(path, "rb") as f:
            raw = f.read()
    except OSError as exc:
        raise JSONFileError(f"{show(path)}: {exc.strerror}") from None
    try:
        return json.loads(raw.decode("utf-8"), object_pairs_hook=_no_duplicates)
    except UnicodeDecodeError as exc:
        raise JSONFileError(f"{show(path)}: not UTF-8 (byte {exc.start})") from None
    except json.JSONDecodeError as exc:
        raise JSONFileError(f"{show(path)}: not JSON: {show(exc)}") from None
    except JSONFileError as exc:
        raise JSONFileError(f"{show(path)}: {exc}") from None
    except RecursionError:
        raise JSONFileError(f"{show(path)}: nested too deeply to read") from None


def load_object(path, prefix: str, error, shown) -> dict:
    """load(path), which must give a JSON object, for a reader that reports
    in its own words: a failure raises error(f"{prefix} {why}"), the file
    named as `shown` when it is not an object (the grid and --signature
    readers share this, so they refuse alike)."""
    try:
        doc = load(path)
    except JSONFileError as exc:
        raise error(f"{prefix} {exc}") from None
    if not isinstance(doc, dict):
        raise error(f"{prefix} {shown}: expected a JSON object")
    return doc
