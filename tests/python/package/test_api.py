"""The embshard package without TorchRec: what a user does, end to end, through the bindings."""

import json
import threading

import numpy as np
import pytest

import embshard
from embshard import Error, Plan, Table, Task

from conftest import DATA


def shape_only_task(**kwargs):
    return Task.from_tables(
        [Table("user", rows=4_000_000, dim=64, pooling_factor=1.0),
         Table("item", rows=300_000, dim=32, pooling_factor=12.5, coverage=0.6, dtype="fp16"),
         Table("query", rows=90_000, dim=128, pooling_factor=4.0, optimizer="adam"),
         Table("ads", rows=2_000_000, dim=16, pooling_factor=0.3)],
        topology="v100:gpus_per_node=4,hbm_gib=2", batch_size=65536, **kwargs)


def test_shape_only_tables_get_derived_statistics_and_plans_say_so():
    task = shape_only_task()
    tables = {t["name"]: t for t in task.tables}
    assert tables["user"]["stats_origin"].startswith("derived:zipf_alpha=")
    assert len(tables["user"]["stats"]["bins"]) == 17
    assert tables["item"]["stats"]["coverage"] == 0.6
    plan = embshard.plan(task, "greedy")
    assert plan.ok, plan.reason
    assert plan.provenance["derived_stats_tables"] == ["user", "item", "query", "ads"]
    # A measured table is not listed.
    measured = embshard.stats_from_csr([0, 1, 1, 5], [0, 2, 2, 4], num_rows=4_000_000)
    task2 = Task.from_tables([Table("user", rows=4_000_000, dim=64, stats=measured),
                              Table("item", rows=300_000, dim=32, pooling_factor=2.0)],
                             topology="v100:gpus_per_node=2", batch_size=3)
    assert embshard.plan(task2, "greedy").provenance["derived_stats_tables"] == ["item"]


def test_the_derived_model_is_exposed_and_changes_the_statistics():
    assert set(embshard.DERIVED_STATS_DEFAULTS) == {"zipf_alpha", "active_ratio", "zipf_offset"}
    flat = shape_only_task(derived_stats={"zipf_alpha": 0.2}).tables[0]["stats"]["num_distinct"]
    skew = shape_only_task(derived_stats={"zipf_alpha": 1.6}).tables[0]["stats"]["num_distinct"]
    assert flat > skew


def test_csr_statistics_match_the_definitions():
    # Bags [3, 3, 7], [], [7, 9]: 5 lookups, 3 distinct, coverage 2/3, pooling 5/3.
    stats = embshard.stats_from_csr(np.array([3, 3, 7, 7, 9], np.int64), np.array([0, 3, 3, 5]), 1000)
    assert stats["num_indices"] == 5 and stats["num_distinct"] == 3
    assert stats["coverage"] == pytest.approx(2 / 3) and stats["pooling_factor"] == pytest.approx(5 / 3)
    assert stats["num_rows"] == 1000
    # Reuse bins over distinct rows: row 9 once (bin 0); rows 3 and 7 twice (bin 1).
    assert stats["bins"][0] == pytest.approx(1 / 3) and stats["bins"][1] == pytest.approx(2 / 3)
    same = embshard.stats_from_csr(np.array([3, 3, 7, 7, 9], np.int32), np.array([0, 3, 3, 5], np.int32), 1000)
    assert same == stats
    with pytest.raises(Error, match="index 1000"):
        embshard.stats_from_csr([1000], [0, 1], 1000)
    with pytest.raises(Error, match="offsets end at 3 lookups but indices holds 2"):
        embshard.stats_from_csr([1, 2], [0, 3], 10)


def test_statistics_from_the_dlrm_file_reader():
    fixtures = sorted((DATA).glob("**/*.pt"))
    if not fixtures:
        pytest.skip("no .pt fixture in tests/data")
    tables = embshard.stats_from_dlrm_file(str(fixtures[0]))
    assert tables and all(len(t["bins"]) == 17 for t in tables)


