#!/usr/bin/env python3
"""The bound on hosts whose links or speeds differ (docs/data.md, "Mixed hardware";
cost/analytic.h, "Mixed speeds"): `joint`'s plan and the lower bound, per task, on three mixes of
the same protocol tasks. Prints one CSV row per task and binary: the set, the task, the step, the
bound and the gap, and one summary row per set and binary (median and range of the gap).

    bench/mixed_bound.py OUT [--seed S] [--count 20] [--old PATH_TO_OLD_EMBSHARD]

Tasks: `embshard task gen --protocol neuroshard:preset=h100 --devices 16 --count C --seed S`,
their topology replaced by
  slow_nic   two hosts of 8 H100s, the second's NIC at 12 GB/s (a quarter of 48);
  a100_h100  one host of 8 A100s and one of 8 H100s, each with its preset's links;
  one_of_4   four hosts of 4 H100s, the last's NIC at 12 GB/s.
One thread per plan; `joint`'s budget is in work units, so the load changes no plan. With `--old`,
the same sets are planned by that binary too (two at a time, one per core).
"""

import argparse
import csv
import json
import os
import statistics
import subprocess
import sys

SETS = {
    "slow_nic": ["h100:nodes=1,hbm_gib=4", "h100:nodes=1,hbm_gib=4,inter_host_gbps=12"],
    "a100_h100": ["a100:nodes=1,hbm_gib=4", "h100:nodes=1,hbm_gib=4"],
    "one_of_4": ["h100:nodes=3,gpus_per_node=4,hbm_gib=4", "h100:nodes=1,gpus_per_node=4,hbm_gib=4,inter_host_gbps=12"],
}


def make_sets(binary, out, seed, count):
    base = os.path.join(out, "base")
    subprocess.run([binary, "task", "gen", "--protocol", "neuroshard:preset=h100", "--devices", "16", "--count",
                    str(count), "--seed", str(seed), "--out", base, "--quiet"], check=True)
    for name, hosts in SETS.items():
        os.makedirs(os.path.join(out, name), exist_ok=True)
        for f in sorted(os.listdir(base)):
            with open(os.path.join(base, f), encoding="utf-8") as src:
                task = json.load(src)
            task["topology"] = {"hosts": hosts}
            with open(os.path.join(out, name, f), "w", encoding="utf-8") as dst:
                json.dump(task, dst)


def compare(binary, tasks, csv_path):
    return subprocess.Popen([binary, "compare", "--threads", "1", "--tasks", tasks, "--sharders", "joint", "--cost",
                             "sim", "--out", csv_path, "--quiet"], stdout=subprocess.DEVNULL)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out")
    parser.add_argument("--seed", type=int, default=4129)
    parser.add_argument("--count", type=int, default=20)
    parser.add_argument("--old", help="another embshard binary to plan the same sets")
    args = parser.parse_args()
    new = os.environ.get("EMBSHARD", "build/bin/embshard")
    binaries = {"new": new} | ({"old": args.old} if args.old else {})
    make_sets(new, args.out, args.seed, args.count)
    writer = csv.writer(sys.stdout)
    writer.writerow(["set", "binary", "task", "step_ms", "bound_ms", "gap"])
    summary = []
    for name in SETS:
        runs = {b: compare(path, os.path.join(args.out, name), os.path.join(args.out, f"{name}_{b}.csv"))
                for b, path in binaries.items()}
        for b, process in runs.items():
            if process.wait() != 0:
                sys.exit(f"compare {name} with {binaries[b]} failed")
            with open(os.path.join(args.out, f"{name}_{b}.csv"), encoding="utf-8") as f:
                rows = [r for r in csv.DictReader(f) if r["status"] == "ok"]
            gaps = []
            for r in rows:
                step, bound = float(r["step_ms"]), float(r["lower_bound_ms"])
                gaps.append(step / bound - 1)
                writer.writerow([name, b, r["task_id"], f"{step:.4f}", f"{bound:.4f}", f"{gaps[-1]:.4f}"])
            summary.append([name, b, "median_gap", f"{statistics.median(gaps):.4f}", f"{min(gaps):.4f}",
                            f"{max(gaps):.4f}"])
    writer.writerow(["set", "binary", "summary", "median", "min", "max"])
    writer.writerows(summary)


if __name__ == "__main__":
    main()
