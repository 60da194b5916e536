#!/usr/bin/env bash
# Packs what bench/gpu_checks.sh runs on a lent GPU machine (the device tool) into
# DIR/bundle.tar.xz: the CLI, the test binary and the kernel bench of a CUDA build made here,
# stripped, with the shared libraries they load beyond glibc and libstdc++ (that machine has
# neither Debian's COIN-OR, OpenBLAS nor Open MPI), and the tasks, plans and sim predictions of
# bench/gpu_plans.sh, which gpu_checks.sh measures there. DIR must be ignored by git
# (.git/info/exclude) and named in the run's `carry`.
# Usage: bench/gpu_bundle.sh [BUILD_DIR] [DIR]   (defaults: build .gpu)
set -euo pipefail
build=${1:-build}
dir=${2:-.gpu}
bins=("$build/bin/embshard" "$build/tests/embshard_tests" "$build/bin/embshard_kernel_bench")
for b in "${bins[@]}"; do [[ -x $b ]] || { echo "gpu_bundle: $b is missing: build first" >&2; exit 1; }; done
ldd "${bins[0]}" | grep -q libcudart || { echo "gpu_bundle: $build was built without CUDA" >&2; exit 1; }
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
mkdir -p "$stage/bin" "$stage/lib"
for b in "${bins[@]}"; do strip -o "$stage/bin/$(basename "$b")" "$b"; done
ldd "${bins[@]}" | awk '$3 ~ /^\// {print $3}' | sort -u |
  grep -Ev '/(libc|libm|libpthread|libdl|librt|libstdc\+\+|libgcc_s)\.so' |
  while read -r lib; do cp -L "$lib" "$stage/lib/"; done
EMBSHARD=${bins[0]} bash "$(dirname "$0")/gpu_plans.sh" "$stage/judged"
mkdir -p "$dir"
tar -C "$stage" -cJf "$dir/bundle.tar.xz" bin lib judged
du -h "$dir/bundle.tar.xz"
