"""set_host_devices gives jaxlib's CPU pool more threads than the devices can
block (PJRT_NPROC >= 4 x devices) and OpenBLAS one thread per call: with 8
host devices on 2 cores the default pool of 8 threads deadlocked when every
device sat in a batched triangular solve or a collective (args.py).  Each
case is a fresh process (the settings count before jax is imported)."""

import os
import subprocess
import sys

import pytest

ENV_PROBE = ("from gdn_parity_jax.args import set_host_devices; import os; set_host_devices(8); "
             "print(os.environ['PJRT_NPROC'], os.environ['OPENBLAS_NUM_THREADS'])")

# 8 devices, each a batch of 64 unit-lower-triangular 64x64 solves under
# shard_map (lapack_strsm_ffi splits such a batch over the pool), twice.
SOLVE = """
from gdn_parity_jax.args import set_host_devices
set_host_devices(8)
import jax, numpy as np
from jax.sharding import Mesh, PartitionSpec as P
from jax.scipy.linalg import solve_triangular
mesh = Mesh(np.array(jax.devices()), ("x",))
f = jax.jit(jax.shard_map(lambda a, b: solve_triangular(a, b, lower=True, unit_diagonal=True),
                          mesh=mesh, in_specs=(P("x"), P("x")), out_specs=P("x")))
a = np.tril(np.random.default_rng(0).standard_normal((512, 64, 64)).astype(np.float32) * 0.1)
b = np.ones((512, 64, 64), np.float32)
r = [f(a, b).block_until_ready() for _ in range(2)]
print("solved", float(abs(np.asarray(r[1])).max()))
"""


def _python(code, **env):
    e = {k: v for k, v in os.environ.items()
         if k not in ("XLA_FLAGS", "PJRT_NPROC", "OPENBLAS_NUM_THREADS")}
    e.update(env)
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=e,
                          timeout=300)


def test_pool_and_blas_threads_set_unless_given():
    r = _python(ENV_PROBE)
    assert r.returncode == 0, r.stderr
    nproc, blas = r.stdout.split()
    assert int(nproc) >= 32 and blas == "1"
    r = _python(ENV_PROBE, PJRT_NPROC="5", OPENBLAS_NUM_THREADS="2")  # the caller's win
    assert r.stdout.split() == ["5", "2"], r.stdout + r.stderr


def test_batched_solve_on_8_devices_finishes():
    try:
        r = _python(SOLVE)
    except subprocess.TimeoutExpired:
        pytest.fail("8 devices in a batched triangular solve did not finish in 300 s (deadlock?)")
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("solved ")
