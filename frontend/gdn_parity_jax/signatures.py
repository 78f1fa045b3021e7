"""Signature adapters: how to call the functions people have.

Every adapter turns one call of ours -- inputs in MaxText's layout
(q, k (B, T, Hk, Dk); v (B, T, Hv, Dv); g, beta (B, T, Hv); h0 (B, Hv, Dk, Dv)
or None), chunk size, whether the kernel L2-normalises q and k, the compute
dtype, and for a context-parallel call the mesh axis name(s) -- into the
function's own call, and its result back into (o, final state or None).

Rows of :data:`ADAPTERS` (name -> adapter):

* ``maxtext``: ``jax_chunk_gated_delta_rule(query, key, value, g, beta,
  chunk_size=64, initial_state=None, use_qk_norm_in_gdn=False
  [, compute_dtype][, cp_axis])`` -> ``(o, final_state)``; the final state is
  returned only when an initial state is given.  Parameters the function does
  not have are not passed (compute_dtype, cp_axis or axis_name).  Grouped key
  heads are repeated to the value heads before the call, as MaxText's layer
  does (its kernel takes equal head counts).
* ``hf``: transformers' ``torch_chunk_gated_delta_rule(query, key, value, g,
  beta, chunk_size=64, initial_state=None, output_final_state=False,
  use_qk_l2norm_in_kernel=False)`` and ``torch_recurrent_gated_delta_rule``
  (no chunk_size), torch tensors in (B, T, H, D), grouped heads expanded by the
  caller (the model repeats them before the call).
* ``fla``: flash-linear-attention's naive forms, ``(q, k, v, beta, g, ...)``:
  beta before g, (B, T, H, D), ``scale``, ``initial_state``,
  ``output_final_state``; torch or JAX arrays as the function wants.
* ``fla-kda``: flash-linear-attention's Kimi Delta Attention forms
  (``naive_recurrent_kda``, ``naive_chunk_kda``): ``(q, k, v, g, beta, ...)``
  with g per key channel, (B, T, Hv, Dk); ``scale``, ``initial_state``,
  ``output_final_state``, and ``chunk_size`` where the function has one;
  q and k passed with their own Hk heads (fla 0.6.0's naive forms share a
  key head across Hv/Hk value heads themselves); torch (CPU).  Implies
  ``--recurrence kda``.
* a JSON file: a custom mapping (see :func:`json_adapter`).
"""

from __future__ import annotations

import inspect

import numpy as np

from .text import show

MAXTEXT_PARAMS = ("query", "key", "value", "g", "beta", "chunk_size", "initial_state",
                  "use_qk_norm_in_gdn")
CP_PARAM_NAMES = ("cp_axis", "axis_name")


class SignatureError(ValueError):
    """A function that does not fit the adapter; the message names the parameter."""


class ResultError(SignatureError):
    """A call returned something that is not the output it should be: exit 2."""


# What one call must return, per output: its shape from the inputs handed to
# that call (under shard_map a device's own: its T/D tokens, its batch rows)
# and the dtypes taken (captured.py says how each is stored).  ht may be
# absent (None); o may not.
RESULT_SHAPES = {
    "o": ("(B, T, Hv, Dv)", lambda d: (d["B"], d["T"], d["Hv"], d["Dv"])),
    "ht": ("(B, Hv, Dk, Dv)", lambda d: (d["B"], d["Hv"], d["Dk"], d["Dv"])),
}
RESULT_DTYPES = ("float32", "bfloat16", "float64")


def dtype_name(a) -> str | None:
    """numpy's name of an array's dtype (JAX, numpy, ml_dtypes; torch's
    "torch.float32" as "float32"), or None for what has no dtype."""
    dt = getattr(a, "dtype", None)
    if dt is None:
        return None
    try:
        return np.dtype(dt).name
    except TypeError:
        return str(dt).rpartition(".")[2]


