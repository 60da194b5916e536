#!/usr/bin/env bash
# RecShard's RM1/RM2/RM3 (paper 004 §5, Tables 3 and 5) planned by `recshard` and the three
# UVM-fallback greedy baselines, and embshard's `joint`, judged by the sim backend.
#
#   bench/recshard_rm.sh [OUT] [SCALE] [TIME_LIMIT_S] [MODELS]
#
# OUT (default /tmp/recshard_rm): task, plans, eval reports and summary.csv. SCALE (default 1):
# the protocol's scale (hash sizes and memory; the sim model and the MILP do not depend on it, a
# smaller scale only keeps files small). TIME_LIMIT_S (default 60): recshard's CBC limit. MODELS
# (default "rm1 rm2 rm3"). EXTRA (environment): more protocol parameters, e.g. EXTRA=hbm_gib=6.
# Prints, per model and sharder: the step, the per-GPU embedding time
# (fw_comp + bw_comp) min / max / mean / std (Table 3), mean HBM and UVM lookups per GPU per step
# and the UVM share (Table 5), plan time, and recshard's MILP status / gap.
set -euo pipefail
OUT=${1:-/tmp/recshard_rm}
SCALE=${2:-1}
LIMIT=${3:-60}
MODELS=${4:-"rm1 rm2 rm3"}
BIN=${EMBSHARD:-$(dirname "$0")/../build/bin/embshard}
mkdir -p "$OUT"
# The three greedy costs of paper 004 §5; lookup and size_and_lookup with pooling over the batch
# (this project's statistics) and over the samples that have the feature (the paper's definition).
SHARDERS=("recshard:time_limit_s=$LIMIT" "greedy:balance=size,on_full=uvm"
          "greedy:balance=lookup,on_full=uvm" "greedy:balance=size_and_lookup,on_full=uvm"
          "greedy:balance=lookup_present,on_full=uvm"
          "greedy:balance=size_and_lookup_present,on_full=uvm" "joint")
CSV="$OUT/summary.csv"
echo "model,sharder,status,plan_s,step_ms,comp_min,comp_max,comp_mean,comp_std,hbm_lookups_per_gpu,uvm_lookups_per_gpu,uvm_share,solver" > "$CSV"
printf "%-4s %-50s %9s %9s %9s %9s %9s %8s %12s %12s %8s\n" model sharder plan_s step_ms \
  min max mean std hbm/gpu uvm/gpu uvm_%
for model in $MODELS; do
  dir="$OUT/$model"
  mkdir -p "$dir"
  "$BIN" task gen --protocol "recshard:model=$model,scale=$SCALE${EXTRA:+,$EXTRA}" --count 1 --seed 0 --out "$dir" >/dev/null 2>&1
  task="$dir/000.json"
  i=0
  for sharder in "${SHARDERS[@]}"; do
    i=$((i + 1))
    plan="$dir/plan-$i.json"
    log="$dir/plan-$i.log"
    start=$(date +%s.%N)
    if ! "$BIN" plan --task "$task" --sharder "$sharder" --cost sim --out "$plan" >"$log" 2>&1; then
      end=$(date +%s.%N)
      printf "%-4s %-50s %9.1f  %s\n" "$model" "$sharder" "$(echo "$end - $start" | bc)" "$(tail -1 "$log")"
      echo "$model,\"$sharder\",failed,,,,,,,,,,\"$(tail -1 "$log" | tr '"' "'")\"" >> "$CSV"
      continue
    fi
    end=$(date +%s.%N)
    plan_s=$(echo "$end - $start" | bc)
    "$BIN" eval --task "$task" --plan "$plan" --backend sim --out "$dir/eval-$i.json" >/dev/null
    solver=$(grep '^solver: ' "$log" | sed 's/^solver: //' || true)
    read -r step cmin cmax cmean cstd hbm uvm share < <(jq -r '[.objectives.step_ms,
        .device_spread.comp_ms.min, .device_spread.comp_ms.max, .device_spread.comp_ms.mean,
        .device_spread.comp_ms.std, (.lookups.hbm_per_step / (.devices | length)),
        (.lookups.uvm_per_step / (.devices | length)), (.lookups.uvm_share * 100)] | @tsv' \
        "$dir/eval-$i.json")
    printf "%-4s %-50s %9.1f %9.2f %9.2f %9.2f %9.2f %8.2f %12.0f %12.0f %8.3f\n" "$model" "$sharder" \
      "$plan_s" "$step" "$cmin" "$cmax" "$cmean" "$cstd" "$hbm" "$uvm" "$share"
    [ -n "$solver" ] && echo "     $solver"
    echo "$model,\"$sharder\",ok,$plan_s,$step,$cmin,$cmax,$cmean,$cstd,$hbm,$uvm,$share,\"$solver\"" >> "$CSV"
  done
done
echo "wrote $CSV"
