#!/usr/bin/env bash
# Installs what embshard needs (Debian 12 packages), builds it into ./build and installs the
# Python package into a cached virtual environment (scripts/setup_python.sh prints its python).
# Idempotent: packages already present are not reinstalled; the build is incremental.
# CI=true turns warnings into errors.
set -euo pipefail
cd "$(dirname "$0")/.."

PACKAGES=(cmake ninja-build g++ ccache clang-format clang-tidy nlohmann-json3-dev libsimdjson-dev zlib1g-dev libgtest-dev libgmock-dev
          clang libclang-rt-14-dev libopenmpi-dev openmpi-bin
          libtorch-dev libopenblas0    # libtorch: the learn module only; openblas: see deps-probe.md
          coinor-libcbc-dev            # CBC: the MILP solver of src/milp
          chromium)                    # headless browser: the HTML reports' browser test

missing=()
for p in "${PACKAGES[@]}"; do
  dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing ${missing[*]}"
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

werror=OFF
[ "${CI:-false}" = "true" ] && werror=ON
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DEMBSHARD_WERROR=$werror >/dev/null
cmake --build build -j2
# The Python package (python/embshard) into its cached virtual environment (docs/python.md).
bash scripts/setup_python.sh > /dev/null
