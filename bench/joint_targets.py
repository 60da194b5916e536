#!/usr/bin/env python3
"""Issue 15's targets from a `compare` CSV (bench/neuroshard_table1.sh with joint among the
sharders): per setting, joint's mean step against each rival on the tasks both planned, whether
joint planned every task some sharder planned, joint's median gap to its bound and median plan time.
Usage: bench/joint_targets.py results.csv [JOINT_PREFIX]"""
import collections
import csv
import statistics
import sys

RIVALS = [("torchrec (defaults)", lambda s: s.startswith("torchrec:") and "reservation=heuristical" in s),
          ("torchrec fixed 0%", lambda s: s.startswith("torchrec:") and "reservation=fixed_percentage" in s
           and "storage_reservation=0," in s),
          ("neuroshard", lambda s: s.startswith("neuroshard")),
          ("best greedy", lambda s: s.startswith("greedy"))]


def main():
    rows = list(csv.DictReader(open(sys.argv[1])))
    joint_prefix = sys.argv[2] if len(sys.argv) > 2 else "joint"
    step = collections.defaultdict(dict)       # task -> sharder -> step
    setting_of, gaps, times = {}, collections.defaultdict(list), collections.defaultdict(list)
    for r in rows:
        setting_of[r["task_id"]] = r["setting"]
        if r["status"] != "ok":
            continue
        step[r["task_id"]][r["sharder"]] = float(r["step_ms"])
        if r["sharder"].startswith(joint_prefix):
            gaps[r["setting"]].append(float(r["step_ms"]) / float(r["lower_bound_ms"]) - 1)
            times[r["setting"]].append(float(r["plan_ms"]))
    def numbers(setting):  # "neuroshard d4 m128" -> (4, 128)
        return tuple(int("".join(c for c in word if c.isdigit()) or 0) for word in setting.split()[1:])
    settings = sorted(set(setting_of.values()), key=lambda s: (numbers(s), s))
    header = ["setting", "tasks", "joint planned / any planned"] + \
             [f"vs {name}" for name, _ in RIVALS] + ["median gap", "median plan ms"]
    print("| " + " | ".join(header) + " |")
    print("|" + "---|" * len(header))
    all_gaps = []
    for s in settings:
        tasks = [t for t, st in setting_of.items() if st == s]
        joint_ok = [t for t in tasks if any(k.startswith(joint_prefix) for k in step[t])]
        any_ok = [t for t in tasks if step[t]]
        cells = [s.replace("neuroshard ", ""), str(len(tasks)), f"{len(joint_ok)} / {len(any_ok)}"]
        for _, is_rival in RIVALS:
            ratios = []
            mine, theirs = [], []
            for t in joint_ok:
                joint = next(v for k, v in step[t].items() if k.startswith(joint_prefix))
                rival = [v for k, v in step[t].items() if is_rival(k)]
                if rival:
                    mine.append(joint)
                    theirs.append(min(rival))
            cells.append(f"{100 * (statistics.mean(mine) / statistics.mean(theirs) - 1):+.1f}% (n={len(mine)})"
                         if mine else "-")
        cells.append(f"{100 * statistics.median(gaps[s]):.1f}%")
        cells.append(f"{statistics.median(times[s]):.0f}")
        all_gaps += gaps[s]
        print("| " + " | ".join(cells) + " |")
    every = [v for v in times.values() for v in v]
    print(f"\nmedian gap over every task: {100 * statistics.median(all_gaps):.2f}%; "
          f"median plan time {statistics.median(every):.0f} ms (max {max(every):.0f})")


if __name__ == "__main__":
    main()
