#!/usr/bin/env python3
"""Regenerates docs/reproduction.md: each seed system on its own paper's protocol, beside the
paper's figure and the baselines as the authors ran them (issue 19).

Usage:
  bench/reproduce.py [--papers neuroshard,dreamshard,autoshard,recshard]
                     [--settings PAPER:SETTING,...] [--judges 2080ti,cpu] [--count N]
                     [--seeds 0,1,2] [--work DIR] [--out docs/reproduction.md]

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


def compare(tasks, sharders, out):
    """Mean max_sum and mean balance per sharder spec as given, over tasks every sharder planned."""
    if not os.path.exists(out):
        run("compare", "--quiet", "--tasks", tasks, "--sharders", ";".join(sharders.values()), "--cost", "default",
            "--backend", "sim", "--input-comm", "omit", "--out", out)
    by_spec = collections.defaultdict(dict)
    for row in csv.DictReader(open(out)):
        if row["status"] == "ok":
            by_spec[row["sharder"]][row["task_id"]] = (float(row["max_sum_ms"]), float(row["balance"]))
    canonical = {}  # compare writes canonical specs: match them to ours in order
    for spec in dict.fromkeys(r["sharder"] for r in csv.DictReader(open(out))):
        canonical[len(canonical)] = spec
    # Tasks every sharder that planned any planned (one that planned none shows '-').
    common = set.intersection(*(set(v) for v in by_spec.values())) if by_spec else set()
    means = {}
    for i, name in enumerate(sharders):
        got = by_spec.get(canonical.get(i), {})
        rows = [got[t] for t in common if t in got]
        means[name] = (sum(r[0] for r in rows) / len(rows), sum(r[1] for r in rows) / len(rows)) if rows else None
    return means, len(common)


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
    """'yes' within 0.05 of the paper's ratio (on its side of 1), 'direction' when only the sign of
    the gain matches, 'no' otherwise."""
    if paper_ratio is None or ours is None:
        return "-"
    if (ours < 1.0) != (paper_ratio < 1.0):
        return "no"
    return "yes" if abs(ours - paper_ratio) <= 0.05 else "direction"


# ---- the four papers ----------------------------------------------------------------------------

def neuroshard(args, judge, settings, work):
    sharders = dict(BASELINES, torchrec="torchrec", NeuroShard="neuroshard")
    rows = {}
    for setting in settings:
        devices, dim = (int(x[1:]) for x in setting.split())
        tasks = gen(f"neuroshard:preset={judge},max_dim={dim}", devices, args.count, 9000,
                    f"{work}/neuroshard/{judge}/d{devices}m{dim}")
        means, n = compare(tasks, sharders, f"{tasks}.csv")
        ms = {k: v[0] for k, v in means.items() if v}
        base, base_ms = best_of(ms, [k for k in sharders if k != "NeuroShard"])
        rows[setting] = (base, base_ms, ms.get("NeuroShard"), n)
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
        base = f"dreamshard:preset={judge},tables={n}"
        train_dir = gen(f"{base},split=train", devices, 50, 0, f"{work}/dreamshard/{judge}/n{n}d{devices}-train")
        test_dir = gen(f"{base},split=test", devices, args.count, 1, f"{work}/dreamshard/{judge}/n{n}d{devices}-test")
        sharders = dict(BASELINES)
        for seed in args.seeds:
            sharders[f"DreamShard {seed}"] = train("dreamshard", train_dir, seed, f"{train_dir}/../n{n}d{devices}-policy-{seed}.json")
        means, count = compare(test_dir, sharders, f"{test_dir}.csv")
        ms = {k: v[0] for k, v in means.items() if v}
        ours = [ms[k] for k in ms if k.startswith("DreamShard")]
        best, best_ms = best_of(ms, list(BASELINES))
        rows[setting] = (best, best_ms, sum(ours) / len(ours) if ours else None, count,
                         (min(ours), max(ours)) if ours else None)
    return rows


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
    """The authors' per-task feature z-scores against z-scores fitted once on every training table
    (`train dreamshard --features training_set`), per seed, on the same unseen test tasks."""
    rows = {}
    for setting in [s for s in settings if s in ABLATION]:
        n, devices = DREAM_SETTINGS[setting]
        train_dir = f"{work}/dreamshard/{judge}/n{n}d{devices}-train"
        test_dir = f"{work}/dreamshard/{judge}/n{n}d{devices}-test"
        sharders = {}
        for seed in args.seeds:
            sharders[f"per_task {seed}"] = train("dreamshard", train_dir, seed, f"{train_dir}/../n{n}d{devices}-policy-{seed}.json")
            sharders[f"training_set {seed}"] = train("dreamshard", train_dir, seed,
                                                     f"{train_dir}/../n{n}d{devices}-pool-policy-{seed}.json",
                                                     "--features", "training_set")
        means, count = compare(test_dir, sharders, f"{test_dir}-ablation.csv")
        rows[setting] = {v: [means[f"{v} {s}"][0] for s in args.seeds if means.get(f"{v} {s}")]
                         for v in ("per_task", "training_set")}
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
        means, count = compare(test_dir, dict(BASELINES, **policies), f"{test_dir}.csv")
        ms = {k: v[0] for k, v in means.items() if v}
        ours = [k for k in ms if k.startswith("AutoShard")]
        best, best_ms = best_of(ms, list(BASELINES))
        mean_ms = sum(ms[k] for k in ours) / len(ours) if ours else None
        balance = sum(means[k][1] for k in ours) / len(ours) if ours else None
        speedup = ms["random"] / mean_ms if mean_ms and ms.get("random") else None
        rows[setting] = (best, best_ms, mean_ms, count, balance, speedup)
    return rows


def recshard(args, judge, settings, work):
    out = f"{work}/recshard"
    if not os.path.exists(f"{out}/summary.csv"):
        models = " ".join(s.lower() for s in settings)
        subprocess.run(["bash", os.path.join(HERE, "recshard_rm.sh"), out, "0.01", "60", models],
                       check=True, capture_output=True, env=dict(os.environ, EMBSHARD=E))
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
            cells += [f"{row[0]} {fmt(row[1])}", fmt(row[2]), fmt(ratio, 3), v]
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
             "Verdicts: **yes** — our ratio to the strongest baseline is within 0.05 of the paper's and on the same "
             "side of 1; **direction** — same side of 1, further off; **no** — the other side of 1.", ""]
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
    lines += ["", f"Wall time: {int(time.time() - started)} s on this machine "
              f"({os.cpu_count()} cores; `nproc` threads per verb)."]
    out = os.path.abspath(args.out)
    fd, tmp = tempfile.mkstemp(dir=os.path.dirname(out), prefix=os.path.basename(out) + ".tmp-")
    with os.fdopen(fd, "w") as f:
        f.write("\n".join(lines) + "\n")
    os.replace(tmp, out)
    log(f"wrote {out}")
    print("\n".join(f"{p}: {t}" for p, t in summary.items()))


def write_ablation(settings, ablation, judges, args, lines):
    lines += ["### Ablation: feature normalisation", "",
              "The audit's biggest cause of the cost network's poor ranking: features z-scored over each "
              "task's own tables (the authors' recipe), so one table reads differently in every task. "
              "`train dreamshard --features training_set` fits the z-scores once on every training table "
              f"and stores them in the policy file. Same test tasks, seeds {', '.join(args.seeds)}; mean "
              "over tasks per seed, then mean [min, max] over seeds.", "",
              "| setting | judge | per-task z-scores (authors') | training-set z-scores | change |",
              "|---|---|---:|---:|---:|"]
    for setting in [s for s in settings if s in ABLATION]:
        for j in judges:
            r = ablation[j].get(setting, {})
            a, b = r.get("per_task") or [], r.get("training_set") or []
            cell = lambda v: f"{sum(v) / len(v):.2f} [{min(v):.2f}, {max(v):.2f}]" if v else "-"
            change = f"{100 * (sum(b) / len(b) / (sum(a) / len(a)) - 1):+.1f}%" if a and b else "-"
            lines.append(f"| {setting} | {j} | {cell(a)} | {cell(b)} | {change} |")
    lines.append("")


def write_paper(paper, settings, ours, judges, args, lines):
    if paper == "neuroshard":
        lines += ["## NeuroShard (paper 003), Table 1", ""]
        v = ratio_table("Mean max cost (ms) of the slowest device, 12 settings",
                        f"{args.count} tasks per setting (NeuroShard protocol, seed 9000). Ratio: NeuroShard ÷ the "
                        "strongest baseline (random, size, dim, lookup, size-lookup — integer and float pooling — "
                        "and TorchRec's planner logic).", settings, neuroshard_paper, ours, judges, "NeuroShard", lines)
    elif paper == "dreamshard":
        lines += ["## DreamShard (paper 000), appendix Tables 6 and 7", ""]
        v = ratio_table("Mean cost (ms) of the slowest device on unseen test tables",
                        f"Per setting: a policy per seed ({', '.join(args.seeds)}) trained on 50 train-half tasks "
                        f"(the authors' recipe), tested on {args.count} test-half tasks (split_seed 0: disjoint "
                        "halves). Ours: the mean over seeds. Paper rows: the test rows; †: some of the row's "
                        "baseline cells are lost in the paper's text copy, the best of the rest is shown "
                        "(bench/paper_figures.json); DLRM-10 (4)'s size-lookup cell is taken from its printed "
                        "speedup (the printed 9.6 contradicts it). Baselines: greedy with integer "
                        "pooling (the authors') and float pooling (`(float)`).", settings, dreamshard_paper,
                        {j: {s: r[:4] for s, r in ours[j].items()} for j in judges}, judges, "DreamShard", lines)
        write_ablation(settings, {j: dreamshard_ablation(args, j, settings, args.work) for j in judges}, judges, args, lines)
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
                lines.append(f"| {setting} | {j} | {fmt(100 * r[4] if r[4] is not None else None, 1)}% | {paper_cells[0]} | "
                             f"{fmt(r[5], 3)} | {paper_cells[1]} | {r[0]} {fmt(r[1])} | {fmt(ratio, 3)} |")
                v[(j, "ratio<1" if ratio and ratio < 1 else "ratio>=1")] += 1
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
        lines.append("")
        return "see the RecShard table (UVM share and per-GPU spread against the greedy baselines)."
    parts = []
    for j in judges:
        n = sum(c for (jj, _), c in v.items() if jj == j)
        parts.append(f"{j}: " + ", ".join(f"{c}/{n} {k}" for (jj, k), c in sorted(v.items()) if jj == j))
    return "; ".join(parts)


if __name__ == "__main__":
    main()
