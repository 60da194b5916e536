#!/usr/bin/env python3
"""Pairwise means from a `compare` CSV: each sharder against each other on the tasks both planned
(mean step of each, the change, the median per-task ratio). Usage: bench/pairwise.py results.csv SHARDER_PREFIX"""
import collections
import csv
import statistics
import sys

rows = list(csv.DictReader(open(sys.argv[1])))
mine_prefix = sys.argv[2]
step = collections.defaultdict(dict)
for r in rows:
    if r["status"] == "ok":
        step[r["task_id"]][r["sharder"]] = float(r["step_ms"])
sharders = sorted({s for d in step.values() for s in d})


def label(spec):
    """The name and the parameters in which it differs from another sharder of the same name."""
    name, _, params = spec.partition(":")
    same = [x.partition(":")[2].split(",") for x in sharders if x.partition(":")[0] == name]
    shared = set.intersection(*(set(p) for p in same)) if same else set()
    own = [p for p in params.split(",") if p and p not in shared]
    return name + (":" + ",".join(own) if own else "")


mine = [s for s in sharders if s.startswith(mine_prefix)]
print("| sharder | against | tasks both planned | its mean step | the other's | change | median ratio |")
print("|---|---|---|---|---|---|---|")
for m in mine:
    for other in sharders:
        if other == m:
            continue
        common = [t for t, d in step.items() if m in d and other in d]
        if not common:
            continue
        a = statistics.mean(step[t][m] for t in common)
        b = statistics.mean(step[t][other] for t in common)
        ratio = statistics.median(step[t][m] / step[t][other] for t in common)
        print(f"| {label(m)} | {label(other)} | {len(common)} | {a:.2f} | {b:.2f} | {100 * (a / b - 1):+.1f}% | {ratio:.3f} |")
