"""The `torchrec` sharder against real TorchRec's planner, plan for plan (issue 16 item 4).

    $(bash scripts/setup_python.sh --torchrec) bench/torchrec_agreement.py [TASKS] [SEED]

For NeuroShard's 4-device max-dim-128 and 8-device max-dim-64 settings, TASKS fresh tasks each
(seed SEED), planned by `torchrec:bandwidths=torchrec,formulas=F` for F in 1.9.2 and 1.4.0a0 and by
real torchrec 1.9.2 (embshard.torchrec.plan_with_torchrec: the same mapping of a task onto
TorchRec's inputs). One CSV row per task and formula set, then one summary row per setting and
formula set: tasks both planned (and both refused), identical plans (every table's type and
ranks), same sharding types, the same step under the sim judge (within 1e-6), and the median ratio
of our step to TorchRec's.
"""

import csv
import logging
import statistics
import sys
import warnings

warnings.filterwarnings("ignore")
logging.disable(logging.WARNING)

import embshard  # noqa: E402
from embshard.torchrec import plan_with_torchrec  # noqa: E402

SETTINGS = ["neuroshard:devices=4,max_dim=128", "neuroshard:devices=8,max_dim=64"]
FORMULAS = ["1.9.2", "1.4.0a0"]


def layout(plan):
    return {t["table"]: (t["sharding_type"], [s["device"] for s in t["shards"]]) for t in plan.tables}


def main(tasks=20, seed=2611):
    out = csv.writer(sys.stdout)
    out.writerow(["row", "setting", "formulas", "task", "ours", "torchrec", "identical",
                  "same_types", "step_ratio"])
    for setting in SETTINGS:
        results = {f: [] for f in FORMULAS}
        for index in range(tasks):
            task = embshard.Task.generate(setting, seed=seed, index=index)
            try:
                real = plan_with_torchrec(task)
            except embshard.Error:
                real = None
            for formulas in FORMULAS:
                ours = embshard.plan(task, f"torchrec:bandwidths=torchrec,formulas={formulas}")
                row = {"ours": ours.status, "torchrec": "ok" if real else "infeasible",
                       "identical": "", "same_types": "", "step_ratio": ""}
                if ours.ok and real is not None:
                    a, b = layout(ours), layout(real)
                    row["identical"] = int(a == b)
                    row["same_types"] = int(all(a[k][0] == b[k][0] for k in a))
                    row["step_ratio"] = (embshard.evaluate(task, ours).step_ms /
                                         embshard.evaluate(task, real).step_ms)
                elif not ours.ok and real is None:
                    row["identical"] = row["same_types"] = 1  # both refuse the task
                results[formulas].append(row)
                out.writerow(["task", setting, formulas, task.id, row["ours"], row["torchrec"],
                              row["identical"], row["same_types"],
                              f"{row['step_ratio']:.4f}" if row["step_ratio"] != "" else ""])
        for formulas in FORMULAS:
            rows = results[formulas]
            both = [r for r in rows if r["step_ratio"] != ""]
            refused = sum(1 for r in rows if r["ours"] != "ok" and r["torchrec"] != "ok")
            out.writerow(["summary", setting, formulas, f"{len(rows)} tasks",
                          f"both planned {len(both)}", f"both refused {refused}",
                          f"identical {sum(r['identical'] for r in both)}/{len(both)}",
                          f"same types {sum(r['same_types'] for r in both)}/{len(both)}",
                          f"same step {sum(abs(r['step_ratio'] - 1) < 1e-6 for r in both)}/{len(both)}",
                          f"median step ratio {statistics.median(r['step_ratio'] for r in both):.4f}"
                          if both else ""])


if __name__ == "__main__":
    main(*(int(a) for a in sys.argv[1:3]))
