#!/usr/bin/env python3
"""`embshard fit` on tasks that do not fit (issue 30's target): NeuroShard-protocol tasks with the
HBM per device cut to a fraction of what their tables need, each advised by `embshard.fit`; the
top change is applied and planned again, and the next smaller change of the same kind is built
here (not taken from fit's own report) and planned: it must fail.

Usage: $(bash scripts/setup_python.sh) bench/fit_suite.py [--count 50] [--seed 9300]
       [--sharder joint] [--devices 4,8]
Prints one CSV row per task, then a summary line per figure.
"""
import argparse
import json
import random
import re
import statistics
import sys
import time

import embshard
from embshard import Task

STEP_GIB = 1 / 16  # fit's memory step


def edit_preset(task, **changes):
    doc = json.loads(task.to_json())
    preset = doc["topology"]["preset"]
    name, _, pairs = preset.partition(":")
    values = dict(p.split("=", 1) for p in pairs.split(",") if p)
    values.update({k: str(v) for k, v in changes.items()})
    doc["topology"]["preset"] = name + ":" + ",".join(f"{k}={v}" for k, v in values.items())
    return Task.from_json(json.dumps(doc), where="fit_suite")


def preset_values(task):
    preset = json.loads(task.to_json())["topology"]["preset"]
    return dict(p.split("=", 1) for p in preset.partition(":")[2].split(",") if p)


def smaller_change(original, change):
    """The next smaller change of the same kind, built from the changed task."""
    kind, changed = change["kind"], change["task"]
    if kind == "memory":
        return edit_preset(changed, hbm_gib=repr(float(preset_values(changed)["hbm_gib"]) - STEP_GIB))
    if kind == "devices":
        per_host = int(preset_values(original)["gpus_per_node"])
        nodes = int(preset_values(changed)["nodes"])
        n = changed.num_devices - (per_host if nodes > 1 else 1)
        if n <= original.num_devices:
            return None  # the next smaller count is today's, which fails by construction
        return edit_preset(changed, nodes=max(1, n // per_host) if n > per_host else 1,
                           gpus_per_node=per_host if n > per_host else n)
    if kind == "uvm":
        doc = json.loads(changed.to_json())
        allowed = [t for t in doc["tables"] if t.get("constraints", {}).get("allow_uvm", True)]
        if len(allowed) <= 1:
            return None
        sizes = {t["name"]: t["stats"]["num_rows"] * t["dim"] for t in allowed}
        least = min(allowed, key=lambda t: sizes[t["name"]])
        least.setdefault("constraints", {})["allow_uvm"] = False
        return Task.from_json(json.dumps(doc), where="fit_suite")
    return None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--count", type=int, default=50)
    ap.add_argument("--seed", type=int, default=9300)
    ap.add_argument("--sharder", default="joint")
    ap.add_argument("--devices", default="4,8")
    args = ap.parse_args()
    rng = random.Random(args.seed)
    devices = [int(d) for d in args.devices.split(",")]
    print("task,devices,hbm_gib,fit_s,kinds,top_kind,top,top_plans,smaller_fails,changes_all_plan")
    rows = []
    for i in range(args.count):
        d = devices[i % len(devices)]
        base = Task.generate(f"neuroshard:devices={d},max_dim=64", seed=args.seed, index=i)
        need_gib = sum(t["stats"]["num_rows"] * t["dim"] * 4 for t in base.tables) / 2**30 / d
        cut = round(need_gib * rng.uniform(0.3, 0.9), 3)  # 10–70% short of the tables' bytes
        task = edit_preset(base, hbm_gib=cut)
        start = time.perf_counter()
        advice = embshard.fit(task, sharder=args.sharder, seed=args.seed)
        fit_s = time.perf_counter() - start
        if advice.fits or not advice.changes:
            print(f"{i},{d},{cut},{fit_s:.2f},,none,,no,,", flush=True)
            rows.append(None)
            continue
        top = advice.changes[0]
        top_plans = embshard.plan(top["task"], args.sharder, seed=args.seed).ok
        all_plan = all(embshard.plan(c["task"], args.sharder, seed=args.seed).ok for c in advice.changes)
        smaller_ok = []
        for c in advice.changes:
            smaller = smaller_change(task, c)
            if smaller is not None:
                smaller_ok.append(not embshard.plan(smaller, args.sharder, seed=args.seed).ok)
        kinds = "|".join(c["kind"] for c in advice.changes)
        desc = re.sub(r"[,\n]", ";", top["description"])
        print(f"{i},{d},{cut},{fit_s:.2f},{kinds},{top['kind']},{desc},{'yes' if top_plans else 'no'},"
              f"{sum(smaller_ok)}/{len(smaller_ok)},{'yes' if all_plan else 'no'}", flush=True)
        rows.append((fit_s, top_plans, smaller_ok, all_plan, top["kind"]))
    done = [r for r in rows if r]
    print(f"# tasks {len(rows)}, advised {len(done)}, top change plans {sum(r[1] for r in done)}/{len(done)}, "
          f"every change plans {sum(r[3] for r in done)}/{len(done)}, next smaller fails "
          f"{sum(sum(r[2]) for r in done)}/{sum(len(r[2]) for r in done)}, "
          f"median fit time {statistics.median(r[0] for r in done):.2f} s, top kinds "
          f"{ {k: sum(r[4] == k for r in done) for k in sorted({r[4] for r in done})} }", file=sys.stderr)


if __name__ == "__main__":
    main()
