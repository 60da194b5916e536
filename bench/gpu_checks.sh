#!/usr/bin/env bash
# The checks to run whenever a GPU machine is lent (the device tool), as one short script: the
# CUDA kernels' tests and the tiered (HBM + mapped host memory) path against the reference, the
# kernels' timings, GPU cost samples for the sim fit, and a few plans judged on the GPU.
# Runs on the device machine from the repository root over the bundle bench/gpu_bundle.sh made;
# writes everything under OUT (the device tool's $OUT). Each step has its own time limit, so a
# slow step cannot starve the rest; the sample file is resumable and keeps what was measured.
# Usage (device tool): bash bench/gpu_checks.sh   with carry [".gpu"]
# Environment: SAMPLES (cost samples wanted, default 3000), TASKS (tasks per setting, default 3),
# SHARDERS (the plans judged on the GPU, default 'greedy:balance=lookup;joint'). About 8 minutes.
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
  --gtest_filter='*EmbeddingBag*:*EvaluatorBackends*:*RecShardMeasured*:*Cuda*' > "$out/tests.log" 2>&1
echo "tests rc=$?"; grep -E "PASSED|FAILED|SKIPPED|tests ran" "$out/tests.log" | tail -12

step "cost samples on the GPU (profile compute --backend cuda)"
timeout 120 "$E" profile compute --backend cuda --samples "${SAMPLES:-3000}" --out "$out/cuda_samples.jsonl" 2>&1 | tail -2
[[ -f $out/cuda_samples.jsonl ]] && echo "samples: $(($(wc -l < "$out/cuda_samples.jsonl") - 1))"

step "kernel throughput"
timeout 60 "$b/bin/embshard_kernel_bench" 16 64 128 > "$out/kernel_bench.csv" 2> "$out/kernel_bench.err"
echo "kernel bench rc=$?"; grep -E "cuda|hbm_peak" "$out/kernel_bench.csv"

step "plans judged on the GPU"
tasks=/tmp/embshard-gpu-tasks
rm -rf "$tasks" && mkdir -p "$tasks"
for d in 4 8; do
  "$E" task gen --quiet --protocol neuroshard:preset=h100 --devices $d --max-dim 128 --count "${TASKS:-3}" \
    --seed 9100 --out "$tasks/d$d"
  for f in "$tasks/d$d"/*.json; do cp "$f" "$tasks/d$d-$(basename "$f")"; done
  rm -rf "$tasks/d$d"
done
# ~100 s for two sharders on 6 tasks (H200, 2026-11-26); four sharders ran past 120 s.
timeout 180 "$E" compare --quiet --tasks "$tasks" --backend cuda --warmup 1 --repeats 3 \
  --sharders "${SHARDERS:-greedy:balance=lookup;joint}" --out "$out/cuda_compare.csv" 2>&1 | tail -15
echo "compare rc=${PIPESTATUS[0]}"
step done
