#!/usr/bin/env python3
"""Distance between our C kernels and a captured JAX output on the same inputs.

    upstream_distance.py [--markdown] FIXTURE.h5 OUTPUT_NAME GDN_PARITY [check options...]

`gdn-parity check` measures its kernels against the fixture's /oracle.  This
writes a copy of the fixture (in a temporary folder) whose /oracle is the
captured output OUTPUT_NAME (widened to float64, exactly), so the "errors"
it reports for scan and affine-prefix are the distances between our C
kernels and that JAX run -- same inputs, same chunk; give the same device
count and prefix schedule as the JAX run (--devices D --prefix P).  Prints
one JSON line per case: devices, prefix, and rel_fro / max_abs of o and ht
for scan and affine-prefix; with --markdown, one table row per case instead
(| JAX output | C kernel | devices | o rel_fro | o max_abs | ht rel_fro |
ht max_abs |, the kernel being scan for jax_scan and affine-prefix otherwise).  A measurement aid for scripts/upstream.sh,
not a gate: it always exits 0 unless something cannot run.
"""

import json
import os
import shutil
import subprocess
import sys
import tempfile

import h5py
import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "fixtures", "python"))
import gdn_fixture_capture as cap  # noqa: E402


def _markdown(row):
    impl = "scan" if row["vs"] == "jax_scan" else "affine-prefix"
    o, h = row[impl + ".o"], row[impl + ".ht"]
    return (f"| {row['vs']} | {impl} ({row['prefix']}) | {row['devices']} | {o['rel_fro']:.2e} | "
            f"{o['max_abs']:.2e} | {h['rel_fro']:.2e} | {h['max_abs']:.2e} |")


def main(argv):
    markdown = len(argv) > 1 and argv[1] == "--markdown"
    if markdown:
        argv = argv[:1] + argv[2:]
    if len(argv) < 4:
        print(__doc__, file=sys.stderr)
        return 2
    src, name, parity, extra = argv[1], argv[2], argv[3], argv[4:]
    fx = cap.read_fixture(src)
    out = fx["outputs"][name]
    o = cap.bf16_bits_to_f32(out["o"]) if out["o_bf16"] else out["o"]
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "as-reference.h5")
        shutil.copyfile(src, path)
        stored = {n: a for n, a in fx["inputs"].items()}
        with h5py.File(path, "r+") as f:
            if "oracle" in f:
                del f["oracle"]
            if "outputs" in f:
                del f["outputs"]
            g = f.create_group("oracle")
            g.create_dataset("o", data=np.asarray(o, np.float64))
            g.create_dataset("ht", data=np.asarray(out["ht"], np.float64))
            g.attrs.create("precision_bits", 53, dtype=np.int64)
            g.attrs.create("certified_bits", 24, dtype=np.int64)
            g.attrs.create("inputs_sha256", cap.inputs_sha256(stored),
                           dtype=h5py.string_dtype(encoding="utf-8"))
        res = os.path.join(d, "r.json")
        r = subprocess.run([parity, "check", "--fixture", path, "--json", res, "--quiet", *extra],
                           capture_output=True, text=True)
        if r.returncode not in (0, 1):
            print(r.stderr, file=sys.stderr)
            return 3
        doc = json.load(open(res))
    for c in doc["cases"]:
        row = {"vs": name, "devices": c["devices"], "prefix": c["prefix"], "chunk": c["chunk"]}
        for impl in ("scan", "affine-prefix"):
            for t in ("o", "ht"):
                m = c["impls"][impl][t]
                row[f"{impl}.{t}"] = {"rel_fro": m["rel_fro"], "max_abs": m["max_abs"]}
        print(_markdown(row) if markdown else json.dumps(row))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
