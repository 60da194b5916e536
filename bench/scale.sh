#!/usr/bin/env bash
# The scale suite (issue 32): one NeuroShard-pool task per size — 500 tables × 64 devices, 1,000 ×
# 128, 5,000 × 1,024, 20,000 × 4,096 and 50,000 × 8,192, max dim 32, on nodes of 8 GPUs (several
# hosts) of each preset — planned on one thread by `joint` at its default budget, `neuroshard`
# given 60 s, TorchRec's planner (the port, greedy proposers, 60 s) and `greedy:balance=dim`, and
# judged by `sim`. Prints one CSV row per (preset, size, sharder): status, step_ms, plan_ms (the
# sharder's wall time), lower_bound_ms and gap. Every figure of docs/benchmarks.md "Scale" comes
# from this script.
#
# Usage: bench/scale.sh [OUT_DIR] [SIZES] [PRESETS] [SHARDERS] [SEED]
#   SIZES     "TABLESxDEVICES ..." (default "500x64 1000x128 5000x1024 20000x4096 50000x8192")
#   PRESETS   "v100 h100" (default)
#   SHARDERS  compare's 'S1;S2;...' (default: the four above)
#   SEED      the tasks' seed (default 3200: not one any setting was tuned on)
set -euo pipefail
E=${EMBSHARD:-build/bin/embshard}
out=${1:-/tmp/embshard-scale}
sizes=${2:-"500x64 1000x128 5000x1024 20000x4096 50000x8192"}
presets=${3:-"v100 h100"}
sharders=${4:-"joint;neuroshard:time_ms=60000;torchrec:proposers=greedy,time_ms=60000;greedy:balance=dim"}
seed=${5:-3200}
mkdir -p "$out"
. "$(dirname "$0")/scale_tasks.sh"
echo "preset,devices,tables,sharder,status,step_ms,plan_ms,lower_bound_ms,gap"
for preset in $presets; do
  for size in $sizes; do
    tables=${size%x*}
    devices=${size#*x}
    dir=$(scale_task "$out" "$preset" "$tables" "$devices" "$seed")
    "$E" compare --quiet --threads 1 --tasks "$dir" --sharders "$sharders" --cost sim --backend sim \
      --out "$dir.csv" > /dev/null
    python3 - "$dir.csv" "$preset" "$devices" "$tables" <<'EOF'
import csv, sys
path, preset, devices, tables = sys.argv[1:]
for r in csv.DictReader(open(path)):
    step, bound = float(r["step_ms"]), float(r["lower_bound_ms"])
    gap = f"{step / bound - 1:.3f}" if r["status"] == "ok" and bound > 0 else ""
    name = r["sharder"].split(":")[0]
    print(f'{preset},{devices},{tables},{name},{r["status"]},{r["step_ms"]},{r["plan_ms"]},{r["lower_bound_ms"]},{gap}')
EOF
  done
done
