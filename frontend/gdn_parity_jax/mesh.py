"""Running a function on one device and on a device mesh with JAX.

The stock function runs under ``jax.jit`` on the first device.  A
context-parallel function runs under ``jax.shard_map`` on a mesh of D devices
for the sequence: q, k, v sharded as ``P(batch, cp_axis, None, None)``,
g and beta as ``P(batch, cp_axis, None)``, the initial state replicated (or
sharded over the batch axis), the output sharded like v and the final state
like h0 -- the call upstream's own test makes.  Each device therefore gets
T/D tokens (token sharding) and JAX's collectives (all_gather, ppermute,
psum) move the data: the same code that runs on a TPU pod.

Meshes (:func:`make_mesh`): 1-D ``('context',)`` by default; with fsdp = F > 1
a 2-D mesh ``('fsdp', 'context')``.  cp_axis is ``'context'`` (the batch is
then sharded over fsdp when F divides B, else replicated) or the tuple
``('fsdp', 'context')`` (the sequence sharded over both axes; D = F x context).
"""

from __future__ import annotations

from dataclasses import dataclass

import jax
import jax.numpy as jnp
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P


@dataclass(frozen=True)
class MeshPlan:
    devices: int          # D: sequence shards
    fsdp: int             # F: size of the fsdp axis (1: a 1-D mesh)
    cp_axis: object       # 'context' or ('fsdp', 'context')

    @property
    def shape(self):
        if self.fsdp == 1:
            return (self.devices,), ("context",)
        if isinstance(self.cp_axis, tuple):
            return (self.fsdp, self.devices // self.fsdp), ("fsdp", "context")
        return (self.fsdp, self.devices), ("fsdp", "context")

    @property
    def n_devices(self) -> int:
        s, _ = self.shape
        n = 1
        for x in s:
            n *= x
        return n

    def describe(self) -> str:
        s, names = self.shape
        return " x ".join(f"{n}={k}" for n, k in zip(names, s)) + f", cp_axis={self.cp_axis!r}"


def plan_error(plan: MeshPlan, B: int, T: int, available: int) -> str | None:
    """Why this mesh cannot run these shapes, or None."""
    if T % plan.devices:
        lo, hi = (T // plan.devices) * plan.devices, (T // plan.devices + 1) * plan.devices
        near = f"T = {lo} or {hi}" if lo else f"T = {hi}"
        return (f"--devices {plan.devices}: T = {T} is not a multiple of {plan.devices} "
                "(token sharding gives each device T/D tokens, as upstream's shard_map does); "
                f"take {near}")
    if isinstance(plan.cp_axis, tuple) and plan.devices % plan.fsdp:
        return f"--devices {plan.devices}: not a multiple of --fsdp {plan.fsdp} (tuple cp axis)"
    if plan.n_devices > available:
        return (f"--devices {plan.devices}: the mesh {plan.describe()} needs {plan.n_devices} "
                f"devices; JAX has {available}")
    return None


def make_mesh(plan: MeshPlan, auto: bool = False):
    """The plan's mesh; auto: every axis of type Auto (GSPMD propagates
    shardings and a with_sharding_constraint reshards, as a model layer
    under jit sees it; gdn_parity_jax.audit's global layout)."""
    shape, names = plan.shape
    if auto:
        from jax.sharding import AxisType
        return jax.make_mesh(shape, names, axis_types=(AxisType.Auto,) * len(names),
                             devices=jax.devices()[:plan.n_devices])
    return jax.make_mesh(shape, names, devices=jax.devices()[:plan.n_devices])


def run_stock(call, x):
    """call(x) -> (o, ht or None) under jit on the first device."""
    dev = jax.devices()[0]
    xs = {n: (None if a is None else jax.device_put(a, dev)) for n, a in x.items()}
    o, ht = jax.jit(call)(xs)
    return jax.device_get(o), (None if ht is None else jax.device_get(ht))


def run_sharded(call_cp, x, plan: MeshPlan, B: int):
    """call_cp(x_local, cp_axis) -> (o, ht or None) under shard_map on the plan's mesh."""
    names = [n for n in ("q", "k", "v", "g", "beta", "h0") if x.get(n) is not None]
    f, mesh, spec = sharded_fn(call_cp, plan, B, names, g_rank=x["g"].ndim)
    xs = {n: jax.device_put(x[n], NamedSharding(mesh, spec[n])) for n in names}
    o, ht = jax.jit(f)(xs)
    return jax.device_get(o), (None if ht is None else jax.device_get(ht))


def sharded_fn(call_cp, plan: MeshPlan, B: int, names, g_rank: int = 3):
    """(f, mesh, specs): f(xs) -> (o, ht or None) runs call_cp(x_local, cp_axis)
    under shard_map on the plan's mesh, xs a dict of the inputs in `names`
    placed by specs[name].  f is a plain function (not jitted) so that it can
    be jitted for the forward or differentiated (gdn_parity_jax.grads).
    g_rank 4: a per-channel gate (KDA's (B, T, Hv, Dk)), sharded as q."""
    mesh = make_mesh(plan)
    cp = plan.cp_axis
    batch = "fsdp" if (plan.fsdp > 1 and not isinstance(cp, tuple) and B % plan.fsdp == 0) else None
    spec = {"q": P(batch, cp, None, None), "k": P(batch, cp, None, None),
            "v": P(batch, cp, None, None), "g": P(batch, cp, *(None,) * (g_rank - 2)),
            "beta": P(batch, cp, None), "h0": P(batch, None, None, None)}
    in_specs = ({n: spec[n] for n in names},)
    has_h0 = "h0" in names

    def body(xl):
        o, ht = call_cp(xl, cp)
        if ht is None or not has_h0:
            return o, jnp.zeros((), jnp.float32)
        return o, ht

    out_specs = (spec["v"], spec["h0"] if has_h0 else P())
    # check_vma=False: the functions judged are anybody's code; a final state
    # that is not really replicated shows up as a wrong ht, judged like any other.
    g = jax.shard_map(body, mesh=mesh, in_specs=in_specs, out_specs=out_specs, check_vma=False)

    def f(xs):
        o, ht = g(xs)
        return o, (ht if has_h0 else None)

    return f, mesh, spec


def global_fn(call_cp, plan: MeshPlan, names):
    """(f, mesh, specs, out_shardings) for the global layout: f(xs) ->
    (o, ht or a zero scalar) calls call_cp(xs, cp_axis) on globally shaped
    arrays (a model layer's call), to be jitted with xs placed by specs (the
    sequence sharded over cp_axis) under ``jax.set_mesh(mesh)``; GSPMD
    chooses the collectives.  The mesh's axes are Auto."""
    mesh = make_mesh(plan, auto=True)
    cp = plan.cp_axis
    spec = {"q": P(None, cp, None, None), "k": P(None, cp, None, None), "v": P(None, cp, None, None),
            "g": P(None, cp, None), "beta": P(None, cp, None), "h0": P(None, None, None, None)}
    has_h0 = "h0" in names

    def f(xs):
        o, ht = call_cp(xs, cp)
        return o, (ht if (ht is not None and has_h0) else jnp.zeros((), jnp.float32))

    outs = (NamedSharding(mesh, spec["v"]), NamedSharding(mesh, spec["h0"] if has_h0 else P()))
    return f, mesh, spec, outs


def run_global(call_cp, x, plan: MeshPlan, B: int):
    """call_cp(x, cp_axis) -> (o, ht or None) on globally shaped arrays under
    jit, the inputs sharded over the context axis (global_fn)."""
    names = [n for n in ("q", "k", "v", "g", "beta", "h0") if x.get(n) is not None]
    f, mesh, spec, outs = global_fn(call_cp, plan, names)
    xs = {n: jax.device_put(x[n], NamedSharding(mesh, spec[n])) for n in names}
    with jax.set_mesh(mesh):
        o, ht = jax.jit(f, out_shardings=outs)(xs)
    return jax.device_get(o), (jax.device_get(ht) if "h0" in names else None)
