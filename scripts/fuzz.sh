#!/usr/bin/env bash
# Builds the libFuzzer targets (clang, ASan + UBSan) and runs each for N seconds (default 60) on
# its corpus in fuzz/corpus/. A crash fails the script and leaves the input in BUILD/crashes/.
#
# Usage: scripts/fuzz.sh [SECONDS] [BUILD]
#   BUILD: the build folder, default ./build-fuzz (configured here for the fuzz targets alone);
#   scripts/test.sh passes build-san, which scripts/sanitize.sh configured with the fuzz targets
#   beside the sanitized suite, so the instrumented library is compiled once.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds="${1:-60}"
build="${2:-build-fuzz}"
[ "$seconds" -gt 0 ] || exit 0
if [ "$build" = build-fuzz ]; then
  CC=clang CXX=clang++ cmake -S . -B build-fuzz -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DEMBSHARD_BUILD_TESTS=OFF -DEMBSHARD_BUILD_FUZZ=ON -DEMBSHARD_MPI=OFF -DEMBSHARD_TORCH=OFF \
    -DEMBSHARD_CUDA=OFF >/dev/null
fi
targets=()
for source in fuzz/fuzz_*.cpp; do targets+=("$(basename "$source" .cpp)"); done
cmake --build "$build" -j2 --target "${targets[@]}"
mkdir -p "$build/crashes"
for name in "${targets[@]}"; do
  target="$build/fuzz/$name"
  short="${name#fuzz_}"
  short="${short%%_*}"              # fuzz_pt_reader -> pt, fuzz_plan_json -> plan
  corpus="fuzz/corpus/$short"
  work="$build/corpus/$short"
  mkdir -p "$work"
  echo "fuzz: $name for ${seconds}s"
  "$target" -max_total_time="$seconds" -print_final_stats=0 -artifact_prefix="$build/crashes/" \
    "$work" "$corpus" 2>&1 | tail -n 2
done
echo "fuzz: all targets ran ${seconds}s without a crash"
