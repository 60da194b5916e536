#!/usr/bin/env bash
# Builds the libFuzzer targets (clang, ASan + UBSan) into ./build-fuzz and runs each for N seconds
# (default 60) on its corpus in fuzz/corpus/. A crash fails the script and leaves the input in
# build-fuzz/crashes/.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds="${1:-60}"
[ "$seconds" -gt 0 ] || exit 0
CC=clang CXX=clang++ cmake -S . -B build-fuzz -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DEMBSHARD_BUILD_TESTS=OFF -DEMBSHARD_BUILD_FUZZ=ON -DEMBSHARD_MPI=OFF -DEMBSHARD_TORCH=OFF \
  -DEMBSHARD_CUDA=OFF >/dev/null
cmake --build build-fuzz -j2
mkdir -p build-fuzz/crashes
for target in build-fuzz/fuzz/fuzz_*; do
  [ -x "$target" ] || continue
  name=$(basename "$target")
  short="${name#fuzz_}"
  short="${short%%_*}"              # fuzz_pt_reader -> pt, fuzz_plan_json -> plan
  corpus="fuzz/corpus/$short"
  work="build-fuzz/corpus/$short"
  mkdir -p "$work"
  echo "fuzz: $name for ${seconds}s"
  "$target" -max_total_time="$seconds" -print_final_stats=0 -artifact_prefix=build-fuzz/crashes/ \
    "$work" "$corpus" 2>&1 | tail -n 2
done
echo "fuzz: all targets ran ${seconds}s without a crash"
