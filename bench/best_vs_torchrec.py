"""embshard's "best" plan against real TorchRec's planner on the same tasks, one judge (sim).

    $(bash scripts/setup_python.sh --torchrec) bench/best_vs_torchrec.py [TASKS] [SEED]

For NeuroShard's settings at 4 and 8 devices, TASKS fresh tasks each: `embshard.plan(task)` ("best":
every default sharder, the plan sim rates fastest) and `embshard.torchrec.plan_with_torchrec(task)`
(torchrec 1.9.2, its default 15% + KJT reservation). Both plan against the same memory: embshard's
task has each device's HBM less TorchRec's reservation, as EmbshardPlanner does, and its `torchrec`
candidates do not reserve again. Both plans are judged on the original task. One CSV row per task,
then per setting the tasks each planned, and over the tasks both planned the median and geometric
mean of TorchRec's step ÷ ours and how often ours is faster / equal / slower.
"""

import csv
import json
import logging
import math
import statistics
import sys
import warnings

warnings.filterwarnings("ignore")
logging.disable(logging.WARNING)

import embshard  # noqa: E402
from embshard._embshard import (torchrec_kjt_reservation_bytes,  # noqa: E402
                                torchrec_table_budget_bytes)
from embshard.torchrec import RESERVATION_SHARE, _for_torchrec, plan_with_torchrec  # noqa: E402


def reserved(task):
    """`task` with each device's HBM less TorchRec's heuristical reservation (no dense model)."""
    doc = json.loads(task.to_json())
    topology = task.topology
    world = len(topology["devices"])
    per_rank = doc["batch_size"] // world
    kjt = torchrec_kjt_reservation_bytes(sum(t["stats"]["pooling_factor"] for t in doc["tables"]) * per_rank)
    for d in topology["devices"]:
        d["hbm_bytes"] = max(1, torchrec_table_budget_bytes(d["hbm_bytes"], RESERVATION_SHARE, 0, kjt))
    doc["topology"] = {k: topology[k] for k in ("device_kind", "devices_per_host", "intra_host_gbps",
                                                "inter_host_gbps", "a2a_latency_us", "devices")}
    return embshard.Task.from_json(json.dumps(doc), where=f"{task.id} (reserved)")

SETTINGS = ["neuroshard:devices=4,max_dim=32", "neuroshard:devices=4,max_dim=128",
            "neuroshard:devices=8,max_dim=32", "neuroshard:devices=8,max_dim=128"]


def main(tasks=20, seed=3907):
    out = csv.writer(sys.stdout)
    out.writerow(["row", "setting", "task", "best_sharder", "best_step_ms", "torchrec_step_ms", "ratio"])
    for setting in SETTINGS:
        ratios, ours_only, theirs_only = [], 0, 0
        for index in range(tasks):
            task = embshard.Task.generate(setting, seed=seed, index=index)
            ours = embshard.plan(reserved(task), candidates=[_for_torchrec(c) for c in
                                                             embshard.default_sharders()])
            try:
                theirs = plan_with_torchrec(task)
            except embshard.Error:
                theirs = None
            ours_ms = embshard.evaluate(task, ours).step_ms if ours.ok else None
            theirs_ms = embshard.evaluate(task, theirs).step_ms if theirs is not None else None
            ours_only += ours_ms is not None and theirs_ms is None
            theirs_only += ours_ms is None and theirs_ms is not None
            ratio = theirs_ms / ours_ms if ours_ms and theirs_ms else None
            if ratio is not None:
                ratios.append(ratio)
            out.writerow(["task", setting, task.id,
                          ours.provenance["sharder"].split(":")[0] if ours.ok else ours.status,
                          f"{ours_ms:.4f}" if ours_ms else "", f"{theirs_ms:.4f}" if theirs_ms else "",
                          f"{ratio:.4f}" if ratio else ""])
        faster = sum(r > 1 + 1e-9 for r in ratios)
        slower = sum(r < 1 - 1e-9 for r in ratios)
        geo = math.exp(sum(math.log(r) for r in ratios) / len(ratios)) if ratios else float("nan")
        out.writerow(["summary", setting, f"{tasks} tasks", f"only ours planned {ours_only}",
                      f"only torchrec planned {theirs_only}", f"both {len(ratios)}",
                      f"torchrec/ours median {statistics.median(ratios):.4f} geomean {geo:.4f}; "
                      f"ours faster {faster}, equal {len(ratios) - faster - slower}, slower {slower}"
                      if ratios else ""])


if __name__ == "__main__":
    main(*(int(a) for a in sys.argv[1:3]))