def check_result(o, ht, x):
    """(o, ht) when each has the shape RESULT_SHAPES gives for the inputs x
    (ours, before any head repeat) and one of RESULT_DTYPES; else ResultError
    naming the output and both shapes and dtypes."""
    B, T, Hk, Dk = x["q"].shape
    Hv, Dv = x["v"].shape[2], x["v"].shape[3]
    dims = dict(B=B, T=T, Hk=Hk, Hv=Hv, Dk=Dk, Dv=Dv)
    for name, a in (("o", o), ("ht", ht)):
        if a is None and name == "ht":
            continue
        what, f = RESULT_SHAPES[name]
        want = tuple(int(n) for n in f(dims))
        shape, dt = getattr(a, "shape", None), dtype_name(a)
        if shape is None or dt is None:
            raise ResultError(f"{name} is {show(type(a).__name__)}, not an array; expected shape "
                              f"{want} {what}, dtype {' or '.join(RESULT_DTYPES)}")
        shape = tuple(int(n) for n in shape)
        if shape != want or dt not in RESULT_DTYPES:
            raise ResultError(f"{name} has shape {shape} dtype {show(dt)}; expected shape {want} "
                              f"{what} dtype {' or '.join(RESULT_DTYPES)}")
    return o, ht


def _fn_name(fn) -> str:
    """A callable's name for messages: a functools.partial or a callable object
    has no __name__, so the wrapped function's, else the type's."""
    name = (getattr(fn, "__qualname__", None)
            or getattr(getattr(fn, "func", None), "__qualname__", None)
            or type(fn).__qualname__)
    return show(name)


def _params(fn):
    try:
        return inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return {}


def cp_param(fn) -> str | None:
    """The parameter through which fn receives its mesh axis name, if any."""
    ps = _params(fn)
    return next((n for n in CP_PARAM_NAMES if n in ps), None)


# The names by which a parameter says which of the first five inputs it
# takes (the maxtext signature passes them positionally, in MAXTEXT_PARAMS'
# order).  A name not listed says nothing and is taken on trust.
INPUT_NAMES = (("query", "q"), ("key", "k"), ("value", "v", "values"),
               ("g", "gate", "gates", "log_decay", "decay"), ("beta", "betas"))


def _check_order(fn, names):
    """SignatureError when one of fn's first five positional parameters is
    named for another input than the one its position receives (beta before
    g: it would get g, silently)."""
    for i, n in enumerate(names[:5]):
        j = next((j for j, known in enumerate(INPUT_NAMES) if n.lower() in known), i)
        if j != i:
            raise SignatureError(
                f"{_fn_name(fn)}: its parameter {n!r} is positional parameter {i + 1}, which "
                f"receives {MAXTEXT_PARAMS[i]}: the maxtext signature passes (query, key, value, "
                f"g, beta) in this order, so {n!r} would get {MAXTEXT_PARAMS[i]} (its parameters: "
                f"{', '.join(names[:5])}).  Reorder the parameters, or describe the function: "
                "--signature fla for (q, k, v, beta, g, ...), or a JSON mapping")


