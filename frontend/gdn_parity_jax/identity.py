"""Whether a name imports, in another process, as the very function a test passed.

assert_gdn_parity runs a function that imports by name (``module:qualname``)
in a fresh process, which imports the module again.  That fresh import is
not the object the test holds when the test changed the module after import:
``monkeypatch.setattr(mod, "f", broken)`` (with ``functools.wraps``, the
wrapper's ``__module__`` and ``__qualname__`` are the original's), or a module
flag the function reads set by the test.  :func:`fingerprint` digests what
decides what a function computes, in both processes, and the run's process
compares (ship.verify_loaded):

* its code (bytecode, names, constants, recursively into nested code; a
  frozenset constant by its sorted members, as string hashing differs between
  processes), defaults and keyword defaults;
* the values of its closure cells and of every global its code names
  (recursively: a global of the function's own kind -- a function of a
  module outside the installed libraries and the standard library -- is
  digested the same way; an attribute its code reads of such a module
  global, ``mod.FLAG``, by value);
* a value: None, bool, int, float, complex, str, bytes by repr; tuples,
  lists, dicts by their members; a module, a class, a built-in function by
  its name; anything else by its pickle when plain pickle takes it (a numpy
  array: its bytes), else by its type's name.

Identical fingerprints mean the same code over the same values (up to what a
value's type name alone stands for); any difference and the run judges the
object the test passed, shipped by value, or refuses.
"""

from __future__ import annotations

import hashlib
import pickle
import sys
import sysconfig
import types

_MAX_DEPTH = 8
_MAX_PICKLE = 1 << 20
_LIB_DIRS = tuple({p for p in (sysconfig.get_paths().get(k) for k in ("stdlib", "platstdlib", "purelib",
                                                                          "platlib")) if p})


def _user_module(name) -> bool:
    """A module outside the standard library and the installed libraries
    (the test's own code, an editable checkout): its functions are digested."""
    m = sys.modules.get(name) if isinstance(name, str) else None
    f = getattr(m, "__file__", None)
    if not isinstance(f, str):
        return False
    return not f.startswith(_LIB_DIRS) or "gdn_parity_jax" in name


def _names(code) -> set:
    out = set(code.co_names)
    for c in code.co_consts:
        if isinstance(c, types.CodeType):
            out |= _names(c)
    return out


class _Digest:
    def __init__(self):
        self.h = hashlib.sha256()
        self.seen: dict = {}

    def put(self, *parts):
        for p in parts:
            b = p if isinstance(p, bytes) else str(p).encode("utf-8", "surrogatepass")
            self.h.update(len(b).to_bytes(8, "little") + b)

    def code(self, c):
        self.put("code", c.co_code, c.co_names, c.co_varnames, c.co_freevars, c.co_cellvars,
                 c.co_argcount, c.co_kwonlyargcount, c.co_flags)
        for k in c.co_consts:
            if isinstance(k, types.CodeType):
                self.code(k)
            elif isinstance(k, frozenset):
                self.put("frozenset", sorted(repr(x) for x in k))
            else:
                self.put("const", type(k).__name__, repr(k))

    def function(self, fn, depth):
        if id(fn) in self.seen:
            self.put("seen", self.seen[id(fn)])
            return
        self.seen[id(fn)] = len(self.seen)
        self.put("function", fn.__module__, fn.__qualname__)
        self.code(fn.__code__)
        self.value(fn.__defaults__, depth)
        self.value(fn.__kwdefaults__, depth)
        for cell in fn.__closure__ or ():
            try:
                self.value(cell.cell_contents, depth)
            except ValueError:  # an empty cell
                self.put("empty cell")
        names = _names(fn.__code__)
        g = fn.__globals__
        for name in sorted(names):
            if name in g:
                self.put("global", name)
                v = g[name]
                self.value(v, depth)
                if isinstance(v, types.ModuleType) and _user_module(v.__name__):
                    for attr in sorted(names):
                        if attr in vars(v):
                            self.put("attr", attr)
                            self.value(vars(v)[attr], depth)
        wrapped = getattr(fn, "__wrapped__", None)
        if wrapped is not None:
            self.put("wrapped")
            self.value(wrapped, depth)

    def value(self, v, depth):
        if depth > _MAX_DEPTH:
            self.put("deep", type(v).__qualname__)
            return
        if v is None or isinstance(v, (bool, int, float, complex, str, bytes)):
            self.put(type(v).__name__, repr(v))
        elif isinstance(v, (tuple, list)):
            self.put(type(v).__name__, len(v))
            for x in v:
                self.value(x, depth + 1)
        elif isinstance(v, dict):
            self.put("dict", len(v))
            for k in sorted(v, key=repr):
                self.put(repr(k))
                self.value(v[k], depth + 1)
        elif isinstance(v, types.ModuleType):
            self.put("module", v.__name__)
        elif isinstance(v, type):
            self.put("class", v.__module__, v.__qualname__)
        elif isinstance(v, types.FunctionType):
            if _user_module(v.__module__):
                self.function(v, depth + 1)
            else:  # its code (a wraps() replacement keeps the name), not its globals
                self.put("library function", v.__module__, v.__qualname__)
                self.code(v.__code__)
        elif isinstance(v, types.MethodType):
            self.put("method")
            self.value(v.__func__, depth + 1)
            self.value(v.__self__, depth + 1)
        elif isinstance(v, (types.BuiltinFunctionType, types.BuiltinMethodType)):
            self.put("builtin", getattr(v, "__module__", None), v.__qualname__)
        elif hasattr(v, "func") and hasattr(v, "args") and hasattr(v, "keywords"):  # partial
            self.put("partial")
            self.value(v.func, depth + 1)
            self.value(v.args, depth + 1)
            self.value(v.keywords, depth + 1)
        else:
            self.opaque(v)

    def opaque(self, v):
        t = type(v)
        self.put("object", t.__module__, t.__qualname__)
        if hasattr(v, "__array__") and hasattr(v, "shape") and hasattr(v, "dtype"):
            try:  # an array (numpy, jax): its values, hashed in place, never pickled whole
                import numpy as np
                a = np.ascontiguousarray(np.asarray(v))
                self.put("array", a.shape, a.dtype.str, hashlib.sha256(memoryview(a).cast("B")).hexdigest())
                return
            except Exception:  # noqa: BLE001  an array-like that will not convert: pickled below
                pass
        try:
            b = pickle.dumps(v, protocol=4)
        except Exception:  # noqa: BLE001  not picklable: its type is all we know
            return
        if len(b) <= _MAX_PICKLE:
            self.put(b)
        else:
            self.put("large", len(b), hashlib.sha256(b).hexdigest())


def fingerprint(fn) -> str:
    """The hex digest of what decides what fn computes (module docstring).
    Never raises: a digest that fails is a distinct value ('unknown: ...')."""
    d = _Digest()
    try:
        if isinstance(fn, types.FunctionType):  # wherever it lives: the function itself in full
            d.function(fn, 0)
        else:
            d.value(fn, 0)
    except Exception as exc:  # noqa: BLE001  user objects: a __eq__, a property may raise
        return f"unknown: {type(exc).__name__}"
    return d.h.hexdigest()
