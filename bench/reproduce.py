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
import table1_vs_paper  # noqa: E402  (NeuroShard Table 1's published figures)

E = os.environ.get("EMBSHARD", os.path.join(HERE, "..", "build", "bin", "embshard"))
FIGURES = json.load(open(os.path.join(HERE, "paper_figures.json")))

# The authors' baselines: greedy with the pooling factor truncated to an integer, as DreamShard's
# and AutoShard's code do (refs-zha.md), beside the float version embshard uses by default.
GREEDY = {"size": "greedy:balance=size", "dim": "greedy:balance=dim",
          "lookup": "greedy:balance=lookup,pooling=int", "lookup (float)": "greedy:balance=lookup",
          "size-lookup": "greedy:balance=size_and_lookup,pooling=int",
          "size-lookup (float)": "greedy:balance=size_and_lookup"}
BASELINES = dict({"random": "random"}, **GREEDY)

DREAM_SETTINGS = {f"DLRM-{n} ({d})": (n, d) for d, ns in ((4, (10, 30, 50, 70, 90)), (2, (10, 20, 30, 40, 50)))
                  for n in ns}
PAPERS = {
    "neuroshard": [f"d{d} m{m}" for d in (4, 8) for m in table1_vs_paper.DIMS],
    "dreamshard": list(DREAM_SETTINGS),
    "autoshard": ["80 tables on 8", "800 tables on 80"],
    "recshard": ["RM1", "RM2", "RM3"],
}
JUDGES = ["2080ti", "cpu"]


