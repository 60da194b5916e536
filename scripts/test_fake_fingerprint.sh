#!/usr/bin/env bash
# Runs the GoogleTest suites (build/) under faked hardware fingerprints, so no test can depend on
# the host's CPU model, cache size or core count (EMBSHARD_FAKE_FINGERPRINT, see
# include/embshard/profile/cost_sample.h): `one-core`, a one-core machine with a small cache, and
# `many-core`, a big 16-core one. The fakes change what is recorded in sample headers, what the sim
# is judged with and the CLI's default thread count; the tests must pass the same under both.
#
# Usage: bash scripts/test_fake_fingerprint.sh [FAKE...] [-- COMMAND...]   (after scripts/setup.sh)
#   FAKE: one-core and/or many-core (default both); COMMAND: what runs under each fake (default
#   the suite in build/). scripts/test.sh runs the plain suite under `one-core` and the sanitized
#   suite under `many-core` (`many-core -- bash scripts/sanitize.sh 2`), then under `many-core` the
#   plain build's tests that the sanitized build cannot run, so a fake costs one run of the suite.
set -euo pipefail
cd "$(dirname "$0")/.."
declare -A fakes=(
  [one-core]="host:cpu_model=Fake one-core 1 MiB,logical_cpus=1,llc_bytes=1048576,memory_bytes=4294967296"
  [many-core]="host:cpu_model=Fake 16-core 512 MiB,logical_cpus=16,llc_bytes=536870912,memory_bytes=1099511627776"
)
chosen=()
while [ $# -gt 0 ] && [ "$1" != -- ]; do
  if [ -z "$1" ] || [ -z "${fakes[$1]:-}" ]; then
    echo "test_fake_fingerprint: unknown fake '$1' (one-core, many-core)" >&2
    exit 2
  fi
  chosen+=("$1")
  shift
done
[ "${1:-}" = -- ] && shift
[ ${#chosen[@]} -gt 0 ] || chosen=(one-core many-core)
command=("$@")
[ ${#command[@]} -gt 0 ] || command=(ctest --test-dir build --output-on-failure -j2)
for name in "${chosen[@]}"; do
  echo "fake fingerprint: ${fakes[$name]}"
  EMBSHARD_FAKE_FINGERPRINT="${fakes[$name]}" "${command[@]}"
done