@pytest.mark.parametrize("sharder", embshard.default_sharders())
def test_a_saved_plan_evaluates_exactly_as_in_memory(sharder, tmp_path):
    task = Task.generate("neuroshard:devices=4,max_dim=64", seed=101)
    plan = embshard.plan(task, sharder)
    if not plan.ok:
        pytest.skip(f"{sharder}: {plan.reason}")
    path = tmp_path / "plan.json"
    plan.save(str(path))
    back = embshard.Plan.load(str(path))
    embshard.check(task, back)
    assert back.to_json() == plan.to_json()
    judged = [json.loads(embshard.evaluate(task, p).json) for p in (plan, back)]
    for verdict in judged:
        verdict.pop("wall_ms")  # how long the judging took, the only field allowed to differ
    assert judged[0] == judged[1]
    with pytest.raises(FileExistsError):
        plan.save(str(path))  # never overwrites a user's file unless asked
    task.save(path, overwrite=True)
    assert Task.load(str(path)).to_json() == task.to_json()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["plan.json"]  # no temporary left


def test_best_is_the_fastest_default_plan():
    task = Task.generate("neuroshard:devices=4,max_dim=64", seed=102)
    best = embshard.plan(task)
    rows = embshard.compare(task)
    ok = [r for r in rows if r.status == "ok"]
    assert {r.sharder for r in rows} == {embshard._embshard.canonical_sharder(s) for s in embshard.default_sharders()}
    assert embshard.evaluate(task, best).step_ms == pytest.approx(min(r.step_ms for r in ok))


def test_evaluate_gives_every_device():
    task = Task.generate("neuroshard:devices=4,max_dim=64", seed=103)
    breakdown = embshard.evaluate(task, embshard.plan(task, "greedy"))
    assert len(breakdown.devices) == 4
    assert breakdown.step_ms >= max(d["sum_ms"] for d in breakdown.devices) - 1e-9
    assert "step_ms" in str(breakdown)
    # The input all-to-all: paid when exposed, gone when omitted, the rest of the step unchanged.
    plan = embshard.plan(task, "greedy")
    exposed, omitted = (embshard.evaluate(task, plan, input_comm=m) for m in ("exposed", "omit"))
    most = max(d["in_comm_ms"] for d in exposed.devices)
    assert most > 0 and all(d["in_comm_ms"] == 0 for d in omitted.devices)
    assert exposed.step_ms == pytest.approx(omitted.step_ms + most)
    with pytest.raises(embshard.Error, match="exposed"):
        embshard.evaluate(task, plan, input_comm="sometimes")
    # The judge is a spec: its own input_comm, or the keyword set in it; a bad judge is named.
    in_spec = embshard.evaluate(task, plan, "sim:input_comm=omit")
    assert in_spec.step_ms == omitted.step_ms and "input_comm=omit" in json.loads(in_spec.json)["backend"]
    assert embshard.evaluate(task, plan, "sim:input_comm=omit", input_comm="exposed").step_ms == exposed.step_ms
    with pytest.raises(embshard.Error, match="unknown judge 'tpu'"):
        embshard.evaluate(task, plan, "tpu")


def test_registries_list_every_family():
    names = {e["name"] for e in embshard.list("sharder")}
    assert {"greedy", "torchrec", "neuroshard", "recshard"} <= names
    formulas = next(p for e in embshard.list("sharder") if e["name"] == "torchrec"
                    for p in e["params"] if p["name"] == "formulas")
    assert formulas["default"] == "1.9.2" and formulas["choices"] == ["1.9.2", "1.4.0a0"]
    assert {e["name"] for e in embshard.list("cost")} >= {"sim", "default"}
    assert "sim" in {e["name"] for e in embshard.list("backend")}
    assert {e["name"] for e in embshard.list("topology")} >= {"v100", "a100", "cpu"}
    with pytest.raises(Error, match="unknown family 'sharders'"):
        embshard.list("sharders")


