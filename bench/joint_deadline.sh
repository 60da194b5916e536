#!/usr/bin/env bash
# How well `joint` keeps its `time_ms` safety stop, and what its default budget takes, on the scale
# suite's tasks (bench/scale.sh writes them): for each task, `joint:time_ms=T` for T in TIMES and
# `joint` at its default budget (T = default), REPEATS times each, on THREADS threads (default 1;
# from 2 the bound is computed beside the search); prints CSV rows
# task,tables,devices,time_ms,repeat,plan_ms,step_ms (plan_ms: the sharder's wall time, which
# time_ms covers — the bound, the search and finishing the plan).
# Usage: bench/joint_deadline.sh SCALE_DIR [TIMES] [REPEATS]   (defaults "100 1000" and 3)
set -euo pipefail
E=${EMBSHARD:-build/bin/embshard}
dir=${1:?usage: bench/joint_deadline.sh SCALE_DIR [TIMES] [REPEATS]}
times=${2:-"100 1000"}
repeats=${3:-3}
threads=${THREADS:-1}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
echo "task,tables,devices,time_ms,repeat,plan_ms,step_ms"
for task in "$dir"/*/000.json; do
  name=$(basename "$(dirname "$task")")
  for t in $times default; do
    spec=joint
    [ "$t" = default ] || spec="joint:time_ms=$t"
    for r in $(seq 1 "$repeats"); do
      "$E" plan --quiet --threads "$threads" --task "$task" --sharder "$spec" --out "$tmp/p.json" > "$tmp/out.txt"
      python3 - "$tmp/p.json" "$tmp/out.txt" "$name" "$t" "$r" <<'EOF'
import json, re, sys
plan, out, name, t, r = sys.argv[1:]
doc = json.load(open(plan))
text = open(out).read()
step = re.search(r"^step ([0-9.]+)", text, re.M).group(1)
preset, tables, devices = name.split("-")
print(f"{name},{tables},{devices},{t},{r},{doc['provenance']['wall_ms']:.1f},{step}")
EOF
    done
  done
done
