#!/usr/bin/env bash
# 2D plans at scale (issue 32, plan/sharding_groups.h): the scale suite's tasks (bench/scale.sh
# makes them) with replicas synced every K steps, planned on one thread by `joint` choosing among
# 1D and 2D layouts (groups=auto, the default) and by `joint:groups=none` (1D only), judged by sim.
# The protocol caps each device's memory for tables at 4 GiB, which leaves no room for a group to
# hold every table; HBM_GIB (default 64: an 80 GB H100 less activations) gives them the room 2D
# needs. Prints one CSV row per (preset, size, K, sharder): status, step_ms, plan_ms, the layout.
#
# Usage: bench/scale_2d.sh [OUT_DIR] [SIZES] [PRESETS] [SYNC_EVERY] [SEED] [HBM_GIB]
#   SIZES       default "500x64 5000x1024 20000x4096"
#   PRESETS     default "h100 v100"
#   SYNC_EVERY  default "1 100 10000"
#   SEED        the tasks' seed (default 3200, bench/scale.sh's)
set -euo pipefail
E=${EMBSHARD:-build/bin/embshard}
out=${1:-/tmp/embshard-scale}
sizes=${2:-"500x64 5000x1024 20000x4096"}
presets=${3:-"h100 v100"}
syncs=${4:-"1 100 10000"}
seed=${5:-3200}
hbm=${6:-64}
mkdir -p "$out"
. "$(dirname "$0")/scale_tasks.sh"
echo "preset,devices,tables,hbm_gib,sync_every,sharder,status,step_ms,plan_ms,layout"
for preset in $presets; do
  for size in $sizes; do
    tables=${size%x*}
    devices=${size#*x}
    base=$(scale_task "$out" "$preset" "$tables" "$devices" "$seed")
    for k in $syncs; do
      dir="$base-hbm$hbm-sync$k"
      mkdir -p "$dir"
      python3 - "$base/000.json" "$dir/000.json" "$k" "$hbm" <<'EOF'
import json, re, sys
task = json.load(open(sys.argv[1]))
task["replica_sync_every"] = int(sys.argv[3])
task["topology"]["preset"] = re.sub(r"hbm_gib=[0-9.]+", "hbm_gib=" + sys.argv[4], task["topology"]["preset"])
json.dump(task, open(sys.argv[2], "w"))
EOF
      for sharder in joint joint:groups=none; do
        plan="$dir/${sharder//[:=]/_}.plan.json"
        rm -f "$plan"
        line=$("$E" plan --quiet --threads 1 --task "$dir/000.json" --sharder "$sharder" --out "$plan" 2>&1 | \
          python3 -c '
import re, sys
text = sys.stdin.read()
step = re.search(r"^step_ms ([0-9.]+)", text, re.M)
ms = re.search(r"planned \d+ tables in ([0-9.]+) (ms|s)", text)
layout = re.search(r"^(2D: [^;]*);", text, re.M)
plan_ms = float(ms.group(1)) * (1000 if ms and ms.group(2) == "s" else 1) if ms else ""
status, value = ("ok", step.group(1)) if step else ("failed", "")
print(",".join([status, value, str(plan_ms), layout.group(1) if layout else "1D"]))')
        echo "$preset,$devices,$tables,$hbm,$k,${sharder},$line"
      done
    done
  done
done
