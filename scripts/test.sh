#!/usr/bin/env bash
# Sets up, builds and runs every test:
#   1. the GoogleTest suite and the Python / browser tests through ctest (build/), then the Python
#      package's tests (tests/python/package) against real torch / fbgemm-gpu-cpu / torchrec 1.9.2
#      in the cached environment of scripts/setup_python.sh --torchrec; none may skip;
#   2. clang-tidy with the house checks over every C++ source (.clang-tidy, scripts/check_tidy.sh;
#      TIDY=0 skips it for a quick local run);
#   3. the GoogleTest suite again under a faked one-core hardware fingerprint (no test may depend
#      on the host's CPU, cache or core count: scripts/test_fake_fingerprint.sh);
#   4. the suite under AddressSanitizer + UndefinedBehaviorSanitizer (scripts/sanitize.sh, build-san/)
#      and a faked many-core fingerprint (the CLI's default: 16 threads), then under that fake the
#      tests the sanitized build has no libtorch or MPI for (PLAIN_ONLY), so each fake costs one
#      run of the suite;
#   5. a short run of each fuzz target on the same sanitized library (FUZZ_SECONDS each, default
#      20; 0 skips fuzzing).
# SANITIZE=0 skips step 4 (runs step 3 under both fakes, and fuzzes in its own build-fuzz/ instead)
# for a quick local run.
# The tests that need libtorch (Learn.*, the CLI's `train`) or MPI (ProfileComm.*), or say which
# of them the build lacks (CliOutputs.EmptyValues...), which scripts/sanitize.sh builds without.
PLAIN_ONLY='^(Learn|ProfileComm)\.|^Cli\.Train|^CliOutputs\.EmptyValuesBadNumbersAndUnknownNamesSayWhichOption$'
set -euo pipefail
cd "$(dirname "$0")/.."
started=$SECONDS
step() { echo "test: $1 ($(( (SECONDS - started) / 60 )) min so far)"; }
bash scripts/setup.sh
step "the suite"
ctest --test-dir build --output-on-failure -j2
step "the Python package against TorchRec"
python=$(bash scripts/setup_python.sh --torchrec | tail -n 1)
# No test may see a calibration installed for this machine (cost/machine_calibration.h).
EMBSHARD_CALIBRATIONS="$PWD/build/no-calibrations" EMBSHARD_REQUIRE_TORCHREC=1 "$python" -m pytest -q -p no:cacheprovider
if [ "${TIDY:-1}" = 1 ]; then
  step "clang-tidy"
  status=0
  bash scripts/check_tidy.sh build || status=$?
  if [ "$status" = 77 ]; then echo "test: clang-tidy is not installed: its checks were skipped"; elif [ "$status" != 0 ]; then exit "$status"; fi
fi
if [ "${SANITIZE:-1}" = 1 ]; then
  step "the suite under a faked one-core fingerprint"
  bash scripts/test_fake_fingerprint.sh one-core
  step "the suite under ASan + UBSan and a faked many-core fingerprint"
  bash scripts/test_fake_fingerprint.sh many-core -- bash scripts/sanitize.sh 2
  bash scripts/test_fake_fingerprint.sh many-core -- ctest --test-dir build --output-on-failure -j2 -R "$PLAIN_ONLY"
  step "fuzzing under ASan + UBSan"
  bash scripts/fuzz.sh "${FUZZ_SECONDS:-20}" build-san
else
  step "the suite under faked fingerprints"
  bash scripts/test_fake_fingerprint.sh
  bash scripts/fuzz.sh "${FUZZ_SECONDS:-20}"
fi
step "done"
