#!/usr/bin/env python3
"""joint's plans against TorchRec's planner's plans on TorchRec's own runtime (issue 28), with what
embshard's judges predicted for the same plans beside each measured figure.

    $(bash scripts/setup_python.sh --torchrec) bench/torchrec_runtime.py OUT [--tasks 20] ...

For each of --tasks NeuroShard-protocol tasks of the `cpu` preset on --devices ranks (max dim 128,
--mem-gib per rank so the models fit here, global batch --batch, row-wise splits off: TorchRec's
CPU sharder offers table-wise, column-wise and data-parallel only), plans it with `joint`
(torchrec=true: only what TorchRec can run; once more without data-parallel tables) and with the
`torchrec` sharder (TorchRec's planner logic, equal to torchrec 1.9.2 plan for plan), runs them under DistributedModelParallel on gloo
ranks (embshard.torchrec.measure: interleaved repeats), and judges each with `sim` (--sim: e.g. a fit of TorchRec's runtime, bench/torchrec_fit.sh) and, unless
--no-cpu-judge, the `cpu` backend (the kernels measured, all-to-alls modelled). Writes OUT/rows.csv
(one row per task and plan) and prints a summary: joint's step over TorchRec's, measured and
predicted, and each judge's error against the measured step.
"""

import argparse
import csv
import hashlib
import json
import os
import statistics
import sys
import time

import embshard
import embshard.torchrec

PLANNERS = "torchrec=torchrec;joint=joint:torchrec=true;joint_no_dp=joint:torchrec=true,data_parallel=false"
MEASURED = ("step_ms", "step_min_ms", "step_max_ms", "step_lo_ms", "step_hi_ms", "input_a2a_ms", "lookup_ms",
            "output_a2a_ms", "forward_ms", "lookup_bw_ms", "backward_ms", "update_ms")
PREDICTED = ("step_ms", "in_comm_ms", "fw_comp_ms", "fw_comm_ms", "bw_comp_ms", "bw_ms")
# sim's phase against the runtime's, each the slowest device's / rank's: (predicted, measured).
PHASE_PAIRS = {
    "forward lookups": (lambda r: r["sim_fw_comp_ms"], lambda r: r["measured_lookup_ms"]),
    "backward lookups and update": (lambda r: r["sim_bw_comp_ms"], lambda r: r["measured_lookup_bw_ms"]),
    "forward exchanges": (lambda r: r["sim_in_comm_ms"] + r["sim_fw_comm_ms"],
                          lambda r: r["measured_input_a2a_ms"] + r["measured_output_a2a_ms"]),
    "backward exchanges": (lambda r: r["sim_bw_ms"] - r["sim_bw_comp_ms"],
                           lambda r: r["measured_backward_ms"] - r["measured_lookup_bw_ms"]),
}


def make_task(args, index):
    protocol = (f"neuroshard:devices={args.devices},preset=cpu,max_dim=128,mem_gib={args.mem_gib},"
                f"batch_size={args.batch}")
    task = embshard.Task.generate(protocol, seed=args.seed, index=index)
    doc = json.loads(task.to_json())
    doc["constraints"]["allow_row_split"] = False  # TorchRec's CPU sharder has no row-wise
    doc["id"] = f"{doc['id']}-s{args.seed}-{index:03d}"
    latency, gbps = getattr(args, "latency_us", None), getattr(args, "link_gbps", None)
    half_duplex = getattr(args, "half_duplex", False)
    if latency is not None or gbps is not None or half_duplex:  # the runtime's exchanges (docs/judge.md)
        doc["topology"] = link_topology(task, latency, gbps, half_duplex)
    return embshard.Task.from_json(json.dumps(doc), where=f"task {index}")


def link_topology(task, latency_us=None, gbps=None, half_duplex=None):
    """`task`'s topology in full, with the all-to-all latency (µs), bandwidth per rank (GB/s) and
    whether a rank's sends and receives share its link (data/topology.h) replaced where given."""
    topology = {k: v for k, v in task.topology.items() if k != "name"}
    if half_duplex is not None:
        topology["half_duplex"] = bool(half_duplex)
    if latency_us is not None:
        topology["a2a_latency_us"] = latency_us
    if gbps is not None:
        topology["intra_host_gbps"] = topology["inter_host_gbps"] = gbps
        # every device at that bandwidth: no device keeps links of its own (mixed hardware)
        topology["devices"] = [{k: v for k, v in d.items() if k not in ("intra_host_gbps", "inter_host_gbps")}
                               for d in topology["devices"]]
    return topology


def parse_planners(text):
    """"name=sharder spec[|cost spec];..." as {name: spec}."""
    return dict(item.split("=", 1) for item in text.split(";"))


def plan_of(task, spec, default_cost):
    """The plan of one --planners entry: its sharder under its cost model, else `default_cost`."""
    sharder, _, cost = spec.partition("|")
    return embshard.plan(task, sharder, cost or default_cost, threads=1)


