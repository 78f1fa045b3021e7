"""Any callable for assert_gdn_parity: closures, functools.partial
objects, decorated functions, bound methods, not only what imports by name.

A function that imports by name (``module:qualname`` gives back this very
object) goes to the run's process as that name, as before.  Any other
callable is run one of two ways:

* in this process, when JAX here already has the devices the run needs
  (``len(jax.devices())`` at least the largest mesh): the run is
  ``gdn-parity-jax run`` called in-process, its output captured;
* otherwise in a fresh process (XLA fixes the number of host devices when jax
  is first imported), the callable serialized with cloudpickle into a
  private folder and loaded there: ``--impl gdn_parity_jax.ship:shipped_impl``
  with the folder in ``$GDN_PARITY_SHIPPED``.  What cannot be serialized (a
  closure over a lock, an open file, a socket) is refused before anything
  runs, with the path to the part that cannot be shipped.
"""

from __future__ import annotations

import os
import pickle
import sys

SHIP_ENV = "GDN_PARITY_SHIPPED"
SLOTS = ("impl", "cp")
_IN_PROCESS: dict = {}  # slot -> callable during an in-process run


class ShipError(ValueError):
    """A callable that cannot reach the run's process; the message says why."""


def importable_spec(fn) -> str | None:
    """MODULE:QUALNAME when that name, in the module already imported, is
    this very object (so a fresh process importing it gets the same
    function); the string itself for a string; else None."""
    if isinstance(fn, str):
        return fn
    mod, qual = getattr(fn, "__module__", None), getattr(fn, "__qualname__", None)
    if not isinstance(mod, str) or not isinstance(qual, str) or mod == "__main__" or "<" in qual:
        return None
    obj = sys.modules.get(mod)
    for part in qual.split("."):
        obj = getattr(obj, part, None)
    return f"{mod}:{qual}" if obj is fn else None


def slot_spec(slot: str) -> str:
    return f"{__name__}:shipped_{slot}"


def describe(fn) -> str:
    """What fn is, in one escaped line (its repr is user code: text.message)."""
    from .text import message, show
    name = getattr(fn, "__qualname__", None) or getattr(getattr(fn, "func", None), "__qualname__", None)
    return show(f"{type(fn).__name__} {name}" if isinstance(name, str) else message(repr_of(fn))[:120])


def repr_of(fn) -> str:
    try:
        return repr(fn)
    except Exception:  # noqa: BLE001  a user __repr__
        return f"<{type(fn).__name__}>"


def __getattr__(name):
    """shipped_impl, shipped_cp: the callable of an in-process run, or the one
    serialized into $GDN_PARITY_SHIPPED (load_function's getattr lands here)."""
    slot = name[len("shipped_"):] if name.startswith("shipped_") else None
    if slot not in SLOTS:
        raise AttributeError(name)
    if slot in _IN_PROCESS:
        return _IN_PROCESS[slot]
    folder = os.environ.get(SHIP_ENV)
    path = os.path.join(folder, f"{slot}.pkl") if folder else None
    if path is None or not os.path.isfile(path):
        raise AttributeError(f"{name}: no callable shipped (${SHIP_ENV} names no folder holding {slot}.pkl)")
    from .common import UsageError
    try:
        with open(path, "rb") as f:
            return pickle.load(f)
    except Exception as exc:  # noqa: BLE001  anything unpickling raises: say which file
        raise UsageError(f"the callable shipped in {path} cannot be loaded in the run's process "
                         f"({type(exc).__name__}: {exc}); is its module importable there?") from None


# --- serializing -----------------------------------------------------------

def _cloudpickle(fn, what):
    try:
        import cloudpickle
    except ImportError:
        raise ShipError(f"assert_gdn_parity: {what} {describe(fn)} is not importable by name, JAX in "
                        "this process lacks the devices to run it here, and cloudpickle (which ships "
                        "it to the run's process) is not installed: pip install 'gdn-parity[jax]' "
                        "(or cloudpickle), or define the function at module level") from None
    return cloudpickle


def _parts(obj):
    """(label, component) of a callable that cloudpickle serializes by value."""
    import functools
    if isinstance(obj, functools.partial):
        yield "the partial's function", obj.func
        for i, a in enumerate(obj.args):
            yield f"the partial's argument {i}", a
        for k, a in (obj.keywords or {}).items():
            yield f"the partial's keyword {k!r}", a
        return
    if hasattr(obj, "__func__") and hasattr(obj, "__self__"):  # bound method
        yield "the method's object", obj.__self__
        yield "the method's function", obj.__func__
        return
    code = getattr(obj, "__code__", None)
    if code is not None:
        for name, cell in zip(code.co_freevars, obj.__closure__ or ()):
            try:
                yield f"closure variable {name!r}", cell.cell_contents
            except ValueError:  # an empty cell
                continue
        g = getattr(obj, "__globals__", {})
        for name in code.co_names:
            if name in g:
                yield f"global {name!r}", g[name]
        for i, d in enumerate(obj.__defaults__ or ()):
            yield f"default argument {i}", d
        for k, d in (obj.__kwdefaults__ or {}).items():
            yield f"default of {k!r}", d
        if hasattr(obj, "__wrapped__"):
            yield "the wrapped function", obj.__wrapped__
        return
    for k, v in getattr(obj, "__dict__", {}).items():
        yield f"attribute {k!r}", v


