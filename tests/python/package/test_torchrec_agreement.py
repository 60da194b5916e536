"""The `torchrec` sharder against real TorchRec 1.9.2's planner, plan for plan, on fresh
NeuroShard tasks: with the default (1.9.2) formulas both choose the same sharding type and ranks
for every table. The full comparison under both formula sets is bench/torchrec_agreement.py."""

import pytest

import embshard


def layout(plan):
    return {t["table"]: (t["sharding_type"], [s["device"] for s in t["shards"]]) for t in plan.tables}


@pytest.mark.parametrize("protocol", ["neuroshard:devices=4,max_dim=128", "neuroshard:devices=8,max_dim=64"])
def test_torchrec_sharder_plans_as_real_torchrec_does(torchrec, protocol):
    from embshard.torchrec import plan_with_torchrec

    compared = identical = 0
    for index in range(6):
        task = embshard.Task.generate(protocol, seed=4242, index=index)
        ours = embshard.plan(task, "torchrec:bandwidths=torchrec")
        try:
            real = plan_with_torchrec(task)
        except embshard.Error as e:
            assert not ours.ok, f"TorchRec found no plan ({e}) but ours did"
            continue
        if not ours.ok:
            continue  # the heuristical reservation differs by rounding at the edge: counted below
        compared += 1
        a, b = layout(ours), layout(real)
        assert {k: v[0] for k, v in a.items()} == {k: v[0] for k, v in b.items()}, index
        identical += a == b
    assert compared >= 2, "too few tasks planned by both to compare"
    assert identical >= compared - 1, (identical, compared)


def test_real_torchrec_plans_with_its_dynamic_programming_proposer_too(torchrec):
    """The scale benchmark (bench/scale_torchrec.py) runs TorchRec's DynamicProgrammingProposer,
    what its users turn to when the default proposers take too long: its plans are valid plans of
    the task, and an unknown proposer is an error naming it."""
    from embshard.torchrec import plan_with_torchrec

    task = embshard.Task.generate("neuroshard:devices=4,max_dim=32", seed=4243, index=0)
    plan = plan_with_torchrec(task, proposer="dynamic_programming")
    embshard.check(task, plan)  # raises naming the problem if the plan is not valid
    assert embshard.evaluate(task, plan).step_ms > 0
    with pytest.raises(embshard.Error, match="proposer 'fastest' is not one of default, dynamic_programming"):
        plan_with_torchrec(task, proposer="fastest")


def test_sequence_tables_are_planned_as_real_torchrec_plans_an_embedding_collection(torchrec):
    """Every table a sequence table (TorchRec's EmbeddingCollection, O = I): the port chooses the
    sharding type real TorchRec's planner chooses for every table, none of them table_row_wise
    (the EC sharder has none); a task mixing both kinds is refused by name."""
    import json

    from embshard.torchrec import plan_with_torchrec

    compared = identical = 0
    for index in range(4):
        doc = json.loads(embshard.Task.generate("neuroshard:devices=4,max_dim=64", seed=4244, index=index).to_json())
        for t in doc["tables"]:  # an EmbeddingCollection's tables share one dim
            t["pooled"], t["dim"] = False, 32
        doc["topology"] = {"preset": "v100:gpus_per_node=4,hbm_gib=32"}  # room for their outputs' buffers
        task = embshard.Task.from_json(json.dumps(doc))
        ours = embshard.plan(task, "torchrec:bandwidths=torchrec")
        try:
            real = plan_with_torchrec(task)
        except embshard.Error:
            continue
        if not ours.ok:
            continue
        compared += 1
        a, b = layout(ours), layout(real)
        assert {k: v[0] for k, v in a.items()} == {k: v[0] for k, v in b.items()}, index
        assert "table_row_wise" not in {v[0] for v in a.values()}
        identical += a == b
    assert compared >= 3, "too few tasks planned by both to compare"
    assert identical >= compared - 1, (identical, compared)
    doc["tables"][0]["dim"] = 64
    with pytest.raises(embshard.Error, match="needs one embedding dim for every table"):
        plan_with_torchrec(embshard.Task.from_json(json.dumps(doc)))
    doc["tables"][0]["pooled"], doc["tables"][0]["dim"] = True, 32
    with pytest.raises(embshard.Error, match="mixes pooled and sequence tables"):
        plan_with_torchrec(embshard.Task.from_json(json.dumps(doc)))
