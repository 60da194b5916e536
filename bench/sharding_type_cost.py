#!/usr/bin/env python3
"""What one more sharding type costs on TorchRec's runtime: one task of bench/torchrec_runtime.py,
TorchRec's planner's plan as it is, and the same plan with one table (the smallest of dim ≥ 8)
made column-wise over both ranks or data-parallel instead, measured side by side
(embshard.torchrec.measure, interleaved) with the sim judge's prediction beside each. A fourth
plan splits the same table column-wise and types every other table column_wise too, each whole in
one shard: TorchRec runs them all as one group (one input and one output exchange).

    $(bash scripts/setup_python.sh --torchrec) bench/sharding_type_cost.py [TASK_INDEX] [--repeats N]
"""

import argparse
import copy
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import embshard  # noqa: E402
import embshard.torchrec  # noqa: E402
from torchrec_runtime import make_task  # noqa: E402


def variant(document, table, kind, one_group=False):
    """`document` with `table` column-wise in two halves over ranks 0 and 1, or data-parallel;
    `one_group`: every other table typed column_wise too (whole, one shard)."""
    doc = copy.deepcopy(document)
    for entry in doc["tables"]:
        if entry["table"] != table:
            if one_group:
                entry["sharding_type"] = "column_wise"
            continue
        rows, dim = entry["shards"][0]["rows"][1], entry["shards"][0]["cols"][1]
        if kind == "column_wise":
            entry["shards"] = [{"device": 0, "rows": [0, rows], "cols": [0, dim // 2]},
                               {"device": 1, "rows": [0, rows], "cols": [dim // 2, dim]}]
        else:
            entry["shards"] = [{"device": d, "rows": [0, rows], "cols": [0, dim]} for d in (0, 1)]
        entry["sharding_type"] = kind
    return embshard.Plan.from_json(json.dumps(doc))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("index", nargs="?", type=int, default=8)
    parser.add_argument("--seed", type=int, default=9400)
    parser.add_argument("--repeats", type=int, default=21)
    args = parser.parse_args()
    settings = argparse.Namespace(devices=2, mem_gib=1.0, batch=8192, seed=args.seed)
    task = make_task(settings, args.index)
    base = embshard.plan(task, "torchrec")
    document = json.loads(base.to_json())
    if any(t["sharding_type"] != "table_wise" for t in document["tables"]):
        sys.exit(f"{task.id}: TorchRec's plan is not table-wise only; pick another task")
    size = {t["name"]: t["stats"]["num_rows"] * t["dim"] for t in task.tables}
    table = min((t["table"] for t in document["tables"] if t["shards"][0]["cols"][1] >= 8), key=size.get)
    plans = {"table_wise": base, "one_column_wise": variant(document, table, "column_wise"),
             "one_data_parallel": variant(document, table, "data_parallel"),
             "all_column_wise": variant(document, table, "column_wise", one_group=True)}
    print(f"{task.id}: table {table} changed; sim predicts " + ", ".join(
        f"{n} {embshard.evaluate(task, p, 'sim').step_ms:.3f} ms" for n, p in plans.items()))
    print(embshard.torchrec.measure(task, plans, warmup=3, repeats=args.repeats).table())


if __name__ == "__main__":
    main()