def layout_hash(plan):
    """A short hash of a plan's layout (its tables' shards), equal for identical plans."""
    layout = json.dumps(json.loads(plan.to_json())["tables"], sort_keys=True)
    return hashlib.sha256(layout.encode()).hexdigest()[:12]


def predicted(task, plan, backend, exchanges="fused"):
    """The judge's step and phases of the slowest device (in, fw compute, fw comm, backward)."""
    breakdown = embshard.evaluate(task, plan, backend, threads=1, exchanges=exchanges)
    devices = breakdown.devices
    return {"step_ms": breakdown.step_ms,
            "in_comm_ms": max(d["in_comm_ms"] for d in devices),
            "fw_comp_ms": max(d["fw_comp_ms"] for d in devices),
            "fw_comm_ms": max(d["fw_comm_ms"] for d in devices),
            "bw_comp_ms": max(d["bw_comp_ms"] for d in devices),
            "bw_ms": max(d["bw_comm_ms"] + d["bw_comp_ms"] for d in devices)}


def run_task(args, index, writer):
    task = make_task(args, index)
    plans = {}
    for name, spec in args.planners.items():
        started = time.perf_counter()
        plan = plan_of(task, spec, args.cost)
        if not plan.ok:
            print(f"{task.id}: {name} found no plan ({plan.reason})", file=sys.stderr)
            return None
        plans[name] = (plan, time.perf_counter() - started)
    report = embshard.torchrec.measure(task, {n: p for n, (p, _) in plans.items()}, warmup=args.warmup,
                                       repeats=args.repeats)
    rows = {}
    for name, (plan, plan_s) in plans.items():
        run = report.runs[name]
        row = {"task": task.id, "tables": task.num_tables, "plan": name, "plan_s": round(plan_s, 3),
               "layout": layout_hash(plan)}
        row.update({f"measured_{k}": round(getattr(run, k) if hasattr(run, k) else run.slowest(k), 4)
                    for k in MEASURED})
        row.update({f"sim_{k}": round(v, 4) for k, v in predicted(task, plan, args.sim, args.exchanges).items()})
        if args.cpu_judge:
            row["cpu_step_ms"] = round(predicted(task, plan, "cpu", args.exchanges)["step_ms"], 4)
        writer.writerow(row)
        rows[name] = row
    return rows, report.warnings


def ratio_summary(label, ratios):
    ratios = sorted(ratios)
    q = statistics.quantiles(ratios, n=4) if len(ratios) >= 2 else [ratios[0]] * 3
    faster = sum(r < 1 for r in ratios)
    return (f"{label}: median {statistics.median(ratios):.3f} (quartiles {q[0]:.3f}–{q[2]:.3f}, "
            f"range {ratios[0]:.3f}–{ratios[-1]:.3f}); below 1 on {faster} of {len(ratios)}")


def linear_fit(points):
    """Least squares measured ≈ a + b · predicted."""
    n = len(points)
    mx = sum(x for x, _ in points) / n
    my = sum(y for _, y in points) / n
    sxx = sum((x - mx) ** 2 for x, _ in points)
    b = sum((x - mx) * (y - my) for x, y in points) / sxx if sxx > 0 else 0.0
    return my - b * mx, b


def clearly_apart(x, y):
    """Whether two rows' 95% intervals of the median step do not overlap (PlanRun.clearly_differs)."""
    return x["measured_step_hi_ms"] < y["measured_step_lo_ms"] or y["measured_step_hi_ms"] < x["measured_step_lo_ms"]


def far_apart(pairs):
    """The pairs of different plans whose measured steps differ by more than 10%."""
    return [(x, y) for x, y in pairs if x["layout"] != y["layout"]
            and abs(x["measured_step_ms"] / y["measured_step_ms"] - 1) > 0.10]


def ordered_as_measured(pairs, key):
    """How many of `pairs` the predictions under `key` order as measured."""
    return sum((x["measured_step_ms"] < y["measured_step_ms"]) == (x[key] < y[key]) for x, y in pairs)


