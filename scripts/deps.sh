#!/usr/bin/env bash
# Installs what gdn-parity needs on Debian 12 (run as root).  Idempotent.
#   scripts/deps.sh          build + test dependencies
#   scripts/deps.sh --bench  also the benchmark peers (OpenBLAS, PyTorch, mpmath)
set -euo pipefail
pkgs=(
  gcc make pkg-config meson ninja-build git
  libmpfr-dev libgmp-dev check libjansson-dev libssl-dev
  libhdf5-dev libzip-dev
  python3 python3-numpy python3-h5py
  libxml2-utils libxml2-dev chromium
  clang libclang-rt-14-dev libomp-dev valgrind
  openmpi-bin libopenmpi-dev
)
if [[ "${1:-}" == "--bench" ]]; then
  pkgs+=(libopenblas-dev python3-torch python3-mpmath time)
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
