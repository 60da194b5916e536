#!/usr/bin/env python3
"""`embshard replan` against planning from scratch (issue 30's target): a scale-suite task planned by
joint on its devices, then (a) one host added (64 -> 72 ranks) and (b) a statistics drift (every
table's pooling factor scaled by a factor drawn log-uniformly in [1/2, 2], seeded), each re-planned
with a movement budget and planned from scratch. Side by side in one run; every step by `sim`.

Usage: $(bash scripts/setup_python.sh) bench/replan_suite.py TASK.json [TASK.json ...]
       [--max-move 0.1] [--seed 9400] [--old-sharder joint:groups=32] [--layout best|kept|1d]
Prints one CSV row per (task, scenario). A 2D old plan (`--old-sharder joint:groups=G`) is re-planned
in its own layout and in 1D as `--layout` says (docs/what_if.md); where the chosen plan is 2D,
"scratch" is joint's own 2D plan at its group size (`joint:groups=G'`), else the sharder's 1D plan;
`replicas` says how many copies of each shard the chosen plan keeps (1: 1D).
"""
import argparse
import json
import math
import random
import time

import embshard
from embshard import Task


def add_host(task):
    doc = json.loads(task.to_json())
    name, _, pairs = doc["topology"]["preset"].partition(":")
    values = dict(p.split("=", 1) for p in pairs.split(",") if p)
    values["nodes"] = str(int(values.get("nodes", "1")) + 1)
    doc["topology"]["preset"] = name + ":" + ",".join(f"{k}={v}" for k, v in values.items())
    return Task.from_json(json.dumps(doc), where="replan_suite: host added")


def drift(task, rng):
    doc = json.loads(task.to_json())
    for t in doc["tables"]:
        s = t["stats"]
        f = math.exp(rng.uniform(math.log(0.5), math.log(2.0)))
        if s["num_indices"] == 0:
            continue  # a table nobody looks up stays so
        s["num_indices"] = max(1, round(s["num_indices"] * f))
        s["pooling_factor"] = s["num_indices"] / s["batch_size"]
        s["coverage"] = min(s["coverage"], s["pooling_factor"])
        if f < 1:  # fewer lookups touch no more rows than before
            s["num_distinct"] = min(s["num_distinct"], s["num_indices"])
            if "icdf" in s:
                s["icdf"] = [min(v, s["num_distinct"]) for v in s["icdf"]]
    return Task.from_json(json.dumps(doc), where="replan_suite: drift")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("tasks", nargs="+")
    ap.add_argument("--max-move", type=float, default=0.1)
    ap.add_argument("--seed", type=int, default=9400)
    ap.add_argument("--sharder", default="joint:groups=none")
    ap.add_argument("--old-sharder", default=None, help="the old plan's sharder (default: --sharder)")
    ap.add_argument("--layout", default="best", help="of a 2D old plan: best | kept | 1d (embshard.replan)")
    args = ap.parse_args()
    rng = random.Random(args.seed)
    print("task,scenario,devices,replicas,old_step,kept_step,scratch_step,scratch_moved_share,replan_step,"
          "replan_moved_share,replan_over_scratch,replan_s,max_sent_gib,max_received_gib")
    for path in args.tasks:
        task = Task.load(path)
        old = embshard.plan(task, args.old_sharder or args.sharder, seed=args.seed)
        old_step = embshard.evaluate(task, old).step_ms
        for scenario, new in (("host_added", add_host(task)), ("drift", drift(task, rng))):
            start = time.perf_counter()
            r = embshard.replan(new, old, max_move=args.max_move, sharder=args.sharder, seed=args.seed,
                                layout=args.layout)
            replan_s = time.perf_counter() - start
            layout = r.plan.sharding_groups
            if layout is None:
                scratch = embshard.plan(new, args.sharder, seed=args.seed)
            else:  # joint's own 2D plan at the re-plan's group size
                scratch = embshard.plan(new, f"joint:groups={layout['size']}", seed=args.seed)
            scratch_step = embshard.evaluate(new, scratch).step_ms
            if layout is None:
                assert abs(scratch_step - r.target["step_ms"]) <= 1e-6 * scratch_step, (scratch_step, r.target)
            replicas = 1 if layout is None else new.num_devices // layout["size"]
            print(f"{path},{scenario},{new.num_devices},{replicas},{old_step:.4f},{r.kept['step_ms']:.4f},{scratch_step:.4f},"
                  f"{r.target['moved_share']:.4f},{r.chosen['step_ms']:.4f},{r.chosen['moved_share']:.4f},"
                  f"{r.chosen['step_ms'] / scratch_step:.4f},{replan_s:.2f},{max(r.sent_bytes) / 2**30:.3f},"
                  f"{max(r.received_bytes) / 2**30:.3f}", flush=True)


if __name__ == "__main__":
    main()
