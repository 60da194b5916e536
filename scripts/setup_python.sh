#!/usr/bin/env bash
# Installs the embshard Python package (python/embshard, the pybind11 module embshard._embshard)
# into a virtual environment and prints that environment's python on the last line.
#   bash scripts/setup_python.sh              # light: the package + pytest
#   bash scripts/setup_python.sh --torchrec   # also torch, fbgemm-gpu-cpu and torchrec 1.9.2
# The environment lives outside the clone, under ${EMBSHARD_CACHE:-~/.cache/embshard}, named by a
# hash of the pinned requirements, so later runs (and fresh CI clones) reuse its ~5.5 GB of wheels;
# pip's own cache sits beside it. The package itself is reinstalled every run (it is small).
# Uses Debian's python3 (with python3-venv) unless PYTHON names another interpreter.
set -euo pipefail
cd "$(dirname "$0")/.."

with_torchrec=0
[ "${1:-}" = "--torchrec" ] && with_torchrec=1

PY=${PYTHON:-/usr/bin/python3}
missing=()
for p in python3-venv python3-dev; do dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p"); done
if [ -z "${PYTHON:-}" ] && [ ${#missing[@]} -gt 0 ]; then
  echo "setup_python: installing ${missing[*]}" >&2
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  $SUDO apt-get update -qq >&2
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2
fi

cache=${EMBSHARD_CACHE:-$HOME/.cache/embshard}
pins=python/requirements-base.txt
[ $with_torchrec = 1 ] && pins="$pins python/requirements-torchrec.txt python/requirements-torchrec-nodeps.txt"
key=$(cat $pins | sha256sum | cut -c1-12)
venv=$cache/venv-$key
export PIP_CACHE_DIR=$cache/pip PIP_DISABLE_PIP_VERSION_CHECK=1
if [ ! -f "$venv/.complete" ]; then
  echo "setup_python: creating $venv" >&2
  rm -rf "$venv"
  "$PY" -m venv "$venv"
  "$venv/bin/pip" install -q -r python/requirements-base.txt >&2
  if [ $with_torchrec = 1 ]; then
    "$venv/bin/pip" install -q -r python/requirements-torchrec.txt >&2
    "$venv/bin/pip" install -q --no-deps -r python/requirements-torchrec-nodeps.txt >&2
  fi
  touch "$venv/.complete"
fi
if [ "${EMBSHARD_SKIP_PACKAGE:-0}" != 1 ]; then
  # build/python keeps the package's CMake build, so a second install only rebuilds what changed.
  # pip's verbose output goes to a log; scripts/pip_progress.py shows the compilation's steps.
  log=$cache/pip-install-$key.$$.log  # one per run: concurrent installs do not share it
  if ! CMAKE_BUILD_PARALLEL_LEVEL=${CMAKE_BUILD_PARALLEL_LEVEL:-$(nproc)} \
       "$venv/bin/pip" install -v --no-build-isolation . 2>&1 | "$PY" scripts/pip_progress.py "$log"; then
    tail -n 60 "$log" >&2
    echo "setup_python: pip install . failed; its whole output is in $log" >&2
    exit 1
  fi
  rm -f "$log"
fi
echo "$venv/bin/python"
