#!/usr/bin/env bash
# Fails (exit 1, naming each file) when a C++ file differs from what clang-format makes of it
# under the house format (.clang-format). Exit 77 (ctest: skipped) without clang-format, except
# under CI=true, where its absence is a failure: scripts/setup.sh installs it.
#   bash scripts/check_format.sh          # check
#   bash scripts/check_format.sh --fix    # rewrite the files in place
set -euo pipefail
cd "$(dirname "$0")/.."

if ! command -v clang-format >/dev/null 2>&1; then
  echo "check_format: clang-format is not installed (scripts/setup.sh installs it)" >&2
  [ "${CI:-false}" = "true" ] && exit 1
  exit 77
fi
list_files() {  # the project's C++ files: git's list in a checkout, else the folders' files
  if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
    git ls-files '*.cpp' '*.h' '*.cu' '*.cuh'
  else
    find include src apps tests python/bindings bench fuzz -type f \( -name '*.cpp' -o -name '*.h' -o -name '*.cu' -o -name '*.cuh' \) 2>/dev/null
  fi | grep -E '^(include|src|apps|tests|python/bindings|bench|fuzz)/' | sort
}
mapfile -t files < <(list_files)
if [ "${1:-}" = "--fix" ]; then
  clang-format -i "${files[@]}"
  exit 0
fi
bad=0
for f in "${files[@]}"; do
  if ! clang-format --dry-run --Werror "$f" >/dev/null 2>&1; then
    echo "check_format: $f is not formatted (bash scripts/check_format.sh --fix)"
    bad=1
  fi
done
echo "check_format: ${#files[@]} files, $([ $bad = 0 ] && echo "all formatted" || echo "some not formatted")"
exit $bad
