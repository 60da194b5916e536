#!/usr/bin/env bash
# Regenerates the two generated blocks of docs/judge.md (between its `<!-- generated: … -->` and
# `<!-- end generated -->` lines): the 2080 Ti fit against every published figure, fitted and held
# out, and the cpu refit on the committed samples. The page's prose is written by hand around them.
# Usage: bench/judge_report.sh [TASKS_PER_SETTING] [SEED]   (defaults 20 and 1: the committed fit)
set -euo pipefail
E=${EMBSHARD:-build/bin/embshard}
tasks=${1:-20}
seed=${2:-1}
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
"$E" profile calibrate --quiet --figures models/calibration/2080ti-papers.json --tasks "$tasks" --seed "$seed" \
  > "$dir/2080ti"
{ echo '```'; "$E" profile calibrate --quiet --samples models/samples/cpu-compute.jsonl; echo '```'; } > "$dir/cpu"
python3 - docs/judge.md "$dir/2080ti" "$dir/cpu" <<'PY'
import sys
page, blocks = sys.argv[1], {"the 2080 Ti fit": sys.argv[2], "the cpu fit": sys.argv[3]}
text = open(page).read()
for name, path in blocks.items():
    start = f"<!-- generated: {name} (bench/judge_report.sh) -->\n"
    end = "<!-- end generated -->\n"
    a = text.index(start) + len(start)
    b = text.index(end, a)
    text = text[:a] + open(path).read() + text[b:]
open(page, "w").write(text)
PY
echo "updated docs/judge.md"
