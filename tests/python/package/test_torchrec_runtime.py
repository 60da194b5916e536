"""The TorchRec runtime judge (embshard.torchrec.measure): embshard plans run under real TorchRec's
DistributedModelParallel on 2 CPU ranks (gloo), every plan on every rank, what ran is the plan,
and bad input is refused with one line before any rank starts."""

import json
import random

import pytest

import embshard
import embshard.torchrec
from conftest import torchrec_or_skip

TABLES = [("users", 5000, 16, 3.0), ("items", 3000, 8, 1.0), ("ads", 800, 8, 2.0), ("geo", 200, 4, 1.0)]


def make_task(batch=64, rows_scale=1):
    return embshard.Task.from_tables(
        [embshard.Table(name, rows * rows_scale, dim, pooling_factor=pf) for name, rows, dim, pf in TABLES],
        "cpu:devices=2,mem_gib=1000", batch_size=batch, allow_row_split=False, task_id="runtime-test")


def plan_of(task, placement, row_wise=False):
    """A hand-made plan: table name -> device (whole tables) or "copies" (data-parallel), or
    row-wise over both devices."""
    tables = []
    for t in json.loads(task.to_json())["tables"]:
        rows, dim = t["stats"]["num_rows"], t["dim"]
        if not row_wise and placement[t["name"]] == "copies":
            shards = [{"device": d, "rows": [0, rows], "cols": [0, dim]} for d in (0, 1)]
            tables.append({"table": t["name"], "sharding_type": "data_parallel", "shards": shards})
        elif row_wise:
            half = rows // 2
            shards = [{"device": 0, "rows": [0, half], "cols": [0, dim]},
                      {"device": 1, "rows": [half, rows], "cols": [0, dim]}]
            tables.append({"table": t["name"], "sharding_type": "row_wise", "shards": shards})
        else:
            shards = [{"device": placement[t["name"]], "rows": [0, rows], "cols": [0, dim]}]
            tables.append({"table": t["name"], "sharding_type": "table_wise", "shards": shards})
    return embshard.Plan.from_json(json.dumps({"schema_version": 1, "tables": tables}))


def test_every_plan_runs_on_every_rank_as_planned():
    torchrec_or_skip()
    task = make_task()
    spread = {"users": 0, "items": 1, "ads": 1, "geo": 0}
    plans = {"spread": plan_of(task, spread), "one_rank": plan_of(task, {n: 0 for n, *_ in TABLES}),
             "joint": embshard.plan(task, "joint:torchrec=true", "sim"),
             "copies": plan_of(task, {"users": 0, "items": 1, "ads": "copies", "geo": "copies"})}
    report = embshard.torchrec.measure(task, plans, warmup=1, repeats=3)
    assert list(report.runs) == list(plans)
    assert report.world_size == 2 and report.batch_size == 64 and report.device == "cpu"
    for name, run in report.runs.items():
        assert len(run.ranks) == 2 and len(run.steps_ms) == 3
        assert run.step_min_ms <= run.step_lo_ms <= run.step_ms <= run.step_hi_ms <= run.step_max_ms
        for i, rank in enumerate(run.ranks):
            assert all(rank[p] >= 0 for p in embshard.torchrec_runtime.PHASES), rank
            assert rank["step_ms"] >= rank["lookup_ms"] and rank["forward_ms"] > 0 and rank["backward_ms"] > 0
            # The hooks fired: a rank holding tables timed their lookups; 2 ranks exchange inputs.
            assert rank["lookup_ms"] > 0 or not run.rank_tables[i], (name, i, rank)
            # The lookups' backward is timed from their outputs' gradient: inside the backward.
            assert rank["lookup_bw_ms"] > 0 or not run.rank_tables[i], (name, i, rank)
            # ... after the output all-to-all's backward, which takes time on 2 ranks.
            assert rank["backward_ms"] - rank["lookup_bw_ms"] > 0, (name, i, rank)
            assert rank["input_a2a_ms"] > 0, (name, i, rank)
            # The data-parallel copies' dense update is a step of its own; fused tables have none.
            copies = any(t["sharding_type"] == "data_parallel" for t in json.loads(plans[name].to_json())["tables"])
            assert (rank["update_ms"] > 0) == copies, (name, i, rank)
    # What ran is the plan: each rank held exactly the tables the plan put there.
    assert report.runs["spread"].rank_tables == [["users", "geo"], ["items", "ads"]]  # task order
    assert report.runs["one_rank"].rank_tables == [[n for n, *_ in TABLES], []]
    assert report.runs["copies"].rank_tables == [["users", "ads", "geo"], ["items", "ads", "geo"]]
    joint = json.loads(plans["joint"].to_json())["tables"]
    for rank in range(2):
        want = [t["table"] for t in joint if any(s["device"] == rank for s in t["shards"])]
        assert report.runs["joint"].rank_tables[rank] == want
    assert "spread" in report.table() and json.loads(report.to_json())["world_size"] == 2