def test_bad_input_raises_the_librarys_one_line_message():
    with pytest.raises(Error, match=r"embshard.Task: tables\[0\].dim: .*got -8"):
        Task.from_tables([Table("a", rows=10, dim=-8, pooling_factor=1.0)], "v100", 512)
    with pytest.raises(Error, match="table 'a'.*pooling_factor"):
        Task.from_tables([Table("a", rows=10, dim=8, pooling_factor=-1.0)], "v100", 512)
    with pytest.raises(Error, match="unknown topology preset"):
        Task.from_tables([Table("a", rows=10, dim=8, pooling_factor=1.0)], "v1000", 512)
    with pytest.raises(Error, match=r"tables\[0\].optimizer: unknown optimizer 'adamw'"):
        Task.from_tables([Table("a", rows=10, dim=8, pooling_factor=1.0, optimizer="adamw")], "v100", 512)
    with pytest.raises(Error, match="give pooling_factor"):
        Task.from_tables([Table("a", rows=10, dim=8)], "v100", 512)
    task = Task.generate("neuroshard:devices=2,max_dim=16", seed=1)
    with pytest.raises(Error, match="unknown sharder 'gredy'"):
        embshard.plan(task, "gredy")
    with pytest.raises(Error, match="p.json"):
        embshard.Plan.from_json("{", where="p.json")
    other = Task.generate("neuroshard:devices=2,max_dim=16", seed=2)
    with pytest.raises(Error, match="plan: table"):
        embshard.check(other, embshard.plan(task, "greedy"))
    message = ""
    try:
        embshard.plan(task, "greedy:balance=nope")
    except Error as e:
        message = str(e)
    assert message and "\n" not in message


def test_plans_from_concurrent_threads_are_identical():
    # plan() releases the GIL, so these run side by side in the library.
    task = Task.generate("neuroshard:devices=4,max_dim=64", seed=104)
    results = [None] * 4

    def work(i):
        results[i] = embshard.plan(task, "neuroshard", seed=7).tables

    threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert results[0] and all(r == results[0] for r in results)


def test_a_long_plan_lets_python_threads_run():
    import time

    task = Task.generate("autoshard:devices=16,max_dim=32", seed=105)  # 160 tables: ~0.3 s
    count = [0]
    stop = threading.Event()

    def spin():
        while not stop.is_set():
            count[0] += 1

    spinner = threading.Thread(target=spin)
    spinner.start()
    try:
        time.sleep(0.05)
        before, start = count[0], time.perf_counter()
        time.sleep(0.1)  # the spinner's rate with the GIL free
        rate = (count[0] - before) / (time.perf_counter() - start)
        before, start = count[0], time.perf_counter()
        embshard.plan(task, "neuroshard")
        elapsed = time.perf_counter() - start
        during = count[0] - before
    finally:
        stop.set()
        spinner.join()
    assert elapsed > 0.05, "the call was too short to tell"
    # Holding the GIL would leave the spinner at most one switch interval (5 ms) of counting.
    assert during > 0.3 * rate * elapsed, (during, rate, elapsed)


def test_failed_plans_have_no_file_form_and_candidates_must_be_given():
    task = Task.from_tables([Table("huge", rows=2_000_000_000, dim=128, pooling_factor=1.0)],
                            topology="v100:gpus_per_node=2,hbm_gib=1", batch_size=512,
                            allow_column_split=False, allow_row_split=False)
    plan = embshard.plan(task, "greedy")
    assert not plan.ok and "huge" in plan.reason
    with pytest.raises(Error, match="there is no plan to write"):
        plan.to_json()
    with pytest.raises(Error, match="candidates is empty"):
        embshard.plan(task, candidates=[])
    failed = embshard.plan(task, candidates=["greedy", "torchrec"])
    assert failed.status == "infeasible" and "greedy" in failed.reason and "torchrec" in failed.reason
    with pytest.raises(Error, match="num_rows must lie in"):
        embshard.stats_from_csr([1], [0, 1], -5)
    with pytest.raises(Error, match=r"stats.coverage"):
        Task.from_tables([Table("a", rows=10, dim=8, pooling_factor=1.0, coverage=-0.5)], "v100", 512)


def test_a_tasks_own_topology_object_makes_a_task_on_the_same_devices():
    task = shape_only_task()
    again = Task.from_tables([Table("x", rows=1000, dim=8, pooling_factor=1.0)], task.topology, batch_size=64)
    mine = {k: v for k, v in task.topology.items() if k != "name"}
    assert {k: v for k, v in again.topology.items() if k != "name"} == mine


