#!/usr/bin/env bash
# Runs clang-tidy with the house checks (.clang-tidy) over the C++ sources of the build's
# compile_commands.json and fails naming each finding. What the main build compiles is covered:
# include, src, apps, tests and bench — not the CUDA sources, not the training module's src/learn
# and tests/learn (clang 14 cannot parse Debian's libtorch 1.13 headers with GCC 12's library),
# and not python/bindings or fuzz, which the main build does not compile (their own builds do).
# Usage: scripts/check_tidy.sh [BUILD_DIR]  (default build). Exit 77 without clang-tidy (a skip;
# scripts/test.sh says so), except under CI=true where a missing tool fails. Matching no file is
# a failure, never a pass.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd -P)"
build="${1:-$root/build}"
tidy="$(command -v run-clang-tidy-14 || command -v run-clang-tidy || true)"
if [[ -z "$tidy" ]]; then
  echo "check_tidy: run-clang-tidy is not installed (scripts/setup.sh installs clang-tidy)" >&2
  [[ "${CI:-}" == "true" ]] && exit 1
  exit 77
fi
[[ -f "$build/compile_commands.json" ]] || { echo "check_tidy: no $build/compile_commands.json" >&2; exit 1; }
escaped="$(printf '%s' "$root" | sed 's/[][\.*^$+?(){}|/]/\\&/g')"
pattern="^$escaped/(?!(src|tests)/learn/)(include|src|apps|tests|bench)/.*\.(cpp|cc)$"
matched="$(python3 - "$build/compile_commands.json" "$pattern" <<'PY'
import json, re, sys
entries = json.load(open(sys.argv[1]))
print(sum(1 for e in entries if re.search(sys.argv[2], e["file"])))
PY
)"
if [[ "$matched" -eq 0 ]]; then
  echo "check_tidy: no source of $build/compile_commands.json lies under $root" >&2
  exit 1
fi
log="$(mktemp)"
trap 'rm -f "$log"' EXIT
# -Wno-unknown-warning-option: GCC's flags (-Wno-restrict) in the compile commands.
if ! "$tidy" -p "$build" -quiet -j "$(nproc)" -extra-arg=-Wno-unknown-warning-option "$pattern" >"$log" 2>&1; then
  sed 's/\x1b\[[0-9;]*m//g' "$log" | grep -E "(warning|error): " | sort -u >&2 || true
  echo "check_tidy: findings above (.clang-tidy lists the checks)" >&2
  exit 1
fi
echo "check_tidy: $matched files, no findings"
