#!/usr/bin/env python3
"""The all-to-all latency and bandwidth of TorchRec's CPU runtime, chosen on measured plans: for a
grid of (latency, bandwidth, full or half duplex), every plan of a bench/torchrec_runtime.py run is
judged by `sim` (--sim, e.g. the runtime's fitted coefficients) on its task with that link, and the
median |predicted / measured − 1| of the steps is printed, over all tasks and over the even and the
odd ones, with how many pairs of different plans of one task more than 10% apart the judge orders
as measured, and how far the plans are above the judge's lower bound (cost/analytic.h): each
planner's plans over the bound (a column per planner, the median over the tasks), and on how many
of the tasks TorchRec's planner planned its plan leaves room for one 10% faster (step ≥ bound /
0.9). The plans are made again exactly as the run made them (planning is deterministic) and
checked against the run's layout hashes. docs/judge.md, "TorchRec's CPU runtime".

    $(bash scripts/setup_python.sh --torchrec) bench/torchrec_link_fit.py OUT --seed S --latency-us L \\
        [--link-gbps G] [--half-duplex] [--planners P] [--sim SPEC] [--duplex full,half]

OUT, --seed, --tasks, --latency-us, --link-gbps, --half-duplex and --planners are the bench run's.
"""

import argparse
import csv
import itertools
import json
import os
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import embshard  # noqa: E402
from torchrec_runtime import (PLANNERS, far_apart, layout_hash, link_topology, make_task,  # noqa: E402
                              ordered_as_measured, parse_planners, plan_of)


def with_link(task, latency_us, gbps, half_duplex):
    doc = json.loads(task.to_json())
    doc["topology"] = link_topology(task, latency_us, gbps, half_duplex)
    return embshard.Task.from_json(json.dumps(doc), where=f"{task.id} with the link")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out")
    parser.add_argument("--seed", type=int, required=True)
    parser.add_argument("--tasks", type=int, default=None, help="the run's --tasks (default: read from its rows)")
    parser.add_argument("--latency-us", type=float, required=True)
    parser.add_argument("--link-gbps", type=float, default=None)
    parser.add_argument("--half-duplex", action="store_true")
    parser.add_argument("--planners", default=PLANNERS)
    parser.add_argument("--cost", default="sim")
    parser.add_argument("--sim", default="sim:coefficients=models/calibration/torchrec-cpu.json")
    parser.add_argument("--latencies-us", default="1000,1500,2000,2500,3000")
    parser.add_argument("--gbps", default="0.3,0.4,0.5,0.6")
    parser.add_argument("--duplex", default="full", help="the links to try: full, half or full,half")
    args = parser.parse_args()
    if not set(args.duplex.split(",")) <= {"full", "half"}:
        parser.error(f"--duplex {args.duplex}: give full, half or full,half")
    settings = argparse.Namespace(devices=2, mem_gib=1.0, batch=8192, seed=args.seed, latency_us=args.latency_us,
                                  link_gbps=args.link_gbps, half_duplex=args.half_duplex)
    rows = list(csv.DictReader(open(os.path.join(args.out, "rows.csv"), encoding="utf-8")))
    planners = parse_planners(args.planners)
    plans = []  # (task index, task, plan, measured step, layout, planner)
    tasks = args.tasks or 1 + max(int(r["task"].rsplit("-", 1)[1]) for r in rows)  # ids end in -NNN (the index)
    for index in range(tasks):
        task = make_task(settings, index)
        for name, spec in planners.items():
            row = next((r for r in rows if r["task"] == task.id and r["plan"] == name), None)
            if row is None:  # a task the run skipped (a planner found no plan)
                continue
            plan = plan_of(task, spec, args.cost)
            if layout_hash(plan) != row["layout"]:
                sys.exit(f"{task.id}: {name}'s plan is not the one measured: give the run's --planners and --cost")
            plans.append((index, task, plan, float(row["measured_step_ms"]), row["layout"], name))
    print("duplex,latency_us,gbps,median_error,even_error,odd_error,ordered,pairs,"
          + "".join(f"{name}_over_bound," for name in planners) + "room_10pct,torchrec_tasks")
    for duplex, latency, gbps in itertools.product(args.duplex.split(","),
                                                   [float(x) for x in args.latencies_us.split(",")],
                                                   [float(x) for x in args.gbps.split(",")]):
        errors = {0: [], 1: []}
        judged = []  # one row a plan, as bench/torchrec_runtime.py's
        bounds = {}  # task index: the judge's lower bound of its step
        linked_tasks = {}  # task index: the task with this setting's link, made once a task
        for index, task, plan, measured, layout, name in plans:
            if index not in linked_tasks:
                linked_tasks[index] = with_link(task, latency, gbps, duplex == "half")
            linked = linked_tasks[index]
            step = embshard.evaluate(linked, plan, args.sim, threads=1, exchanges="per_type").step_ms
            errors[index % 2].append(abs(step / measured - 1))
            judged.append({"task": index, "plan": name, "layout": layout, "measured_step_ms": measured,
                           "sim_step_ms": step})
            if index not in bounds:
                bounds[index] = judge_bound(linked, args.sim)
        apart = far_apart([(x, y) for x, y in itertools.combinations(judged, 2) if x["task"] == y["task"]])
        over = {name: [r["sim_step_ms"] / bounds[r["task"]] for r in judged if r["plan"] == name]
                for name in planners}
        torchrec = over.get("torchrec", [])
        print(f"{duplex},{latency:g},{gbps:g},{statistics.median(errors[0] + errors[1]):.4f},"
              f"{statistics.median(errors[0]):.4f},{statistics.median(errors[1]):.4f},"
              f"{ordered_as_measured(apart, 'sim_step_ms')},{len(apart)},"
              + "".join(f"{statistics.median(v):.4f}," if v else "," for v in over.values())
              + f"{sum(r >= 1 / 0.9 for r in torchrec)},{len(torchrec)}", flush=True)


def judge_bound(task, judge):
    """The judge's lower bound of `task`'s step, per-type exchanges: no plan is below it."""
    spec = judge if "exchanges=" in judge else f"{judge}{',' if ':' in judge else ':'}exchanges=per_type"
    bound = embshard.compare(task, ["greedy"], cost=spec, backend=spec)[0].lower_bound_ms
    if not bound > 0:
        sys.exit(f"{task.id}: {spec} gives no lower bound")
    return bound


if __name__ == "__main__":
    main()