def test_numbers_are_checked_where_they_are_given():
    # numpy integers and floats are numbers like any other
    task = Task.from_tables([Table("np", rows=np.int64(5000), dim=np.int32(8), pooling_factor=np.float32(2.0),
                                   coverage=np.float64(0.5), min_partition=np.int64(4))],
                            "v100:gpus_per_node=2", batch_size=np.int64(256))
    assert task.tables[0]["stats"]["num_rows"] == 5000 and task.batch_size == 256
    bad = [(dict(pooling_factor=float("nan")), "embshard.Table 't': pooling_factor must be finite"),
           (dict(pooling_factor=float("inf")), "embshard.Table 't': pooling_factor must be finite"),
           (dict(pooling_factor=1.0, coverage=float("nan")), "embshard.Table 't': coverage must be finite"),
           (dict(pooling_factor="2"), "embshard.Table 't': pooling_factor must be a number"),
           (dict(rows=1000.5, pooling_factor=1.0), "embshard.Table 't': rows must be an integer"),
           (dict(rows=True, pooling_factor=1.0), "embshard.Table 't': rows must be an integer"),
           (dict(dim=8.0, pooling_factor=1.0), "embshard.Table 't': dim must be an integer")]
    for fields, message in bad:
        kwargs = {"rows": 1000, "dim": 8, **fields}
        with pytest.raises(Error) as error:
            Task.from_tables([Table("t", **kwargs)], "v100", batch_size=64)
        assert str(error.value).startswith(message + ", got "), str(error.value)
    with pytest.raises(Error, match="embshard.Task: batch_size must be an integer"):
        Task.from_tables([Table("t", 1000, 8, pooling_factor=1.0)], "v100", batch_size=64.0)


def test_sequence_tables_are_costed_an_output_row_per_lookup():
    # Table(pooled=False): TorchRec's EmbeddingCollection. The same tables as sequence tables send
    # pooling_factor rows per sample where pooled ones send one: a slower step, a higher bound.
    def task(pooled):
        return Task.from_tables([Table(f"t{i}", rows=100_000, dim=64, pooling_factor=8.0, pooled=pooled)
                                 for i in range(8)], "v100:gpus_per_node=4", batch_size=4096)
    pooled, sequence = task(True), task(False)
    assert "pooled" not in pooled.tables[0] and sequence.tables[0]["pooled"] is False
    plan = embshard.plan(pooled, "greedy")
    assert embshard.evaluate(sequence, plan).step_ms > embshard.evaluate(pooled, plan).step_ms
    joint = embshard.plan(sequence, "joint")
    assert joint.ok and embshard.evaluate(sequence, joint).step_ms <= embshard.evaluate(sequence, plan).step_ms
    assert Task.from_json(sequence.to_json()).tables[0]["pooled"] is False
    with pytest.raises(Error, match="embshard.Table 't': pooled must be True or False, got 'no'"):
        Task.from_tables([Table("t", 1000, 8, pooling_factor=1.0, pooled="no")], "v100", batch_size=64)


def test_plan_load_fails_as_task_load_does(tmp_path):
    missing = tmp_path / "missing.json"
    for load in (embshard.Plan.load, Task.load):
        with pytest.raises(Error) as error:
            load(str(missing))
        assert "missing.json" in str(error.value)


def test_csr_statistics_refuse_what_they_would_get_wrong():
    with pytest.raises(Error, match="indices must be integers, got an array of float64"):
        embshard.stats_from_csr(np.array([0.5, 1.7]), np.array([0, 1, 2]), 10)
    with pytest.raises(Error, match="offsets must be integers"):
        embshard.stats_from_csr(np.array([0, 1]), np.array([0.0, 1.0, 2.0]), 10)
    with pytest.raises(Error, match="too far from the first"):
        embshard.stats_from_csr(np.array([0, 1]), np.array([-2**63, 2**63 - 1], dtype=np.int64), 10)
    with pytest.raises(Error, match="offsets decrease at entry 2"):
        embshard.stats_from_csr(np.array([0, 1]), np.array([0, 2, 1]), 10)
    # a base other than 0 is fine: only differences matter
    shifted = embshard.stats_from_csr(np.array([1, 2, 2]), np.array([2**40, 2**40 + 1, 2**40 + 3]), 10)
    assert shifted == embshard.stats_from_csr(np.array([1, 2, 2]), np.array([0, 1, 3]), 10)


