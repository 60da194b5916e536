"""Real TorchRec's planner against `joint` on the scale suite's tasks, same memory, one judge (sim).

    $(bash scripts/setup_python.sh --torchrec) bench/scale_torchrec.py DIR [DIR ...]

DIR: a task directory of bench/scale.sh (e.g. /tmp/embshard-scale/v100-500-64). For its task:
`joint` (the default budget, one thread) plans against each device's HBM less TorchRec's
reservation, as EmbshardPlanner does — as it is and with `torchrec=true` (only the row layouts
TorchRec's training path runs, what EmbshardPlanner asks for); torchrec 1.9.2 plans with its DynamicProgrammingProposer and
with its default proposers (PROPOSERS, comma-separated, to choose; empty: joint only); every plan is judged on the
original task by `sim`. One CSV row per (task, planner): its status, sim step, planning seconds,
and TorchRec's step ÷ joint's (the first joint row).
"""

import csv
import glob
import os
import sys
import time
import warnings

warnings.filterwarnings("ignore")

import embshard  # noqa: E402
from embshard.torchrec import plan_with_torchrec  # noqa: E402

sys.path.insert(0, os.path.dirname(__file__))
from best_vs_torchrec import reserved  # noqa: E402


def main(dirs):
    proposers = [p for p in os.environ.get("PROPOSERS", "dynamic_programming,default").split(",") if p]
    out = csv.writer(sys.stdout)
    out.writerow(["task", "tables", "devices", "planner", "status", "step_ms", "plan_s", "torchrec_over_joint"])
    for directory in dirs:
        for path in sorted(glob.glob(os.path.join(directory, "*.json"))):
            task = embshard.Task.load(path)
            tables, devices = len(task.tables), len(task.topology["devices"])
            ours_ms = None
            for spec in ("joint", "joint:torchrec=true"):
                start = time.perf_counter()
                ours = embshard.plan(reserved(task), sharder=spec, threads=1)
                seconds = time.perf_counter() - start
                ms = embshard.evaluate(task, ours).step_ms if ours.ok else None
                ours_ms = ours_ms or ms
                out.writerow([task.id, tables, devices, spec, "ok" if ours.ok else "failed",
                              f"{ms:.3f}" if ms else "", f"{seconds:.1f}", ""])
                sys.stdout.flush()
            for proposer in proposers:
                start = time.perf_counter()
                try:
                    theirs = plan_with_torchrec(task, proposer=proposer)
                    status = "ok"
                except embshard.Error as e:
                    theirs, status = None, str(e).splitlines()[0]
                seconds = time.perf_counter() - start
                ms = embshard.evaluate(task, theirs).step_ms if theirs is not None else None
                ratio = f"{ms / ours_ms:.3f}" if ms and ours_ms else ""
                out.writerow([task.id, tables, devices, f"torchrec ({proposer})", status,
                              f"{ms:.3f}" if ms else "", f"{seconds:.1f}", ratio])
                sys.stdout.flush()


if __name__ == "__main__":
    main(sys.argv[1:])
