"""Loads the exporter's fixture with embshard.torchrec.load_sharding_plan into a real TorchRec
ShardingPlan, and checks its shards are the ones TorchRec's own helpers lay out. The fixture
tests/data/torchrec/plan_tw_cw_rw.json is kept current by the gtest
TorchrecExport.FixtureForThePythonLoaderIsCurrent.
"""

from conftest import DATA

MODULE = "sparse_arch.embedding_bag_collection"


def check(plan):
    from torchrec.distributed.types import CacheAlgorithm, ParameterSharding, ShardingPlan

    assert isinstance(plan, ShardingPlan), type(plan)
    assert list(plan.plan) == [MODULE], list(plan.plan)
    tables = plan.plan[MODULE]
    assert list(tables) == ["tw", "cw", "rw", "twrw"], list(tables)
    for table in tables.values():
        assert isinstance(table, ParameterSharding), type(table)

    def shards(name):
        return [(list(s.shard_offsets), list(s.shard_sizes), str(s.placement))
                for s in tables[name].sharding_spec.shards]

    tw = tables["tw"]
    assert tw.sharding_type == "table_wise" and tw.ranks == [5], tw
    assert tw.compute_kernel == "fused_uvm_caching", tw.compute_kernel
    assert shards("tw") == [([0, 0], [1000, 64], "rank:5/cuda:1")], shards("tw")
    assert tw.cache_params.algorithm == CacheAlgorithm.LRU, tw.cache_params
    assert abs(tw.cache_params.load_factor - 0.2) < 1e-12, tw.cache_params

    cw = tables["cw"]
    assert (cw.sharding_type, cw.compute_kernel, cw.ranks) == ("column_wise", "fused", [6, 3])
    assert shards("cw") == [([0, 0], [500, 32], "rank:6/cuda:0"),
                            ([0, 32], [500, 32], "rank:3/cuda:1")], shards("cw")
    assert cw.cache_params is None

    rw = tables["rw"]
    assert (rw.sharding_type, rw.compute_kernel, rw.ranks) == ("row_wise", "fused", list(range(8)))
    want = [([126 * r, 0], [126 if r < 7 else 119, 32], f"rank:{r}/cuda:{r % 2}") for r in range(8)]
    assert shards("rw") == want, shards("rw")

    twrw = tables["twrw"]
    assert (twrw.sharding_type, twrw.ranks) == ("table_row_wise", [2, 3])
    assert shards("twrw") == [([0, 0], [400, 16], "rank:2/cuda:0"),
                              ([400, 0], [400, 16], "rank:3/cuda:1")], shards("twrw")


def torchrec_reference():
    """TorchRec's own plan for the fixture's tables (sharding_plan helpers, world 8, 2 per host)."""
    import torch
    from torchrec.distributed.sharding_plan import (column_wise, construct_module_sharding_plan,
                                                    row_wise, table_row_wise, table_wise)
    from torchrec.modules.embedding_configs import EmbeddingBagConfig
    from torchrec.modules.embedding_modules import EmbeddingBagCollection

    shapes = {"tw": (1000, 64), "cw": (500, 64), "rw": (1001, 32), "twrw": (800, 16)}
    ebc = EmbeddingBagCollection(device=torch.device("meta"), tables=[
        EmbeddingBagConfig(name=name, num_embeddings=rows, embedding_dim=dim,
                           feature_names=[f"f_{name}"])
        for name, (rows, dim) in shapes.items()])
    return construct_module_sharding_plan(ebc, {
        "tw": table_wise(rank=5),
        "cw": column_wise(ranks=[6, 3]),
        "rw": row_wise(),
        "twrw": table_row_wise(host_index=1),
    }, local_size=2, world_size=8, device_type="cuda")


def layout(sharding):
    return [(list(s.shard_offsets), list(s.shard_sizes), str(s.placement))
            for s in sharding.sharding_spec.shards]


def check_matches_torchrec(plan):
    """Our shards are exactly the ones TorchRec's own helpers lay out for the same choices."""
    ours = plan.plan[MODULE]
    for name, want in torchrec_reference().items():
        got = ours[name]
        for field in ("sharding_type", "ranks"):  # kernels: check() (helpers default to dense)
            assert getattr(got, field) == getattr(want, field), (name, field)
        assert layout(got) == layout(want), (name, layout(got), layout(want))


def test_fixture_loads_as_torchrecs_own_layout(torchrec):
    from embshard.torchrec import load_sharding_plan

    plan = load_sharding_plan(str(DATA / "torchrec" / "plan_tw_cw_rw.json"))
    check(plan)
    check_matches_torchrec(plan)
