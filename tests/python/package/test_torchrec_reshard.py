"""reshard_delta: the argument DistributedModelParallel.reshard takes, TorchRec's own delta, for a
move TorchRec can express (shards changing ranks), and one line naming the table for one it cannot
(another sharding type or shard geometry, a table added). Not run under DMP here: torchrec 1.9.2's
reshard waits forever on its point-to-point transfers under gloo (docs/what_if.md)."""

import copy

import pytest

import embshard
import embshard.torchrec
from conftest import torchrec_or_skip

TABLES = {"t_a": (40, 8), "t_b": (60, 16), "t_c": (200, 8), "t_d": (50, 16)}


def plan_of(ranks):
    """A ShardingPlan: each table table-wise on a rank, or column-wise over a list of ranks."""
    import torch
    from torchrec.distributed.embeddingbag import EmbeddingBagCollectionSharder
    from torchrec.distributed.sharding_plan import column_wise, construct_module_sharding_plan, table_wise
    from torchrec.distributed.types import ShardingPlan
    from torchrec.modules.embedding_configs import EmbeddingBagConfig
    from torchrec.modules.embedding_modules import EmbeddingBagCollection

    model = EmbeddingBagCollection(device=torch.device("meta"), tables=[
        EmbeddingBagConfig(name=n, num_embeddings=r, embedding_dim=d, feature_names=[f"f_{n}"])
        for n, (r, d) in TABLES.items()])
    per_param = {n: column_wise(ranks=r) if isinstance(r, list) else table_wise(rank=r) for n, r in ranks.items()}
    return ShardingPlan({"": construct_module_sharding_plan(
        model, per_param_sharding=per_param, local_size=2, world_size=2, device_type="cpu",
        sharder=EmbeddingBagCollectionSharder())})


def test_a_move_of_shards_between_ranks_is_torchrecs_own_delta():
    torchrec_or_skip()
    old = plan_of({"t_a": 0, "t_b": 1, "t_c": 0, "t_d": [0, 1]})
    new = plan_of({"t_a": 1, "t_b": 1, "t_c": 0, "t_d": [1, 0]})
    delta = embshard.torchrec.reshard_delta(old, new)
    mib, changed = delta[""]
    assert sorted(changed) == ["t_a", "t_d"]
    assert changed["t_a"].ranks == [1] and changed["t_d"].ranks == [1, 0]
    assert mib == pytest.approx((40 * 8 + 50 * 16) * 4 / 2**20)  # every shard of a changed table, fp32
    assert embshard.torchrec.reshard_delta(old, old)[""][1] == {}


def test_a_change_reshard_cannot_express_names_the_table():
    torchrec_or_skip()
    old = plan_of({"t_a": 0, "t_b": 1, "t_c": 0, "t_d": [0, 1]})
    with pytest.raises(embshard.Error, match="table 't_c' changes its sharding type .table_wise to column_wise."):
        embshard.torchrec.reshard_delta(old, plan_of({"t_a": 0, "t_b": 1, "t_c": [0, 1], "t_d": [0, 1]}))
    uneven = copy.deepcopy(old)
    shards = uneven.plan[""]["t_d"].sharding_spec.shards
    shards[0].shard_sizes[1], shards[1].shard_offsets[1], shards[1].shard_sizes[1] = 4, 4, 12
    with pytest.raises(embshard.Error, match="table 't_d' changes its shards' offsets or sizes"):
        embshard.torchrec.reshard_delta(old, uneven)
    fewer = copy.deepcopy(old)
    del fewer.plan[""]["t_b"]
    with pytest.raises(embshard.Error, match="table 't_b' of module '' is in one plan only"):
        embshard.torchrec.reshard_delta(old, fewer)


def test_a_replan_for_reshard_is_one_torchrec_takes():
    """What users do: plan, the statistics drift, re-plan with reshard=True, export both plans and
    hand TorchRec the delta; the tables it moves are those whose shards changed device."""
    torchrec_or_skip()
    import json

    task = embshard.Task.generate("neuroshard:preset=v100,devices=8,max_dim=128", seed=9961)
    sharder = "joint:groups=none,torchrec=true"  # plans TorchRec runs (row-wise in rank order)
    old = embshard.plan(task, sharder, seed=1)
    doc = json.loads(task.to_json())
    for i, t in enumerate(doc["tables"]):
        s = t["stats"]
        if i % 3 == 0 and s["num_indices"] > 0:  # every third table: 3× the lookups
            s["num_indices"] *= 3
            s["pooling_factor"] = s["num_indices"] / s["batch_size"]
    drifted = embshard.Task.from_json(json.dumps(doc))
    r = embshard.replan(drifted, old, max_move=0.1, sharder=sharder, seed=1, reshard=True)
    assert r.chosen["step_ms"] <= r.kept["step_ms"] * (1 + 1e-12)

    def sharding_plan(plan):
        document = json.loads(embshard._embshard.torchrec_plan_json(drifted._native, plan._native, "", "cuda"))
        return embshard.torchrec.sharding_plan_from_dict(document)

    mib, changed = embshard.torchrec.reshard_delta(sharding_plan(old), sharding_plan(r.plan))[""]
    devices = {p["table"]: sorted(s["device"] for s in p["shards"]) for p in json.loads(old.to_json())["tables"]}
    moved = {p["table"] for p in json.loads(r.plan.to_json())["tables"]
             if sorted(s["device"] for s in p["shards"]) != devices[p["table"]]}
    assert set(changed) >= moved and mib >= 0
    if r.chosen["moved_bytes"] > 0:
        assert changed