def test_bad_input_is_one_line_before_any_rank_starts():
    torchrec_or_skip()
    task = make_task()
    plan = plan_of(task, {n: 0 for n, *_ in TABLES})
    cases = [
        (dict(plans={"a": plan}, batch_size=63), "does not split evenly over 2 ranks"),
        (dict(plans={"rw": plan_of(task, {}, row_wise=True)}), "plan 'rw'"),
        (dict(plans={}), "no plans"),
        (dict(plans={"x": "plan.json"}), "plan 'x' is a str"),
        (dict(plans={"a": plan}, optimizer="adam"), "optimizer 'adam'"),
        (dict(plans={"a": plan}, device="tpu"), "device 'tpu'"),
        (dict(plans={"a": plan}, repeats=0), "repeats"),
    ]
    for kwargs, message in cases:
        plans = kwargs.pop("plans")
        with pytest.raises(embshard.Error) as error:
            embshard.torchrec.measure(task, plans, **kwargs)
        assert message in str(error.value) and "\n" not in str(error.value), (kwargs, str(error.value))
    huge = make_task(rows_scale=10**6)  # 5e9 rows × 16 dims: far more than this machine has
    with pytest.raises(embshard.Error, match="GiB of memory together"):
        embshard.torchrec.measure(huge, {"a": plan_of(huge, {n: 0 for n, *_ in TABLES})})


def test_profile_writes_runtime_samples_of_the_samplers_draws_and_resumes(tmp_path):
    """embshard.torchrec.profile: sample i holds the C++ compute sampler's draw i, measured on
    TorchRec's runtime (a rank's lookups and their backward); a stopped file resumes without
    re-measuring what it holds, and another experiment's file is refused, untouched."""
    torchrec_or_skip()
    path = str(tmp_path / "runtime.jsonl")
    options = dict(seed=3, max_tables=3, max_bytes=1 << 27, dims=(16, 8), warmup=1, repeats=2)
    assert embshard.torchrec.profile(path, 2, **options) == 2
    lines = open(path, encoding="utf-8").read().splitlines()
    header = json.loads(lines[0])
    assert header["backend"] == "torchrec_cpu" and header["kind"] == "compute" and header["seed"] == 3
    assert header["sampler"] == ("torchrec-runtime:optimizer=sgd+neuroshard-compute:dims=16/8,max_bytes=134217728,"
                                 "max_tables=3")
    for i, line in enumerate(lines[1:]):
        sample = json.loads(line)
        drawn = embshard._embshard.draw_compute_sample(0, 3, i, 3, 1 << 27, [16, 8])
        assert sample["index"] == i and [(t["pool_id"], t["dim"]) for t in sample["tables"]] == drawn
        assert sample["fw_ms"] > 0 and sample["bw_ms"] > 0, sample
    assert embshard.torchrec.profile(path, 3, **options) == 3  # one more pair run, one sample kept
    grown = open(path, encoding="utf-8").read().splitlines()
    assert grown[:3] == lines and len(grown) == 4 and json.loads(grown[3])["index"] == 2
    with pytest.raises(embshard.Error, match="seed"):
        embshard.torchrec.profile(path, 4, **{**options, "seed": 4})
    # A run that fails once the file is open appends nothing and releases the file.
    with pytest.raises(embshard.Error, match="timeout_s"):
        embshard.torchrec.profile(path, 4, **options, timeout_s=-1)
    assert open(path, encoding="utf-8").read().splitlines() == grown
    # Resuming at an odd index runs that pair again and appends only the sample it lacks.
    assert embshard.torchrec.profile(path, 4, **options) == 4
    last = open(path, encoding="utf-8").read().splitlines()
    assert last[:4] == grown and len(last) == 5 and json.loads(last[4])["index"] == 3
    drawn = embshard._embshard.draw_compute_sample(0, 3, 3, 3, 1 << 27, [16, 8])
    assert [(t["pool_id"], t["dim"]) for t in json.loads(last[4])["tables"]] == drawn


def test_median_interval_holds_the_median_as_often_as_it_says():
    """The interval of a plan's median step (what tells two measured plans apart): the order
    statistics the binomial gives, and over many skewed samples it holds the true median about as
    often as that says: 1 - 2 P(Binomial(31, 1/2) <= 9) = 0.9706 at 31 repeats, where one order
    statistic wider gives 0.9941 and one narrower 0.9292."""
    interval = embshard.torchrec_runtime.median_interval
    assert interval(list(range(31, 0, -1))) == (10, 22)  # x_(10) and x_(22), whatever the order
    assert interval([3.0, 1.0, 2.0]) == (1.0, 3.0)       # too few for 95%: the whole range
    assert interval([5.0]) == (5.0, 5.0)
    rng = random.Random(7)
    trials = 4000
    held = 0
    for _ in range(trials):
        low, high = interval([rng.lognormvariate(0.0, 0.8) for _ in range(31)])  # median 1
        held += low <= 1.0 <= high
    assert 0.955 <= held / trials <= 0.985, held / trials
    with pytest.raises(embshard.Error, match="no values"):
        interval([])
    # Exact at any count (floats of 2^-n would overflow from about 1,030 repeats): n = 2,000
    # gives the order statistics 956 and 1,045, about 1,000 ± 1.96 · √2000 / 2 = ± 43.8.
    assert interval(range(1, 2001)) == (956, 1045)
