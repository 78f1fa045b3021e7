#!/usr/bin/env bash
# Every speed figure of gdn-parity with its peer and ratio, in one run:
#
#   scripts/bench.sh [--build DIR] [--out DIR] [--quick] [--no-long]
#
#  1. bench/peer_torch.py --selftest: the PyTorch peer (HF chunked reference,
#     CPU, all cores) at B=1 T=65536 H=4 D=128, after checking it against the
#     token recurrence.
#  2. bench_kernels --torch: the float32 kernels against OpenBLAS sgemm 512^3
#     (the practical peak) and the torch peer's time (the ratio); the GEMM
#     beside sgemm on the chunk's own shapes and the subnormals' cost at the
#     model's initial gates (both in CPU time, interleaved).
#  3. bench_oracle: the MPFR oracle against the bare MPFR mul+add floor, the
#     double-double tier against its floor and against MPFR, the long-context
#     projection, and the mpmath peer (bench/peer_mpmath.py).
#  4. The whole process at the kernels' shape (B=1 T=32768 H=4 D=128, slow
#     gates, IEEE): `gdn-parity --oracle none --devices 1` (inputs, the scan
#     and one affine-prefix run -- twice the peer's kernel work -- metrics,
#     verdict) against the PyTorch peer's whole process (import, inputs, one
#     scan), CPU time (user + system) and wall, each from /usr/bin/time, each
#     side run twice alternating and the lower CPU time kept; goal: ours
#     under 0.5 of the peer's CPU.  Also, for information, the default
#     --devices 1,2,4,8 (the scan and four affine-prefix runs: five times the
#     peer's kernel work).
#  5. The long case, `gdn-parity --shape 1,1048576,1,128 --devices 1,4,16,64`:
#     wall and CPU time, the tool's own phase times, peak memory (unless
#     --no-long; 5 to 10 minutes on 2 cores).  Goals: 5 minutes on 2 idle
#     cores, 3 GiB resident.
# Every figure is printed with its peer (or goal) and the ratio, and again
# in a summary at the end.  Writes OUT/{torch,kernels,oracle,whole,long}.json
# and OUT/bench.json (all of them in one document, with the machine and the
# load average).  --quick: T = 8192 for 1, 2 and 4, short oracle runs, no
# long case (a smoke run of this script, not figures).  On a shared machine
# wall times are inflated by the load; CPU times much less so.
# Needs scripts/deps.sh --bench and a build (meson setup build && ninja -C build).
# Run on an otherwise idle machine: the figures are only as quiet as it is.
set -euo pipefail
cd "$(dirname "$0")/.."
build=build out=out/bench quick=0 long=1
while (($#)); do
  case "$1" in
    --build) build=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --quick) quick=1; long=0; shift ;;
    --no-long) long=0; shift ;;
    -h|--help) sed -n '2,34p' "$0"; exit 0 ;;
    *) echo "scripts/bench.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done
py=$PWD/.venv-bench/bin/python # scripts/deps.sh --bench: torch 2.13.0+cpu and mpmath, pinned
[[ -x $py ]] || { echo "scripts/bench.sh: $py missing (scripts/deps.sh --bench)" >&2; exit 2; }
for x in "$build/bench/bench_kernels" "$build/bench/bench_oracle" "$build/parity/gdn-parity"; do
  [[ -x $x ]] || { echo "scripts/bench.sh: $x not built (meson setup $build && ninja -C $build)" >&2; exit 2; }
done
"$py" -c 'import torch, mpmath' 2>/dev/null ||
  { echo "scripts/bench.sh: $py lacks torch or mpmath (scripts/deps.sh --bench)" >&2; exit 2; }
mkdir -p "$out"
threads=$(nproc)
# OpenBLAS's idle threads spin after a call; make them sleep soon so the
# sgemm peak measured between kernel figures does not steal their cores.
export OPENBLAS_THREAD_TIMEOUT=4
kT=() oargs=() wT=32768
if ((quick)); then kT=(--T 8192); oargs=(--T 64 --dd-T 256 --proj-T 256 --reps 1); wT=8192; fi

echo "== 1/5 PyTorch peer"
"$py" bench/peer_torch.py --selftest --threads "$threads" "${kT[@]}" --json "$out/torch.json"
echo "== 2/5 float32 kernels (bench_kernels)"
"$build/bench/bench_kernels" "${kT[@]}" --threads "$threads" --torch "$out/torch.json" \
  --subnormal-reps 5 --json "$out/kernels.json"
