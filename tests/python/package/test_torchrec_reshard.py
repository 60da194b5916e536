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
