"""assert_gdn_parity: the gate in three lines of an upstream test file.

    from gdn_parity_jax import assert_gdn_parity
    from maxtext.models.qwen3 import jax_chunk_gated_delta_rule

    def test_gdn_context_parallel_parity():
        assert_gdn_parity(jax_chunk_gated_delta_rule, devices=(1, 2, 4, 8))

Each shape is one ``gdn-parity-jax run`` in a fresh Python process (XLA fixes
the number of host devices when jax is first imported, so a test process that
already imported jax cannot grow its own), with this process's ``sys.path`` as
its PYTHONPATH so the function imports there as here.  On failure the
AssertionError carries the verdict lines and the folder holding the fixture
and reports (kept); on success that folder is removed.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile

DEFAULT_SHAPES = ((1, 128, 2, 16),)


def function_spec(fn) -> str:
    """MODULE:FUNCTION for a function (or the string itself)."""
    if isinstance(fn, str):
        return fn
    mod, qual = getattr(fn, "__module__", None), getattr(fn, "__qualname__", None)
    if not mod or not qual or "<locals>" in qual or "<lambda>" in qual or mod == "__main__":
        raise ValueError(f"assert_gdn_parity: {fn!r} is not importable by name "
                         "(define it at module level, or pass 'module:function')")
    return f"{mod}:{qual}"


def _shape(s) -> str:
    return s if isinstance(s, str) else ",".join(str(int(x)) for x in s)


def assert_gdn_parity(fn, cp_fn=None, shapes=DEFAULT_SHAPES, devices=(1, 2, 4, 8), *,
                      chunk: int = 16, h0: bool = True, dtype: str = "float32",
                      gates: str = "slow", seed: int = 0, signature: str = "maxtext",
                      cp_prefix: str | None = None, fsdp: int = 1, cp_axis: str | None = None,
                      grad: bool = False, extra=(), out_dir: str | None = None,
                      timeout: float = 1800) -> list[str]:
    """Runs the gate on every shape; raises AssertionError with the verdict
    lines if any output is out of tolerance or the run fails.  Returns the
    verdict lines of a passing run.

    fn: the stock function (or 'module:function'); cp_fn: the per-shard
    context-parallel function (default: fn itself when it takes cp_axis).
    gates: 'slow' (default: long memory, state crosses every seam) or 'init'.
    grad: also judge the functions' jax.vjp gradients (run --grad)."""
    base = ["run", "--impl", function_spec(fn), "--devices", ",".join(map(str, devices)),
            "--chunk", str(chunk), "--dtype", dtype, "--gates", gates, "--seed", str(seed),
            "--signature", signature, "--fsdp", str(fsdp)]
    if cp_fn is not None:
        base += ["--cp", function_spec(cp_fn)]
    if cp_prefix:
        base += ["--cp-prefix", cp_prefix]
    if cp_axis:
        base += ["--cp-axis", cp_axis]
    if h0:
        base.append("--h0")
    if grad:
        base.append("--grad")
    env = dict(os.environ)
    env.pop("XLA_FLAGS", None)
    env["PYTHONPATH"] = os.pathsep.join(p for p in sys.path if p)
    lines = []
    for s in shapes:
        out = out_dir or tempfile.mkdtemp(prefix="gdn-parity-")
        os.makedirs(out, exist_ok=True)
        cmd = [sys.executable, "-m", "gdn_parity_jax", *base, "--shape", _shape(s), "--out", out,
               *map(str, extra)]
        r = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=timeout)
        verdicts = [ln.strip() for ln in r.stdout.splitlines()
                    if ln.strip().startswith(("PASS ", "FAIL ", "MISSING "))]
        if r.returncode != 0:
            what = {1: "out of tolerance", 2: "bad usage or input", 3: "internal error"}.get(
                r.returncode, f"exit {r.returncode}")
            detail = "\n".join(verdicts) or (r.stderr.strip()[-4000:] or r.stdout.strip()[-4000:])
            raise AssertionError(f"gdn parity, shape {_shape(s)}: {what}\n{detail}\n"
                                 f"(fixture and reports kept in {out})")
        lines += [f"{_shape(s)}: {v}" for v in verdicts]
        if out_dir is None:
            shutil.rmtree(out, ignore_errors=True)
    return lines