echo "== 3/5 oracle (bench_oracle, with the mpmath peer)"
"$build/bench/bench_oracle" "${oargs[@]}" --python "$py" --json "$out/oracle.json"
echo "== 4/5 the whole process at the kernels' shape (T=$wT), against the PyTorch peer's"
# Each side twice, alternating (peer, ours, default, peer, ...): the lower
# CPU time of the two is the figure (a shared machine only ever adds time).
whole() { # NAME DEVICES
  /usr/bin/time -f '%e %U %S %M' -o "$out/whole-$1.time" "$build/parity/gdn-parity" \
    --shape "1,$wT,4,128" --oracle none --matmul-precision ieee --gates slow --threads "$threads" \
    --devices "$2" --quiet >/dev/null
}
for rep in 1 2; do
  /usr/bin/time -f '%e %U %S %M' -o "$out/whole-torch$rep.time" "$py" bench/peer_torch.py \
    --T "$wT" --H 4 --D 128 --threads "$threads" --reps 1 >/dev/null
  whole "ours$rep" 1
  whole "default$rep" 1,2,4,8
done
"$py" - "$out" "$wT" <<'EOF'
import json, os, sys
out, T = sys.argv[1], int(sys.argv[2])
def rd(name):
    wall, user, sys_, rss = open(os.path.join(out, name)).read().split()[-4:]
    return {"wall_seconds": float(wall), "user_seconds": float(user), "sys_seconds": float(sys_),
            "cpu_seconds": float(user) + float(sys_), "peak_rss_bytes": int(rss) * 1024}
def best(stem):
    runs = [rd(f"whole-{stem}{k}.time") for k in (1, 2)]
    b = min(runs, key=lambda r: r["cpu_seconds"])
    return dict(b, runs_cpu_seconds=[r["cpu_seconds"] for r in runs],
                runs_wall_seconds=[r["wall_seconds"] for r in runs])
ours, dflt, peer = best("ours"), best("default"), best("torch")
ratio = ours["cpu_seconds"] / peer["cpu_seconds"]
doc = {"shape": f"1,{T},4,128",
       "ours": dict(ours, devices="1", kernel_runs=2), "peer_torch": dict(peer, kernel_runs=1),
       "ratio_cpu": ratio, "ratio_wall": ours["wall_seconds"] / peer["wall_seconds"], "goal_ratio_cpu": 0.5,
       "default_devices": dict(dflt, devices="1,2,4,8", kernel_runs=5,
                               ratio_cpu=dflt["cpu_seconds"] / peer["cpu_seconds"],
                               ratio_wall=dflt["wall_seconds"] / peer["wall_seconds"]),
       "load1_at_end": os.getloadavg()[0]}
print(f"whole process: gdn-parity --devices 1 (scan + one affine-prefix run) {ours['cpu_seconds']:.1f} s CPU "
      f"({ours['wall_seconds']:.1f} s wall) against the torch peer's (one scan) {peer['cpu_seconds']:.1f} s CPU "
      f"({peer['wall_seconds']:.1f} s wall): ratio {ratio:.2f} of the peer's CPU (goal 0.5)")
print(f"  the default --devices 1,2,4,8 (five kernel runs): {dflt['cpu_seconds']:.1f} s CPU "
      f"({dflt['wall_seconds']:.1f} s wall): {doc['default_devices']['ratio_cpu']:.2f} of the peer's CPU")
with open(os.path.join(out, "whole.json"), "w") as f:
    json.dump(doc, f, indent=2)
EOF
if ((long)); then
  echo "== 5/5 the long case"
  /usr/bin/time -f '%e %U %S %M' -o "$out/long.time" "$build/parity/gdn-parity" \
    --shape 1,1048576,1,128 --devices 1,4,16,64 --threads "$threads" \
    --json "$out/long-results.json" --report "$out/long-report.html" | tail -3
  read -r wall user sys_ rss_kb < <(tail -1 "$out/long.time")
  "$py" - "$out" "$wall" "$rss_kb" "$user" "$sys_" "$threads" <<'EOF'
import json, os, sys
out, wall, rss_kb = sys.argv[1], float(sys.argv[2]), int(sys.argv[3])
cpu, threads = float(sys.argv[4]) + float(sys.argv[5]), int(sys.argv[6])
r = json.load(open(os.path.join(out, "long-results.json")))
tm = (r.get("timing") or {}).get("seconds") or {}
doc = {"command": r["command"], "pass": r["pass"], "wall_seconds": wall, "cpu_seconds": cpu,
       "idle_wall_lower_bound_seconds": cpu / threads, "threads": threads,
       "peak_rss_bytes": rss_kb * 1024, "memory": r.get("memory"), "timing": r.get("timing"),
       "oracle": r.get("oracle"), "goal_seconds": 300, "goal_peak_rss_bytes": 3 << 30,
       "load1_at_end": os.getloadavg()[0]}
