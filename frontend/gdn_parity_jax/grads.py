"""Gradients of a function under test: ``jax.vjp`` on one device and on a mesh;
``torch.autograd`` for a torch function (eager, CPU: :func:`vjp_torch`).

The loss is gdn-parity's (``core/gdn_grads.h``, ``docs/gradients.md``):
``L = sum(do * o) + sum(dht * ht)``, one vector-Jacobian product with the
cotangents ``do`` (the shape of o) and ``dht`` (the shape of ht; zero when the
function returns no final state).  The gradients are taken with respect to
the arrays *we* hand to the adapter -- q, k (B, T, Hk, Dk) as stored, v, g,
beta, h0 -- so that:

* dq, dk go through whatever the adapter and the function do to q and k: the
  repeat of grouped key heads to the value heads (its transpose sums over the
  Hv / Hk value heads sharing a key head), the in-kernel L2 norm and the scale;
* dh0 is the gradient with respect to the initial state also when the inputs
  have none: the function is then differentiated at the zero state, called
  with ``initial_state = 0`` (the same forward: a zero state is what a missing
  one means), and its final state gets a zero cotangent.

The context-parallel function is differentiated *through* ``jax.shard_map``
(the same mesh and specs as :func:`gdn_parity_jax.mesh.run_sharded`): JAX
transposes the all_gather, associative_scan, ppermute and psum, and the
cotangent of the replicated h0 is summed over the devices by shard_map's own
transpose -- exactly what a training step computes.

Cotangents (:func:`draw_cotangents`) are float32 N(0, 1) from numpy's PCG64
seeded with ``seed``; they are written to the fixture, so the C side judges
with the very values used here (no need to reproduce the generator).

Only float32 inputs and float32 compute are taken (:func:`refusal`): the C
side has no bfloat16 backward (docs/gradients.md, "Not in the gate yet").
"""

from __future__ import annotations

import functools

import numpy as np

GRAD_NAMES = ("dq", "dk", "dv", "dg", "dbeta", "dh0")
# The input each gradient is taken with respect to.
WRT = {"dq": "q", "dk": "k", "dv": "v", "dg": "g", "dbeta": "beta", "dh0": "h0"}


def draw_cotangents(seed: int, B: int, T: int, Hv: int, Dk: int, Dv: int, with_dht: bool):
    """{'do': (B, T, Hv, Dv), 'dht': (B, Hv, Dk, Dv) or None}, float32 N(0, 1).

    do is drawn first, then dht, from one PCG64 stream: the same seed and
    shape always give the same values (no dependence on threads or devices)."""
    rng = np.random.Generator(np.random.PCG64(seed))
    do = rng.standard_normal((B, T, Hv, Dv), dtype=np.float32)
    dht = rng.standard_normal((B, Hv, Dk, Dv), dtype=np.float32) if with_dht else None
    return {"do": do, "dht": dht}


def refusal(x, compute_dtype: str) -> str | None:
    """Why gradients cannot be judged for these inputs, or None."""
    if compute_dtype != "float32":
        return (f"--grad: compute dtype {compute_dtype}: gradients are judged for float32 "
                "compute only (the C side has no bfloat16 backward)")
    for n in ("q", "k", "v", "g", "beta", "h0"):
        a = x.get(n)
        if a is not None and np.asarray(a).dtype != np.float32:
            return (f"--grad: input {n} is {np.asarray(a).dtype}: gradients are judged for "
                    "float32 inputs only")
    return None


def _primals(x):
    """The differentiated inputs (h0 = 0 when absent) and whether h0 was given."""
    has_h0 = x.get("h0") is not None
    B, _, _, Dk = np.shape(x["q"])
    Hv, Dv = np.shape(x["v"])[2], np.shape(x["v"])[3]
    h0 = x["h0"] if has_h0 else np.zeros((B, Hv, Dk, Dv), np.float32)
    return {"q": x["q"], "k": x["k"], "v": x["v"], "g": x["g"], "beta": x["beta"], "h0": h0}, has_h0


