# Sourced by bench/scale.sh and bench/scale_2d.sh: the scale suite's task of one size, made once.
#   scale_task OUT PRESET TABLES DEVICES SEED   prints the task's directory (OUT/PRESET-TABLES-DEVICES,
#   holding 000.json: a NeuroShard-pool task, max dim 32, on the preset's nodes of 8), generating it
#   with $E (the embshard binary) unless it is there.
scale_task() {
  local out=$1 preset=$2 tables=$3 devices=$4 seed=$5
  local dir="$out/$preset-$tables-$devices"
  if [ ! -f "$dir/000.json" ]; then
    rm -rf "$dir"
    "$E" task gen --quiet --protocol "neuroshard:tables=$tables,max_dim=32,preset=$preset" --devices "$devices" \
      --count 1 --seed "$seed" --out "$dir" >&2
  fi
  echo "$dir"
}