print(f"long case: {wall / 60:.1f} min wall (goal 5: ratio {wall / 300:.2f}), {cpu / 60:.1f} min CPU "
      f"(CPU / {threads} cores = {cpu / threads / 60:.1f} min, what {threads} idle cores would take at "
      f"best); phases: oracle "
      f"{tm.get('oracle', 0):.0f} s, kernels {tm.get('kernels', 0):.0f} s, the rest "
      f"{wall - tm.get('oracle', 0) - tm.get('kernels', 0):.0f} s (wall); peak RSS "
      f"{rss_kb / 1048576:.2f} GiB (goal 3: ratio {rss_kb / 1048576 / 3:.2f}); oracle "
      f"{r['oracle']['tier']} certified {r['oracle']['certified_bits']} bits, "
      f"{'PASS' if r['pass'] else 'FAIL'}")
with open(os.path.join(out, "long.json.tmp"), "w") as f:
    json.dump(doc, f, indent=2)
os.replace(os.path.join(out, "long.json.tmp"), os.path.join(out, "long.json"))
EOF
fi

"$py" - "$out" "$long" <<'EOF'
import json, os, platform, sys, time
out, long = sys.argv[1], sys.argv[2] == "1"
doc = {"tool": "scripts/bench.sh", "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
       "machine": {"cpus": os.cpu_count(), "platform": platform.platform(),
                   "cpu": next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo")
                                if l.startswith("model name")), "?")}}
for part in ["torch", "kernels", "oracle", "whole"] + (["long"] if long else []):
    doc[part] = json.load(open(os.path.join(out, part + ".json")))
doc["machine"]["load1_at_end"] = os.getloadavg()[0]
# The summary: each figure, its peer (or goal) and the ratio.
def g(d, *ks):
    for k in ks:
        d = d.get(k) if isinstance(d, dict) else None
    return d
rows = []
kt = g(doc, "kernels", "torch")
if kt:
    rows.append(("scan, float32 (s)", kt.get("ours_seconds"), "torch peer", kt.get("seconds"),
                 "peer / ours", kt.get("ratio_torch_over_ours")))
m = g(doc, "oracle", "mpfr_token")
if m:
    rows.append(("MPFR oracle (ns/MAC, 1 thread)", m.get("token_1thread_ns_per_mac"), "bare MPFR mul+add",
                 m.get("floor_ns_per_muladd"), "ours / floor", m.get("ratio_to_floor")))
d = g(doc, "oracle", "dd")
if d:
    rows.append(("dd oracle (ns/MAC, 1 thread)", d.get("unsampled_1thread_ns_per_mac"), "bare double-word",
                 d.get("floor_ns_per_muladd"), "ours / floor", d.get("ratio_to_floor")))
w = doc["whole"]
rows.append(("whole process, --devices 1 (CPU s)", w["ours"]["cpu_seconds"], "torch peer's process",
             w["peer_torch"]["cpu_seconds"], "ours / peer (goal 0.5)", w["ratio_cpu"]))
d = w["default_devices"]
rows.append(("whole process, devices 1,2,4,8 (CPU s)", d["cpu_seconds"], "torch peer's process",
             w["peer_torch"]["cpu_seconds"], "ours / peer (5 kernel runs)", d["ratio_cpu"]))
if long:
    L = doc["long"]
    rows.append(("long case (wall min)", L["wall_seconds"] / 60, "goal", 5, "ours / goal",
                 L["wall_seconds"] / 300))
    rows.append(("long case (CPU / cores, min)", L["idle_wall_lower_bound_seconds"] / 60, "goal", 5,
                 "ours / goal", L["idle_wall_lower_bound_seconds"] / 300))
    rows.append(("long case peak RSS (GiB)", L["peak_rss_bytes"] / 2**30, "goal", 3,
                 "ours / goal", L["peak_rss_bytes"] / 2**30 / 3))
print("\nsummary (load average %.1f at the end):" % doc["machine"]["load1_at_end"])
for name, ours, peer, pv, rname, rv in rows:
    f = lambda x: "?" if x is None else f"{x:.4g}"
    print(f"  {name:36s} {f(ours):>9s}   {peer} {f(pv)}   {rname} {f(rv)}")
tmp = os.path.join(out, ".bench.json.tmp")
with open(tmp, "w") as f:
    json.dump(doc, f, indent=2)
    f.write("\n")
os.replace(tmp, os.path.join(out, "bench.json"))
print(f"scripts/bench.sh: wrote {os.path.join(out, 'bench.json')}")
EOF
