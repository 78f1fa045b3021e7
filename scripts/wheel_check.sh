#!/usr/bin/env bash
# The wheel as a user gets it: builds and repairs it
# (scripts/wheel.sh), installs it with its jax extra into a fresh venv for
# each Python of WHEEL_PYTHONS (default "3.11 3.12"), and from a folder
# outside the checkout, with nothing of the checkout on PATH or PYTHONPATH:
#   1. ldd: every library the installed binaries (and the libraries vendored
#      beside them) load is inside the wheel, or is glibc's (or zlib, which
#      the manylinux policy counts as the system's: auditwheel never vendors it);
#   2. the front end finds its own distribution's tools;
#   3. gdn-parity --shape 1,256,2,32 --devices 1,4      (exit 0), and
#      gdn-parity coverage --mutants carry-zero, its default grid the copy
#      the wheel ships in gdn_parity_jax/grids (exit 0);
#   4. gdn-parity-jax run on gdn_parity_jax.impls       (exit 0, PASS lines);
#   5. pytest on a test file written there that calls assert_gdn_parity:
#      the package's implementation passes, a broken one fails.
# Pythons are looked for as pyenv's ($PYENV_ROOT/versions/X.Y.*), then
# pythonX.Y on PATH; a missing one is an error, never a skip.  pip keeps its
# cache (PIP_CACHE_DIR, default ~/.cache/pip), so only the first run
# downloads jax.  Run by scripts/test.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
say() { echo "scripts/wheel_check.sh: $*"; }
die() { echo "scripts/wheel_check.sh: $*" >&2; exit 1; }

find_python() {  # X.Y -> path of an interpreter of that version
  local want=$1 c got
  local cands=()
  for c in "${PYENV_ROOT:-$HOME/.pyenv}"/versions/"$want".*/bin/python"$want"; do
    [[ -x $c ]] && cands+=("$c")
  done
  c=$(command -v "python$want" 2>/dev/null) && cands+=("$c")
  for c in "${cands[@]}"; do
    got=$("$c" -c 'import sys; print("%d.%d" % sys.version_info[:2])' 2>/dev/null) || continue
    if [[ $got == "$want" ]] && "$c" -c 'import venv, ensurepip' 2>/dev/null; then
      echo "$c"
      return 0
    fi
  done
  return 1
}

# Pins of the test runner: the dev environment's (frontend/requirements-jax.txt).
pytest_pins=$(grep -E '^(pytest|iniconfig|packaging|pluggy|Pygments)==' frontend/requirements-jax.txt)

pythons=()
for v in ${WHEEL_PYTHONS:-3.11 3.12}; do
  p=$(find_python "$v") || die "no Python $v with venv (looked in ${PYENV_ROOT:-$HOME/.pyenv}/versions/$v.*/bin and for python$v on PATH); install it (pyenv install $v) or set WHEEL_PYTHONS"
  pythons+=("$p")
done

whl=$(scripts/wheel.sh | tail -1)
whl=$root/$whl
[[ -f $whl ]] || die "scripts/wheel.sh made no wheel"
say "wheel $(basename "$whl")"

