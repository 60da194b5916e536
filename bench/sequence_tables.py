#!/usr/bin/env python3
"""What costing an EmbeddingCollection's tables as sequence tables changes (issue 31 item 2).

    $(bash scripts/setup_python.sh) bench/sequence_tables.py [--protocol P] [--count N] [--seed S] [--share K]
    $(bash scripts/setup_python.sh) bench/sequence_tables.py --kernels [--protocol P] ...

Each task of the protocol has every K-th table made a sequence table (`pooled: false`: an output
row per lookup). `joint` plans it twice: as it is, and as if every table were pooled (what
embshard did before sequence tables were costed, kept to the types an EmbeddingCollection runs). Both plans are judged by `sim` on the task as it
is. One CSV row per task: the steps, their ratio and joint's planning times.

--kernels: what a sequence table costs the kernels against `sim`'s output rows. One plan per task
(joint's, for the task as it is) is judged on the task and on the task with every table pooled,
by `sim` and by the `cpu` backend (this machine's kernels: a sequence table a bag per lookup). One
CSV row per task: the busiest device's compute (forward + backward) under each, and the ratio
sequence ÷ pooled that each judge gives.
"""
import argparse
import json
import sys
import time

import embshard


# What TorchRec's EmbeddingCollection runs (TableSpec::allows): the as-pooled plan keeps to it, so
# that the sequence task can take it.
EC_TYPES = ["table_wise", "column_wise", "row_wise", "data_parallel"]


def with_sequence(task, every, pooled):
    doc = json.loads(task.to_json())
    for i, table in enumerate(doc["tables"]):
        if i % every == 0 and not pooled:
            table["pooled"] = False
        else:
            table.pop("pooled", None)
            if i % every == 0:
                table.setdefault("constraints", {})["sharding_types"] = EC_TYPES
    return embshard.Task.from_json(json.dumps(doc), where="sequence task")


def busiest_compute_ms(breakdown):
    return max(d["fw_comp_ms"] + d["bw_comp_ms"] for d in breakdown.devices)


def kernels(args):
    print("task,tables,sequence_tables,sim_pooled_ms,sim_sequence_ms,sim_ratio,cpu_pooled_ms,cpu_sequence_ms,cpu_ratio")
    for index in range(args.count):
        base = embshard.Task.generate(args.protocol, seed=args.seed, index=index)
        task = with_sequence(base, args.share, pooled=False)
        pooled = with_sequence(base, args.share, pooled=True)
        plan = embshard.plan(task, "joint", seed=index)
        if not plan.ok:
            print(f"{index},{len(task.tables)},,{plan.status},,,,,")
            continue
        row = []
        for backend in ("sim", "cpu"):
            a = busiest_compute_ms(embshard.evaluate(pooled, plan, backend, seed=index))
            b = busiest_compute_ms(embshard.evaluate(task, plan, backend, seed=index))
            row += [f"{a:.3f}", f"{b:.3f}", f"{b / a:.4f}"]
        seq = sum(1 for t in task.tables if t.get("pooled", True) is False)
        print(f"{index},{len(task.tables)},{seq}," + ",".join(row))
        sys.stdout.flush()
    return 0


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--protocol", default="neuroshard:preset=v100,devices=8")
    parser.add_argument("--count", type=int, default=10)
    parser.add_argument("--seed", type=int, default=9600)
    parser.add_argument("--share", type=int, default=3, help="every K-th table is a sequence table")
    parser.add_argument("--kernels", action="store_true", help="sim's sequence costing against the cpu kernels")
    args = parser.parse_args(argv)
    if args.kernels:
        return kernels(args)
    print("task,tables,sequence_tables,step_sequence_aware_ms,step_planned_as_pooled_ms,ratio,plan_s_aware,plan_s_pooled")
    for index in range(args.count):
        base = embshard.Task.generate(args.protocol, seed=args.seed, index=index)
        task = with_sequence(base, args.share, pooled=False)
        as_pooled = with_sequence(base, args.share, pooled=True)
        t0 = time.perf_counter()
        aware = embshard.plan(task, "joint", seed=index)
        t1 = time.perf_counter()
        blind = embshard.plan(as_pooled, "joint", seed=index)
        t2 = time.perf_counter()
        if not (aware.ok and blind.ok):
            print(f"{index},{len(task.tables)},,{aware.status},{blind.status},,,")
            continue
        a = embshard.evaluate(task, aware).step_ms
        b = embshard.evaluate(task, blind).step_ms
        seq = sum(1 for t in task.tables if t.get("pooled", True) is False)
        print(f"{index},{len(task.tables)},{seq},{a:.4f},{b:.4f},{b / a:.4f},{t1 - t0:.2f},{t2 - t1:.2f}")
        sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
