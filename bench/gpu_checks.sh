#!/usr/bin/env bash
# The checks to run whenever a GPU machine is lent (the device tool), as one short script: the
# CUDA kernels' tests and the tiered (HBM + mapped host memory) path against the reference, the
# kernels' timings, the plans of bench/gpu_plans.sh judged on the GPU, and GPU cost samples for
# the sim fit. Runs on the device machine from the repository root over the bundle
# bench/gpu_bundle.sh made; writes everything under OUT (the device tool's $OUT): gpu.csv,
# tests.log, kernel_bench.csv, measured.tar.gz (one `eval --backend cuda` JSON per plan) and
# cuda_samples.jsonl. Each step has its own time limit, so a slow step cannot starve the rest; the
# sample file is resumable and keeps what was measured. Here, afterwards:
#   python3 bench/gpu_judge_table.py BUNDLE_JUDGED_DIR MEASURED_DIR   (predicted vs measured)
#   embshard profile calibrate --samples models/samples/h200-cuda-seedN.jsonl,...  (the refit)
# Usage (device tool): bash bench/gpu_checks.sh   with carry [".gpu"]
# Environment: SEED (of the samples, default 3), SAMPLE_S (seconds of sampling, default 150),
# EVAL_S (seconds for all plan evaluations, default 240). About 8 minutes.
set -u
out=${OUT:-/tmp/embshard-gpu-out}
mkdir -p "$out"
b=/tmp/embshard-gpu
mkdir -p "$b" && tar -C "$b" -xJf .gpu/bundle.tar.xz || { echo "gpu_checks: no .gpu/bundle.tar.xz" >&2; exit 1; }
export LD_LIBRARY_PATH=$b/lib
E=$b/bin/embshard
step() { echo "== $(date -u +%H:%M:%S) $*"; }

step machine
nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.max.sm,clocks.max.memory --format=csv | tee "$out/gpu.csv"
echo "cpus $(nproc); $(uptime)"

step "tests: the CUDA kernels, the tiered path and the measured backends against the reference"
timeout 120 "$b/bin/embshard_tests" --gtest_brief=1 \
  --gtest_filter='*EmbeddingBag*:*EvaluatorBackends*:*RecShardMeasured*:*Cuda*:ComputeSampler.*' > "$out/tests.log" 2>&1
echo "tests rc=$?"; grep -E "PASSED|FAILED|SKIPPED|tests ran" "$out/tests.log" | tail -12

step "kernel throughput"
timeout 60 "$b/bin/embshard_kernel_bench" 16 64 128 > "$out/kernel_bench.csv" 2> "$out/kernel_bench.err"
echo "kernel bench rc=$?"; grep -E "cuda|hbm_peak" "$out/kernel_bench.csv"

step "plans judged on the GPU (eval --backend cuda, task by task)"
measured=/tmp/embshard-gpu-measured
rm -rf "$measured" && mkdir -p "$measured"
end=$((SECONDS + ${EVAL_S:-240}))
for plan in "$b"/judged/plans/*.json; do
  name=$(basename "$plan" .json)
  left=$((end - SECONDS))
  (( left > 5 )) || { echo "eval: out of time before $name"; break; }
  timeout "$left" "$E" eval --quiet --backend cuda --warmup 1 --repeats 3 \
    --task "$b/judged/tasks/${name%%--*}.json" --plan "$plan" --out "$measured/$name.json" \
    > /dev/null 2> "$measured/$name.err"
  echo "$name rc=$? $(grep -o '"step_ms": *[0-9.e+-]*' "$measured/$name.json" 2>/dev/null) $(head -c 200 "$measured/$name.err")"
done
tar -C "$measured" -czf "$out/measured.tar.gz" .

step "cost samples on the GPU (profile compute --backend cuda, seed ${SEED:-3})"
timeout "${SAMPLE_S:-150}" "$E" profile compute --backend cuda --samples 3000 --seed "${SEED:-3}" \
  --out "$out/cuda_samples.jsonl" 2>&1 | tail -2
[[ -f $out/cuda_samples.jsonl ]] && echo "samples: $(($(wc -l < "$out/cuda_samples.jsonl") - 1))"
step done
