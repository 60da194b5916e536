#!/usr/bin/env bash
# The reports docs/reports/ shows (issue 18): the main job's task planned by every sharder, and a
# 100-task comparison (NeuroShard protocol, 4 and 8 devices, max dim 128, seed 2026: tasks nobody
# tuned on), the fit of the sim model (`profile calibrate`) and of the neural cost models
# (`train cost`, retrained on this machine with the default model's recipe and samples, when
# embshard-train is built), each with a headless-Chromium screenshot of its first screen.
# Usage: bench/show_reports.sh [OUT_DIR]   (default docs/reports)
# Reports.TheCommittedReportsShowTodaysSharders fails when docs/reports no longer show today's
# default sharders or this script's comparison: run it again then.
set -euo pipefail
E=$(realpath "${EMBSHARD:-build/bin/embshard}")
out=$(realpath -m "${1:-docs/reports}")
sharders="joint;random;greedy;greedy:balance=size_and_lookup;torchrec;neuroshard"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$out"
"$E" --quiet --report "$out/main-job.html" >/dev/null
for devices in 4 8; do
  "$E" task gen --quiet --protocol neuroshard --devices "$devices" --max-dim 128 --count 50 --seed 2026 \
    --out "$work/d$devices"
  for f in "$work/d$devices"/*.json; do cp "$f" "$work/tasks-d$devices-$(basename "$f")"; done
done
mkdir -p "$work/tasks" && mv "$work"/tasks-*.json "$work/tasks/"
# run from the work folder so the report names its tasks "neuroshard-m128-seed2026", not a temporary path
mv "$work/tasks" "$work/neuroshard-m128-seed2026"
(cd "$work" && "$E" compare --tasks neuroshard-m128-seed2026 --sharders "$sharders" --out "$out/compare-100.csv" \
  --summary "$out/compare-100.md" --report "$out/compare-100.html" --reference torchrec >/dev/null)
pages="main-job compare-100 calibrate"
"$E" profile calibrate --quiet --samples models/samples/cpu-compute.jsonl --out "$work/sim.json" \
  --report "$out/calibrate.html" >/dev/null
if [ -x "$(dirname "$E")/embshard-train" ]; then
  ln -s "$(realpath models)" "$work/models"  # so the report names models/samples/…, not a temporary path
  (cd "$work" && "$E" train cost --quiet --samples models/samples/cpu-compute.jsonl,models/samples/cpu-comm4.jsonl \
    --out cpu-default-retrained.json --report "$out/train-cost.html" >/dev/null)
  pages="$pages train-cost"
fi
browser=$(command -v chromium || command -v chromium-browser)
for page in $pages; do
  "$browser" --headless --no-sandbox --disable-gpu --hide-scrollbars --user-data-dir="$work/profile" \
    --window-size=1280,1600 --screenshot="$out/$page.png" "file://$(realpath "$out/$page.html")" 2>/dev/null
done
echo "show_reports: $(for p in $pages; do printf '%s ' "$out/$p.html"; done)and their .png screenshots"
