#!/usr/bin/env bash
# A sim judge of TorchRec's CPU runtime on this machine (issue 28; docs/judge.md, "TorchRec's CPU
# runtime"): compute samples measured under real TorchRec (bench/torchrec_profile.py, one file a
# seed, resumed where a run stopped), fitted by `embshard profile calibrate` into
# OUT/coefficients.json, which `sim:coefficients=OUT/coefficients.json,exchanges=per_type` loads
# for `cpu` tasks whose topology carries the runtime's all-to-all latency, bandwidth and half-duplex
# links (a2a_latency_us, intra_host_gbps / inter_host_gbps, half_duplex: bench/torchrec_link_fit.py
# chooses them).
#
# Usage: bench/torchrec_fit.sh [OUT_DIR] [SAMPLES] [SEEDS]   (defaults /tmp/embshard-torchrec-fit, 240, "1")
set -euo pipefail
E=${EMBSHARD:-build/bin/embshard}
out=${1:-/tmp/embshard-torchrec-fit}
samples=${2:-240}
seeds=${3:-1}
mkdir -p "$out"
PY=$(bash "$(dirname "$0")/../scripts/setup_python.sh" --torchrec)
files=""
for seed in $seeds; do
  "$PY" "$(dirname "$0")/torchrec_profile.py" "$out/samples-s$seed.jsonl" --samples "$samples" --seed "$seed"
  files="${files:+$files,}$out/samples-s$seed.jsonl"
done
"$E" profile calibrate --samples "$files" --out "$out/coefficients.json" --report "$out/fit.html"
