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
  not have are not passed (compute_dtype, cp_axis or axis_name).
* ``hf``: transformers' ``torch_chunk_gated_delta_rule(query, key, value, g,
  beta, chunk_size=64, initial_state=None, output_final_state=False,
  use_qk_l2norm_in_kernel=False)`` and ``torch_recurrent_gated_delta_rule``
  (no chunk_size), torch tensors in (B, T, H, D), grouped heads expanded by the
  caller (the model repeats them before the call).
* ``fla``: flash-linear-attention's naive forms, ``(q, k, v, beta, g, ...)``:
  beta before g, (B, T, H, D), ``scale``, ``initial_state``,
  ``output_final_state``; torch or JAX arrays as the function wants.
* a JSON file: a custom mapping (see :func:`json_adapter`).
"""

from __future__ import annotations

import inspect

import numpy as np

MAXTEXT_PARAMS = ("query", "key", "value", "g", "beta", "chunk_size", "initial_state",
                  "use_qk_norm_in_gdn")
CP_PARAM_NAMES = ("cp_axis", "axis_name")


class SignatureError(ValueError):
    """A function that does not fit the adapter; the message names the parameter."""


def _params(fn):
    try:
        return inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return {}


def cp_param(fn) -> str | None:
    """The parameter through which fn receives its mesh axis name, if any."""
    ps = _params(fn)
    return next((n for n in CP_PARAM_NAMES if n in ps), None)


class MaxTextAdapter:
    name = "maxtext"
    framework = "jax"

    def check(self, fn, cp: bool):
        ps = _params(fn)
        if ps and not any(p.kind == p.VAR_POSITIONAL for p in ps.values()):
            pos = [p for p in ps.values() if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
            if len(pos) < 5:
                raise SignatureError(f"{fn.__name__}: takes {len(pos)} positional parameters; the "
                                     "maxtext signature needs (query, key, value, g, beta, ...)")
        if cp and cp_param(fn) is None:
            raise SignatureError(f"{fn.__name__}: no cp_axis (or axis_name) parameter: a "
                                 "context-parallel function must receive the mesh axis name")

    def call(self, fn, x, *, chunk, l2norm, compute_dtype, cp_axis=None):
        ps = _params(fn)
        args = (x["q"], x["k"], x["v"], x["g"], x["beta"])
        tail = (("chunk_size", chunk), ("initial_state", x.get("h0")),
                ("use_qk_norm_in_gdn", bool(l2norm)))
        if not ps:  # no introspectable signature: MaxText's names
            return split_result(fn(*args, **dict(tail)))
        pos = [n for n, p in ps.items() if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
        kw = {}
        for slot, (n, val) in enumerate(tail, start=5):
            if n in ps:
                kw[n] = val
            elif slot < len(pos) and pos[slot] not in ("compute_dtype",) + CP_PARAM_NAMES:
                kw[pos[slot]] = val  # MaxText's position, another name
            elif n != "initial_state" or val is not None:
                raise SignatureError(f"{getattr(fn, '__name__', fn)}: no parameter for {n} "
                                     "(name or position of the maxtext signature)")
        if "compute_dtype" in ps:
            kw["compute_dtype"] = compute_dtype
        if cp_axis is not None:
            kw[cp_param(fn)] = cp_axis
        return split_result(fn(*args, **kw))


def split_result(out):
    if isinstance(out, (tuple, list)):
        o = out[0]
        ht = out[1] if len(out) > 1 else None
        return o, ht
    return out, None


ADAPTERS = {"maxtext": MaxTextAdapter()}


def get_adapter(name: str):
    if name in ADAPTERS:
        return ADAPTERS[name]
    if name.endswith(".json"):
        return json_adapter(name)
    raise SignatureError(f"--signature {name!r}: expected one of {', '.join(ADAPTERS)} "
                         "or a FILE.json mapping")


def json_adapter(path: str):
    raise SignatureError(f"--signature {path}: JSON mappings are not supported yet")


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
