#!/usr/bin/env bash
# The RL sharders on their papers' protocols, side by side with every other sharder.
#   DreamShard (paper 000 Table 6, 002 Tables 8–10): trained on DLRM-50 (4) train-half tasks, tested
#     on unseen-table tasks of 10, 20, 50 and 100 tables on 4 devices (transfer without retraining).
#   AutoShard (paper 001 §5): trained on 80 tables on 8 devices, tested on 80 unseen tables on 8
#     devices and on 800 tables on 80 devices (DreamShard's policies are tested there too).
# Each policy is trained once per seed (its log has the per-iteration curve and train_wall_s);
# compare prints mean step, valid plans and mean planning ms per sharder.
# Usage: bench/rl_protocols.sh [OUT_DIR] [SEEDS "0 1 2"] [AUTOSHARD_ENV_STEPS 100000]
# The sim backend judges and trains (the cpu backend's runs are in docs/benchmarks.md).
set -euo pipefail
E=${EMBSHARD:-build/bin/embshard}
out=${1:-/tmp/embshard-rl}
seeds=${2:-"0 1 2"}
env_steps=${3:-100000}
baselines="random;greedy:balance=size;greedy:balance=dim;greedy:balance=lookup;greedy:balance=size_lookup;greedy:balance=size_and_lookup;torchrec;neuroshard"
rm -rf "$out" && mkdir -p "$out"
log() { echo "[rl_protocols $(date -u +%H:%M:%S)] $*" >&2; }
gen() { "$E" task gen --quiet --protocol "$1" --devices "$2" --count "$3" --seed "$4" --out "$out/$5"; }

# train KIND TASK_DIR [extra options]: one policy per seed; echoes the sharder specs
train() {
  local kind=$1 tasks=$2 specs=""
  shift 2
  for s in $seeds; do
    log "training $kind seed $s"
    /usr/bin/time -f "train_wall_s %e" "$E" train "$kind" --tasks "$out/$tasks" --backend sim --seed "$s" \
      --out "$out/$kind-$s.json" "$@" > "$out/$kind-$s.log" 2>&1
    specs="$specs;$kind:policy=$out/$kind-$s.json"
  done
  echo "$specs"
}

# judge TEST_DIR SHARDERS
judge() {
  log "comparing on $1"
  "$E" compare --tasks "$out/$1" --sharders "$2" --cost default --backend sim \
    --out "$out/$1.csv" --summary "$out/$1.md"
}

gen dreamshard:tables=50,split=train 4 50 0 ds-train
ds=$(train dreamshard ds-train)
for n in 10 20 50 100; do
  gen "dreamshard:tables=$n,split=test" 4 20 1 "ds-test-$n"
  judge "ds-test-$n" "$baselines$ds"
done

gen autoshard:split=train 8 20 0 as-train
as=$(train autoshard as-train --env-steps "$env_steps")
gen autoshard:split=test 8 20 1 as-test-80
gen autoshard:split=test 80 3 1 as-test-800
judge as-test-80 "$baselines$as$ds"
judge as-test-800 "$baselines$as$ds"
for f in "$out"/*.md; do echo "## $(basename "$f" .md)"; cat "$f"; done
grep -H "train_wall_s" "$out"/*.log
