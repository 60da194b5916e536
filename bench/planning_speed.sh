#!/usr/bin/env bash
# Planning time at scale: one NeuroShard-protocol task (max dim 32) of about 1,000 tables on 128
# V100s (960–1,023 tables: 15/2..8 per device) and one of about 5,000 tables on 1,024 V100s
# (4,608–5,119: 9/2..5 per device), planned by every sharder with the sim cost model; prints the
# compare CSV (plan_ms column). Usage: bench/planning_speed.sh [OUT_DIR] [SHARDERS]
set -euo pipefail
E=${EMBSHARD:-build/bin/embshard}
out=${1:-/tmp/embshard-planning-speed}
sharders=${2:-"random:attempts=100;greedy:balance=size;greedy:balance=dim;greedy:balance=lookup;greedy:balance=size_lookup;greedy:balance=size_and_lookup;neuroshard;torchrec"}
rm -rf "$out" && mkdir -p "$out"
"$E" task gen --quiet --protocol neuroshard:min_tables_per_device=15,max_tables_per_device=8 \
  --devices 128 --max-dim 32 --count 1 --seed 0 --out "$out/t1000"
"$E" task gen --quiet --protocol neuroshard:min_tables_per_device=9,max_tables_per_device=5 \
  --devices 1024 --max-dim 32 --count 1 --seed 0 --out "$out/t5000"
for size in t1000 t5000; do
  "$E" compare --threads 1 --tasks "$out/$size" --sharders "$sharders" --cost sim --backend sim \
    --out "$out/$size.csv"
  cat "$out/$size.csv"
done