def test_the_librarys_warnings_are_python_warnings(tmp_path):
    # A cpu judge measured on another CPU warns (once per process); the warning reaches Python's
    # `warnings` (where filters and logging.captureWarnings see it), not stderr, and an "error"
    # filter raises it.
    import os
    import subprocess
    import sys

    code = """
import sys, warnings, embshard
task = embshard.Task.generate('neuroshard:devices=2,preset=cpu,max_dim=16', seed=1)
if sys.argv[1] == 'record':
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter('always')
        embshard.plan(task, 'joint', 'sim')
    print([(w.category.__name__, str(w.message)[:60]) for w in caught])
else:
    warnings.simplefilter('error')
    try:
        embshard.evaluate(task, embshard.plan(task, 'greedy'), 'sim')
    except RuntimeWarning as w:
        print('raised', str(w)[:30])
"""
    env = dict(os.environ, EMBSHARD_FAKE_FINGERPRINT="host:cpu_model=Test CPU", EMBSHARD_CALIBRATIONS=str(tmp_path))
    run = [subprocess.run([sys.executable, "-c", code, mode], env=env, capture_output=True, text=True, timeout=120)
           for mode in ("record", "error")]
    for r in run:
        assert r.returncode == 0 and r.stderr == "", r.stderr
    assert "('RuntimeWarning', \"sim's cpu coefficients were measured on" in run[0].stdout, run[0].stdout
    assert "raised sim's cpu coefficients" in run[1].stdout, run[1].stdout


def test_size_finds_the_fewest_devices_and_its_answer_plans_as_promised():
    task = shape_only_task()
    curve = embshard.size(task, devices=(1, 8), sharder="joint")
    assert [p["devices"] for p in curve.points] == [1, 2, 3, 4, 8]
    steps = {p["devices"]: p["step_ms"] for p in curve.points if p["status"] == "ok"}
    assert len(steps) >= 2, curve.verdict
    target = sorted(steps.values())[1]  # the second-fastest count meets it
    answer = embshard.size(task, target, devices=(1, 8), sharder="joint")
    assert answer.fewest == min(n for n, s in steps.items() if s <= target)
    assert f"{answer.fewest} devices" in answer.verdict
    none = embshard.size(task, 1e-6, devices=(1, 4))
    assert none.fewest == 0 and "meets" in none.verdict
    with pytest.raises(Error, match="devices must be"):
        embshard.size(task, devices=(1,))
    with pytest.raises(Error, match="target_step_ms must be finite"):
        embshard.size(task, float("nan"))
    with pytest.raises(Error, match="target_step_ms must be above 0"):
        embshard.size(task, 0.0)
    with pytest.raises(Error, match="devices must be"):
        embshard.size(task, devices=8)
    with pytest.raises(Error, match="size: task must be a Task"):
        embshard.size("task.json")


def test_size_grows_a_mix_by_hosts_of_its_last_kind():
    doc = json.loads(shape_only_task().to_json())
    doc["topology"] = {"hosts": ["v100:nodes=2,gpus_per_node=2", "a100:gpus_per_node=2"]}
    mix = Task.from_json(json.dumps(doc), where="mix")
    curve = embshard.size(mix, devices=(1, 10), sharder="greedy")
    assert [p["devices"] for p in curve.points] == [4, 6, 8, 10]  # the V100 hosts, then A100 hosts added
    assert all(p["status"] == "ok" for p in curve.points), curve.verdict
    one_host = Task.from_json(json.dumps(dict(doc, topology={"preset": "v100:gpus_per_node=2"})), where="one")
    assert [p["devices"] for p in embshard.size(one_host, devices=(1, 4)).points] == [1, 2, 4]


def test_fit_names_the_conflict_and_every_change_it_offers_plans():
    task = Task.from_tables(
        [Table("user", rows=40_000_000, dim=64, pooling_factor=1.0),
         Table("item", rows=3_000_000, dim=32, pooling_factor=12.5)],
        topology="v100:gpus_per_node=4,hbm_gib=1", batch_size=65536)
    assert not embshard.plan(task, "joint").ok
    advice = embshard.fit(task)
    assert not advice.fits
    assert any("tables need" in c for c in advice.conflicts), advice.conflicts
    assert {c["kind"] for c in advice.changes} >= {"memory", "devices"}
    for change in advice.changes:
        assert isinstance(change["task"], Task)
        plan = embshard.plan(change["task"], "joint")
        assert plan.ok, (change["description"], plan.reason)
        assert embshard.evaluate(change["task"], plan).step_ms == pytest.approx(change["step_ms"])
    fits = embshard.fit(shape_only_task())
    assert fits.fits and not fits.changes


