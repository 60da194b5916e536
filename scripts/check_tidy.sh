#!/usr/bin/env bash
# Runs clang-tidy with the house checks (.clang-tidy) over every C++ source of the build's
# compile_commands.json (not the CUDA ones, not fetched dependencies, not the training module's
# src/learn and tests/learn: clang 14 cannot parse Debian's libtorch 1.13 headers with GCC 12's
# library) and fails naming each finding. Usage: scripts/check_tidy.sh [BUILD_DIR]  (default build). Exit 77 (ctest: skipped)
# without clang-tidy, except under CI=true where a missing tool fails.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build="${1:-$root/build}"
tidy="$(command -v run-clang-tidy-14 || command -v run-clang-tidy || true)"
if [[ -z "$tidy" ]]; then
  echo "check_tidy: run-clang-tidy is not installed (scripts/setup.sh installs clang-tidy)" >&2
  [[ "${CI:-}" == "true" ]] && exit 1
  exit 77
fi
[[ -f "$build/compile_commands.json" ]] || { echo "check_tidy: no $build/compile_commands.json" >&2; exit 1; }
log="$(mktemp)"
trap 'rm -f "$log"' EXIT
# -Wno-unknown-warning-option: GCC's flags (-Wno-restrict) in the compile commands.
if ! "$tidy" -p "$build" -quiet -j "$(nproc)" -extra-arg=-Wno-unknown-warning-option \
    "^$root/(include|src|apps|python/bindings|tests|bench|fuzz)/(?!.*/?learn/).*\.(cpp|cc)$" >"$log" 2>&1; then
  sed 's/\x1b\[[0-9;]*m//g' "$log" | grep -E "(warning|error): " | sort -u >&2 || true
  echo "check_tidy: findings above (.clang-tidy lists the checks)" >&2
  exit 1
fi
echo "check_tidy: $(grep -c '^clang-tidy' "$log" || true) files, no findings"
