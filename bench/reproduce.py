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


def compare(tasks, sharders, out, cost="default"):
    """Per sharder (by our name): task → (max_sum ms, balance) of its valid plans; and the task count.
    The CSV names sharders by canonical spec in the order they were given, so OUT.sharders keeps
    that order; a cached OUT made for other sharders is made again."""
    specs = list(sharders.values())
    assert len(set(specs)) == len(specs), "two names for one sharder spec"
    order_file = out + ".sharders"
    if not (os.path.exists(out) and os.path.exists(order_file)
            and sorted(open(order_file).read().splitlines()) == sorted(specs)):
        run("compare", "--quiet", "--tasks", tasks, "--sharders", ";".join(specs), "--cost", cost,
            "--backend", "sim", "--input-comm", "omit", "--out", out)
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
            results[name][row["task_id"]] = (float(row["max_sum_ms"]), float(row["balance"]))
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
    if not os.path.exists(out):
        run("train", kind, "--tasks", tasks, "--backend", "sim", "--seed", seed, "--out", out, *extra)
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
    return rows


TRANSFER = {  # DreamShard's transfer tables: sources (tables, devices) → targets (tables, devices)
    "Table 8": ([(n, 4) for n in (20, 40, 60, 80, 100)], [(n, 4) for n in (20, 40, 60, 80, 100)]),
    "Table 10": ([(n, 2) for n in (10, 20, 30, 40, 50)], [(n, 4) for n in (10, 20, 30, 40, 50)]),
}


# How each variant is trained: its policy files' prefix and its `train dreamshard` options.
POLICY_VARIANTS = {"per_task": ("", []),  # the authors' recipe
                   "training_set": ("pool-", ["--features", "training_set"]),
                   "early_stopping": ("patience-", ["--cost-patience", "4"])}


def dreamshard_test_dir(args, judge, n, devices, work):
    """DLRM-n (devices)'s --count test tasks from the pool's test half (cached)."""
    return gen(f"dreamshard:preset={judge},tables={n},split=test", devices, args.count, 1,
               f"{work}/dreamshard/{judge}/n{n}d{devices}-test")


def dreamshard_policies(args, judge, n, devices, work, variant="per_task"):
    """The policies of DLRM-n (devices), one per seed, trained on 50 train-half tasks (cached)."""
    train_dir = gen(f"dreamshard:preset={judge},tables={n},split=train", devices, 50, 0,
                    f"{work}/dreamshard/{judge}/n{n}d{devices}-train")
    prefix, options = POLICY_VARIANTS[variant]
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
EARLY_STOPPING = ["DLRM-50 (4)", "DLRM-90 (4)"]  # where seeds collapsed


def dreamshard_ablation(args, judge, settings, work):
    """The authors' recipe against each of POLICY_VARIANTS' others, per seed, on the same unseen
    test tasks (early stopping only where seeds collapsed)."""
    rows = {}
    for setting in [s for s in settings if s in ABLATION]:
        n, devices = DREAM_SETTINGS[setting]
        variants = [v for v in POLICY_VARIANTS if v != "early_stopping" or setting in EARLY_STOPPING]
        sharders = {f"{v} {seed}": spec for v in variants
                    for seed, spec in zip(args.seeds, dreamshard_policies(args, judge, n, devices, work, v))}
        test_dir = dreamshard_test_dir(args, judge, n, devices, work)
        csv_name = "-ablation-early-stopping.csv" if "early_stopping" in variants else "-ablation.csv"
        results, _ = compare(test_dir, sharders, test_dir + csv_name)
        common = set.intersection(*(set(v) for v in results.values()))
        rows[setting] = {v: [sum(results[f"{v} {s}"][t][0] for t in common) / len(common) for s in args.seeds]
                         for v in variants} if common else {}
    return rows


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


def autoshard(args, judge, settings, work):
    train_dir = gen(f"autoshard:preset={judge},split=train", 8, 90, 0, f"{work}/autoshard/{judge}/train")
    policies = {f"AutoShard {s}": train("autoshard", train_dir, s, f"{train_dir}/../policy-{s}.json",
                                        "--env-steps", args.env_steps) for s in args.seeds}
    rows = {}
    for setting in settings:
        devices = 8 if setting.startswith("80 ") else 80
        test_dir = gen(f"autoshard:preset={judge},split=test", devices, 10 if devices == 8 else 3, 1,
                       f"{work}/autoshard/{judge}/test-{devices}")
        results, count = compare(test_dir, dict(BASELINES, **policies), f"{test_dir}.csv")
        best = strongest(results, list(policies), list(BASELINES), count)
        mine = system_values(results, list(policies))
        balance = [results[p][t][1] for p in policies for t in mine]
        random = [t for t in mine if t in results["random"]]
        speedup = (sum(results["random"][t][0] for t in random) / sum(mine[t] for t in random)) if random else None
        rows[setting] = best + (sum(balance) / len(balance) if balance else None, speedup)
    # The experiment: is AutoShard undertrained? Seed 0 again with three times the steps.
    steps = str(3 * int(args.env_steps))
    longer = {"AutoShard long": train("autoshard", train_dir, args.seeds[0], f"{train_dir}/../policy-long-{args.seeds[0]}.json",
                                      "--env-steps", steps)}
    for setting in settings:
        devices = 8 if setting.startswith("80 ") else 80
        test_dir = f"{work}/autoshard/{judge}/test-{devices}"
        results, count = compare(test_dir, dict(BASELINES, **longer), f"{test_dir}-long.csv")
        rows[setting + f" ({steps} steps, seed {args.seeds[0]})"] = strongest(results, list(longer), list(BASELINES), count)
    return rows


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
    return rows


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
             "Not covered yet: DreamShard's Table 9 (4 → 2 GPUs) and Table 13 (production), AutoShard's "
             "transfer ratios (Figure 10; figures only), and one of the issue's DreamShard improvements "
             "(a reward from the kernel heads).",
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


