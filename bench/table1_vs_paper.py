#!/usr/bin/env python3
"""NeuroShard Table 1 (paper 003) beside a `bench/neuroshard_table1.sh` run.

Usage: bench/table1_vs_paper.py RESULTS.csv

Per setting and sharder: the mean max_sum (what the paper reports: max over devices of the four
parts) over the tasks the sharder planned, the planned count, and the ratio to greedy lookup on
the tasks both planned; beside each, the paper's figure ('-' where the paper has none). Prints
Markdown.
"""
import collections
import csv
import sys

DIMS = [4, 8, 16, 32, 64, 128]
# paper 003 Table 1 (ms); None where the paper prints '-'. "Size-lookup-based" is the authors' code's
# dim x pooling x log10(rows) (refs-zha.md §5.1): embshard's greedy:balance=size_and_lookup.
PAPER = {
    "random": {4: [25.47, 30.10, None, None, None, None], 8: [33.40, 36.43, None, None, None, None]},
    "greedy:balance=size": {4: [24.45, 29.60, 30.86, 37.80, 41.59, None], 8: [31.75, 34.30, 37.70, 46.07, 54.57, None]},
    "greedy:balance=dim": {4: [23.51, 28.46, 29.76, 35.98, 38.71, None], 8: [27.54, 32.20, 34.78, 42.35, 47.54, None]},
    "greedy:balance=lookup": {4: [18.69, 24.34, 26.83, 34.62, 38.69, None], 8: [21.83, 26.66, 30.59, 39.07, 47.47, None]},
    "greedy:balance=size_and_lookup": {4: [18.38, 24.18, 26.81, 33.94, None, None], 8: [21.27, 26.55, 30.34, 39.28, 48.17, None]},
    "torchrec": {4: [19.20, 26.00, 28.24, 34.88, 38.13, 47.22], 8: [22.34, 28.99, 32.71, 39.90, 47.43, 60.58]},
    "neuroshard": {4: [17.74, 21.75, 23.11, 28.86, 31.55, 39.99], 8: [20.68, 23.23, 25.64, 32.30, 38.30, 49.10]},
}
REFERENCE = "greedy:balance=lookup"


def short(spec):
    """The sharder as the paper names it: greedy's balance, torchrec's non-default reservation."""
    name, _, params = spec.partition(":")
    kv = dict(p.split("=", 1) for p in params.split(",") if "=" in p)
    if name == "greedy":
        return "greedy:balance=" + kv.get("balance", "lookup")
    if name == "torchrec" and kv.get("reservation", "heuristical") != "heuristical":
        return f"torchrec:reservation={kv['reservation']},storage_reservation={kv.get('storage_reservation')}"
    return name


def main(path):
    costs = collections.defaultdict(dict)  # (devices, dim, sharder) -> task -> max_sum
    tasks = collections.defaultdict(set)
    for row in csv.DictReader(open(path)):
        _, d, m = row["setting"].split()
        key = (int(d[1:]), int(m[1:]))
        tasks[key].add(row["task_id"])
        if row["status"] == "ok":
            costs[key + (short(row["sharder"]),)][row["task_id"]] = float(row["max_sum_ms"])
    sharders = sorted({k[2] for k in costs}, key=lambda s: (s not in PAPER, list(PAPER).index(s) if s in PAPER else 0, s))
    print("| sharder | setting | planned | mean max_sum ms (paper) | ÷ greedy lookup (paper) |")
    print("|---|---|---:|---:|---:|")
    for sharder in sharders:
        for devices in (4, 8):
            for i, dim in enumerate(DIMS):
                key = (devices, dim)
                got = costs.get(key + (sharder,), {})
                ref = costs.get(key + (REFERENCE,), {})
                paper = PAPER.get(sharder.split(":reservation")[0], {}).get(devices, [None] * 6)[i]
                paper_ref = PAPER[REFERENCE][devices][i]
                common = [t for t in got if t in ref]
                ratio = sum(got[t] for t in common) / sum(ref[t] for t in common) if common else None
                mean = sum(got.values()) / len(got) if got else None
                fmt = lambda v, p: ("-" if v is None else f"{v:.{p}f}")
                paper_ratio = paper / paper_ref if paper and paper_ref else None
                print(f"| {sharder} | d{devices} m{dim} | {len(got)}/{len(tasks[key])} | {fmt(mean, 2)} ({fmt(paper, 2)}) | "
                      f"{fmt(ratio, 3)} ({fmt(paper_ratio, 3)}) |")


if __name__ == "__main__":
    main(sys.argv[1])