def _cotangent_pair(ct, o_like, ht_like, has_h0):
    """(do, dht) as the function's outputs are typed; dht zero when not given,
    and when the inputs have no h0 (the output judged then has no ht)."""
    import jax.numpy as jnp
    do = jnp.asarray(ct["do"], o_like.dtype)
    if ht_like is None:
        return do, None
    dht = ct.get("dht") if has_h0 else None
    dht = jnp.zeros(ht_like.shape, ht_like.dtype) if dht is None else jnp.asarray(dht, ht_like.dtype)
    return do, dht


def _pullback(f, p, do, dht):
    import jax
    out, pull = jax.vjp(f, p)
    (gp,) = pull((do, dht if out[1] is not None else None))
    return gp


@functools.lru_cache(maxsize=None)
def _jitted_pullback():
    """jit of _pullback with f static: one compile per function and shapes
    (built on first use: jax must not be imported before the CLI has set the
    number of host devices)."""
    import jax
    return jax.jit(_pullback, static_argnums=0)


def _vjp(f, primals, ct, has_h0):
    """jax.vjp of f(primals) -> (o, ht or None) with the cotangents ct, jitted;
    returns {dq, ..., dh0} as float32 numpy arrays."""
    import jax
    o_aval, ht_aval = jax.eval_shape(f, primals)
    do, dht = _cotangent_pair(ct, o_aval, ht_aval, has_h0)
    gp = _jitted_pullback()(f, primals, do, dht)
    return {n: np.asarray(jax.device_get(gp[WRT[n]]), np.float32) for n in GRAD_NAMES}


def vjp_stock(call, x, ct):
    """Gradients of the stock function: call(xs) -> (o, ht or None), on the
    first device.  ct: draw_cotangents' dict."""
    import jax
    primals, has_h0 = _primals(x)
    dev = jax.devices()[0]
    primals = {n: jax.device_put(a, dev) for n, a in primals.items()}
    return _vjp(call, primals, ct, has_h0)


def vjp_sharded(call_cp, x, plan, B, ct):
    """Gradients of the context-parallel function under shard_map on the
    plan's mesh (gdn_parity_jax.mesh.sharded_fn); call_cp(x_local, cp_axis)."""
    import jax
    from jax.sharding import NamedSharding

    from .mesh import sharded_fn
    primals, has_h0 = _primals(x)
    f, mesh, specs = sharded_fn(call_cp, plan, B, list(primals))
    primals = {n: jax.device_put(a, NamedSharding(mesh, specs[n])) for n, a in primals.items()}
    return _vjp(f, primals, ct, has_h0)


def vjp_torch(call, x, ct):
    """Gradients of a torch function (eager, CPU) by ``torch.autograd.grad``:
    the same primals as :func:`vjp_stock` (h0 = 0 when the inputs have none),
    as float32 tensors that require grad and go through the adapter's call
    (head repeat, caller L2 norm, layout) into the function; the cotangents
    ``do`` and ``dht`` are handed to autograd as the outputs' grad_outputs (no
    loss is formed).  An input the function does not use gets a zero gradient.
    call(xs) -> (o, ht or None); ct: draw_cotangents' dict."""
    import torch
    primals, has_h0 = _primals(x)
    tp = {n: torch.from_numpy(np.array(a, np.float32)).requires_grad_(True)
          for n, a in primals.items()}
    with torch.enable_grad():
        o, ht = call(tp)
        outs = [o]
        cts = [torch.from_numpy(np.asarray(ct["do"], np.float32)).to(o.dtype)]
        dht = ct.get("dht") if has_h0 else None
        if ht is not None and dht is not None:
            outs.append(ht)
            cts.append(torch.from_numpy(np.asarray(dht, np.float32)).to(ht.dtype))
        wrt = [tp[WRT[n]] for n in GRAD_NAMES]
        gs = torch.autograd.grad(outs, wrt, grad_outputs=cts, allow_unused=True)
    return {n: (np.zeros(np.shape(primals[WRT[n]]), np.float32) if g is None
                else g.detach().cpu().float().numpy().astype(np.float32, copy=False))
            for n, g in zip(GRAD_NAMES, gs)}
