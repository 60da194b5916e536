#!/usr/bin/env bash
# Runs the GoogleTest suites (build/) under two faked hardware fingerprints, so no test can depend
# on the host's CPU model, cache size or core count (EMBSHARD_FAKE_FINGERPRINT, see
# include/embshard/profile/cost_sample.h): a one-core machine with a small cache, and a big
# many-core one. The fakes change what is recorded in sample headers, what the sim is judged with
# and the CLI's default thread count; the tests must pass the same under both.
# Usage: bash scripts/test_fake_fingerprint.sh [BUILD_DIR]   (after scripts/setup.sh)
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
fakes=(
  "host:cpu_model=Fake one-core 1 MiB,logical_cpus=1,llc_bytes=1048576,memory_bytes=4294967296"
  "host:cpu_model=Fake 16-core 512 MiB,logical_cpus=16,llc_bytes=536870912,memory_bytes=1099511627776"
)
for fake in "${fakes[@]}"; do
  echo "fake fingerprint: $fake"
  EMBSHARD_FAKE_FINGERPRINT="$fake" ctest --test-dir "$build" --output-on-failure -j2
done
