#!/usr/bin/env bash
# NeuroShard's 4-device max-dim-128 setting judged on this machine's kernels (issue 4 / issue 5
# targets): COUNT tasks (default 100) of `neuroshard:preset=cpu` (this machine's cpu topology, 4 GiB
# per device, so the planner's default cost model is the built-in neural one trained here), every
# baseline, TorchRec's logic and neuroshard, each plan measured by the cpu backend at batch 8192
# (3 repeats after 1 warm-up, forward and backward per device in turn; all-to-alls from the cpu
# topology's link model). Run it on a quiet machine: it measures.
# Usage: bench/cpu_setting.sh [OUT_DIR] [COUNT] [SHARDERS] [COST] [SEED]   (SEED: the tasks', default 0)
set -euo pipefail
E=${EMBSHARD:-build/bin/embshard}
out=${1:-/tmp/embshard-cpu-setting}
count=${2:-100}
sharders=${3:-"random;greedy:balance=size;greedy:balance=dim;greedy:balance=lookup;greedy:balance=size_lookup;greedy:balance=size_and_lookup;torchrec;neuroshard"}
cost=${4:-default}
seed=${5:-0}
rm -rf "$out" && mkdir -p "$out"
"$E" task gen --quiet --protocol neuroshard:preset=cpu --devices 4 --max-dim 128 --count "$count" \
  --seed "$seed" --out "$out/tasks"
"$E" compare --tasks "$out/tasks" --sharders "$sharders" --cost "$cost" --backend cpu --batch 8192 \
  --repeats 3 --warmup 1 --out "$out/results.csv" --summary "$out/summary.md" \
  --chart "$out/chart.svg" --chart-task neuroshard-d4-m128-000
