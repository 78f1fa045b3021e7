#!/usr/bin/env bash
# The "bit for bit unchanged" check for work on the kernels' speed: hashes of
# every float kernel output (tests/kernels/kern_hashes.c) at 1 and 2 threads
# of this build must agree with each other and, with BASE=FILE, with the
# lines a previous build printed (kern_hashes 2 > FILE before the change),
# which must be a prefix of today's (new configurations come last).
#   scripts/kern_hashes.sh [BUILD_DIR]        (default build)
set -euo pipefail
b=${1:-build}
exe="$b/tests/kernels/kern_hashes"
[[ -x $exe ]] || { echo "kern_hashes.sh: $exe not built (ninja -C $b)" >&2; exit 2; }
t=$(mktemp -d); trap 'rm -rf "$t"' EXIT
"$exe" 1 > "$t/1"; "$exe" 2 > "$t/2"
diff -u "$t/1" "$t/2" || { echo "kern_hashes.sh: 1 and 2 threads differ" >&2; exit 1; }
if [[ -n ${BASE:-} ]]; then
  # Configurations added since BASE are printed after the old ones (e.g. the
  # --shard tokens pass): BASE must be a prefix of today's lines.
  head -n "$(wc -l < "$BASE")" "$t/2" | diff -u "$BASE" - ||
    { echo "kern_hashes.sh: differs from $BASE" >&2; exit 1; }
  extra=$(( $(wc -l < "$t/2") - $(wc -l < "$BASE") ))
  (( extra > 0 )) && echo "kern_hashes.sh: $extra configurations new since $BASE"
fi
echo "kern_hashes.sh: $(wc -l < "$t/2") configurations, identical at 1 and 2 threads${BASE:+ and to $BASE}"
