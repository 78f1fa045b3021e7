"""Untrusted text made safe to print: the front end's twin of core/gdn_text.c.

Text from user code (an exception's message, a returned object's repr) or
user input (a path, a JSON key) may hold newlines -- a fake "PASS" line in a
log, or in the verdict lines assert_gdn_parity reads back --, carriage
returns, terminal escape sequences or undecodable bytes.  :func:`show`
writes them as gdn_text_escape does: ``\\n \\r \\t``, ``\\xHH`` for every other
C0 control and DEL, both UTF-8 bytes of a C1 control (U+0080..U+009F), and
each byte of what is not UTF-8 (Python's surrogate escapes, lone
surrogates).  Also escaped, unlike the C side: U+2028 and U+2029, which
Python's str.splitlines() takes as line ends.  A backslash is itself: the
result is for reading, not for parsing back.  Long text is cut at
:data:`LIMIT` characters, ending "...".
"""

from __future__ import annotations

LIMIT = 2000
_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t", "\u2028": "\\u2028", "\u2029": "\\u2029"}


def _piece(ch: str) -> str:
    c = ord(ch)
    if ch in _NAMED:
        return _NAMED[ch]
    if c < 0x20 or c == 0x7F:
        return f"\\x{c:02x}"
    if 0x80 <= c <= 0x9F:
        return "".join(f"\\x{b:02x}" for b in ch.encode("utf-8"))
    if 0xDC80 <= c <= 0xDCFF:  # a byte that was not UTF-8 (surrogateescape)
        return f"\\x{c - 0xDC00:02x}"
    if 0xD800 <= c <= 0xDFFF:  # a lone surrogate: not UTF-8 either
        return "".join(f"\\x{b:02x}" for b in ch.encode("utf-8", "surrogatepass"))
    return ch


def show(s) -> str:
    """s (a str, bytes or anything str() takes) as one printable line."""
    if s is None:
        return "(null)"
    if isinstance(s, bytes):
        s = s.decode("utf-8", "surrogateescape")
    elif not isinstance(s, str):
        s = message(s)
    out, n = [], 0
    for ch in s:
        p = _piece(ch)
        if n + len(p) > LIMIT:
            out.append("...")
            break
        out.append(p)
        n += len(p)
    return "".join(out)


def message(obj) -> str:
    """str(obj) -- an exception, a user object -- without trusting it: a
    __str__ that raises (anything, SystemExit included) gives a placeholder."""
    from .common import Signalled
    try:
        s = str(obj)
    except Signalled:
        raise
    except BaseException:  # noqa: BLE001  user code: nothing it raises escapes here
        return f"<{type(obj).__name__} whose str() raised>"
    return s if isinstance(s, str) else f"<{type(obj).__name__}>"


def exception(exc: BaseException) -> str:
    """'Type: message' of an exception, escaped to one line."""
    msg = show(message(exc))
    return f"{type(exc).__name__}: {msg}" if msg else type(exc).__name__
