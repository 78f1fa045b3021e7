#!/usr/bin/env bash
# Installs what gdn-parity needs on Debian 12 (run as root).  Idempotent.
#   scripts/deps.sh          build + test dependencies
#   scripts/deps.sh --bench  also the benchmark peers: OpenBLAS from Debian, and
#                            .venv-bench/ (git-ignored) with the pinned PyTorch
#                            CPU build and mpmath of bench/requirements-bench.txt
#   scripts/deps.sh --jax    also .venv/ (git-ignored): the pinned JAX stack of
#                            frontend/requirements-jax.txt and the front end
#                            installed editable, so .venv/bin/gdn-parity-jax runs
set -euo pipefail
cd "$(dirname "$0")/.."
bench=0 jax=0
for a in "$@"; do
  case "$a" in
    --bench) bench=1 ;;
    --jax) jax=1 ;;
    *) echo "scripts/deps.sh: unknown option '$a' (--bench, --jax)" >&2; exit 2 ;;
  esac
done
pkgs=(
  gcc make pkg-config meson ninja-build git
  libmpfr-dev libgmp-dev check libjansson-dev libssl-dev
  libhdf5-dev libzip-dev libcmark-gfm-dev libcmark-gfm-extensions-dev
  python3 python3-numpy python3-h5py
  libxml2-utils libxml2-dev chromium
  clang libclang-rt-14-dev libomp-dev valgrind
  openmpi-bin libopenmpi-dev
  time bc
)
if ((bench)); then
  pkgs+=(libopenblas-dev time python3-venv)
fi
if ((jax)); then
  pkgs+=(python3-venv)
fi
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  if [[ $(id -u) -ne 0 ]]; then
    echo "scripts/deps.sh: need root to install: ${missing[*]}" >&2
    exit 2
  fi
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -q
  apt-get install -y -q --no-install-recommends "${missing[@]}"
fi

# The benchmark peers' virtual environment: torch pinned to the CPU build
# (bench/requirements-bench.txt), so the peer is the one docs/speed.md measured.
if ((bench)); then
  if [[ ! -x .venv-bench/bin/python ]]; then
    "${PYTHON:-python3}" -m venv .venv-bench
  fi
  .venv-bench/bin/python -m pip install -q --disable-pip-version-check -r bench/requirements-bench.txt
  .venv-bench/bin/python -c 'import torch, mpmath' >/dev/null
fi

# The JAX front end's virtual environment.  PYTHON (default python3) must be
# 3.11 or newer: jax 0.10.2 has no wheels for older ones.  pip installs only
# the pinned versions (a changed pin is picked up on the next run).
if ((jax)); then
  py=${PYTHON:-python3}
  if [[ ! -x .venv/bin/python ]]; then
    "$py" -m venv .venv
  fi
  .venv/bin/python -m pip install -q --disable-pip-version-check -r frontend/requirements-jax.txt
  .venv/bin/python -m pip install -q --disable-pip-version-check --no-deps -e ./frontend
  .venv/bin/gdn-parity-jax --version >/dev/null
fi
