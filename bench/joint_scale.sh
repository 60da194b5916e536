#!/usr/bin/env bash
# How `joint`'s planning time grows with tables × devices: one NeuroShard-protocol task (max dim
# 32, 4.5–9 tables per device on V100s of 8 per host) at 32, 128, 512 and 1,024 devices (about
# 220, 860, 3,500 and 5,000 tables), planned by `joint` with the sim cost model on one thread;
# prints the compare CSV rows (plan_ms includes building and checking the plan; lower_bound_ms is
# the certificate). Usage: bench/joint_scale.sh [OUT_DIR] [SHARDERS]
set -euo pipefail
E=${EMBSHARD:-build/bin/embshard}
out=${1:-/tmp/embshard-joint-scale}
sharders=${2:-joint}
rm -rf "$out" && mkdir -p "$out"
for devices in 32 128 512 1024; do
  "$E" task gen --quiet --protocol neuroshard:min_tables_per_device=9,max_tables_per_device=5 \
    --devices "$devices" --max-dim 32 --count 1 --seed 0 --out "$out/d$devices"
  "$E" compare --quiet --threads 1 --tasks "$out/d$devices" --sharders "$sharders" --cost sim \
    --backend sim --out "$out/d$devices.csv"
  tail -n +2 "$out/d$devices.csv" | sed "s/^/devices=$devices,/"
done
