#!/usr/bin/env python3
"""Regenerates docs/reproduction.md: each seed system on its own paper's protocol, beside the
paper's figure and the baselines as the authors ran them (issue 19).

Usage:
  bench/reproduce.py [--papers neuroshard,dreamshard,autoshard,recshard]
                     [--settings PAPER:SETTING,...] [--judges 2080ti,cpu] [--count N]
                     [--seeds 0,1,2] [--env-steps N] [--work DIR] [--out docs/reproduction.md]
                     [--readme README.md]

Judges: `2080ti` is the sim judge fitted to the papers' 2080 Ti measurements (docs/judge.md);
`cpu` is the sim judge calibrated on this project's cpu kernels (tasks on the `cpu` preset). Every
figure is a mean over --count test tasks (default 50) of the objective the paper reports, with the
input all-to-all omitted as the papers' benchmarks did. Learned systems are trained once per seed
on their protocol's training tasks (sim judge of the same preset) and tested on unseen tables.
The published figures come from bench/paper_figures.json (NeuroShard's from
bench/table1_vs_paper.py). A paper or setting the papers do not define is an error listing the
defined ones. Prints progress on stderr; writes --out (atomically) and the raw CSVs under --work.

The driver: its options, and per paper and judge the runs through the `embshard` CLI. Beside it:
reproduce_cache.py (the CLI steps, cached under --work), reproduce_stats.py (the arithmetic and
the verdicts), reproduce_papers.py (the papers' settings and published figures) and
reproduce_document.py (the text of --out).
"""
import argparse
import collections
import csv
import glob
import json
import os
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from reproduce_cache import E, compare, gen, run, train, write_csv  # noqa: E402
from reproduce_document import footer, header, write_paper  # noqa: E402
from reproduce_papers import (ABLATION, BASELINES, BREAKDOWN_BASELINES, DREAM_SETTINGS, GREEDY, JUDGES,  # noqa: E402
                              PAPERS, POLICY_VARIANTS, SEARCH, TRANSFER, UNSEEN_RATIOS, dreamshard_paper)
from reproduce_stats import (autoshard_row, seeds_disagree, span, strongest, system_values,  # noqa: E402
                             unseen_verdict, verdict)

# What tests/python/test_reproduce.py reaches as reproduce.NAME, re-exported from the modules.
__all__ = ["BASELINES", "autoshard_row", "dreamshard_paper", "span", "unseen_verdict", "verdict"]


