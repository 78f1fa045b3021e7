"""`run` on another recurrence than Gated DeltaNet (``--recurrence kda``).

Kimi Delta Attention gates each key channel: g is (B, T, Hv, Dk).  The
steps differ from GDN's in three places, each a function here:

* which recurrence a run judges (:func:`resolve`): ``--recurrence``, else
  the signature's (``fla-kda`` is KDA's), else a --from-fixture file's root
  attribute ``recurrence``; a disagreement is refused (exit 2), and so is
  what the KDA path does not do yet (the audit, the GDN-only options of
  `gdn-parity check`);
* the fixture (:func:`write_fixture`): the synthetic or given KDA file
  copied whole (its inputs, attributes and recurrence untouched) with every
  result as ``/outputs/<name>``; no other /outputs or /oracle; with --grad
  the cotangents as /cotangents (do, and dht with h0) and each output's
  jax.vjp gradients as /outputs/<name>/grads (dg per channel, (B, T, Hv,
  Dk)), which the check judges against the KDA VJP oracle;
* the verdict (:func:`judge`): ``gdn-parity check FILE --recurrence kda``,
  which judges each output against the KDA oracle (no `gdn-fixture regen`:
  it refuses KDA files; the check computes its own oracle), its document
  read by verdict_recur.
"""

from __future__ import annotations

import os
import shutil
import sys

from . import captured, paths
from .common import EXIT_INTERNAL, UsageError, _Exit
from .text import show

RECURRENCES = ("gdn", "kda")
# The recurrence a built-in signature's functions compute.
SIGNATURE_RECURRENCE = {"fla-kda": "kda"}
# `gdn-parity check` options the recurrence check takes (parity_recur_check_cli.c).
CHECK_OPTIONS = ("--json", "--oracle-bits", "--threads", "--max-bytes", "--quiet", "--verbose",
                 "--reproducible", "--report", "--junit", "--summary")


def resolve(args) -> str:
    """The run's recurrence; UsageError for a contradiction or for what a
    KDA run cannot do."""
    from .args import PASS_THROUGH
    implied = SIGNATURE_RECURRENCE.get(args.signature)
    rec = args.recurrence or implied or _file_recurrence(args.from_fixture) or "gdn"
    if implied and rec != implied:
        raise UsageError(f"--recurrence {rec}: --signature {args.signature} computes {implied} "
                         f"(drop --recurrence, or give --recurrence {implied})")
    have = _file_recurrence(args.from_fixture)
    if have is not None and have != rec:
        raise UsageError(f"--from-fixture {show(args.from_fixture)}: a {have} fixture, but the run "
                         f"judges {rec} (--recurrence {rec})")
    if rec == "gdn":
        return rec
    if getattr(args, "audit", False):
        raise UsageError(f"--audit: the audit knows the gdn recurrence only (drop --audit for {rec})")
    if getattr(args, "layout", None) == "global":
        raise UsageError(f"--layout global: not for {rec} runs yet (use --layout shard)")
    for opt, _ in PASS_THROUGH:
        v = getattr(args, opt[2:].replace("-", "_"))
        if v and opt not in CHECK_OPTIONS:
            raise UsageError(f"{opt}: gdn-parity check of a {rec} fixture does not take it "
                             f"(it takes {', '.join(CHECK_OPTIONS)})")
    return rec


def _file_recurrence(path):
    """A fixture's root attribute recurrence ("gdn" when absent), or None
    when there is no readable file (its error comes later, from verify)."""
    if not path or not os.path.isfile(path):
        return None
    try:
        import h5py
        with h5py.File(path, "r") as f:
            v = f.attrs.get("recurrence", "gdn")
    except Exception:  # noqa: BLE001  unreadable: gdn-fixture verify says why
        return None
    return v.decode() if isinstance(v, bytes) else str(v)


