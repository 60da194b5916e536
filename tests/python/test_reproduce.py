#!/usr/bin/env python3
"""bench/reproduce.py (docs/reproduction.md's generator): a paper, setting or judge the papers do
not define is a clear error listing the defined ones; one small setting runs end to end and puts
the paper's figure beside ours; DreamShard's one self-contradicting published cell is read from its
printed speedup. Usage: test_reproduce.py EMBSHARD_CLI"""
import os
import pathlib
import subprocess
import sys
import tempfile

ROOT = pathlib.Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "bench" / "reproduce.py"


def run(cli, *args):
    env = dict(os.environ, EMBSHARD=cli)
    return subprocess.run([sys.executable, str(SCRIPT), *args], capture_output=True, text=True, env=env, check=False)


def main(cli) -> int:
    for args, message in [
        (["--papers", "tpu-shard"], "unknown paper 'tpu-shard'; defined: neuroshard, dreamshard, autoshard, recshard"),
        (["--judges", "v100"], "unknown judge 'v100'; defined: 2080ti, cpu"),
        (["--papers", "dreamshard", "--settings", "dreamshard:DLRM-20 (4)"],
         "dreamshard defines no setting 'DLRM-20 (4)'; its settings: DLRM-10 (4), DLRM-30 (4)"),
        (["--papers", "neuroshard", "--settings", "recshard:RM1"], "unknown or unselected paper 'recshard'"),
    ]:
        bad = run(cli, *args)
        assert bad.returncode == 2, (args, bad.returncode, bad.stderr)
        assert message in bad.stderr, (args, bad.stderr)

    with tempfile.TemporaryDirectory() as tmp:
        out = pathlib.Path(tmp) / "reproduction.md"
        ok = run(cli, "--papers", "neuroshard", "--settings", "neuroshard:d4 m4", "--judges", "2080ti",
                 "--count", "3", "--work", str(pathlib.Path(tmp) / "work"), "--out", str(out))
        assert ok.returncode == 0, ok.stderr
        text = out.read_text()
        row = next(line for line in text.splitlines() if line.startswith("| d4 m4 |"))
        cells = [c.strip() for c in row.strip("|").split("|")]
        assert cells[1:4] == ["size-lookup 18.38", "17.74", "0.965"], cells  # the paper's Table 1
        ours = float(cells[6])  # NeuroShard ÷ the strongest baseline, measured here
        assert 0.5 < ours < 1.5, cells
        # The verdict is the one the paper's ratio and ours give (not any verdict at all).
        sys.path.insert(0, str(SCRIPT.parent))
        import reproduce
        assert cells[7] == reproduce.verdict(float(cells[3]), ours), cells
        assert sorted(p.name for p in out.parent.iterdir()) == ["reproduction.md", "work"]  # no temporary left

    sys.path.insert(0, str(SCRIPT.parent))
    import reproduce
    assert reproduce.dreamshard_paper("DLRM-10 (4)") == ("lookup", 11.1, 10.9)  # size-lookup: 11.2, not 9.6
    assert reproduce.dreamshard_paper("DLRM-90 (4)")[0] == "random†"  # the others are lost in the text copy
    check_helpers(reproduce)
    print("reproduce: refuses undefined papers, settings and judges; one setting end to end")
    return 0


def check_helpers(reproduce):
    """The experiments' arithmetic against values worked out by hand."""
    assert reproduce.span([0.4531, 0.4534]) == "0.45" and reproduce.span([0.5, 1.234]) == "0.50 to 1.23"
    # paper 001 §5.5's statement: >= 80% and 1.6x up to ratio 0.8; > 70% and about 1.6x at 1.0; above the baselines
    row = lambda balance, speedup, against_best: (None,) * 3 + (against_best, 0, balance, speedup)
    # verdict: within max(0.02, a quarter of the paper's gain) of its ratio, else which side
    assert [reproduce.verdict(0.965, x) for x in (0.96, 0.9, 0.99, 1.1)] == ["yes", "larger gain", "smaller gain", "no"]
    assert reproduce.verdict(0.6, 0.69) == "yes" and reproduce.verdict(0.6, 0.71) == "smaller gain"
    assert reproduce.verdict(None, 1.0) == "-"
    assert reproduce.unseen_verdict(0.2, row(0.85, 1.7, 0.9)) == "holds"
    assert reproduce.unseen_verdict(0.4, row(0.79, 1.7, 0.9)) == "does not hold"
    assert reproduce.unseen_verdict(1.0, row(0.72, 1.56, 0.95)) == "holds"
    assert reproduce.unseen_verdict(1.0, row(0.72, 1.56, 1.01)) == "does not hold"
    assert reproduce.unseen_verdict(0.0, row(None, 1.7, 0.9)) == "not comparable"
    # AutoShard against two planned baselines and one that planned too few tasks: (max_sum, balance)
    results = {name: {} for name in reproduce.BASELINES}
    results.update({"AutoShard 0": {"t1": (8.0, 0.9), "t2": (10.0, 0.8)},
                    "AutoShard 1": {"t1": (12.0, 0.7), "t2": (10.0, 0.6)}})
    results["random"] = {"t1": (20.0, 0.1), "t2": (20.0, 0.2)}
    results["dim"] = {"t1": (9.0, 0.5), "t2": (11.0, 0.3)}
    results["lookup (float)"] = {"t1": (12.0, 0.6), "t2": (12.0, 0.6)}
    results["size"] = {"t1": (1.0, 0.99)}   # planned one of the 3 tasks: less than half, does not count
    row = reproduce.autoshard_row(results, ["AutoShard 0", "AutoShard 1"], 3)
    assert row[0] == "dim" and row[1] == 10.0 and row[2] == 10.0 and row[3] == 1.0, row  # the hardest to beat
    assert abs(row[5] - 0.75) < 1e-12 and row[6] == 2.0, row        # AutoShard's balance and speedup
    assert row[7] == "lookup (float)" and abs(row[8] - 0.6) < 1e-12, row   # the most balanced that counts
    assert row[9] == 2.0, row                                       # dim's speedup over random
    assert [round(x, 12) for x in row[10]] == [0.9, 1.1], row       # each seed against dim


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
