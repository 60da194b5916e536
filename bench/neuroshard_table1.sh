#!/usr/bin/env bash
# NeuroShard's Table 1 protocol on embshard: 12 settings (4 / 8 devices × max dim 4 … 128),
# COUNT tasks each (default 100), every sharder, judged by BACKEND (default sim).
# Usage: bench/neuroshard_table1.sh [OUT_DIR] [COUNT] [BACKEND] [SHARDERS]
# Environment: PRESET (default v100; 2080ti is the judge fitted to the papers), SEED (default 0),
# INPUT_COMM (default exposed; omit is what the papers' benchmarks timed), COST (the sharders' model).
# Writes OUT_DIR/results.csv, OUT_DIR/summary.md and OUT_DIR/chart.svg (task 0 of d4 m128).
set -euo pipefail
E=${EMBSHARD:-build/bin/embshard}
out=${1:-/tmp/embshard-table1}
count=${2:-100}
backend=${3:-sim}
sharders=${4:-"random;greedy:balance=size;greedy:balance=dim;greedy:balance=lookup;greedy:balance=size_lookup;greedy:balance=size_and_lookup"}
rm -rf "$out" && mkdir -p "$out/tasks"
for devices in 4 8; do
  for dim in 4 8 16 32 64 128; do
    dir="$out/gen/d${devices}m${dim}"
    "$E" task gen --quiet --protocol "neuroshard:preset=${PRESET:-v100}" --devices "$devices" --max-dim "$dim" \
      --count "$count" --seed "${SEED:-0}" --out "$dir"
    for f in "$dir"/*.json; do cp "$f" "$out/tasks/d${devices}m$(printf %03d "$dim")-$(basename "$f")"; done
  done
done
"$E" compare --tasks "$out/tasks" --sharders "$sharders" --backend "$backend" --input-comm "${INPUT_COMM:-exposed}" --cost "${COST:-default}" \
  --out "$out/results.csv" --summary "$out/summary.md" --chart "$out/chart.svg" \
  --chart-task neuroshard-d4-m128-000
