"""fixtures/python/gdn_fixture_capture.py against real JAX: eager, under jit
(jax.debug.callback), bfloat16 arrays, a context-parallel entry under
shard_map (global arrays), and a call without an initial state.  Every
captured file must pass `gdn-fixture verify`, and the captured outputs must
be exactly what the wrapped call returned."""

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P

from conftest import synth
from gdn_parity_jax import gdn_fixture_capture as cap
from gdn_parity_jax import impls


@pytest.fixture(scope="module")
def inputs(tools, tmp_path_factory):
    fx = synth(tools, tmp_path_factory.mktemp("cap") / "x.h5", "1,64,2,16", "--h0", "--slow-gates")
    return {n: jnp.asarray(a) for n, a in fx["inputs"].items()}


def _verify(tools, path):
    r = tools.run("fixture", ["verify", path], capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr


def _one_file(c):
    assert len(c.files) == 1, c.files
    return next(iter(c.files.values()))


def _wrap(c, **kw):
    kw.setdefault("output_name", "jax_scan")
    kw.setdefault("implementation", "scan")
    return c.wrap(impls.chunk_gated_delta_rule, **kw)


def test_eager_call(tools, tmp_path, inputs):
    c = cap.GdnCapture(str(tmp_path), source="cpu-dump")
    x = inputs
    o, ht = _wrap(c)(x["q"], x["k"], x["v"], x["g"], x["beta"], 8, x["h0"], True, jnp.float32)
    path = _one_file(c)
    _verify(tools, path)
    f = cap.read_fixture(path)
    for n in ("q", "k", "v", "g", "beta", "h0"):
        np.testing.assert_array_equal(f["inputs"][n], np.asarray(x[n]))
    out = f["outputs"]["jax_scan"]
    np.testing.assert_array_equal(out["o"], np.asarray(o))
    np.testing.assert_array_equal(out["ht"], np.asarray(ht))
    assert f["attrs"]["chunk_size"] == 8 and f["attrs"]["l2norm_in_kernel"] == 1
    assert out["attrs"]["compute_dtype"] == "float32" and out["attrs"]["platform"] == "cpu"


def test_under_jit_through_debug_callback(tools, tmp_path, inputs):
    c = cap.GdnCapture(str(tmp_path), source="cpu-dump")
    f = jax.jit(functools.partial(_wrap(c), chunk_size=8, use_qk_norm_in_gdn=True,
                                  compute_dtype=jnp.float32))
    x = inputs
    o, ht = f(x["q"], x["k"], x["v"], x["g"], x["beta"], initial_state=x["h0"])
    jax.effects_barrier()
    path = _one_file(c)
    _verify(tools, path)
    out = cap.read_fixture(path)["outputs"]["jax_scan"]
    np.testing.assert_array_equal(out["o"], np.asarray(o))
    np.testing.assert_array_equal(out["ht"], np.asarray(ht))


def test_bfloat16_arrays_and_no_initial_state(tools, tmp_path, inputs):
    c = cap.GdnCapture(str(tmp_path), source="cpu-dump")
    x = {n: (a.astype(jnp.bfloat16) if n in ("q", "k", "v", "beta") else a) for n, a in inputs.items()}
    o, ht = _wrap(c)(x["q"], x["k"], x["v"], x["g"], x["beta"], 8, None, True, jnp.bfloat16)
    assert ht is None and o.dtype == jnp.bfloat16
    path = _one_file(c)
    _verify(tools, path)
    f = cap.read_fixture(path)
    assert "h0" not in f["inputs"] and f["outputs"]["jax_scan"]["ht"] is None
    for n in ("q", "k", "v", "beta"):
        assert f["inputs_bf16"][n] and f["inputs"][n].dtype == np.uint16
        np.testing.assert_array_equal(f["inputs"][n], np.asarray(x[n]).view(np.uint16))
    out = f["outputs"]["jax_scan"]
    assert out["o_bf16"] and out["attrs"]["compute_dtype"] == "bfloat16"
    np.testing.assert_array_equal(out["o"], np.asarray(o).view(np.uint16))


def _mesh4():
    return jax.make_mesh((4,), ("context",), devices=jax.devices()[:4])


def cp_entry(query, key, value, g, beta, chunk_size=64, initial_state=None,
             use_qk_norm_in_gdn=False, compute_dtype=jnp.float32):
    """A global context-parallel entry on 4 devices: shards the sequence over
    `context` and calls the per-shard function inside shard_map."""
    s4, s3 = P(None, "context", None, None), P(None, "context", None)

    def body(q, k, v, gg, b, h0):
        return impls.chunk_gated_delta_rule(q, k, v, gg, b, chunk_size, h0, use_qk_norm_in_gdn,
                                            compute_dtype, cp_axis="context")
    f = jax.shard_map(body, mesh=_mesh4(), in_specs=(s4, s4, s4, s3, s3, P()), out_specs=(s4, P()),
                      check_vma=False)
    return f(query, key, value, g, beta, initial_state)


def test_context_parallel_entry_under_shard_map(tools, tmp_path, inputs):
    """Scan and cp calls on the same inputs land in one file; the cp output is
    captured from global (gathered) arrays; the file then passes the gate."""
    mesh = _mesh4()
    c = cap.GdnCapture(str(tmp_path), source="cpu-dump")
    x = inputs
    _wrap(c)(x["q"], x["k"], x["v"], x["g"], x["beta"], 8, x["h0"], True, jnp.float32)
    wrapped = c.wrap(cp_entry, output_name="jax_cp_d4", implementation="affine-prefix", devices=4,
                     prefix="associative-scan")
    spec = {"q": P(None, "context", None, None), "k": P(None, "context", None, None),
            "v": P(None, "context", None, None), "g": P(None, "context", None),
            "beta": P(None, "context", None), "h0": P()}
    xs = {n: jax.device_put(a, NamedSharding(mesh, spec[n])) for n, a in x.items()}
    o, ht = jax.jit(lambda q, k, v, g, b, h0: wrapped(q, k, v, g, b, 8, h0, True, jnp.float32))(
        xs["q"], xs["k"], xs["v"], xs["g"], xs["beta"], xs["h0"])
    jax.effects_barrier()
    path = _one_file(c)  # same inputs: the same file
    f = cap.read_fixture(path)
    assert sorted(f["outputs"]) == ["jax_cp_d4", "jax_scan"]
    assert f["inputs"]["q"].shape == (1, 64, 2, 16)  # global, not one shard's 16 tokens
    np.testing.assert_array_equal(f["outputs"]["jax_cp_d4"]["o"], np.asarray(o))
    assert f["outputs"]["jax_cp_d4"]["attrs"]["devices"] == 4
    r = tools.run("fixture", ["regen", path], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    r = tools.run("parity", ["check", "--fixture", path, "--devices", "1,4", "--quiet"],
                  capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr
