"""bench/reproduce.py's arithmetic on comparison results: a system's mean over its seeds, the
strongest baseline and the ratio to it, AutoShard's balance and speedups, the verdicts that set
our ratio beside the paper's, and how a figure prints. No I/O; uses reproduce_papers' BASELINES."""
from reproduce_papers import BASELINES


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


def best_of(means, names):
    """The strongest (lowest) of `names` that planned: (name, value)."""
    got = [(means[n], n) for n in names if means.get(n) is not None]
    if not got:
        return None, None
    value, name = min(got)
    return name, value


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


def seeds_disagree(row):
    """Whether a DreamShard row (strongest()'s tuple + the seeds' best, worst and each) asks for
    the seeds' training records: the worst seed over 1.2 × the best on the test tasks, or the
    system over 1.5 × the strongest baseline."""
    return not (not row or len(row) < 7 or not row[5] or (row[6] / row[5] <= 1.2 and (row[3] is None or row[3] <= 1.5)))


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


def unseen_verdict(ratio, row):
    """Paper 001 §5.5's statement for one unseen ratio: ≥ 80% balance and 1.6× up to 0.8, > 70%
    and about 1.6× at 1.0, above the baselines."""
    balance, speedup, against_best = row[5], row[6], row[3]
    if None in (balance, speedup, against_best):
        return "not comparable"
    enough = balance >= 0.80 and speedup >= 1.6 if ratio < 1 else balance > 0.70 and speedup >= 1.55
    return "holds" if enough and against_best < 1 else "does not hold"


def fmt(value, digits=2):
    return "-" if value is None else f"{value:.{digits}f}"


def span(values, digits=2):
    """"a" when every value prints alike, else "lo to hi"."""
    lo, hi = f"{min(values):.{digits}f}", f"{max(values):.{digits}f}"
    return lo if lo == hi else f"{lo} to {hi}"


def percent(value):
    return f"{100 * value:.1f}%" if value is not None else "-"
