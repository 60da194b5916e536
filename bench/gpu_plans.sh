#!/usr/bin/env bash
# Plans what bench/gpu_checks.sh measures on a lent GPU, here, so that the GPU's measured step and
# the sim judge's prediction are of the same plans (joint's plans depend on the machine's speed
# only through deadlines; planning here removes even that): NeuroShard-protocol tasks of the
# `h200` preset (4 and 8 devices, max dim 128, batch 65,536, MEM_GIB of HBM per device: default 8,
# since TorchRec's 15% reservation leaves most 4 GiB tasks unplanned), each planned by every
# sharder of SHARDERS, each plan judged by `sim` (the h200 preset's calibrated model).
# Writes DIR/tasks/*.json, DIR/plans/TASK--SHARDER.json and DIR/predicted/TASK--SHARDER.json.
# Usage: bench/gpu_plans.sh DIR   (environment: EMBSHARD, TASKS per setting (default 3), MEM_GIB, SEED
# (default 9300), SHARDERS (default 'joint;torchrec;neuroshard;greedy:balance=lookup'))
set -euo pipefail
dir=${1:?usage: bench/gpu_plans.sh DIR}
E=${EMBSHARD:-build/bin/embshard}
IFS=';' read -r -a sharders <<< "${SHARDERS:-joint;torchrec;neuroshard;greedy:balance=lookup}"
rm -rf "$dir/tasks" "$dir/plans" "$dir/predicted"
mkdir -p "$dir/tasks" "$dir/plans" "$dir/predicted"
gen=$(mktemp -d)
trap 'rm -rf "$gen"' EXIT
for d in 4 8; do
  "$E" task gen --quiet --protocol "neuroshard:preset=h200,mem_gib=${MEM_GIB:-8}" --devices "$d" --max-dim 128 \
    --count "${TASKS:-3}" --seed "${SEED:-9300}" --out "$gen/d$d"
  for f in "$gen/d$d"/*.json; do cp "$f" "$dir/tasks/d$d-$(basename "$f")"; done
done
for task in "$dir"/tasks/*.json; do
  id=$(basename "$task" .json)
  for s in "${sharders[@]}"; do
    name="$id--${s%%:*}"
    if "$E" plan --quiet --task "$task" --sharder "$s" --out "$dir/plans/$name.json" > /dev/null 2>&1; then
      "$E" eval --quiet --task "$task" --plan "$dir/plans/$name.json" --out "$dir/predicted/$name.json" > /dev/null
    else
      echo "$name: no plan (${s%%:*} could not place the task)"
    fi
  done
done
echo "$(ls "$dir/plans" | wc -l) plans of $(ls "$dir/tasks" | wc -l) tasks in $dir"