def summarise(results, judges, names):
    tasks = [r for r in results if r is not None]
    print(f"\n{len(tasks)} tasks with every plan")
    if not tasks:
        return
    pairs = [(t[a], t[b]) for t in tasks for i, a in enumerate(names) for b in names[i + 1:]]
    same = [abs(x["measured_step_ms"] / y["measured_step_ms"] - 1) for x, y in pairs if x["layout"] == y["layout"]]
    if same:
        told = sum(clearly_apart(x, y) for x, y in pairs if x["layout"] == y["layout"])
        print(f"noise: {len(same)} pairs of identical plans measured {100 * statistics.median(same):.1f}% apart "
              f"on the median (max {100 * max(same):.1f}%); their 95% intervals of the median miss each "
              f"other on {told}")
    others = [n for n in names if n != "torchrec"]
    for name in others:
        print(ratio_summary(f"measured {name} / torchrec step",
                            [t[name]["measured_step_ms"] / t["torchrec"]["measured_step_ms"] for t in tasks]))
    apart = far_apart(pairs)
    for judge in judges:
        key = f"{judge}_step_ms"
        for name in others:
            print(ratio_summary(f"{judge} predicted {name} / torchrec", [t[name][key] / t["torchrec"][key] for t in tasks]))
        errors = [abs(r[key] / r["measured_step_ms"] - 1) for t in tasks for r in t.values()]
        print(f"{judge} step vs measured: median |error| {100 * statistics.median(errors):.1f}%, "
              f"max {100 * max(errors):.1f}% over {len(errors)} plans")
        train = [(r[key], r["measured_step_ms"]) for t in tasks[0::2] for r in t.values()]
        test = [r for t in tasks[1::2] for r in t.values()]
        if len(train) >= 2 and test:
            a, b = linear_fit(train)
            held = [abs((a + b * r[key]) / r["measured_step_ms"] - 1) for r in test]
            print(f"{judge} refitted to the runtime (even tasks): measured ≈ {a:.2f} ms + {b:.2f} × {judge}; "
                  f"held-out (odd tasks) median |error| {100 * statistics.median(held):.1f}%")
        if judge == "sim":
            for phase, (ours, theirs) in PHASE_PAIRS.items():
                points = [(ours(r), theirs(r)) for t in tasks for r in t.values() if theirs(r) > 0]
                if points:
                    print(f"sim {phase} vs measured (slowest device and rank): median |error| "
                          f"{100 * statistics.median(abs(p / m - 1) for p, m in points):.1f}%, median "
                          f"predicted / measured {statistics.median(p / m for p, m in points):.2f} over "
                          f"{len(points)} plans")
        agree = ordered_as_measured(apart, key)
        print(f"{judge} orders {agree} of {len(apart)} pairs of different plans of one task as measured "
              "(pairs whose measured steps differ by > 10%)")
        clear = [(x, y) for x, y in apart if clearly_apart(x, y)]
        agree = ordered_as_measured(clear, key)
        print(f"{judge} orders {agree} of the {len(clear)} of them whose 95% intervals of the median do not "
              "overlap")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out")
    parser.add_argument("--tasks", type=int, default=20)
    parser.add_argument("--seed", type=int, default=9400)
    parser.add_argument("--devices", type=int, default=2)
    parser.add_argument("--batch", type=int, default=8192)
    parser.add_argument("--mem-gib", type=float, default=1.0)
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--repeats", type=int, default=31)
    parser.add_argument("--cost", default="sim", help="the cost model joint plans with")
    parser.add_argument("--sim", default="sim",
                        help="the sim judge predicting beside each measured step, e.g. sim:coefficients=F.json "
                             "(a fit of TorchRec's runtime: bench/torchrec_fit.sh)")
    parser.add_argument("--planners", default=PLANNERS,
                        help="name=sharder spec[|cost spec];...: the plans of each task (torchrec is the reference)")
    parser.add_argument("--exchanges", default="fused", choices=["fused", "per_type"],
                        help="how the judges count the plans' exchanges (cost/link_model.h)")
    parser.add_argument("--latency-us", type=float, default=None,
                        help="the tasks' all-to-all latency in µs (default: the cpu preset's)")
    parser.add_argument("--link-gbps", type=float, default=None,
                        help="the tasks' all-to-all bandwidth per rank in GB/s (default: the cpu preset's)")
    parser.add_argument("--half-duplex", action="store_true",
                        help="the tasks' links half duplex: a rank's sends and receives share its link, as "
                             "gloo ranks on one CPU do (docs/judge.md)")
    parser.add_argument("--no-cpu-judge", dest="cpu_judge", action="store_false")
    args = parser.parse_args()
    args.planners = parse_planners(args.planners)
    if args.exchanges == "per_type" and args.latency_us is None:
        parser.error("--exchanges per_type needs --latency-us: the cpu preset's 10 µs is not TorchRec's runtime")
    if "torchrec" not in args.planners:
        parser.error("--planners must name a plan 'torchrec' (the reference)")
    os.makedirs(args.out, exist_ok=True)
    fields = (["task", "tables", "plan", "plan_s", "layout"] + [f"measured_{k}" for k in MEASURED]
              + [f"sim_{k}" for k in PREDICTED]
              + (["cpu_step_ms"] if args.cpu_judge else []))
    results, notes = [], set()
    with open(os.path.join(args.out, "rows.csv"), "w", newline="", encoding="utf-8") as f:
        writer = csv.DictWriter(f, fieldnames=fields)
        writer.writeheader()
        for index in range(args.tasks):
            started = time.perf_counter()
            outcome = run_task(args, index, writer)
            f.flush()
            if outcome is None:
                results.append(None)
                continue
            rows, warnings = outcome
            notes.update(warnings)
            results.append(rows)
            print(f"{rows['torchrec']['task']}: measured (sim) " + ", ".join(
                f"{n} {r['measured_step_ms']:.2f} ({r['sim_step_ms']:.2f})" for n, r in rows.items())
                + f" ms ({time.perf_counter() - started:.0f} s)", flush=True)
    for note in sorted(notes):
        print(f"note: {note}")
    summarise(results, ["sim"] + (["cpu"] if args.cpu_judge else []), list(args.planners))


if __name__ == "__main__":
    main()
