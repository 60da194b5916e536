#!/usr/bin/env bash
# Sets up, builds and runs every test: the GoogleTest suite (through ctest) and a short run of
# each fuzz target (FUZZ_SECONDS each, default 20; 0 skips fuzzing).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
ctest --test-dir build --output-on-failure -j2
bash scripts/fuzz.sh "${FUZZ_SECONDS:-20}"
