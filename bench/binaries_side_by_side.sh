#!/usr/bin/env bash
# Two builds of embshard planning the scale suite's tasks (bench/scale_tasks.sh) side by side: for
# each task, REPEATS rounds of one `embshard plan --threads $THREADS` (default 1) by binary A then
# one by binary B, so the machine's load falls on both alike. Prints one CSV row per run (the
# sharder's wall time is the plan's provenance `wall_ms`, the task's reading not in it; the whole
# command's seconds and peak memory, reading included, from /usr/bin/time), then per task the
# medians, B's over A's, and whether every run of both gave the same step.
#
# Usage: bench/binaries_side_by_side.sh A B [OUT_DIR] [SIZES] [PRESETS] [SEED] [REPEATS] [SHARDER]
#   A, B      embshard binaries (e.g. a build of the last commit kept aside, and build/bin/embshard)
#   SIZES     "TABLESxDEVICES ..." (default "500x64 1000x128 5000x1024 20000x4096 50000x8192")
#   PRESETS   default "v100 h100";  SEED the tasks' seed (default 3200);  REPEATS default 3
#   SHARDER   default joint
set -euo pipefail
[ $# -ge 2 ] || { echo "usage: $0 A B [OUT_DIR] [SIZES] [PRESETS] [SEED] [REPEATS] [SHARDER]" >&2; exit 2; }
a=$1 b=$2
out=${3:-/tmp/embshard-side-by-side}
sizes=${4:-"500x64 1000x128 5000x1024 20000x4096 50000x8192"}
presets=${5:-"v100 h100"}
seed=${6:-3200}
repeats=${7:-3}
sharder=${8:-joint}
for bin in "$a" "$b"; do [ -x "$bin" ] || { echo "$0: $bin is not an executable" >&2; exit 2; }; done
mkdir -p "$out"
E=$a
. "$(dirname "$0")/scale_tasks.sh"
rows="$out/runs.csv"
threads=${THREADS:-1}
echo "binary,preset,tables,devices,repeat,step_ms,plan_ms,command_s,peak_rss_mb" | tee "$rows"
for preset in $presets; do
  for size in $sizes; do
    tables=${size%x*} devices=${size#*x}
    dir=$(scale_task "$out" "$preset" "$tables" "$devices" "$seed")
    for r in $(seq 1 "$repeats"); do
      for which in A B; do
        bin=$a
        if [ "$which" = B ]; then bin=$b; fi
        rm -f "$out/plan-$which.json"
        /usr/bin/time -f "%e %M" -o "$out/time-$which" "$bin" plan --task "$dir/000.json" --sharder "$sharder" \
          --threads "$threads" --out "$out/plan-$which.json" > "$out/plan-$which.txt"
        read -r seconds kb < "$out/time-$which"
        step=$(awk '/^step /{print $2}' "$out/plan-$which.txt")
        wall=$(python3 -c "import json, sys; print('%.1f' % json.load(open(sys.argv[1]))['provenance']['wall_ms'])" \
          "$out/plan-$which.json")
        echo "$which,$preset,$tables,$devices,$r,$step,$wall,$seconds,$((kb / 1024))" >> "$rows"
        tail -n 1 "$rows"
      done
    done
  done
done
python3 - "$rows" <<'EOF'
import csv, statistics, sys
from collections import defaultdict
runs = defaultdict(list)
for row in csv.DictReader(open(sys.argv[1])):
    runs[(row["preset"], row["tables"], row["devices"], row["binary"])].append(row)
print("preset,tables,devices,A_median_ms,B_median_ms,B_over_A,same_step,A_command_s,B_command_s,A_peak_mb,B_peak_mb")
for key in sorted({k[:3] for k in runs}, key=lambda k: (k[0], int(k[1]))):
    a, b = runs[key + ("A",)], runs[key + ("B",)]
    ma = statistics.median(float(r["plan_ms"]) for r in a)
    mb = statistics.median(float(r["plan_ms"]) for r in b)
    ca = statistics.median(float(r["command_s"]) for r in a)
    cb = statistics.median(float(r["command_s"]) for r in b)
    pa = max(int(r["peak_rss_mb"]) for r in a)
    pb = max(int(r["peak_rss_mb"]) for r in b)
    same = len({r["step_ms"] for r in a + b}) == 1
    print(f"{key[0]},{key[1]},{key[2]},{ma:.0f},{mb:.0f},{mb / ma:.3f},{'yes' if same else 'no'},{ca:.2f},{cb:.2f},{pa},{pb}")
EOF