def log(message):
    print(f"[reproduce {time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


# ---- the four papers' runs, per judge ---------------------------------------------------------

def neuroshard(args, judge, settings, work):
    sharders = dict(BASELINES, torchrec="torchrec", NeuroShard="neuroshard")
    rows = {}
    for setting in settings:
        devices, dim = (int(x[1:]) for x in setting.split())
        tasks = gen(f"neuroshard:preset={judge},max_dim={dim}", devices, args.count, 9000,
                    f"{work}/neuroshard/{judge}/d{devices}m{dim}")
        results, n = compare(tasks, sharders, f"{tasks}.csv")
        rows[setting] = strongest(results, ["NeuroShard"], [k for k in sharders if k != "NeuroShard"], n)
        if judge == "cpu":  # the explanation: NeuroShard searching under the judge's own model
            again, n = compare(tasks, sharders, f"{tasks}-cost-sim.csv", cost="sim")
            rows[setting + " (cost sim)"] = strongest(again, ["NeuroShard"], [k for k in sharders if k != "NeuroShard"], n)
    return rows


def dreamshard(args, judge, settings, work):
    rows = {}
    for setting in settings:
        n, devices = DREAM_SETTINGS[setting]
        test_dir = dreamshard_test_dir(args, judge, n, devices, work)
        sharders = dict(BASELINES)
        for seed, spec in zip(args.seeds, dreamshard_policies(args, judge, n, devices, work)):
            sharders[f"DreamShard {seed}"] = spec
        results, count = compare(test_dir, sharders, f"{test_dir}.csv")
        seeds = [f"DreamShard {s}" for s in args.seeds]
        best = strongest(results, seeds, list(BASELINES), count)
        common = [t for t in system_values(results, seeds) if best[0] is None or t in results[best[0]]]
        per_seed = [sum(results[n][t][0] for t in common) / len(common) for n in seeds] if common else [None]
        rows[setting] = best + (min(per_seed), max(per_seed), per_seed)  # the seeds' spread on the same tasks
        rows[setting + " headroom"] = headroom(test_dir, results, best[0], system_values(results, seeds))
    return rows


def headroom(test_dir, results, baseline, system):
    """On the tasks the search, `baseline` and the system (task → ms) all planned: the search's mean
    max_sum, its ratio to the baseline's and the system's ratio to the baseline's, or Nones."""
    search, _ = compare(test_dir, {"search": SEARCH}, f"{test_dir}-search.csv", cost="sim:input_comm=omit")
    common = [t for t in search["search"] if baseline and t in results[baseline] and t in system]
    if not common:
        return None, None, None
    mean = lambda values: sum(values) / len(values)
    base = mean([results[baseline][t][0] for t in common])
    search_ms = mean([search["search"][t][0] for t in common])
    return search_ms, search_ms / base, mean([system[t] for t in common]) / base


def dreamshard_test_dir(args, judge, n, devices, work):
    """DLRM-n (devices)'s --count test tasks from the pool's test half (cached)."""
    return gen(f"dreamshard:preset={judge},tables={n},split=test", devices, args.count, 1,
               f"{work}/dreamshard/{judge}/n{n}d{devices}-test")


def dreamshard_policies(args, judge, n, devices, work, variant="per_task"):
    """The policies of DLRM-n (devices), one per seed, trained on 50 train-half tasks (cached)."""
    train_dir = gen(f"dreamshard:preset={judge},tables={n},split=train", devices, 50, 0,
                    f"{work}/dreamshard/{judge}/n{n}d{devices}-train")
    prefix, options, _ = POLICY_VARIANTS[variant]
    return [train("dreamshard", train_dir, seed, f"{train_dir}/../n{n}d{devices}-{prefix}policy-{seed}.json", *options)
            for seed in args.seeds]


def dreamshard_transfer(args, judge, table, work):
    """Per (source, target): the mean over seeds of the source's policies' mean cost on the target's
    unseen test tasks; source None: policies trained on the target itself."""
    sources, targets = TRANSFER[table]
    cells = {}
    for n, devices in targets:
        test_dir = dreamshard_test_dir(args, judge, n, devices, work)
        sharders = {}
        for source in [x for x in sources if x != (n, devices)] + [None]:  # the diagonal is "trained on target"
            for i, spec in enumerate(dreamshard_policies(args, judge, *(source or (n, devices)), work)):
                sharders[f"{source} {i}"] = spec
        results, _ = compare(test_dir, sharders, f"{test_dir}-transfer-{table.replace(' ', '')}.csv")
        for source in sources + [None]:
            names = [k for k in sharders if k.startswith(f"{source} ")]
            if not names:
                continue
            mine = system_values(results, names)
            cells[(source, (n, devices))] = sum(mine.values()) / len(mine) if mine else None
    return cells


def dreamshard_ablation(args, judge, settings, work):
    """The authors' recipe against each of POLICY_VARIANTS' others, per seed, on the same unseen
    test tasks."""
    rows = {}
    for setting in [s for s in settings if s in ABLATION]:
        n, devices = DREAM_SETTINGS[setting]
        variants = list(POLICY_VARIANTS)
        sharders = {f"{v} {seed}": spec for v in variants
                    for seed, spec in zip(args.seeds, dreamshard_policies(args, judge, n, devices, work, v))}
        test_dir = dreamshard_test_dir(args, judge, n, devices, work)
        results, _ = compare(test_dir, sharders, test_dir + "-ablation.csv")
        common = set.intersection(*(set(v) for v in results.values()))
        rows[setting] = {v: [sum(results[f"{v} {s}"][t][0] for t in common) / len(common) for s in args.seeds]
                         for v in variants} if common else {}
        rows[setting]["kept"] = [kept_record(spec) for spec in dreamshard_policies(args, judge, n, devices, work,
                                                                                  "best_iteration")]
    return rows


def kept_record(spec):
    """A `--keep best` policy's record: (kept iteration, its arg-max plans' mean step, the last
    iteration's), from the policy file's training metrics."""
    metrics = json.load(open(spec.split("policy=", 1)[1]))["training"]["metrics"]
    return int(metrics["kept_iteration"]), metrics["kept_greedy_real_step_ms"], metrics["greedy_real_step_ms"]


def dreamshard_training(args, judge, settings, rows):
    """Per setting whose seeds disagree (seeds_disagree), under "SETTING training": each seed's
    training record, the mean step of the real plans its last iteration collected, and the
    strongest baseline's mean step on the same training tasks."""
    for setting in settings:
        r = rows.get(setting)
        if not seeds_disagree(r):
            continue
        n, devices = DREAM_SETTINGS[setting]
        records = [json.load(open(f"{args.work}/dreamshard/{judge}/n{n}d{devices}-policy-{seed}.json"))
                   ["training"]["metrics"]["mean_real_step_ms"] for seed in args.seeds]
        train_dir = f"{args.work}/dreamshard/{judge}/n{n}d{devices}-train"
        reference = training_step(train_dir, BASELINES[r[0]]) if r[0] else None
        rows[setting + " training"] = (records, reference)


def training_step(train_dir, spec):
    """`spec`'s mean step (ms) on the training tasks under the training judge (sim, input
    all-to-all exposed), from a cached comparison."""
    results, _ = compare(train_dir, {"baseline": spec}, f"{train_dir}-baseline.csv", input_comm="exposed",
                         objective="step_ms")
    steps = [v[0] for v in results["baseline"].values()]
    return sum(steps) / len(steps) if steps else None


def dreamshard_experiments(args, judges, settings, ours):
    """After every judge's main table: the seeds' training records where they disagree, the
    ablation ("ablation") and the transfer tables ("transfer Table 8", …), added to ours[judge]."""
    for j in judges:
        dreamshard_training(args, j, settings, ours[j])
    for j in judges:
        ours[j]["ablation"] = dreamshard_ablation(args, j, settings, args.work)
    for table in TRANSFER:
        for j in judges:
            ours[j][f"transfer {table}"] = dreamshard_transfer(args, j, table, args.work)


def autoshard_policies(args, train_dir, prefix=""):
    return {f"AutoShard {s}": train("autoshard", train_dir, s, f"{train_dir}/../policy-{prefix}{s}.json",
                                    "--env-steps", args.env_steps) for s in args.seeds}


def autoshard_test_dir(judge, devices, work):
    return gen(f"autoshard:preset={judge},split=test", devices, 10 if devices == 8 else 3, 1,
               f"{work}/autoshard/{judge}/test-{devices}")


def autoshard(args, judge, settings, work):
    train_dir = gen(f"autoshard:preset={judge},split=train", 8, 90, 0, f"{work}/autoshard/{judge}/train")
    policies = autoshard_policies(args, train_dir)
    rows = {}
    for setting in settings:
        devices = 8 if setting.startswith("80 ") else 80
        test_dir = autoshard_test_dir(judge, devices, work)
        results, count = compare(test_dir, dict(BASELINES, **policies), f"{test_dir}.csv")
        rows[setting] = autoshard_row(results, list(policies), count)
        rows[setting + " breakdown"] = autoshard_breakdown(judge, test_dir, policies)
    # The experiment: is AutoShard undertrained? Seed 0 again with three times the steps.
    steps = str(3 * int(args.env_steps))
    longer = {"AutoShard long": train("autoshard", train_dir, args.seeds[0], f"{train_dir}/../policy-long-{args.seeds[0]}.json",
                                      "--env-steps", steps)}
    for setting in settings:
        devices = 8 if setting.startswith("80 ") else 80
        test_dir = f"{work}/autoshard/{judge}/test-{devices}"
        results, count = compare(test_dir, dict(BASELINES, **longer), f"{test_dir}-long.csv")
        rows[setting + f" ({steps} steps, seed {args.seeds[0]})"] = strongest(results, list(longer), list(BASELINES), count)
    # Figure 10: trained on the pool's first half, tested on 80-table tasks with a share of unseen tables.
    if "80 tables on 8" in settings:
        half_dir = gen(f"autoshard:preset={judge},split=train_half", 8, 90, 0, f"{work}/autoshard/{judge}/train-half")
        half_policies = autoshard_policies(args, half_dir, "half-")
        for ratio in UNSEEN_RATIOS:
            test_dir = gen(f"autoshard:preset={judge},split=test_half,unseen_ratio={ratio}", 8, 10, 1,
                           f"{work}/autoshard/{judge}/test-unseen-{ratio}")
            results, count = compare(test_dir, dict(BASELINES, **half_policies), f"{test_dir}.csv")
            rows[f"unseen {ratio}"] = autoshard_row(results, list(half_policies), count)
    return rows


def autoshard_breakdown(judge, test_dir, policies):
    """Per sharder (each AutoShard seed apart): mean over the test tasks of the slowest device's
    compute (fw + bw), the largest all-to-all (fw + bw) and max_sum, ms, from `eval` of each plan
    (cached in TEST_DIR-breakdown.csv)."""
    out = f"{test_dir}-breakdown.csv"
    sharders = dict({b: GREEDY[b] for b in BREAKDOWN_BASELINES}, **policies)
    if not os.path.exists(out):
        rows = []
        with tempfile.TemporaryDirectory() as tmp:
            for task in sorted(glob.glob(f"{test_dir}/*.json")):
                for name, spec in sharders.items():
                    run("plan", "--quiet", "--task", task, "--sharder", spec, "--out", f"{tmp}/p.json")
                    run("eval", "--quiet", "--task", task, "--plan", f"{tmp}/p.json", "--backend", "sim",
                        "--input-comm", "omit", "--out", f"{tmp}/e.json")
                    e = json.load(open(f"{tmp}/e.json"))
                    rows.append({"task": os.path.basename(task), "sharder": name,
                                 "compute_ms": max(d["fw_comp_ms"] + d["bw_comp_ms"] for d in e["devices"]),
                                 "all_to_all_ms": max(d["fw_comm_ms"] + d["bw_comm_ms"] for d in e["devices"]),
                                 "max_sum_ms": e["objectives"]["max_sum_ms"]})
        write_csv(out, rows)
    table = collections.defaultdict(list)
    for row in csv.DictReader(open(out)):
        table[row["sharder"]].append([float(row[k]) for k in ("compute_ms", "all_to_all_ms", "max_sum_ms")])
    return {name: [sum(col) / len(col) for col in zip(*values)] for name, values in table.items()}


def recshard(args, judge, settings, work):
    models = [m.lower() for m in settings]
    out = f"{work}/recshard/{'-'.join(models)}"
    if not os.path.exists(f"{out}/summary.csv"):
        result = subprocess.run(["bash", os.path.join(HERE, "recshard_rm.sh"), out, "0.01", "60", " ".join(models)],
                                capture_output=True, text=True, env=dict(os.environ, EMBSHARD=E))
        if result.returncode != 0:
            sys.exit(f"reproduce: bench/recshard_rm.sh failed:\n{result.stderr.strip()}")
    rows = collections.defaultdict(dict)
    for row in csv.DictReader(open(f"{out}/summary.csv")):
        rows[row["model"].upper()][row["sharder"]] = row
    rows["experiment"] = {m.upper(): recshard_model_vs_judge(f"{out}/{m}") for m in models}
    return rows


def recshard_model_vs_judge(model_dir):
    """RecShard's plan per GPU under its own cost model and under the judge: the model's cost is
    the MILP's HBM term, B × lookups per sample × row bytes ÷ HBM bandwidth summed over the GPU's
    tables (its whole model while the plan serves no lookup from UVM: `uvm_lookups` says); the
    judge's forward and backward compute come from its `eval`. Also the joint planner's slowest and
    mean GPU: every all-HBM plan has the same mean GPU on this judge (its costs add up). None when
    recshard_rm.sh left no recshard or joint evaluation for the model."""
    task = json.load(open(f"{model_dir}/000.json"))
    tables = {t["name"]: t for t in task["tables"]}
    elem = {"fp32": 4, "fp16": 2}
    found = {}
    for plan_path in sorted(glob.glob(f"{model_dir}/plan-*.json")):
        eval_path = plan_path.replace("plan-", "eval-")
        if os.path.exists(eval_path):
            plan = json.load(open(plan_path))
            found[plan["provenance"]["sharder"].split(":")[0]] = (plan, json.load(open(eval_path)))
    if "recshard" not in found or "joint" not in found:
        return None
    plan, judged = found["recshard"]
    devices = task["topology"]["devices"]
    model = [0.0] * len(devices)
    for entry in plan["tables"]:
        t = tables[entry["table"]]
        for shard in entry["shards"]:
            cols = shard["cols"][1] - shard["cols"][0]
            bandwidth = devices[shard["device"]]["hbm_gbps"] * 1e9
            model[shard["device"]] += (task["batch_size"] * t["stats"]["pooling_factor"] * cols * elem[t["dtype"]]
                                       / bandwidth * 1e3)
    joint = found["joint"][1]["device_spread"]["comp_ms"]
    return {"model": model, "fw": [d["fw_comp_ms"] for d in judged["devices"]],
            "bw": [d["bw_comp_ms"] for d in judged["devices"]], "uvm_lookups": judged["lookups"]["uvm_per_step"],
            "joint_max": joint["max"], "joint_mean": joint["mean"]}


RUNNERS = {"neuroshard": neuroshard, "dreamshard": dreamshard, "autoshard": autoshard, "recshard": recshard}


# ---- the driver ----------------------------------------------------------------------------------

def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--papers", default=",".join(PAPERS))
    parser.add_argument("--settings", default="", help="PAPER:SETTING,... (default: every setting)")
    parser.add_argument("--judges", default=",".join(JUDGES))
    parser.add_argument("--count", type=int, default=50)
    parser.add_argument("--seeds", default="0,1,2")
    parser.add_argument("--env-steps", default="100000", help="AutoShard's training steps per seed")
    parser.add_argument("--work", default="/tmp/embshard-reproduce")
    parser.add_argument("--out", default=os.path.join(HERE, "..", "docs", "reproduction.md"))
    parser.add_argument("--readme", default="", help="also rewrite this README's reproduction status block")
    args = parser.parse_args()
    papers = [p for p in args.papers.split(",") if p]
    for p in papers:
        if p not in PAPERS:
            parser.error(f"unknown paper '{p}'; defined: {', '.join(PAPERS)}")
    judges = [j for j in args.judges.split(",") if j]
    for j in judges:
        if j not in JUDGES:
            parser.error(f"unknown judge '{j}'; defined: {', '.join(JUDGES)}")
    chosen = {p: list(PAPERS[p]) for p in papers}
    if args.settings:
        chosen = {p: [] for p in papers}
        for item in args.settings.split(","):
            paper, _, setting = item.partition(":")
            if paper not in chosen:
                parser.error(f"--settings: unknown or unselected paper '{paper}'; selected: {', '.join(papers)}")
            if setting not in PAPERS[paper]:
                parser.error(f"--settings: {paper} defines no setting '{setting}'; its settings: "
                             + ", ".join(PAPERS[paper]))
            chosen[paper].append(setting)
    args.seeds = [s for s in args.seeds.split(",") if s]
    os.makedirs(args.work, exist_ok=True)
    started = time.time()
    command = " ".join(a if a.replace(",", "").replace(":", "").replace("-", "").isalnum() else repr(a)
                       for a in sys.argv[1:])
    lines = header(command)
    summary = {}
    for paper in papers:
        settings = chosen[paper]
        if not settings:
            continue
        log(f"{paper}: {len(settings)} settings under {', '.join(judges)}")
        ours = {j: RUNNERS[paper](args, j, settings, f"{args.work}") for j in judges}
        if paper == "dreamshard":
            dreamshard_experiments(args, judges, settings, ours)
        summary[paper] = write_paper(paper, settings, ours, judges, args, lines)
    lines += footer(summary, int(time.time() - started), args.work)
    out = os.path.abspath(args.out)
    fd, tmp = tempfile.mkstemp(dir=os.path.dirname(out), prefix=os.path.basename(out) + ".tmp-")
    with os.fdopen(fd, "w") as f:
        f.write("\n".join(lines) + "\n")
    os.replace(tmp, out)
    log(f"wrote {out}")
    if args.readme:
        update_readme(args.readme, summary)
    print("\n".join(f"{p}: {t}" for p, t in summary.items()))


README_BEGIN, README_END = "<!-- reproduction status: bench/reproduce.py -->", "<!-- end of reproduction status -->"


def update_readme(path, summary):
    """Replaces the README's status lines between the markers with this run's verdicts."""
    text = open(path).read()
    begin, end = text.find(README_BEGIN), text.find(README_END)
    if begin < 0 or end < begin:
        sys.exit(f"reproduce: {path} has no '{README_BEGIN}' … '{README_END}' block")
    block = "\n".join([README_BEGIN] + [f"- **{p}**: {t}" for p, t in summary.items()] + [""])
    fd, tmp = tempfile.mkstemp(dir=os.path.dirname(os.path.abspath(path)), prefix=os.path.basename(path) + ".tmp-")
    with os.fdopen(fd, "w") as f:
        f.write(text[:begin] + block + text[end:])
    os.replace(tmp, path)
    log(f"updated {path}")


if __name__ == "__main__":
    main()