def test_replan_keeps_its_budget_and_its_plan_evaluates_as_reported():
    task = Task.generate("neuroshard:devices=4,max_dim=64", seed=5)
    old = embshard.plan(task, "joint:groups=none")
    grown = Task.from_json(task.to_json().replace("gpus_per_node=4", "gpus_per_node=8"), where="grown")
    assert (task.num_devices, grown.num_devices) == (4, 8)
    r = embshard.replan(grown, old, max_move=0.1)
    assert r.chosen["moved_share"] <= 0.1 + 1e-12
    assert embshard.evaluate(grown, r.plan).step_ms == pytest.approx(r.chosen["step_ms"])
    assert r.chosen["step_ms"] <= r.kept["step_ms"] * (1 + 1e-12)
    assert len(r.sent_bytes) == grown.num_devices and sum(r.received_bytes) == pytest.approx(r.chosen["moved_bytes"])
    assert r.plan.ok and "replan(" in r.plan.provenance["sharder"]
    with pytest.raises(Error, match="max_move must be"):
        embshard.replan(grown, old, max_move=-1)
    with pytest.raises(Error, match="neither a share"):
        embshard.replan(grown, old, max_move=1.5)
    with pytest.raises(Error, match="old_plan must be a Plan, got str"):
        embshard.replan(grown, "p.json")
    with pytest.raises(Error, match="plan: sharder must be a str, got NoneType"):
        embshard.plan(grown, None)


def test_a_2d_plan_is_replanned_in_its_layout_and_every_replica_moves_alike():
    task = Task.generate("neuroshard:devices=16,max_dim=64,preset=h100,mem_gib=16", seed=6)
    old = embshard.plan(task, "joint:groups=8,work=150000")
    assert old.sharding_groups == {"size": 8, "ranks": "strided", "world": 16}
    grown = Task.from_json(task.to_json().replace("nodes=2", "nodes=3"), where="grown")
    assert grown.num_devices == 24
    r = embshard.replan(grown, old, max_move=0.5, sharder="joint:groups=none,work=150000", layout="kept")
    # The 2 replicas stay; each group grows to 12 ranks, the old ranks keeping their devices.
    assert r.plan.sharding_groups == {"size": 12, "ranks": "strided", "world": 24}
    flat = embshard.replan(grown, old, max_move=0.5, sharder="joint:groups=none,work=150000", layout="1d")
    assert flat.plan.sharding_groups is None
    best = embshard.replan(grown, old, max_move=0.5, sharder="joint:groups=none,work=150000")
    assert best.chosen["step_ms"] == min(r.chosen["step_ms"], flat.chosen["step_ms"])
    for each in (r, flat, best):
        assert each.chosen["moved_share"] <= 0.5 + 1e-12
        assert sum(each.received_bytes) == pytest.approx(each.chosen["moved_bytes"])
        assert embshard.evaluate(grown, each.plan).step_ms == pytest.approx(each.chosen["step_ms"])
        read = Plan.from_json(each.plan.to_json())
        assert embshard.evaluate(grown, read).step_ms == pytest.approx(each.chosen["step_ms"])
    unlimited = embshard.replan(grown, old, sharder="joint:groups=none,work=150000", layout="1d")  # max_move None
    assert embshard.evaluate(grown, unlimited.plan).step_ms == pytest.approx(unlimited.chosen["step_ms"])
    with pytest.raises(Error, match="layout: expected best, kept or 1d, got 'flat'"):
        embshard.replan(grown, old, layout="flat")


def test_placement_groups_are_kept_or_named():
    task = shape_only_task(colocate=[["user", "query"]], separate=[["item", "ads"]])
    plan = embshard.plan(task, "joint")
    assert plan.ok, plan.reason
    embshard.check(task, plan)
    devices = {t["table"]: {s["device"] for s in t["shards"]} for t in plan.tables}
    assert devices["user"] == devices["query"] and len(devices["user"]) == 1
    assert not devices["item"] & devices["ads"]
    with pytest.raises(Error, match="names table 'nope', which the task does not have"):
        shape_only_task(colocate=[["user", "nope"]])
    with pytest.raises(Error, match="must be a list of lists"):
        shape_only_task(separate=["item", "ads"])