class MaxTextAdapter:
    name = "maxtext"
    framework = "jax"

    def run_stock(self, call, x):
        from .mesh import run_stock
        return run_stock(call, x)

    def takes_cp(self, fn) -> bool:
        return cp_param(fn) is not None

    def check(self, fn, cp: bool):
        ps = _params(fn)
        if ps and not any(p.kind == p.VAR_POSITIONAL for p in ps.values()):
            pos = [p for p in ps.values() if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
            if len(pos) < 5:
                raise SignatureError(f"{_fn_name(fn)}: takes {len(pos)} positional parameters; the "
                                     "maxtext signature needs (query, key, value, g, beta, ...)")
            _check_order(fn, [p.name for p in pos])
        if cp and cp_param(fn) is None:
            raise SignatureError(f"{_fn_name(fn)}: no cp_axis (or axis_name) parameter: a "
                                 "context-parallel function must receive the mesh axis name")

    def call(self, fn, x, *, chunk, l2norm, compute_dtype, cp_axis=None):
        ps = _params(fn)
        q, k = x["q"], x["k"]
        Hk, Hv = q.shape[2], x["v"].shape[2]
        if Hv != Hk:  # MaxText's layer repeats the key heads before the kernel call
            q, k = _repeat_heads(q, Hv // Hk), _repeat_heads(k, Hv // Hk)
        args = (q, k, x["v"], x["g"], x["beta"])
        tail = (("chunk_size", chunk), ("initial_state", x.get("h0")),
                ("use_qk_norm_in_gdn", bool(l2norm)))
        if not ps:  # no introspectable signature: MaxText's names
            return check_result(*split_result(fn(*args, **dict(tail))), x)
        pos = [n for n, p in ps.items() if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
        kw = {}
        for slot, (n, val) in enumerate(tail, start=5):
            if n in ps:
                kw[n] = val
            elif slot < len(pos) and pos[slot] not in ("compute_dtype",) + CP_PARAM_NAMES:
                kw[pos[slot]] = val  # MaxText's position, another name
            elif n != "initial_state" or val is not None:
                raise SignatureError(f"{_fn_name(fn)}: no parameter for {n} "
                                     "(name or position of the maxtext signature)")
        if "compute_dtype" in ps:
            kw["compute_dtype"] = compute_dtype
        if cp_axis is not None:
            kw[cp_param(fn)] = cp_axis
        return check_result(*split_result(fn(*args, **kw)), x)


def split_result(out):
    if isinstance(out, (tuple, list)):
        o = out[0]
        ht = out[1] if len(out) > 1 else None
        return o, ht
    return out, None


# Our names for what a call can pass (values of a mapping's "keywords").
QUANTITIES = ("q", "k", "v", "g", "beta", "h0", "chunk", "l2norm", "scale", "compute_dtype",
              "cp_axis")
MAPPING_KEYS = ("framework", "positional", "keywords", "layout", "expand_heads", "l2norm",
                "returns", "description")


class MappingAdapter:
    """A function described by a mapping (a built-in row or a JSON file):

    framework: "jax" (jit, shard_map) or "torch" (eager, CPU; no cp form);
    positional: our names passed by position, e.g. ["q", "k", "v", "beta", "g"];
    keywords: {parameter: our name or a JSON literal}; a parameter the function
      does not accept (by name, or through **kwargs) is left out;
    layout: "BTHD" (MaxText, HF, fla) or "BHTD" (heads before time; outputs too);
    expand_heads: repeat q, k to the value heads before the call (HF's model
      does this before its kernels);
    l2norm: "kernel" (a keyword says so) or "caller" (q, k normalised here, in
      float32, when the inputs ask for it: x * rsqrt(sum(x^2) + 1e-6));
    returns: ["o", "ht"] or ["o"]."""

    def __init__(self, name, spec, origin):
        unknown = sorted(set(spec) - set(MAPPING_KEYS))
        if unknown:
            raise SignatureError(f"{origin}: unknown key(s) {unknown} (known: {', '.join(MAPPING_KEYS)})")
        self.name, self.origin = name, origin
        self.framework = spec.get("framework", "jax")
        if self.framework not in ("jax", "torch"):
            raise SignatureError(f"{origin}: framework {self.framework!r}: expected jax or torch")
        self.positional = list(spec.get("positional", ["q", "k", "v", "g", "beta"]))
        self.keywords = dict(spec.get("keywords", {}))
        for n in self.positional + [v for v in self.keywords.values() if isinstance(v, str)]:
            if n not in QUANTITIES:
                raise SignatureError(f"{origin}: {n!r} is not one of {', '.join(QUANTITIES)}")
        self.layout = spec.get("layout", "BTHD")
        if self.layout not in ("BTHD", "BHTD"):
            raise SignatureError(f"{origin}: layout {self.layout!r}: expected BTHD or BHTD")
        self.expand_heads = bool(spec.get("expand_heads", False))
        self.l2norm = spec.get("l2norm", "kernel")
        if self.l2norm not in ("kernel", "caller"):
            raise SignatureError(f"{origin}: l2norm {self.l2norm!r}: expected kernel or caller")
        self.returns = list(spec.get("returns", ["o", "ht"]))
        if self.returns not in (["o", "ht"], ["o"]):
            raise SignatureError(f"{origin}: returns {self.returns!r}: expected [\"o\", \"ht\"] or [\"o\"]")

    def check(self, fn, cp: bool):
        if cp and self.framework != "jax":
            raise SignatureError(f"--signature {self.name}: {self.framework} functions have no "
                                 "context-parallel form here (run them without --cp)")
        if cp and "cp_axis" not in self.keywords.values():
            raise SignatureError(f"{self.origin}: a context-parallel function needs a keyword "
                                 "mapped to \"cp_axis\"")

    def takes_cp(self, fn) -> bool:
        p = next((p for p, v in self.keywords.items() if v == "cp_axis"), None)
        return self.framework == "jax" and p is not None and self._accepts(fn)(p)

    def _accepts(self, fn):
        ps = _params(fn)
        if not ps or any(p.kind == p.VAR_KEYWORD for p in ps.values()):
            return lambda name: True
        return lambda name: name in ps

    def call(self, fn, x, *, chunk, l2norm, compute_dtype, cp_axis=None):
        q, k = x["q"], x["k"]
        if l2norm and self.l2norm == "caller":
            q, k = _l2norm_f32(q), _l2norm_f32(k)
        Hk, Hv = q.shape[2], x["v"].shape[2]
        if self.expand_heads and Hv != Hk:
            q, k = _repeat_heads(q, Hv // Hk), _repeat_heads(k, Hv // Hk)
        ours = dict(q=q, k=k, v=x["v"], g=x["g"], beta=x["beta"], h0=x.get("h0"), chunk=chunk,
                    l2norm=bool(l2norm) and self.l2norm == "kernel",
                    scale=float(x["q"].shape[3]) ** -0.5, compute_dtype=compute_dtype,
                    cp_axis=cp_axis)
        conv = _torch_in if self.framework == "torch" else (lambda a: a)
        tr = self.layout == "BHTD"

        def arr(n):
            a = ours[n]
            if tr and n in ("q", "k", "v", "g", "beta"):
                a = _swap(a, 1, 2)
            return conv(a) if n in ("q", "k", "v", "g", "beta", "h0") and a is not None else a

        args = [arr(n) for n in self.positional]
        accepts = self._accepts(fn)
        kw = {}
        for p, v in self.keywords.items():
            if not accepts(p):
                continue
            kw[p] = arr(v) if isinstance(v, str) else v
        out = fn(*args, **kw)
        o, ht = split_result(out)
        if self.returns == ["o"]:
            ht = None
        if tr and getattr(o, "ndim", 0) == 4:  # else check_result names the shape
            o = _swap(o, 1, 2)
        return check_result(o, ht, x)

    def run_stock(self, call, x):
        if self.framework == "torch":
            import torch
            with torch.no_grad():
                o, ht = call(x)
            return to_numpy(o), to_numpy(ht)
        from .mesh import run_stock
        return run_stock(call, x)


def _swap(a, i, j):
    if hasattr(a, "transpose") and hasattr(a, "detach"):  # torch
        return a.transpose(i, j)
    import jax.numpy as jnp
    return jnp.swapaxes(a, i, j) if not isinstance(a, np.ndarray) else np.swapaxes(a, i, j)


def _repeat_heads(a, n):
    if isinstance(a, np.ndarray):
        return np.repeat(a, n, axis=2)
    if _is_torch(a):  # a tensor autograd follows (--grad): np.repeat's order
        return a.repeat_interleave(n, dim=2)
    import jax.numpy as jnp
    return jnp.repeat(a, n, axis=2)


def _l2norm_f32(a):
    if isinstance(a, np.ndarray):
        a = a.astype(np.float32)
        return a * (1.0 / np.sqrt((a * a).sum(-1, keepdims=True) + np.float32(1e-6))).astype(np.float32)
    if _is_torch(a):
        import torch
        a = a.float()
        return a * torch.rsqrt((a * a).sum(-1, keepdim=True) + 1e-6)
    import jax.numpy as jnp
    from jax import lax
    a = a.astype(jnp.float32)
    return a * lax.rsqrt(jnp.sum(a * a, axis=-1, keepdims=True) + 1e-6)


def _is_torch(a) -> bool:
    return hasattr(a, "detach") and hasattr(a, "requires_grad")


def _torch_in(a):
    """An input as the torch function takes it: a torch tensor as given (with
    --grad, one autograd follows back to our primals), else a CPU copy."""
    if _is_torch(a):
        return a
    import torch
    a = np.asarray(a)
    if a.dtype.name == "bfloat16":
        return torch.from_numpy(a.view(np.int16).copy()).view(torch.bfloat16)
    return torch.from_numpy(np.ascontiguousarray(a).copy())


# The built-in rows.  hf: transformers' torch_chunk_gated_delta_rule and
# torch_recurrent_gated_delta_rule (models/qwen3_next): q, k, v, g, beta by
# position; the recurrent form has no chunk_size (left out: it takes **kwargs,
# which swallow it).  fla: flash-linear-attention's naive forms, beta before g,
# scale given, no L2-norm flag (normalised here).  fla-kda: fla's KDA naive
# forms, g (per key channel) before beta, grouped heads left to the function
# (it repeats q, k itself); naive_recurrent_kda has no
# chunk_size (left out: a parameter it does not have is not passed).
BUILTIN_MAPPINGS = {
    "hf": {"framework": "torch", "positional": ["q", "k", "v", "g", "beta"],
           "keywords": {"chunk_size": "chunk", "initial_state": "h0", "output_final_state": True,
                        "use_qk_l2norm_in_kernel": "l2norm"},
           "expand_heads": True},
    "fla": {"framework": "torch", "positional": ["q", "k", "v", "beta", "g"],
            "keywords": {"scale": "scale", "initial_state": "h0", "output_final_state": True},
            "expand_heads": True, "l2norm": "caller"},
    "fla-kda": {"framework": "torch", "positional": ["q", "k", "v", "g", "beta"],
                "keywords": {"scale": "scale", "initial_state": "h0", "output_final_state": True,
                             "chunk_size": "chunk"},
                "l2norm": "caller"},
}

ADAPTERS = {"maxtext": MaxTextAdapter()}
ADAPTERS.update({n: MappingAdapter(n, s, f"--signature {n}") for n, s in BUILTIN_MAPPINGS.items()})


def get_adapter(name: str):
    if name in ADAPTERS:
        return ADAPTERS[name]
    if name.endswith(".json"):
        return json_adapter(name)
    raise SignatureError(f"--signature {name!r}: expected one of {', '.join(ADAPTERS)} "
                         "or a FILE.json mapping")


def json_adapter(path: str):
    from .jsonfile import load_object
    spec = load_object(path, "--signature", SignatureError, show(path))
    return MappingAdapter(path, spec, f"--signature {show(path)}")


def to_numpy(x):
    """A result array (JAX, torch, numpy; bfloat16 kept as ml_dtypes) on the host."""
    if x is None:
        return None
    if hasattr(x, "detach"):  # torch
        import torch
        t = x.detach().cpu()
        if t.dtype == torch.bfloat16:
            import ml_dtypes
            return t.view(torch.int16).numpy().view(ml_dtypes.bfloat16)
        return t.numpy()
    return np.asarray(x)