def write_seed_diagnosis(settings, ours, judges, args, lines):
    """Where the seeds disagree (worst > 1.2 × best on the test tasks): each seed's own training
    record, the mean step of the real plans it collected in its last iteration — a seed whose
    training collapsed shows it there, before any test task."""
    rows = []
    for j in judges:
        for setting in settings:
            r = ours[j].get(setting)
            if not r or len(r) < 7 or not r[5] or r[6] / r[5] <= 1.2:
                continue
            n, devices = DREAM_SETTINGS[setting]
            steps = []
            for seed in args.seeds:
                policy = json.load(open(f"{args.work}/dreamshard/{j}/n{n}d{devices}-policy-{seed}.json"))
                steps.append(f"{seed}: {policy['training']['metrics']['mean_real_step_ms']:.1f}")
            tests = ", ".join(f"{seed}: {fmt(v)}" for seed, v in zip(args.seeds, r[7]))
            rows.append(f"| {setting} | {j} | {tests} | {', '.join(steps)} |")
    if rows:
        lines += ["**Seeds that disagree — the experiment.** Each seed's training record: the mean step (ms) of "
                  "the real plans its last iteration collected. Where one seed is far worse on the test tasks, "
                  "its training had already collapsed on the training tasks: instability of the authors' recipe "
                  "(10 iterations, no early stopping), not a failure to transfer to unseen tables.", "",
                  "| setting | judge | test cost per seed | last training iteration's real step per seed |",
                  "|---|---|---|---|"] + rows + [""]


def write_ablation(settings, ablation, judges, args, lines):
    lines += ["### Ablation: feature normalisation and the cost network's training", "",
              "The audit's biggest cause of the cost network's poor ranking: features z-scored over each "
              "task's own tables (the authors' recipe), so one table reads differently in every task. "
              "`train dreamshard --features training_set` fits the z-scores once on every training table "
              "and stores them in the policy file. `--cost-patience 4` replaces the authors' fixed 300 cost "
              "updates per iteration by training until the held-out loss stops improving: every 5th sample "
              "held out, up to 3,000 updates, stopped after 4 checks (every 25 updates) without gain, the "
              "best networks kept (it often stops before 300); it ran where seeds collapsed. Same test tasks, seeds "
              f"{', '.join(args.seeds)}; mean over tasks per seed, then mean [min, max] over seeds; change "
              "against the authors' recipe.", "",
              "| setting | judge | per-task z-scores (authors') | training-set z-scores | change | "
              "early-stopped cost network | change |", "|---|---|---:|---:|---:|---:|---:|"]
    cell = lambda v: f"{sum(v) / len(v):.2f} [{min(v):.2f}, {max(v):.2f}]" if v else "-"
    for setting in [s for s in settings if s in ABLATION]:
        for j in judges:
            r = ablation[j].get(setting, {})
            base = r.get("per_task") or []
            change = lambda v: f"{100 * (sum(v) / len(v) / (sum(base) / len(base)) - 1):+.1f}%" if v and base else "-"
            pool, early = r.get("training_set") or [], r.get("early_stopping") or []
            lines.append(f"| {setting} | {j} | {cell(base)} | {cell(pool)} | {change(pool)} | {cell(early)} | "
                         f"{change(early)} |")
    lines.append("")


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
        write_seed_diagnosis(settings, ours, judges, args, lines)
        write_ablation(settings, {j: dreamshard_ablation(args, j, settings, args.work) for j in judges}, judges, args, lines)
        for table in TRANSFER:
            write_transfer(table, {j: dreamshard_transfer(args, j, table, args.work) for j in judges}, judges, lines)
    elif paper == "autoshard":
        lines += ["## AutoShard (paper 001)", "",
                  "The paper's main result (Figure 8) and transfer result (Figure 11) are figures only; its "
                  "text gives the full model's degree of balance 88.6% ± 1.2% and speedup 1.712 ± 0.027 over "
                  "random (Table 2, MetaSyn, 80 tables on 8 GPUs).", "",
                  "| setting | judge | AutoShard balance | paper balance | AutoShard speedup over random | paper speedup "
                  "| best baseline | AutoShard ÷ best baseline |", "|---|---|---:|---:|---:|---:|---|---:|"]
        v = collections.Counter()
        for setting in settings:
            for j in judges:
                r = ours[j][setting]
                paper_cells = ("88.6%", "1.712") if setting.startswith("80 ") else ("> 70% (text)", "-")
                ratio = r[2] / r[1] if r[1] and r[2] else None
                lines.append(f"| {setting} | {j} | {fmt(100 * r[5] if r[5] is not None else None, 1)}% | {paper_cells[0]} | "
                             f"{fmt(r[6], 3)} | {paper_cells[1]} | {r[0]} {fmt(r[1])} | {fmt(ratio, 3)} |")
                v[(j, "beats the best baseline" if ratio and ratio < 1 else "does not beat the best baseline")] += 1
        lines.append("")
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
        judges = ["a100 sim"]
    parts = []
    order = ["yes", "larger gain", "smaller gain", "no", "not comparable", "beats the best baseline",
             "does not beat the best baseline"]
    for j in judges:
        n = sum(c for (jj, _), c in v.items() if jj == j)
        counts = ", ".join(f"{v[(j, k)]} {k}" for k in order if v.get((j, k)))
        parts.append(f"under `{j}`, of {n} settings: {counts}")
    return "; ".join(parts)


if __name__ == "__main__":
    main()
