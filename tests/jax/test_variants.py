"""The JAX variants of the C mutant catalogue (gdn_parity_jax.broken.C_NAMED)
through the gate: each fails `gdn-parity check` on the mesh sizes where its
bug is observable and passes where it is not, and the correct functions
pass on the same inputs (so a failure is the defect's, not the inputs').

One small shape, B = 1, T = 64, H = 2, Dk = Dv = 16, C = 8, with h0 and
long-memory gates (state crosses every seam), on meshes of 2 and 4 host
devices (16 and 8 tokens per device).  To stay cheap every function of one
mesh size runs in one jit(shard_map) program (one compile per mesh size),
and all outputs go into one fixture: one oracle, one `gdn-parity check`.
Then each variant is shown to be the C row of its name: `gdn-parity check
--mutant NAME` on the same fixture puts the C affine-prefix exactly as far
from the oracle (to 1e-3 relative), and no other row does.

Expected (fails at D = 2, fails at D = 4), from each variant's docstring:
  compose-order      yes, yes  (D = 2: o is right -- device 1 takes one
                                pair, no composition -- but ht is not)
  seam-decay, carry-zero, prefix-inclusive, h0-ignored, h0-every,
  scale-twice        yes, yes
  hs-reversed        no,  yes  (D = 2 has one Hillis-Steele round)
  final-from-replay  no,  no   (equal in exact arithmetic; ht differs from
                                the correct run by round-off only, which is
                                asserted too, so the variant is not vacuous)
"""

import json

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P

from conftest import synth
from gdn_parity_jax import broken, impls
from gdn_parity_jax import mesh as meshmod
from gdn_parity_jax.run import as_arrays, write_results
from gdn_parity_jax.signatures import get_adapter
from gdn_parity_jax.verdict import verdict_lines

SHAPE, CHUNK, MESHES = "1,64,2,16", 8, (2, 4)
EXPECT = {  # name: (fails at D = 2, fails at D = 4)
    "compose-order": (True, True),
    "seam-decay": (True, True),
    "carry-zero": (True, True),
    "prefix-inclusive": (True, True),
    "h0-ignored": (True, True),
    "h0-every": (True, True),
    "scale-twice": (True, True),
    "hs-reversed": (False, True),
    "final-from-replay": (False, False),
}
CORRECT = {"ok-assoc": impls.chunk_gated_delta_rule,
           "ok-hs": impls.chunk_gated_delta_rule_hillis_steele}


def _key(name, d):
    return f"{name.replace('-', '_')}_d{d}"


def _run_all(fns, x, d):
    """Every function's context-parallel path on a D-device mesh, as
    mesh.run_sharded does it, but in one program: {name: (o, ht)}."""
    adapter = get_adapter("maxtext")
    plan = meshmod.MeshPlan(d, 1, "context")
    mesh = meshmod.make_mesh(plan)
    spec = {"q": P(None, "context", None, None), "k": P(None, "context", None, None),
            "v": P(None, "context", None, None), "g": P(None, "context", None),
            "beta": P(None, "context", None), "h0": P(None, None, None, None)}
    names = list(fns)
    xs = {n: jax.device_put(x[n], NamedSharding(mesh, spec[n])) for n in spec}

    def body(xl):
        return tuple(adapter.call(fns[n], xl, chunk=CHUNK, l2norm=True, compute_dtype=jnp.float32,
                                  cp_axis="context") for n in names)

    out_specs = tuple((spec["v"], spec["h0"]) for _ in names)
    f = jax.jit(jax.shard_map(body, mesh=mesh, in_specs=(spec,), out_specs=out_specs, check_vma=False))
    res = jax.device_get(f(xs))
    return {n: (np.asarray(o), np.asarray(h)) for n, (o, h) in zip(names, res)}


