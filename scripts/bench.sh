#!/usr/bin/env bash
# Every speed figure of gdn-parity with its peer and ratio, in one run:
#
#   scripts/bench.sh [--build DIR] [--out DIR] [--quick] [--no-long]
#
#  1. bench/peer_torch.py --selftest: the PyTorch peer (HF chunked reference,
#     CPU, all cores) at B=1 T=65536 H=4 D=128, after checking it against the
#     token recurrence.
#  2. bench_kernels --torch: the float32 kernels against OpenBLAS sgemm 512^3
#     (the practical peak) and the torch peer's time (the ratio).
#  3. bench_oracle: the MPFR oracle against the bare MPFR mul+add floor, the
#     double-double tier against its floor and against MPFR, the long-context
#     projection, and the mpmath peer (bench/peer_mpmath.py).
#  4. The long case, `gdn-parity --shape 1,1048576,1,128 --devices 1,4,16,64`:
#     wall time and peak memory (unless --no-long; about 10 minutes on 2 cores).
# Writes OUT/{torch,kernels,oracle,long}.json and OUT/bench.json (all of them
# in one document, with the machine).  --quick: T = 8192 for 1 and 2, short
# oracle runs, no long case (a smoke run of this script, not figures).
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
    -h|--help) sed -n '2,20p' "$0"; exit 0 ;;
    *) echo "scripts/bench.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done
py=/usr/bin/python3 # Debian's, where python3-torch and python3-mpmath live
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
kT=() oargs=()
if ((quick)); then kT=(--T 8192); oargs=(--T 64 --dd-T 256 --proj-T 256 --reps 1); fi

echo "== 1/4 PyTorch peer"
"$py" bench/peer_torch.py --selftest --threads "$threads" "${kT[@]}" --json "$out/torch.json"
echo "== 2/4 float32 kernels (bench_kernels)"
"$build/bench/bench_kernels" "${kT[@]}" --threads "$threads" --torch "$out/torch.json" \
  --json "$out/kernels.json"
echo "== 3/4 oracle (bench_oracle, with the mpmath peer)"
"$build/bench/bench_oracle" "${oargs[@]}" --python "$py" --json "$out/oracle.json"
if ((long)); then
  echo "== 4/4 the long case"
  /usr/bin/time -f '%e %M' -o "$out/long.time" "$build/parity/gdn-parity" \
    --shape 1,1048576,1,128 --devices 1,4,16,64 --threads "$threads" \
    --json "$out/long-results.json" --report "$out/long-report.html" | tail -3
  read -r wall rss_kb <"$out/long.time"
  "$py" - "$out" "$wall" "$rss_kb" <<'EOF'
import json, os, sys
out, wall, rss_kb = sys.argv[1], float(sys.argv[2]), int(sys.argv[3])
r = json.load(open(os.path.join(out, "long-results.json")))
doc = {"command": r["command"], "pass": r["pass"], "wall_seconds": wall,
       "peak_rss_bytes": rss_kb * 1024, "memory": r.get("memory"), "timing": r.get("timing"),
       "oracle": r.get("oracle"), "goal_seconds": 900}
print(f"long case: {wall / 60:.1f} min (goal 15), peak RSS {rss_kb / 1048576:.2f} GiB, "
      f"oracle {r['oracle']['tier']} certified {r['oracle']['certified_bits']} bits, "
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
for part in ["torch", "kernels", "oracle"] + (["long"] if long else []):
    doc[part] = json.load(open(os.path.join(out, part + ".json")))
tmp = os.path.join(out, ".bench.json.tmp")
with open(tmp, "w") as f:
    json.dump(doc, f, indent=2)
    f.write("\n")
os.replace(tmp, os.path.join(out, "bench.json"))
print(f"scripts/bench.sh: wrote {os.path.join(out, 'bench.json')}")
EOF