work=$(mktemp -d "${TMPDIR:-/tmp}/gdn-wheel-check.XXXXXX")
trap 'rm -rf "$work"' EXIT
[[ $work != "$root"/* ]] || die "scratch folder $work is inside the checkout"

# The test an upstream project would write: no path, no tool folder.
cat > "$work/test_parity_from_wheel.py" <<'PY'
import pytest

from gdn_parity_jax import assert_gdn_parity, broken, impls

SMALL = dict(shapes=[(1, 64, 2, 16)], chunk=16, devices=(1, 4))


def test_the_packaged_implementation_passes():
    lines = assert_gdn_parity(impls.chunk_gated_delta_rule, **SMALL)
    assert any("PASS jax_cp_d4" in ln for ln in lines), lines
    assert not any(ln.split(": ", 1)[-1].startswith("FAIL") for ln in lines), lines


def test_a_broken_implementation_fails():
    with pytest.raises(AssertionError, match="FAIL jax_cp_d4"):
        assert_gdn_parity(broken.seam_state, grad=False, **SMALL)  # a forward bug
PY

ldd_outside() {  # SITE: 0 when every non-glibc library of its wheel folders resolves inside them
  local site f line lib path bad=0
  site=$(realpath "$1")
  # glibc's own libraries, and zlib: the one other library of the manylinux
  # policy's system set that the vendored libraries (HDF5, libzip, ...) load;
  # auditwheel never vendors a library of that set.
  local glibc='^(libc|libm|libpthread|libdl|librt|libresolv|libutil|ld-linux-x86-64|libz)\.so'
  for f in "$site"/gdn_parity.scripts/* "$site"/gdn_parity.libs/*; do
    [[ -e $f ]] || continue
    while read -r line; do
      [[ $line == *"=>"* ]] || continue
      lib=${line%% =>*}
      path=${line#*=> }
      path=${path%% (*}
      [[ $path == "not found" ]] || path=$(realpath -m "$path")
      if [[ $path == "not found" ]]; then
        echo "  $f: $lib not found" >&2; bad=1
      elif [[ $path != "$site"/gdn_parity.libs/* && ! $lib =~ $glibc ]]; then
        echo "  $f: $lib from $path, outside the wheel" >&2; bad=1
      fi
    done < <(ldd "$f")
  done
  return $bad
}

check_ldd() {  # SITE of a venv with the wheel installed
  local site=$1 n
  n=$(find "$site"/gdn_parity.scripts "$site"/gdn_parity.libs -type f 2>/dev/null | wc -l)
  [[ -x $site/gdn_parity.scripts/gdn-parity && -x $site/gdn_parity.scripts/gdn-fixture ]] ||
    die "ldd: no gdn-parity and gdn-fixture binaries in $site/gdn_parity.scripts"
  ldd_outside "$site" || die "ldd: libraries from outside the wheel (above)"
  # Negative control: the same binary without the wheel's libraries beside
  # it loads the system's MPFR, HDF5, ...: the check must see that.
  local bare=$work/bare-site
  rm -rf "$bare" && mkdir -p "$bare/gdn_parity.scripts"
  cp "$site/gdn_parity.scripts/gdn-parity" "$bare/gdn_parity.scripts/"
  if ldd_outside "$bare" 2>/dev/null; then
    die "ldd: the negative control (a binary without its vendored libraries) passed the check"
  fi
  say "ldd: $n files, every library inside the wheel but glibc's and zlib (control without them: caught)"
}

for py in "${pythons[@]}"; do
  ver=$("$py" -c 'import sys; print("%d.%d" % sys.version_info[:2])')
  venv=$work/venv-$ver
  say "Python $ver ($py): fresh venv, pip install the wheel with [jax]"
  "$py" -m venv "$venv"
  # shellcheck disable=SC2086
  "$venv/bin/python" -m pip install -q --disable-pip-version-check "$whl[jax]" $pytest_pins
  site=$("$venv/bin/python" -c 'import sysconfig; print(sysconfig.get_path("platlib"))')
  [[ $site != "$root"/* ]] || die "the venv's site-packages $site is inside the checkout"
  check_ldd "$site"
  run_dir=$work/run-$ver
  mkdir -p "$run_dir"
  cp "$work/test_parity_from_wheel.py" "$run_dir/"
  # Nothing of the checkout: PATH only the venv's bin and the system's.
  (
    cd "$run_dir"
    unset PYTHONPATH GDN_PARITY_BIN_DIR GDN_PARITY_GRIDS XLA_FLAGS VIRTUAL_ENV
    export PATH="$venv/bin:/usr/local/bin:/usr/bin:/bin"
    origin=$(python -c 'from gdn_parity_jax.tools import find_tools; print(find_tools().origin)')
    [[ $origin == *"$site/gdn_parity.scripts"* ]] || die "the front end found the tools at '$origin', not its own distribution's"
    [[ $(command -v gdn-parity) == "$venv/bin/gdn-parity" ]] || die "gdn-parity on PATH is not the venv's"
    say "Python $ver: gdn-parity --shape 1,256,2,32 --devices 1,4"
    gdn-parity --shape 1,256,2,32 --devices 1,4 --quiet > gdn-parity.out ||
      { rc=$?; cat gdn-parity.out >&2; die "gdn-parity exited $rc"; }
    # the default files the tools read resolve from the installed distribution:
    # coverage's grid is the copy in gdn_parity_jax/grids (no checkout here)
    say "Python $ver: gdn-parity coverage --mutants carry-zero (the wheel's default grid)"
    gdn-parity coverage --mutants carry-zero --quiet > coverage.out 2>&1 ||
      { rc=$?; cat coverage.out >&2; die "gdn-parity coverage exited $rc"; }
    say "Python $ver: gdn-parity-jax run --impl gdn_parity_jax.impls:chunk_gated_delta_rule"
    gdn-parity-jax run --impl gdn_parity_jax.impls:chunk_gated_delta_rule --shape 1,64,2,16 \
      --chunk 16 --devices 1,4 --out run-out > run.out ||
      { rc=$?; cat run.out >&2; die "gdn-parity-jax run exited $rc"; }
    grep -q "PASS jax_cp_d4" run.out || { cat run.out >&2; die "gdn-parity-jax run: no PASS jax_cp_d4 line"; }
    say "Python $ver: pytest (assert_gdn_parity)"
    # TMPDIR: the broken run's kept fixture and reports go with $work
    TMPDIR="$work" python -m pytest -q -p no:cacheprovider test_parity_from_wheel.py
  )
done
say "the wheel installs and runs on Python ${WHEEL_PYTHONS:-3.11 3.12}"