def check_file(path):
    """A --from-fixture file of another recurrence, before any function runs
    (`gdn-fixture verify` reads GDN files only; `gdn-parity check` reads the
    whole file again): its inputs readable, with the shapes KDA's inputs
    have; UsageError naming the file and the array otherwise."""
    try:
        import h5py
        with h5py.File(path, "r") as f:
            shapes = {n: tuple(f["inputs"][n].shape) for n in ("q", "k", "v", "g", "beta", "h0")
                      if n in f["inputs"]}
    except Exception as exc:  # noqa: BLE001  unreadable: say so, exit 2
        raise UsageError(f"--from-fixture {show(path)}: not a readable fixture ({show(exc)})") from None
    missing = [n for n in ("q", "k", "v", "g", "beta") if n not in shapes]
    if missing or len(shapes["q"]) != 4 or len(shapes["v"]) != 4:
        raise UsageError(f"--from-fixture {show(path)}: inputs missing or not of rank 4: "
                         f"{missing or [shapes['q'], shapes['v']]}")
    B, T, Hk, Dk = shapes["q"]
    Hv, Dv = shapes["v"][2], shapes["v"][3]
    want = {"k": (B, T, Hk, Dk), "g": (B, T, Hv, Dk), "beta": (B, T, Hv), "h0": (B, Hv, Dk, Dv)}
    for n, w in want.items():
        if n in shapes and shapes[n] != w:
            raise UsageError(f"--from-fixture {show(path)}: inputs/{n} has shape {shapes[n]}; "
                             f"expected {w}")


def write_fixture(path, source, outputs, cotangents=None):
    """The fixture at `path`: the input file `source` copied, its own
    outputs, oracle and cotangents dropped, each of `outputs` ({name: {o,
    ht, attrs..., grads (with cotangents)}}) added, and with `cotangents`
    ({do, dht}) the cotangents and each output's gradients.  Built under a
    temporary name and renamed over the target when complete.  Returns
    {output: captured.findings}."""
    import h5py
    import numpy as np

    from . import gdn_fixture_capture as cap
    from .signatures import to_numpy
    target = paths.output_target("the fixture", path)
    stage = os.path.join(os.path.dirname(target) or ".", f".{os.path.basename(target)}.partial")
    found, grads = {}, {}
    try:
        shutil.copyfile(source, stage)
        with h5py.File(stage, "r+") as f:
            for grp in ("outputs", "oracle", "cotangents"):
                if grp in f:
                    del f[grp]
            shape = cap._file_shape(f)
            go = f.create_group("outputs")
            for name, spec in outputs.items():
                spec, notes = dict(spec), []
                grads[name] = spec.pop("grads", None)
                for t in ("o", "ht"):
                    spec[t], note = captured.store(to_numpy(spec.get(t)))
                    if note:
                        notes.append(f"{t} {note}")
                if spec["ht"] is not None and spec["ht"].dtype != np.float32:
                    spec["ht"] = spec["ht"].astype(np.float32)
                found[name] = captured.findings(dict(spec, grads=grads[name], notes=notes))
                o, ht = spec.pop("o"), spec.pop("ht")
                cap._write_output(go, name, o, ht, spec, shape, "gzip")
        if cotangents is not None:
            cap.write_cotangents(stage, cotangents["do"], cotangents.get("dht"))
            for name, g in grads.items():
                if g is not None:
                    cap.write_gradients(stage, name, g)
        os.replace(stage, target)
    finally:
        if os.path.exists(stage):
            os.unlink(stage)
    return found


def judge(args, tools, path, rec, chunk, T, devices, names, found) -> int:
    """gdn-parity check FILE --recurrence REC; the verdict lines; the exit
    status: check's, but never 0 without a readable document saying PASS
    for every output, nor with a non-finite value in any output."""
    ours = [d for d in devices if T % d == 0] or [1]
    results = args.json or os.path.join(args.out, "results.json")
    cmd = ["check", path, "--recurrence", rec, "--chunk", str(chunk),
           "--devices", ",".join(map(str, ours)), "--json", results]
    for opt in CHECK_OPTIONS[1:]:
        v = getattr(args, opt[2:].replace("-", "_"))
        if v is True:
            cmd.append(opt)
        elif v:
            cmd += [opt, str(v)]
    sys.stdout.flush()
    r = tools.run("parity", cmd)
    code = r.returncode
    if code in (0, 1):
        from .verdict import ResultsError
        from .verdict_recur import recurrence_lines
        try:
            lines, ok = recurrence_lines(results, names, found)
        except ResultsError as exc:
            raise _Exit(EXIT_INTERNAL, f"gdn-parity check exited {code} but {exc}") from None
        print(f"gdn-parity-jax: the captured outputs (against the {rec} oracle):")
        for line in lines:
            print("  " + line)
        if code == 0 and not ok:
            code = 1
    print(f"gdn-parity-jax: {'PASS' if code == 0 else 'FAIL'} (exit {code}); "
          f"fixture {show(path)}, results {show(results)}", flush=True)
    return code