@pytest.fixture(scope="module")
def judged(tools, tmp_path_factory):
    """(verdict line per output key, the outputs) for every variant and the
    correct functions on both meshes, judged by one `gdn-parity check`."""
    d = tmp_path_factory.mktemp("variants")
    fx = synth(tools, d / "in.h5", SHAPE, "--h0", "--slow-gates", "--seed", "3", chunk=CHUNK)
    x = as_arrays(fx)
    common = dict(matmul_precision="highest", compute_dtype="float32", platform="cpu")
    adapter = get_adapter("maxtext")
    o, ht = meshmod.run_stock(lambda xs: adapter.call(impls.chunk_gated_delta_rule, xs, chunk=CHUNK,
                                                      l2norm=True, compute_dtype=jnp.float32), x)
    outputs = {"jax_scan": dict(o=o, ht=ht, implementation="scan", devices=1, **common)}
    fns = dict(CORRECT)
    fns.update({n: broken.variant(n) for n in EXPECT})
    got = {}
    for D in MESHES:
        for n, (o, ht) in _run_all(fns, x, D).items():
            got[_key(n, D)] = (o, ht)
            prefix = "hillis-steele" if n == "ok-hs" or broken.PREFIX.get(n) else "associative-scan"
            outputs[_key(n, D)] = dict(o=o, ht=ht, implementation="affine-prefix", devices=D,
                                       prefix=prefix, **common)
    path = d / "judged.h5"
    write_results(str(path), fx, CHUNK, outputs)
    r = tools.run("fixture", ["regen", str(path), "--force"], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    res = d / "results.json"
    r = tools.run("parity", ["check", "--fixture", str(path), "--chunk", str(CHUNK), "--devices",
                             ",".join(map(str, MESHES)), "--shard", "tokens", "--json", str(res),
                             "--quiet"], capture_output=True, text=True)
    assert r.returncode in (0, 1), r.stderr  # 1: the variants fail, as they must
    lines, _ = verdict_lines(str(res), list(outputs))
    return {k: ln for k, ln in zip(outputs, lines)}, got, path


def test_correct_functions_pass(judged):
    lines = judged[0]
    for k in ["jax_scan"] + [_key(n, D) for n in CORRECT for D in MESHES]:
        assert lines[k].startswith("PASS "), lines[k]


@pytest.mark.parametrize("name", sorted(EXPECT))
def test_variant_fails_where_observable(judged, name):
    lines = judged[0]
    for D, fails in zip(MESHES, EXPECT[name]):
        want = "FAIL " if fails else "PASS "
        assert lines[_key(name, D)].startswith(want), f"{name} on {D} devices: {lines[_key(name, D)]}"


def test_final_from_replay_differs_by_round_off_only(judged):
    # Not vacuous: ht is not bit-identical to the correct run's, yet within
    # float32 round-off of it (o is the same computation, bit for bit).
    got = judged[1]
    for D in MESHES:
        o, ht = got[_key("final-from-replay", D)]
        o_ok, ht_ok = got[_key("ok-assoc", D)]
        np.testing.assert_array_equal(o, o_ok)
        rel = np.linalg.norm(ht - ht_ok) / np.linalg.norm(ht_ok)
        assert 0 < rel < 1e-5, rel


def test_variants_are_named_as_the_c_catalogue(tools):
    # every C-named JAX variant is a row of kernels/kern_mutant.h: the CLI
    # lists the catalogue when given an unknown name
    r = tools.run("parity", ["sweep", "--grid", "/dev/null", "--mutant", "no-such-mutant"],
                  capture_output=True, text=True)
    assert r.returncode == 2 and "one of:" in r.stderr, r.stderr
    catalogue = r.stderr.split("one of:")[1].split(")")[0].replace(",", " ").split()
    assert set(broken.C_NAMED) <= set(catalogue), sorted(set(broken.C_NAMED) - set(catalogue))
    with pytest.raises(ValueError, match="no broken variant 'gqa_tile'.*carry-zero"):
        broken.variant("gqa_tile")


def _errors(res, key_of):
    """(o, ht) rel_fro against the oracle at D = 2 and 4, of the output
    key_of(D) names in `gdn-parity check`'s results."""
    v = []
    # the cases of MESHES only: check adds the device counts the outputs
    # declare (jax_scan's 1), each output judged in its own case
    for c in sorted((c for c in res["cases"] if c["devices"] in MESHES), key=lambda c: c["devices"]):
        imp = c["impls"][key_of(c["devices"])]
        v += [imp["o"]["rel_fro"], imp["ht"]["rel_fro"]]
    return v


def _same(a, b):
    # equal to 1e-3 relative, or both round-off (float32: the correct runs
    # are at 1.5e-7 .. 2.1e-7 here; 1e-5 is 50x that, and every bug that
    # shows is >= 4.5e-3)
    return all((x < 1e-5 and y < 1e-5) or abs(x - y) <= 1e-3 * max(x, y) for x, y in zip(a, b))


def test_each_variant_is_its_c_mutant(tools, judged, tmp_path):
    """The same bug as the C row of its name: on the same fixture, the C
    affine-prefix with --mutant NAME and the JAX variant are equally far from
    the MPFR oracle (o and ht, D = 2 and 4), to 1e-3 relative where the bug
    shows -- and no other C-named row matches (the negative control)."""
    path = judged[2]
    c_err, jax_err = {}, {}
    for name in EXPECT:
        res = tmp_path / f"{name}.json"
        prefix = ["--prefix", broken.PREFIX[name]] if name in broken.PREFIX else []
        r = tools.run("parity", ["check", "--fixture", str(path), "--chunk", str(CHUNK), "--devices",
                                 ",".join(map(str, MESHES)), "--shard", "tokens", "--mutant", name,
                                 "--json", str(res), "--quiet", *prefix], capture_output=True, text=True)
        assert r.returncode in (0, 1), r.stderr
        doc = json.loads(res.read_text())
        c_err[name] = _errors(doc, lambda d: "affine-prefix")
        jax_err[name] = _errors(doc, lambda d, n=name: _key(n, d))
    for name in EXPECT:
        matches = [m for m in EXPECT if _same(jax_err[name], c_err[m])]
        assert matches == [name], f"{name}: JAX {jax_err[name]} matches C {matches}; C {c_err[name]}"