def log(message):
    print(f"[reproduce {time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def run(*args):
    result = subprocess.run([E, *map(str, args)], capture_output=True, text=True)
    if result.returncode != 0:
        sys.exit(f"reproduce: embshard {' '.join(map(str, args))} failed:\n{result.stderr.strip()}")
    return result.stdout


def gen(protocol, devices, count, seed, out):
    if not os.path.isdir(out):
        run("task", "gen", "--quiet", "--protocol", protocol, "--devices", devices, "--count", count,
            "--seed", seed, "--out", out)
    return out


def compare(tasks, sharders, out, cost="default", input_comm="omit", objective="max_sum_ms"):
    """Per sharder (by our name): task → (objective ms, balance) of its valid plans; and the task
    count. The input all-to-all is omitted as in the papers' benchmarks unless `input_comm` says
    otherwise; `objective` is the CSV column reported (max_sum_ms, the papers'; step_ms). The CSV
    names sharders by canonical spec in the order they were given, so OUT.sharders keeps that
    order; a cached OUT made for other sharders is made again."""
    specs = list(sharders.values())
    assert len(set(specs)) == len(specs), "two names for one sharder spec"
    order_file = out + ".sharders"
    if not (os.path.exists(out) and os.path.exists(order_file)
            and sorted(open(order_file).read().splitlines()) == sorted(specs)):
        run("compare", "--quiet", "--tasks", tasks, "--sharders", ";".join(specs), "--cost", cost,
            "--backend", "sim", "--input-comm", input_comm, "--out", out)
        with open(order_file, "w") as f:
            f.write("\n".join(specs) + "\n")
    given = open(order_file).read().splitlines()   # the specs, in the CSV's order
    name_of = {spec: name for name, spec in sharders.items()}
    rows = list(csv.DictReader(open(out)))
    canonical = list(dict.fromkeys(r["sharder"] for r in rows))
    results = {name: {} for name in sharders}
    for row in rows:
        if row["status"] == "ok":
            name = name_of[given[canonical.index(row["sharder"])]]
            results[name][row["task_id"]] = (float(row[objective]), float(row["balance"]))
    return results, len({r["task_id"] for r in rows})


def system_values(results, system):
    """Task → the system's max_sum, averaged over its seeds, on the tasks every seed planned."""
    tasks = set.intersection(*(set(results[n]) for n in system))
    return {t: sum(results[n][t][0] for n in system) / len(system) for t in tasks}


def strongest(results, system, baselines, n_tasks):
    """The baseline hardest to beat, among those that planned at least half the tasks (the papers
    print '-' for the others): the largest ratio of the system's mean to the baseline's over the
    tasks both planned. (name, baseline ms, system ms, ratio, tasks), or Nones."""
    mine = system_values(results, system)
    best = (None, None, sum(mine.values()) / len(mine) if mine else None, None, 0)
    for b in baselines:
        common = [t for t in results[b] if t in mine]
        if len(results[b]) * 2 < n_tasks or not common:
            continue
        base_ms = sum(results[b][t][0] for t in common) / len(common)
        sys_ms = sum(mine[t] for t in common) / len(common)
        if best[3] is None or sys_ms / base_ms > best[3]:
            best = (b, base_ms, sys_ms, sys_ms / base_ms, len(common))
    return best


def train(kind, tasks, seed, out, *extra):
    """The policy OUT, trained unless a finished one is there (OUT.done); a policy a killed run left
    half-trained is resumed from its checkpoint, not taken as finished."""
    if not os.path.exists(out + ".done"):
        resume = ["--resume"] if os.path.isdir(out + ".ckpt") else []
        run("train", kind, "--tasks", tasks, "--backend", "sim", "--seed", seed, "--out", out, *resume, *extra)
        open(out + ".done", "w").close()
    return f"{kind}:policy={out}"


def best_of(means, names):
    """The strongest (lowest) of `names` that planned: (name, value)."""
    got = [(means[n], n) for n in names if means.get(n) is not None]
    if not got:
        return None, None
    value, name = min(got)
    return name, value


def fmt(value, digits=2):
    return "-" if value is None else f"{value:.{digits}f}"


def verdict(paper_ratio, ours):
    """How our ratio to the strongest baseline compares with the paper's, within a tolerance of a
    quarter of the paper's gain (at least 0.02): 'yes' within it, 'larger gain' below it, 'smaller
    gain' above it but still below 1, 'no' above it at or above 1."""
    if paper_ratio is None or ours is None:
        return "-"
    if abs(ours - paper_ratio) <= max(0.02, 0.25 * abs(1.0 - paper_ratio)):
        return "yes"
    if ours < paper_ratio:
        return "larger gain"
    return "smaller gain" if ours < 1.0 else "no"


# ---- the four papers ----------------------------------------------------------------------------

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


def neuroshard_paper(setting):
    devices, dim = (int(x[1:]) for x in setting.split())
    i = table1_vs_paper.DIMS.index(dim)
    names = {"random": "random", "greedy:balance=size": "size", "greedy:balance=dim": "dim",
             "greedy:balance=lookup": "lookup", "greedy:balance=size_and_lookup": "size-lookup", "torchrec": "torchrec"}
    got = [(table1_vs_paper.PAPER[k][devices][i], v) for k, v in names.items() if table1_vs_paper.PAPER[k][devices][i]]
    value, name = min(got)
    return name, value, table1_vs_paper.PAPER["neuroshard"][devices][i]


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


# Table-wise placement searched on the judge's own model: what a placement could gain here.
SEARCH = ("joint:objective=max_sum,rows=false,columns=false,uvm=false,grids=false,data_parallel=false,"
          "work=20000")


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


TRANSFER = {  # DreamShard's transfer tables: sources (tables, devices) → targets (tables, devices)
    "Table 8": ([(n, 4) for n in (20, 40, 60, 80, 100)], [(n, 4) for n in (20, 40, 60, 80, 100)]),
    "Table 9": ([(n, 4) for n in (10, 20, 30, 40, 50)], [(n, 2) for n in (10, 20, 30, 40, 50)]),
    "Table 10": ([(n, 2) for n in (10, 20, 30, 40, 50)], [(n, 4) for n in (10, 20, 30, 40, 50)]),
}


# How each variant is trained: its policy files' prefix, its `train dreamshard` options and its
# column in the ablation table.
POLICY_VARIANTS = {"per_task": ("", [], "per-task z-scores (authors')"),  # the authors' recipe
                   "training_set": ("pool-", ["--features", "training_set"], "training-set z-scores"),
                   "early_stopping": ("patience-", ["--cost-patience", "4"], "early-stopped cost network"),
                   "kernel_reward": ("kernels-", ["--reward", "kernels"], "reward from the kernel heads"),
                   "all_three": ("all-", ["--features", "training_set", "--cost-patience", "4", "--reward", "kernels"],
                                 "all three"),
                   "best_iteration": ("best-", ["--keep", "best"], "best iteration kept")}


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


def printed_or_implied(row, method):
    """A cell of DreamShard's tables; where it contradicts its own printed speedup over random by
    more than 5% (one cell: DLRM-10 (4) test, size-lookup "9.6 (+21.4%)"), the value the speedup
    implies, random / (1 + speedup)."""
    value, pct = row[method], row.get(f"{method}_speedup_pct")
    if pct is None or not row.get("Random"):
        return value
    implied = row["Random"] / (1 + pct / 100)
    return round(implied, 1) if abs(implied - value) > 0.05 * implied else value


ABLATION = ["DLRM-10 (4)", "DLRM-50 (4)", "DLRM-90 (4)", "DLRM-30 (2)"]


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


def dreamshard_paper(setting):
    for table in FIGURES["dreamshard"]["tables"]:
        for row in table.get("rows", []):
            if row.get("setting") == setting and row.get("split") == "test":
                names = {"Random": "random", "Size-based": "size", "Dim-based": "dim", "Lookup-based": "lookup",
                         "Size-lookup-based": "size-lookup", "RNN-based": "RNN"}
                got = [(printed_or_implied(row, k), v) for k, v in names.items() if row.get(k) is not None]
                value, name = min(got)
                return name + ("†" if len(got) < len(names) else ""), value, row.get("DreamShard")
    return None, None, None


def autoshard_row(results, policies, count):
    """strongest()'s tuple + (AutoShard's mean balance, its speedup over random, the most balanced
    baseline's name, its balance, the strongest baseline's speedup over random, each policy's ratio
    to the strongest baseline)."""
    best = strongest(results, policies, list(BASELINES), count)
    mine = system_values(results, policies)
    mean = lambda v: sum(v) / len(v) if v else None
    balance = mean([results[p][t][1] for p in policies for t in mine])
    random = [t for t in mine if t in results["random"]]
    speedup = sum(results["random"][t][0] for t in random) / sum(mine[t] for t in random) if random else None
    balances = {b: mean([results[b][t][1] for t in mine if t in results[b]]) for b in BASELINES
                if b != "random" and 2 * len(results[b]) >= count and any(t in results[b] for t in mine)}
    most = max(balances, key=balances.get) if balances else None
    both = [t for t in random if best[0] and t in results[best[0]]]
    base_speedup = (sum(results["random"][t][0] for t in both) / sum(results[best[0]][t][0] for t in both)) if both else None
    common = [t for t in mine if best[0] and t in results[best[0]]]
    per_seed = [sum(results[p][t][0] for t in common) / sum(results[best[0]][t][0] for t in common)
                for p in policies] if common else []
    return best + (balance, speedup, most, balances.get(most), base_speedup, per_seed)


def autoshard_policies(args, train_dir, prefix=""):
    return {f"AutoShard {s}": train("autoshard", train_dir, s, f"{train_dir}/../policy-{prefix}{s}.json",
                                    "--env-steps", args.env_steps) for s in args.seeds}


def autoshard_test_dir(judge, devices, work):
    return gen(f"autoshard:preset={judge},split=test", devices, 10 if devices == 8 else 3, 1,
               f"{work}/autoshard/{judge}/test-{devices}")


UNSEEN_RATIOS = ["0", "0.2", "0.4", "0.6", "0.8", "1"]


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


# The breakdown experiment's sharders besides AutoShard: the float greedy baselines.
BREAKDOWN_BASELINES = ["dim", "lookup (float)", "size-lookup (float)"]


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


def write_csv(path, rows):
    fd, tmp = tempfile.mkstemp(dir=os.path.dirname(path), prefix=os.path.basename(path) + ".tmp-")
    with os.fdopen(fd, "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    os.replace(tmp, path)


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


# ---- the document ------------------------------------------------------------------------------

def judge_columns(judges):
    head = "".join(f" {j}: best baseline | {j}: system | {j}: ratio | {j} |" for j in judges)
    rule = "".join("---|---:|---:|---|" for _ in judges)
    return head, rule


def ratio_table(title, intro, settings, paper, ours, judges, system, lines):
    lines += [f"### {title}", "", intro, ""]
    head, rule = judge_columns(judges)
    lines.append(f"| setting | paper: best baseline | paper: {system} | paper: ratio |{head}")
    lines.append(f"|---|---|---:|---:|{rule}")
    verdicts = collections.Counter()
    for setting in settings:
        base, base_ms, sys_ms = paper(setting)
        p_ratio = sys_ms / base_ms if sys_ms and base_ms else None
        cells = [setting, f"{base or '-'} {fmt(base_ms)}", fmt(sys_ms), fmt(p_ratio, 3)]
        for judge in judges:
            row = ours[judge].get(setting)
            if not row or row[1] is None or row[2] is None:
                verdicts[(judge, "not comparable")] += 1
                system_ms = fmt(row[2]) if row else "-"
                cells += ["none planned" if row and row[1] is None else "-", system_ms, "-", "not comparable"]
                continue
            ratio = row[2] / row[1]
            v = verdict(p_ratio, ratio)
            verdicts[(judge, v)] += 1
            system = fmt(row[2]) + (f" [{fmt(row[5])}, {fmt(row[6])}]" if len(row) > 6 and row[5] is not None else "")
            cells += [f"{row[0]} {fmt(row[1])} (n={row[4]})", system, fmt(ratio, 3), v]
        lines.append("| " + " | ".join(cells) + " |")
    lines.append("")
    return verdicts


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
    lines = ["# Reproduction: each seed system against its own paper", "",
             f"Generated by `bench/reproduce.py {command}` on {time.strftime('%Y-%m-%d')}; do not edit by hand. "
             "Ratio: the system's cost ÷ the strongest baseline's (below 1: the system wins). Verdicts compare "
             "our ratio with the paper's, within a quarter of the paper's gain (at least 0.02): **yes** — within "
             "it; **larger gain** — below it; **smaller gain** — above it, still below 1; **no** — above it and "
             "at or above 1.", "",
             "Judges. `2080ti`: the sim judge fitted to 38 of the seeds' published figures — the protocol means "
             "of their deterministic heuristics, all-to-all times and a fusion speedup (docs/judge.md) — so "
             "the baselines' levels here match the papers' partly by construction; the learned systems' "
             "results were not fitted. `cpu`: the sim judge calibrated on this project's cpu kernels, on "
             "tasks of the `cpu` preset (the measured cpu backend takes about an hour per 100 plans on this "
             "VM; docs/benchmarks.md has those runs). Costs are the papers' objective — the slowest device's "
             "forward and backward compute and output all-to-alls, the input all-to-all omitted as in their "
             "benchmarks — in ms per step. Baselines are run as the authors ran them (`lookup`, `size-lookup`: "
             "the pooling factor truncated to an integer) and as embshard runs them (`(float)`); "
             "`size-lookup` is the authors' code's dim × pooling × log10(rows).", "",
             "Not reproducible here: DreamShard's Table 13, a production model of about a thousand tables "
             "on 128 GPUs whose tables and hardware are not public (the 800-table, 80-device AutoShard "
             "setting is the largest public-protocol point below).",
             ""]
    summary = {}
    for paper in papers:
        settings = chosen[paper]
        if not settings:
            continue
        log(f"{paper}: {len(settings)} settings under {', '.join(judges)}")
        ours = {j: globals()[paper](args, j, settings, f"{args.work}") for j in judges}
        summary[paper] = write_paper(paper, settings, ours, judges, args, lines)
    lines += ["## Status per system", ""]
    for paper, text in summary.items():
        lines.append(f"- **{paper}**: {text}")
    lines += ["", f"Wall time of this invocation: {int(time.time() - started)} s on {os.cpu_count()} cores "
              f"(results already under `{args.work}` are reused, not recomputed)."]
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


def write_transfer(table, transfer, judges, lines):
    sources, targets = TRANSFER[table]
    paper = {r["source"]: r for t in FIGURES["dreamshard"]["tables"] if t["name"] == table for r in t["rows"]}
    label = lambda nd: f"DLRM-{nd[0]} ({nd[1]})"
    lines += [f"### {table}: transfer to other numbers of tables and devices", "",
              f"Policies trained on each source setting (seeds as above) planning the unseen test tasks of each "
              "target, without retraining; cells: our mean cost, ms (the paper's). The last rows divide by the "
              "policy trained on the target itself: the paper's point is that a transferred policy is about as "
              "good.", ""]
    for j in judges:
        lines += [f"**{j}**", "", "| trained on | " + " | ".join(label(t) for t in targets) + " |",
                  "|---|" + "---:|" * len(targets)]
        for source in sources + [None]:
            name = label(source) if source else "DreamShard trained on target"
            row = paper.get(name, {})
            lines.append(f"| {name} | " + " | ".join(
                f"{fmt(transfer[j].get((source, t)))} ({fmt(row.get(label(t)), 1)})" for t in targets) + " |")
        ours_ratio, paper_ratio = [], []
        for t in targets:
            own, own_paper = transfer[j].get((None, t)), paper.get("DreamShard trained on target", {}).get(label(t))
            for source in sources:
                if source != t and own and transfer[j].get((source, t)):
                    ours_ratio.append(transfer[j][(source, t)] / own)
                if source != t and own_paper and paper.get(label(source), {}).get(label(t)):
                    paper_ratio.append(paper[label(source)][label(t)] / own_paper)
        mean = lambda v: sum(v) / len(v) if v else None
        lines += ["", f"Transferred ÷ trained on target, over every source ≠ target: ours mean {fmt(mean(ours_ratio), 3)} "
                  f"[{fmt(min(ours_ratio) if ours_ratio else None, 3)}, {fmt(max(ours_ratio) if ours_ratio else None, 3)}], "
                  f"paper mean {fmt(mean(paper_ratio), 3)} [{fmt(min(paper_ratio) if paper_ratio else None, 3)}, "
                  f"{fmt(max(paper_ratio) if paper_ratio else None, 3)}].", ""]


def write_headroom(settings, ours, judges, lines):
    lines += ["**How much could a placement gain? The experiment.** The same test tasks planned by a search "
              "over table-wise placements on the judge's own model (`" + SEARCH + "`, "
              "`--cost sim:input_comm=omit`): what DreamShard's action space allows when the cost is known "
              "(both ratios on the tasks the search, the baseline and every seed planned). Where the search "
              "gains and DreamShard does not, the miss is the policy's, not the judge's.", "",
              "| setting | judge | best baseline | search | search ÷ best baseline | DreamShard ÷ best baseline |",
              "|---|---|---|---:|---:|---:|"]
    for setting in settings:
        for j in judges:
            r, (search_ms, ratio, system) = ours[j][setting], ours[j].get(setting + " headroom", (None, None, None))
            lines.append(f"| {setting} | {j} | {r[0]} {fmt(r[1])} | {fmt(search_ms)} | {fmt(ratio, 3)} | {fmt(system, 3)} |")
    lines.append("")


def write_seed_diagnosis(settings, ours, judges, args, lines):
    """Where the seeds disagree (worst > 1.2 × best on the test tasks): each seed's own training
    record, the mean step of the real plans it collected in its last iteration — a seed whose
    training collapsed shows it there, before any test task."""
    rows, bad = [], []
    for j in judges:
        for setting in settings:
            r = ours[j].get(setting)
            if not r or len(r) < 7 or not r[5] or (r[6] / r[5] <= 1.2 and (r[3] is None or r[3] <= 1.5)):
                continue
            n, devices = DREAM_SETTINGS[setting]
            records = [json.load(open(f"{args.work}/dreamshard/{j}/n{n}d{devices}-policy-{seed}.json"))
                       ["training"]["metrics"]["mean_real_step_ms"] for seed in args.seeds]
            steps = [f"{seed}: {record:.1f}" for seed, record in zip(args.seeds, records)]
            tests = ", ".join(f"{seed}: {fmt(v)}" for seed, v in zip(args.seeds, r[7]))
            train_dir = f"{args.work}/dreamshard/{j}/n{n}d{devices}-train"
            reference = training_step(train_dir, BASELINES[r[0]]) if r[0] else None
            rows.append(f"| {setting} | {j} | {tests} | {', '.join(steps)} | {r[0]} {fmt(reference, 1)} |")
            # a seed bad on the test tasks (> 1.2 × the best seed or × the best baseline) and its training record
            for test_cost, record in zip(r[7], records):
                if test_cost > 1.2 * min(r[5], r[1] or r[5]):
                    bad.append(bool(reference) and record > 1.5 * reference)
    if rows:
        lines += ["**Seeds that collapse — the experiment.** Where one seed is far worse than the others on the "
                  "test tasks (worst > 1.2 × best), or all are far worse than the best baseline (> 1.5×): each "
                  "seed's training record, the mean step (ms; the training judge's, input all-to-all included) "
                  "of the real plans its last iteration collected, beside the best baseline's mean step on the "
                  "same training tasks.", "",
                  "| setting | judge | test cost per seed | last training iteration's real step per seed | "
                  "best baseline on the training tasks |", "|---|---|---|---|---|"] + rows + [""]
        collapsed = sum(bad)
        lines += [f"Of the {len(bad)} seeds bad on the test tasks (> 1.2 × the best seed or the best baseline), "
                  f"{collapsed} had already collected plans over 1.5 × the best baseline's step on their own "
                  "training tasks in their last iteration"
                  + (": their training collapsed before any unseen table was planned — instability of the "
                     "authors' recipe, not a failure to transfer." if collapsed == len(bad) else
                     "; the others fail on the test tasks only."), ""]


def training_step(train_dir, spec):
    """`spec`'s mean step (ms) on the training tasks under the training judge (sim, input
    all-to-all exposed), from a cached comparison."""
    results, _ = compare(train_dir, {"baseline": spec}, f"{train_dir}-baseline.csv", input_comm="exposed",
                         objective="step_ms")
    steps = [v[0] for v in results["baseline"].values()]
    return sum(steps) / len(steps) if steps else None


def write_ablation(settings, ablation, judges, args, lines):
    lines += ["### Ablation: feature normalisation, the cost network's training, the reward", "",
              "The audit's biggest cause of the cost network's poor ranking: features z-scored over each "
              "task's own tables (the authors' recipe), so one table reads differently in every task. "
              "`train dreamshard --features training_set` fits the z-scores once on every training table "
              "and stores them in the policy file. `--cost-patience 4` replaces the authors' fixed 300 cost "
              "updates per iteration by training until the held-out loss stops improving: every 5th sample "
              "held out, up to 3,000 updates, stopped after 4 checks (every 25 updates) without gain, the "
              "best networks kept (it often stops before 300). Same test tasks, seeds "
              f"{', '.join(args.seeds)}; mean over tasks per seed, then mean [min, max] over seeds; change "
              "against the authors' recipe.", "",
              "The reward from the kernel heads (`--reward kernels`): the authors' REINFORCE reward is minus "
              "the overall head's step, a head fitted on one number per real plan (10 per iteration); the "
              "kernel heads are fitted on every device of every plan. The variant rewards minus "
              "max fw + max bw + 2 × max comm of the kernel heads, the judge's composition of a step "
              "(the forward all-to-all moves what the backward one does; the input all-to-all is not "
              "modelled). Then all three together (`--features training_set --cost-patience 4 --reward "
              "kernels`). Last, a guard against the seed collapses above, not in the audit: `--keep best` "
              "judges the policy's arg-max plans of the first 10 training tasks after every iteration and "
              "writes the iteration whose plans judged best instead of the last (100 more real "
              "evaluations per policy).", "",
              "| setting | judge | " + " | ".join(label + (" | change" if v != "per_task" else "")
                                          for v, (_, _, label) in POLICY_VARIANTS.items()) + " |",
              "|---|---|" + "---:|" * (2 * len(POLICY_VARIANTS) - 1)]
    cell = lambda v: f"{sum(v) / len(v):.2f} [{min(v):.2f}, {max(v):.2f}]" if v else "-"
    for setting in [s for s in settings if s in ABLATION]:
        for j in judges:
            r = ablation[j].get(setting, {})
            base = r.get("per_task") or []
            change = lambda v: f"{100 * (sum(v) / len(v) / (sum(base) / len(base)) - 1):+.1f}%" if v and base else "-"
            cells = [cell(base)] + [f"{cell(r.get(v) or [])} | {change(r.get(v) or [])}"
                                    for v in POLICY_VARIANTS if v != "per_task"]
            lines.append(f"| {setting} | {j} | " + " | ".join(cells) + " |")
    lines.append("")
    write_collapse(settings, ablation, judges, args, lines)


def write_collapse(settings, ablation, judges, args, lines):
    """When seeds collapse, from the `--keep best` policies' records."""
    lines += ["**When do seeds collapse? The experiment.** The `--keep best` policies record, per seed, the "
              "iteration kept, the mean step of its arg-max plans of the first 10 training tasks, and that of "
              "the last iteration (ms).", "",
              "| setting | judge | " + " | ".join(f"seed {s}: kept iteration, step, last step" for s in args.seeds) + " |",
              "|---|---|" + "---|" * len(args.seeds)]
    collapsed = []
    for setting in [s for s in settings if s in ABLATION]:
        for j in judges:
            kept = ablation[j].get(setting, {}).get("kept") or []
            if not kept:
                continue
            lines.append(f"| {setting} | {j} | " + " | ".join(f"{it}, {step:.1f}, {last:.1f}" for it, step, last in kept) + " |")
            best = min(step for _, step, _ in kept)
            collapsed += [it for it, step, _ in kept if step > 1.5 * best]
    if collapsed:
        early = max(collapsed) <= 3
        lines += ["", f"Seeds whose best iteration is still more than 1.5× the setting's best seed: {len(collapsed)}, "
                  f"their best iterations {', '.join(map(str, sorted(collapsed)))} of 10."
                  + (" Such a seed is bad from its first iterations on, when the cost network has seen only "
                     "10–30 real plans, and no later iteration is better: keeping the best iteration cannot save "
                     "it, only a seed that degrades late." if early else "")]
    lines.append("")


def write_recshard_experiment(settings, ours, table3, names, lines):
    mean = lambda v: sum(v) / len(v)
    spread = lambda v: max(v) / mean(v)
    lines += ["**Why RM1 and RM2 do not reproduce: the experiment.** Two measurements on the plans above. "
              "(1) RecShard's plan per GPU under its own cost model (the MILP's HBM term: batch × lookups per "
              "sample × row bytes ÷ HBM bandwidth, its whole model while no lookup is served from UVM) and "
              "under the judge, forward and backward compute separately. (2) The headroom: every plan that "
              "serves all lookups from HBM has the same mean compute per GPU on this judge (its costs add up), "
              "which bounds the slowest GPU from below; `joint`, which balances the judge's own cost, reaches "
              "it. The best ratio any planner can show is that bound ÷ the best greedy baseline.", "",
              "| model | UVM lookups per step | model max / mean, ms | judge fw max / mean | judge bw max / mean | "
              "bound (`joint` max / mean) | best ratio possible | paper ratio |",
              "|---|---:|---|---|---|---|---:|---:|"]
    experiments = []
    for model in settings:
        e = ours.get("experiment", {}).get(model)
        if not e:
            continue
        experiments.append(e)
        got = ours.get(model, {})
        base = [float(got[spec]["comp_max"]) for spec in names if spec in got and got[spec]["comp_max"]]
        p3 = table3.get(model, {})
        paper_ratio = p3["RecShard_max"] / min(p3[f"{c}_max"] for c, _ in names.values()) if p3 else None
        pair = lambda v: f"{max(v):.3f} / {mean(v):.3f}"
        lines.append(f"| {model} | {e['uvm_lookups']:.0f} | {pair(e['model'])} | {pair(e['fw'])} | {pair(e['bw'])} | "
                     f"{fmt(e['joint_max'])} / {fmt(e['joint_mean'])} | "
                     f"{fmt(e['joint_max'] / min(base) if base else None, 3)} | {fmt(paper_ratio, 3)} |")
    all_hbm = [m for m in settings if m in ("RM1", "RM2")]
    ours_spread = [float(r["comp_max"]) / float(r["comp_mean"]) for m in all_hbm for spec, r in ours.get(m, {}).items()
                   if spec in names and r["comp_max"]]
    paper_spread = [table3[m][f"{c}_max"] / table3[m][f"{c}_mean"] for m in all_hbm if m in table3 for c, _ in names.values()]
    if ours_spread and paper_spread and experiments and all(e["uvm_lookups"] == 0 for e in experiments):
        lines += ["", "What it shows. The plan RecShard proves optimal is balanced under its model (slowest ÷ mean "
                  f"GPU {span([spread(e['model']) for e in experiments], 3)}) and in the judge's forward "
                  f"({span([spread(e['fw']) for e in experiments], 3)}), the part its model describes, but not in "
                  f"the judge's backward ({span([spread(e['bw']) for e in experiments], 3)}), the larger part here: "
                  "the fused optimizer reads and writes every distinct row a table touches (cost/analytic.h), a "
                  "function of its distinct rows, not of its lookups, which are all RecShard's model counts. And "
                  "on RM1 and RM2 the paper's baselines left a gain our judge does not: their slowest GPU was "
                  f"{min(paper_spread):.1f}–{max(paper_spread):.1f}× their mean GPU in the paper's Table 3, here "
                  f"{min(ours_spread):.1f}–{max(ours_spread):.1f}×; and on RM1, with no UVM lookups in any plan, "
                  "the paper's baselines averaged "
                  f"{min(table3['RM1'][f'{c}_mean'] for c, _ in names.values()):.1f}–"
                  f"{max(table3['RM1'][f'{c}_mean'] for c, _ in names.values()):.1f} ms per GPU against RecShard's "
                  f"{table3['RM1']['RecShard_mean']:.1f}: costs on its hardware did not add up per table, on this "
                  "judge they do. No placement can show the paper's RM1/RM2 ratios here (the bound's column); RM3 "
                  "reproduces because there the baselines spill hot rows to UVM and RecShard does not, the term "
                  "its model and the judge share.", ""]
    lines.append("")


def span(values, digits=2):
    """"a" when every value prints alike, else "lo to hi"."""
    lo, hi = f"{min(values):.{digits}f}", f"{max(values):.{digits}f}"
    return lo if lo == hi else f"{lo} to {hi}"


def percent(value):
    return f"{100 * value:.1f}%" if value is not None else "-"


def write_autoshard_breakdown(settings, ours, judges, lines):
    lines += ["**Why it loses under `2080ti`: the experiment.** Each test plan judged again with its parts "
              "apart: the slowest device's compute (fw + bw, what AutoShard's cost model and reward see), "
              "the largest all-to-all (fw + bw, which neither sees), and the objective (mean over the test "
              "tasks, ms).", "",
              "| setting | judge | sharder | slowest compute | largest all-to-all | objective |",
              "|---|---|---|---:|---:|---:|"]
    for setting in settings:
        for j in judges:
            for name, (compute, comm, total) in ours[j].get(setting + " breakdown", {}).items():
                lines.append(f"| {setting} | {j} | {name} | {compute:.2f} | {comm:.2f} | {total:.2f} |")
    findings, all_low = [], True
    for setting in settings:
        for j in judges:
            b, row = ours[j].get(setting + " breakdown", {}), ours[j][setting]
            seeds = {k: v for k, v in b.items() if k.startswith("AutoShard")}
            others = [v for k, v in b.items() if not k.startswith("AutoShard")]
            if not seeds or not others or len(row[10]) != len(seeds):
                continue
            low = sum(v[0] < min(o[0] for o in others) for v in seeds.values())
            all_low = all_low and low == len(seeds)
            text = (f"{setting}, `{j}`: {sum(x < 1 for x in row[10])} of {len(seeds)} seeds beat the best baseline; "
                    f"the slowest compute is below every baseline's in {low} of {len(seeds)}")
            losers = [v[1] for v, x in zip(seeds.values(), row[10]) if x >= 1]
            if losers and row[0] in b:
                text += (f"; the losing seeds' all-to-all is {span(losers)} ms against {row[0]}'s "
                         f"{b[row[0]][1]:.2f}")
            findings.append(text)
    lines += ["", "Per setting and judge: " + "; ".join(findings) + ".", "",
              "AutoShard's state, cost model and reward see only compute (paper 001 §3: the cost model predicts "
              "the kernel's latency; the reward is the degree of balance), so "
              + ("every seed balances compute better than any baseline" if all_low else "its seeds balance compute well")
              + ", and what decides the step beyond that is left to chance: the all-to-all, "
              "which grows with the dims a device holds. Where compute is most of the step (`cpu`) that wins; "
              "under `2080ti`, calibrated to the papers' PCIe 2080 Ti, the all-to-all is a large part of the "
              "slowest device's cost, and a seed that happens to stack dims on one device loses (`dim`, which "
              "balances exactly that, is a strong baseline there). The paper's figures measure balance on "
              "compute and speedup on the embedding kernels, so they do not see this part.", ""]


def write_autoshard_unseen(ours, judges, args, lines):
    rows = [(ratio, j, ours[j][f"unseen {ratio}"]) for ratio in UNSEEN_RATIOS for j in judges
            if f"unseen {ratio}" in ours[j]]
    if not rows:
        return
    lines += ["### Figure 10: unseen tables", "",
              "Paper 001 §5.5: the pool in halves; AutoShard trained on 90 tasks of 80 tables from the first half "
              f"(seeds {', '.join(args.seeds)}), tested on 10 tasks of 80 tables on 8 devices of which the given "
              "share comes from the second half (`autoshard:split=train_half` / `split=test_half,unseen_ratio=R`). "
              "The paper's text: for ratios 0–0.8 at least 80% balance and a 1.6× speedup, at 1.0 more than 70% "
              "and about 1.6×, well above the baselines.", "",
              "Verdict: the statement holds when AutoShard reaches its balance and speedup (1.55× for "
              "\"about 1.6×\") and beats the best baseline.", "",
              "| unseen ratio | judge | AutoShard balance | most balanced baseline | AutoShard speedup over random "
              "| best baseline's speedup | AutoShard ÷ best baseline | paper's statement |",
              "|---:|---|---:|---|---:|---:|---:|---|"]
    verdicts = collections.Counter()
    for ratio, j, r in rows:
        verdict_ = unseen_verdict(float(ratio), r)
        verdicts[(j, f"Figure 10 ratios: {verdict_}")] += 1
        lines.append(f"| {ratio} | {j} | {percent(r[5])} | {r[7]} {percent(r[8])} | {fmt(r[6], 3)} | "
                     f"{r[0]} {fmt(r[9], 3)} | {fmt(r[3], 3)} | {verdict_} |")
    lines.append("")
    return verdicts


def unseen_verdict(ratio, row):
    """Paper 001 §5.5's statement for one unseen ratio: ≥ 80% balance and 1.6× up to 0.8, > 70%
    and about 1.6× at 1.0, above the baselines."""
    balance, speedup, against_best = row[5], row[6], row[3]
    if None in (balance, speedup, against_best):
        return "not comparable"
    enough = balance >= 0.80 and speedup >= 1.6 if ratio < 1 else balance > 0.70 and speedup >= 1.55
    return "holds" if enough and against_best < 1 else "does not hold"


def write_paper(paper, settings, ours, judges, args, lines):
    if paper == "neuroshard":
        lines += ["## NeuroShard (paper 003), Table 1", ""]
        v = ratio_table("Mean max cost (ms) of the slowest device, 12 settings",
                        f"{args.count} tasks per setting (NeuroShard protocol, seed 9000). Ratio: NeuroShard ÷ the "
                        "strongest baseline (random, size, dim, lookup, size-lookup — integer and float pooling — "
                        "and TorchRec's planner logic), each over the tasks both planned; baselines that planned "
                        "fewer than half the tasks are left out, as the paper prints '-' for them. n: those tasks.",
                        settings, neuroshard_paper, ours, judges, "NeuroShard", lines)
        if "cpu" in judges:
            lines += ["**Why not on the cpu judge — the experiment.** On `cpu` tasks NeuroShard searches under "
                      "its default cost model there, the neural model trained on this VM's measured kernels "
                      "(`models/cpu-default.json`), while the judge is the sim model calibrated on the same "
                      "kernels. Searching under the judge's own model (`compare --cost sim`) instead:", "",
                      "| setting | ratio, neural cost model | ratio, the judge's model |", "|---|---:|---:|"]
            for setting in settings:
                a, b = ours["cpu"].get(setting), ours["cpu"].get(setting + " (cost sim)")
                lines.append(f"| {setting} | {fmt(a[3] if a else None, 3)} | {fmt(b[3] if b else None, 3)} |")
            lines.append("")
    elif paper == "dreamshard":
        lines += ["## DreamShard (paper 000), appendix Tables 6 and 7", ""]
        v = ratio_table("Mean cost (ms) of the slowest device on unseen test tables",
                        f"Per setting: a policy per seed ({', '.join(args.seeds)}) trained on 50 train-half tasks "
                        f"(the authors' recipe), tested on {args.count} test-half tasks (split_seed 0: disjoint "
                        "halves). Ours: the mean over seeds [the seeds' range]. Paper rows: the test rows; †: some of the row's "
                        "baseline cells are lost in the paper's text copy, the best of the rest is shown "
                        "(bench/paper_figures.json); DLRM-10 (4)'s size-lookup cell is taken from its printed "
                        "speedup (the printed 9.6 contradicts it). Baselines: greedy with integer "
                        "pooling (the authors') and float pooling (`(float)`).", settings, dreamshard_paper,
                        ours, judges, "DreamShard", lines)
        write_headroom(settings, ours, judges, lines)
        write_seed_diagnosis(settings, ours, judges, args, lines)
        write_ablation(settings, {j: dreamshard_ablation(args, j, settings, args.work) for j in judges}, judges, args, lines)
        for table in TRANSFER:
            write_transfer(table, {j: dreamshard_transfer(args, j, table, args.work) for j in judges}, judges, lines)
    elif paper == "autoshard":
        lines += ["## AutoShard (paper 001)", "",
                  "The paper's main result (Figure 8) and transfer results (Figures 10 and 11) are figures only; "
                  "its text gives the full model's degree of balance 88.6% ± 1.2% and speedup 1.712 ± 0.027 over "
                  "random (Table 2, MetaSyn, 80 tables on 8 GPUs). Degree of balance: the least loaded device's "
                  "compute ÷ the most loaded's (the paper's Figure 8a, AutoShard's reward).", "",
                  "| setting | judge | AutoShard balance | most balanced baseline | paper balance | AutoShard speedup "
                  "over random | paper speedup | best baseline | AutoShard ÷ best baseline | per seed |",
                  "|---|---|---:|---|---:|---:|---:|---|---:|---|"]
        v = collections.Counter()
        for setting in settings:
            for j in judges:
                r = ours[j][setting]
                paper_cells = ("88.6%", "1.712") if setting.startswith("80 ") else ("> 70% (text)", "-")
                ratio = r[2] / r[1] if r[1] and r[2] else None
                lines.append(f"| {setting} | {j} | {percent(r[5])} | {r[7]} {percent(r[8])} | {paper_cells[0]} | "
                             f"{fmt(r[6], 3)} | {paper_cells[1]} | {r[0]} {fmt(r[1])} | {fmt(ratio, 3)} | "
                             f"{', '.join(fmt(x, 3) for x in r[10])} |")
                v[(j, "beats the best baseline" if ratio and ratio < 1 else "does not beat the best baseline")] += 1
        lines.append("")
        write_autoshard_breakdown(settings, ours, judges, lines)
        steps = 3 * int(args.env_steps)
        lines += [f"**Is it undertrained? The experiment.** Seed {args.seeds[0]} trained again with {steps:,} steps "
                  f"(three times the above), against the same strongest baseline rule:", "",
                  "| setting | judge | AutoShard ÷ best baseline, as above (mean of seeds) | with "
                  f"{steps:,} steps (seed {args.seeds[0]}) |", "|---|---|---:|---:|"]
        for setting in settings:
            for j in judges:
                r = ours[j][setting]
                longer = ours[j].get(setting + f" ({steps} steps, seed {args.seeds[0]})")
                lines.append(f"| {setting} | {j} | {fmt(r[3], 3)} | {fmt(longer[3] if longer else None, 3)} |")
        lines.append("")
        v.update(write_autoshard_unseen(ours, judges, args, lines) or {})
    else:
        lines += ["## RecShard (paper 004), Tables 3 and 5", "",
                  "RM1–RM3 on the protocol's own 16-GPU A100 topology (scale 0.01; the sim judge of its preset): "
                  "the paper's hardware is neither a 2080 Ti nor a CPU, and the cpu backend has no UVM tier, so "
                  "the judges of the other sections do not apply here.", "",
                  "| model | sharder | per-GPU EMB ms min / max / mean / std | paper | UVM share | paper |",
                  "|---|---|---|---|---:|---:|"]
        table3 = {r["model"]: r for t in FIGURES["recshard"]["tables"] if t["name"] == "Table 3" for r in t["rows"]}
        shares = {r["model"]: r for t in FIGURES["recshard"]["tables"] if t["name"] == "Table 5" for r in t["rows"]
                  if r["location"].startswith("UVM share % (DERIVED")}
        names = {"greedy:balance=size,on_full=uvm": ("Size-Based", "SB"),
                 "greedy:balance=lookup,on_full=uvm": ("Lookup-Based", "LB"),
                 "greedy:balance=size_and_lookup,on_full=uvm": ("Size-Based-Lookup", "SBL")}
        v = collections.Counter()
        for model in settings:
            for spec, row in ours[judges[0]].get(model, {}).items():
                col, key = ("RecShard", "RecShard") if spec.startswith("recshard") else names.get(spec, (None, None))
                p3 = table3.get(model, {})
                paper_ms = " / ".join(fmt(p3.get(f"{col}_{s}")) for s in ("min", "max", "mean", "std")) if col else "-"
                share = shares.get(model, {}).get(key) if key else None
                ours_ms = " / ".join(fmt(float(row[k])) if row[k] else "-" for k in ("comp_min", "comp_max", "comp_mean", "comp_std"))
                uvm = fmt(float(row["uvm_share"]), 3) + "%" if row["uvm_share"] else row["status"]
                lines.append(f"| {model} | `{spec}` | {ours_ms} | {paper_ms} | {uvm} | "
                             f"{fmt(share) + '%' if share is not None else '-'} |")
        lines += ["", "Slowest GPU's embedding time, RecShard ÷ the best of the three greedy baselines (the paper's "
                  "headline: 2.58×, 5.26×, 7.41× speed-ups):", "",
                  "| model | paper | ours | verdict |", "|---|---:|---:|---|"]
        for model in settings:
            p3 = table3.get(model, {})
            paper_ratio = p3["RecShard_max"] / min(p3[f"{c}_max"] for c, _ in names.values()) if p3 else None
            got = ours[judges[0]].get(model, {})
            rec = next((float(r["comp_max"]) for spec, r in got.items() if spec.startswith("recshard") and r["comp_max"]), None)
            base = [float(got[spec]["comp_max"]) for spec in names if spec in got and got[spec]["comp_max"]]
            ratio = rec / min(base) if rec and base else None
            v[("a100 sim", verdict(paper_ratio, ratio))] += 1
            lines.append(f"| {model} | {fmt(paper_ratio, 3)} | {fmt(ratio, 3)} | {verdict(paper_ratio, ratio)} |")
        lines.append("")
        write_recshard_experiment(settings, ours[judges[0]], table3, names, lines)
        judges = ["a100 sim"]
    parts = []
    order = ["yes", "larger gain", "smaller gain", "no", "not comparable", "beats the best baseline",
             "does not beat the best baseline"]
    for j in judges:
        n = sum(c for (jj, k), c in v.items() if jj == j and k in order)
        counts = ", ".join(f"{v[(j, k)]} {k}" for k in order if v.get((j, k)))
        extra = [f"{c} {k}" for (jj, k), c in sorted(v.items()) if jj == j and k not in order]
        parts.append(f"under `{j}`, of {n} settings: {counts}" + (f" ({'; '.join(extra)})" if extra else ""))
    return "; ".join(parts)


if __name__ == "__main__":
    main()
