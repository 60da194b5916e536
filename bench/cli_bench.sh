#!/usr/bin/env bash
# Times the foundation's CLI verbs and prints one CSV row per case:
#   case,repeats,median_s,min_s,max_s,peak_rss_mb,bytes,mb_per_s
# Usage: bench/cli_bench.sh [REPEATS] [BIN]   (defaults: 5, build/bin/embshard)
# The dataset-reader cases write a synthetic dataset file (64 pool tables x 65,536 samples, the
# real file's batch) to a temporary folder, in both the plain and the gzipped container.
set -euo pipefail
repeats="${1:-5}"
bin="${2:-build/bin/embshard}"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# median/min/max of seconds, and the largest peak RSS, over `repeats` runs of a command.
measure() {
  local name="$1" bytes="$2"
  shift 2
  local times=() rss=0
  for _ in $(seq "$repeats"); do
    /usr/bin/time -f "%e %M" -o "$tmp/time" "$@" >/dev/null 2>&1
    read -r sec kb <"$tmp/time"
    times+=("$sec")
    [ "$kb" -gt "$rss" ] && rss="$kb"
  done
  sorted=$(printf '%s\n' "${times[@]}" | sort -g)
  median=$(echo "$sorted" | awk '{a[NR]=$1} END {print (NR%2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}')
  min=$(echo "$sorted" | head -1)
  max=$(echo "$sorted" | tail -1)
  mbps=""
  [ "$bytes" -gt 0 ] && mbps=$(awk -v b="$bytes" -v s="$median" 'BEGIN {if (s > 0) printf "%.1f", b / s / 1e6}')
  echo "$name,$repeats,$median,$min,$max,$((rss / 1024)),$bytes,$mbps"
}

echo "case,repeats,median_s,min_s,max_s,peak_rss_mb,bytes,mb_per_s"
measure "main job (no arguments)" 0 "$bin"
measure "pool --out (856 tables; batch 65536)" 0 "$bin" pool --out "$tmp/pool.json"
measure "pool --check (8 tables measured at 65536)" 0 "$bin" pool --check
measure "task gen neuroshard x100" 0 "$bin" task gen --protocol neuroshard --devices 4 --max-dim 128 --count 100 --seed 0 --out "$tmp/tasks"

"$bin" pool --quiet --write-pt "$tmp/d.pt" --tables 64 --batch 65536
"$bin" pool --quiet --write-pt "$tmp/d.pt.gz" --tables 64 --batch 65536
plain=$(stat -c %s "$tmp/d.pt")
measure "stats .pt (64 tables x 65536, mmap)" "$plain" "$bin" stats --data "$tmp/d.pt" --out "$tmp/s.json"
measure "stats .pt.gz (same, streamed gzip)" "$plain" "$bin" stats --data "$tmp/d.pt.gz" --out "$tmp/s.json"
measure "stats .pt single thread" "$plain" "$bin" stats --threads 1 --data "$tmp/d.pt" --out "$tmp/s.json"