def culprit(obj, dumps, depth=0):
    """The path to the innermost part of obj that `dumps` refuses, e.g.
    "closure variable 'lock' (a _thread.lock)", or None."""
    if depth > 6:
        return None
    for label, part in _parts(obj):
        try:
            dumps(part)
        except Exception:  # noqa: BLE001  whatever pickling raises
            inner = culprit(part, dumps, depth + 1)
            here = f"{label} (a {type(part).__module__}.{type(part).__qualname__})"
            return f"{here}, its {inner}" if inner else here
    return None


def dump(fn, slot: str, folder: str, what: str) -> None:
    """Serializes fn into folder/SLOT.pkl; ShipError naming the part that
    cannot be shipped."""
    cp = _cloudpickle(fn, what)
    try:
        data = cp.dumps(fn)
    except Exception as exc:  # noqa: BLE001  pickling raises many types
        where = culprit(fn, cp.dumps)
        from .text import exception, show
        raise ShipError(
            f"assert_gdn_parity: {what} {describe(fn)} cannot be shipped to the run's process: "
            f"{show(where or 'the callable itself')} cannot be serialized ({exception(exc)}). "
            "Define the function at module level, close over plain values only, or import jax "
            "with enough host devices in this process so that it runs here") from None
    with open(os.path.join(folder, f"{slot}.pkl"), "wb") as f:
        f.write(data)


def dump_named(fn, slot: str, folder: str) -> None:
    """For a function that imports by name: its fingerprint as SLOT.expect
    and, where cloudpickle can serialize it by value (its module registered
    so), the function as SLOT.pkl (else SLOT.why says why not)."""
    from .identity import fingerprint
    with open(os.path.join(folder, f"{slot}.expect"), "w", encoding="utf-8") as f:
        f.write(fingerprint(fn))
    why = None
    try:
        import cloudpickle
        mod = sys.modules.get(fn.__module__)
        registered = mod is not None and fn.__module__ in cloudpickle.list_registry_pickle_by_value()
        if mod is not None and not registered:
            cloudpickle.register_pickle_by_value(mod)
        try:
            data = cloudpickle.dumps(fn)
        finally:
            if mod is not None and not registered:
                cloudpickle.unregister_pickle_by_value(mod)
    except Exception as exc:  # noqa: BLE001  no cloudpickle, or what it cannot serialize
        from .text import exception
        why = exception(exc)
    else:
        with open(os.path.join(folder, f"{slot}.pkl"), "wb") as f:
            f.write(data)
    if why is not None:
        with open(os.path.join(folder, f"{slot}.why"), "w", encoding="utf-8") as f:
            f.write(why)


def _read_text(path):
    try:
        with open(path, encoding="utf-8") as f:
            return f.read()
    except OSError:
        return None


def verify_loaded(obj, opt: str, spec: str):
    """In the run's process: obj, the function `spec` imports as here, when
    it is the function the test passed (fingerprints equal); else the one
    shipped by value; else UsageError.  Records what was judged
    (SLOT.judged)."""
    slot = {"--impl": "impl", "--cp": "cp"}.get(opt)
    folder = os.environ.get(SHIP_ENV)
    expect = _read_text(os.path.join(folder, f"{slot}.expect")) if slot and folder else None
    if expect is None or spec == slot_spec(slot):
        return obj
    from .common import UsageError
    from .identity import fingerprint
    from .text import show
    if fingerprint(obj) == expect:
        _judged(folder, slot, f"{spec} by name (the same code, closure and globals as the object passed)")
        return obj
    why = ("imports here as a function that is not the object the test passed (its code, "
           "closure or the globals it reads differ: the module was monkeypatched, or a flag "
           "it reads was set, after it was imported)")
    path = os.path.join(folder, f"{slot}.pkl")
    if not os.path.isfile(path):
        cant = _read_text(os.path.join(folder, f"{slot}.why")) or "not shipped"
        raise UsageError(f"{opt} {show(spec)} {why}, and the object passed cannot be shipped "
                         f"by value ({show(cant)}): refused rather than judge another function")
    try:
        with open(path, "rb") as f:
            shipped = pickle.load(f)
    except Exception as exc:  # noqa: BLE001  anything unpickling raises
        from .text import exception
        raise UsageError(f"{opt} {show(spec)} {why}, and the object passed, shipped in {show(path)}, "
                         f"cannot be loaded here ({exception(exc)})") from None
    print(f"gdn-parity-jax: {opt} {show(spec)} {why}: judging the object passed, shipped by value",
          flush=True)
    _judged(folder, slot, f"{spec} shipped by value (the name {why})")
    return shipped


def _judged(folder, slot, what):
    try:
        with open(os.path.join(folder, f"{slot}.judged"), "w", encoding="utf-8") as f:
            f.write(what)
    except OSError:
        pass


# --- running in this process ------------------------------------------------

def devices_here() -> int:
    """How many devices JAX in this process has; 0 when jax is not imported
    (importing it here would fix this process's device count behind the
    caller's back)."""
    if "jax" not in sys.modules:
        return 0
    try:
        return len(sys.modules["jax"].devices())
    except Exception:  # noqa: BLE001  a JAX that cannot start: not usable here
        return 0


def devices_needed(argv) -> int:
    """The largest mesh a `run` argument list builds."""
    def value(opt, default):
        return argv[argv.index(opt) + 1] if opt in argv else default
    devs = [int(x) for x in value("--devices", "1,2,4,8").split(",")]
    fsdp = int(value("--fsdp", "1"))
    tuple_axis = "," in value("--cp-axis", "context")
    return max(devs) * (1 if tuple_axis else fsdp)
