"""EmbshardPlanner on TorchRec models: a DLRM-shaped model with each sharding type forced by a
constraint, nested modules, optimizer state in memory, measured statistics, and bad input."""

import pytest

import embshard
from embshard import Error

# Criteo Kaggle's 26 categorical cardinalities (the DLRM benchmark's tables).
CRITEO = [1460, 583, 10131227, 2202608, 305, 24, 12517, 633, 3, 93145, 5683, 8351593, 3194, 27,
          14992, 5461306, 10, 5652, 2173, 4, 7046547, 18, 15, 286181, 105, 142572]
FORCED = {"t_cat_2": "row_wise", "t_cat_11": "column_wise", "t_cat_3": "table_row_wise",
          "t_cat_5": "table_wise", "t_cat_9": "data_parallel"}


def dlrm(torch, dim=128):
    from torchrec.modules.embedding_configs import EmbeddingBagConfig
    from torchrec.modules.embedding_modules import EmbeddingBagCollection

    class SparseArch(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.embedding_bag_collection = EmbeddingBagCollection(device=torch.device("meta"), tables=[
                EmbeddingBagConfig(name=f"t_cat_{i}", num_embeddings=n, embedding_dim=dim,
                                   feature_names=[f"cat_{i}"]) for i, n in enumerate(CRITEO)])

    class Dlrm(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.dense_arch = torch.nn.Linear(13, dim)
            self.sparse_arch = SparseArch()

    return Dlrm()


def topology(world=8, local=8, hbm_gib=16, device="cuda"):
    from torchrec.distributed.planner.types import Topology

    return Topology(world_size=world, local_world_size=local, compute_device=device,
                    hbm_cap=hbm_gib * 1024 ** 3)


def sharders(**fused):
    from torchrec.distributed.embeddingbag import EmbeddingBagCollectionSharder

    return [EmbeddingBagCollectionSharder(fused_params=fused or None)]


def forced_constraints():
    from torchrec.distributed.planner.types import ParameterConstraints

    return {name: ParameterConstraints(sharding_types=[kind]) for name, kind in FORCED.items()}


@pytest.mark.parametrize("sharder", ["best", "torchrec"])
def test_dlrm_with_every_sharding_type_forced(torchrec, sharder):
    import torch
    from torchrec.distributed.types import ShardingPlan

    from embshard.torchrec import EmbshardPlanner

    planner = EmbshardPlanner(topology=topology(), batch_size=512, constraints=forced_constraints(),
                              sharder=sharder)
    plan = planner.plan(dlrm(torch), sharders())
    assert isinstance(plan, ShardingPlan)
    tables = plan.plan["sparse_arch.embedding_bag_collection"]
    assert sorted(tables) == sorted(f"t_cat_{i}" for i in range(26))
    for name, kind in FORCED.items():
        assert tables[name].sharding_type == kind, (name, tables[name].sharding_type)
    for name, ps in tables.items():
        if ps.sharding_type == "data_parallel":  # a copy on every rank, TorchRec's dense kernel
            assert ps.compute_kernel == "dense" and ps.sharding_spec is None
            assert sorted(ps.ranks) == list(range(8))
            continue
        # What ran is what embshard planned: the type and the ranks of its shards.
        mine = next(t for t in planner.last_plan.tables if t["table"] == name)
        assert ps.sharding_type == mine["sharding_type"], (name, ps.sharding_type, mine["sharding_type"])
        assert sorted(ps.ranks) == sorted(s["device"] for s in mine["shards"]), name
        assert ps.compute_kernel == "fused"
        shards = ps.sharding_spec.shards
        assert sum(s.shard_sizes[0] * s.shard_sizes[1] for s in shards) == \
            CRITEO[int(name.split("_")[-1])] * 128, name
    # The task the planner built: global batch, derived statistics, the planner's plan is valid.
    task = planner.last_task
    assert task.batch_size == 512 * 8 and task.num_devices == 8
    embshard.check(task, planner.last_plan)
    assert len(planner.last_plan.provenance["derived_stats_tables"]) == 26
    # TorchRec's own planner on the same model, judged by the same evaluator.
    from torchrec.distributed.planner import EmbeddingShardingPlanner

    from embshard.torchrec import plan_from_sharding_plan

    theirs = EmbeddingShardingPlanner(topology=topology(), batch_size=512,
                                      constraints=forced_constraints()).plan(dlrm(torch), sharders())
    judged = plan_from_sharding_plan(task, theirs, planner.tables)
    assert embshard.evaluate(task, judged).step_ms > 0
    assert embshard.evaluate(task, planner.last_plan).step_ms > 0


def test_a_2d_plan_is_one_sharding_groups_plan_with_what_dmp_collection_takes(torchrec):
    import torch

    from embshard.torchrec import EmbshardPlanner

    # 2 hosts of 8: groups of 8 ranks (strided: 4 per host; contiguous: one host each).
    planner = EmbshardPlanner(topology=topology(world=16, local=8), batch_size=512, sharder="joint",
                              sharding_group_size=8)
    plan = planner.plan(dlrm(torch), sharders())
    groups = planner.last_plan.sharding_groups
    assert groups["size"] == 8
    contiguous = groups["ranks"] == "contiguous"
    assert planner.dmp_collection_kwargs == {"world_size": 16, "sharding_group_size": 8,
                                             "node_group_size": 8 if contiguous else 4,
                                             "use_inter_host_allreduce": contiguous}
    for ps in plan.plan["sparse_arch.embedding_bag_collection"].values():
        assert set(ps.ranks) <= set(range(8)), ps.ranks
        for shard in ps.sharding_spec.shards if ps.sharding_spec else []:
            assert shard.placement.rank() < 8
    embshard.check(planner.last_task, planner.last_plan)
    # The default is a 1D plan for DistributedModelParallel, over all 16 ranks.
    one_d = EmbshardPlanner(topology=topology(world=16, local=8), batch_size=512, sharder="joint")
    one_d.plan(dlrm(torch), sharders())
    assert one_d.dmp_collection_kwargs is None
    assert one_d.last_plan.sharding_groups is None
    for bad in ("many", 0, True):
        with pytest.raises(Error, match="sharding_group_size"):
            EmbshardPlanner(topology=topology(), sharding_group_size=bad)
    with pytest.raises(Error, match="needs sharder 'joint' or 'best'"):
        EmbshardPlanner(topology=topology(), sharder="greedy", sharding_group_size=8)
    with pytest.raises(Error, match="CUDA only"):
        EmbshardPlanner(topology=topology(world=16, local=8, device="cpu"), sharder="joint",
                        sharding_group_size="auto").plan(dlrm(torch), sharders())
    with pytest.raises(Error, match="replica_sync_every"):
        EmbshardPlanner(topology=topology(), replica_sync_every=0).plan(dlrm(torch), sharders())
    with pytest.raises(Error, match="groups=3"):
        EmbshardPlanner(topology=topology(world=16, local=8), sharder="joint",
                        sharding_group_size=3).plan(dlrm(torch), sharders())


def test_nested_collections_of_both_kinds_and_shared_names(torchrec):
    import torch
    from torchrec.distributed.embedding import EmbeddingCollectionSharder
    from torchrec.modules.embedding_configs import EmbeddingBagConfig, EmbeddingConfig
    from torchrec.modules.embedding_modules import EmbeddingBagCollection, EmbeddingCollection

    from embshard.torchrec import EmbshardPlanner

    meta = torch.device("meta")
    model = torch.nn.Module()
    model.user = torch.nn.Module()
    model.user.deep = EmbeddingBagCollection(device=meta, tables=[
        EmbeddingBagConfig(name="shared", num_embeddings=1000, embedding_dim=16, feature_names=["a"]),
        EmbeddingBagConfig(name="u", num_embeddings=50000, embedding_dim=32, feature_names=["b", "c"])])
    model.seq = EmbeddingCollection(device=meta, tables=[
        EmbeddingConfig(name="shared", num_embeddings=2000, embedding_dim=16, feature_names=["d"])])
    planner = EmbshardPlanner(topology=topology(world=2, local=2), batch_size=64, sharder="greedy")
    plan = planner.plan(model, sharders() + [EmbeddingCollectionSharder()])
    assert sorted(plan.plan) == ["seq", "user.deep"]
    assert sorted(plan.plan["user.deep"]) == ["shared", "u"] and list(plan.plan["seq"]) == ["shared"]
    names = sorted(t["name"] for t in planner.last_task.tables)
    assert names == ["seq.shared", "u", "user.deep.shared"]
    u = next(t for t in planner.last_task.tables if t["name"] == "u")
    assert u["stats"]["pooling_factor"] == 1.0  # TorchRec's default: POOLING_FACTOR per table


@pytest.mark.parametrize("sharder", ["best", "joint", "torchrec"])
def test_on_cpu_the_planner_chooses_only_what_the_export_gives(torchrec, sharder):
    # An EmbeddingCollection on a CPU topology: TorchRec's EC sharder offers row_wise there, which
    # the export (TorchRec's CPU EmbeddingBagCollection sharder has none) cannot give. Big, hot
    # tables that row-wise would suit on a GPU must plan, and with a CPU type.
    import torch
    from torchrec.distributed.embedding import EmbeddingCollectionSharder
    from torchrec.distributed.planner.types import ParameterConstraints
    from torchrec.modules.embedding_configs import EmbeddingConfig
    from torchrec.modules.embedding_modules import EmbeddingCollection

    from embshard.torchrec import CPU_TYPES, EmbshardPlanner

    model = EmbeddingCollection(device=torch.device("meta"), tables=[
        EmbeddingConfig(name=f"s{i}", num_embeddings=rows, embedding_dim=64, feature_names=[f"f{i}"])
        for i, rows in enumerate([4_000_000, 3_000_000, 1000, 500])])
    hot = {f"s{i}": ParameterConstraints(pooling_factors=[40.0]) for i in range(2)}
    planner = EmbshardPlanner(topology=topology(world=2, local=2, device="cpu"), batch_size=4096,
                              sharder=sharder, constraints=hot)
    plan = planner.plan(model, [EmbeddingCollectionSharder()])
    types = {name: ps.sharding_type for name, ps in plan.plan[""].items()}
    assert sorted(types) == ["s0", "s1", "s2", "s3"] and set(types.values()) <= set(CPU_TYPES), types
    # An EmbeddingCollection's tables are sequence tables: costed an output row per lookup.
    assert [t.get("pooled", True) for t in planner.last_task.tables] == [False] * 4
    forced = EmbshardPlanner(topology=topology(world=2, local=2, device="cpu"), batch_size=64,
                             constraints={"s2": ParameterConstraints(sharding_types=["row_wise"])})
    with pytest.raises(Error, match="s2.*embshard plans only table_wise, column_wise, data_parallel on cpu"):
        forced.plan(model, [EmbeddingCollectionSharder()])


def test_optimizer_state_is_counted_as_torchrec_counts_it(torchrec):
    import torch
    from fbgemm_gpu.split_embedding_configs import EmbOptimType

    from embshard.torchrec import EmbshardPlanner

    def table_optimizers(fused):
        task = EmbshardPlanner(topology=topology(), batch_size=512).task(dlrm(torch), sharders(**fused))
        return {t.get("optimizer", "none") for t in task.tables}

    assert table_optimizers({}) == {"none"}
    assert table_optimizers({"optimizer": EmbOptimType.EXACT_ROWWISE_ADAGRAD}) == {"rowwise_adagrad"}
    assert table_optimizers({"optimizer": EmbOptimType.ADAM}) == {"adam"}
    # 26 tables of 128 fp32 columns, 8.6 GB of weights, all in HBM: on 8 ranks of 3 GiB they
    # fit; with Adam's two moments (25.9 GB) they cannot, and the planner says so.
    from torchrec.distributed.planner.types import ParameterConstraints

    hbm_only = {f"t_cat_{i}": ParameterConstraints(compute_kernels=["fused"]) for i in range(26)}
    small = topology(hbm_gib=3)
    EmbshardPlanner(topology=small, batch_size=512, sharder="torchrec",
                    constraints=hbm_only).plan(dlrm(torch), sharders())
    with pytest.raises(Error, match="no plan"):
        EmbshardPlanner(topology=small, batch_size=512, sharder="torchrec", constraints=hbm_only).plan(
            dlrm(torch), sharders(optimizer=EmbOptimType.ADAM))


def test_shardable_modules_embshard_cannot_plan_are_errors_not_skipped(torchrec):
    import torch
    from torchrec.distributed.sharding_plan import get_default_sharders
    from torchrec.modules.embedding_configs import EmbeddingBagConfig
    from torchrec.modules.feature_processor_ import PositionWeightedModuleCollection
    from torchrec.modules.fp_embedding_modules import FeatureProcessedEmbeddingBagCollection
    from torchrec.modules.embedding_modules import EmbeddingBagCollection

    from embshard.torchrec import EmbshardPlanner

    meta = torch.device("meta")
    ebc = EmbeddingBagCollection(device=meta, is_weighted=True, tables=[
        EmbeddingBagConfig(name="t", num_embeddings=100, embedding_dim=8, feature_names=["f"])])
    model = torch.nn.Module()
    model.fp = FeatureProcessedEmbeddingBagCollection(
        ebc, PositionWeightedModuleCollection({"f": 4}, device=meta))
    with pytest.raises(Error, match="module 'fp' is a FeatureProcessedEmbeddingBagCollection"):
        EmbshardPlanner(topology=topology(world=2, local=2)).plan(model, get_default_sharders())


def test_measured_statistics_from_a_kjt_replace_the_derived_ones(torchrec):
    import torch
    from torchrec.sparse.jagged_tensor import KeyedJaggedTensor

    from embshard.torchrec import EmbshardPlanner, stats_from_kjt

    kjt = KeyedJaggedTensor.from_lengths_sync(
        keys=["cat_0", "cat_1"], values=torch.tensor([5, 5, 9, 1, 2, 3, 3]),
        lengths=torch.tensor([2, 0, 1, 1, 3, 0]))
    stats = stats_from_kjt(kjt, ["cat_0"], num_rows=1460)
    assert stats["num_indices"] == 3 and stats["num_distinct"] == 2 and stats["batch_size"] == 3
    planner = EmbshardPlanner(topology=topology(), batch_size=512, sharder="greedy",
                              table_stats={"t_cat_0": stats})
    planner.plan(dlrm(torch), sharders())
    derived = planner.last_plan.provenance["derived_stats_tables"]
    assert "t_cat_0" not in derived and len(derived) == 25
    with pytest.raises(Error, match="feature 'nope'"):
        stats_from_kjt(kjt, ["nope"], num_rows=10)


def test_dense_only_tables_become_data_parallel(torchrec):
    import torch
    from torchrec.distributed.planner.types import ParameterConstraints

    from embshard.torchrec import EmbshardPlanner

    planner = EmbshardPlanner(topology=topology(), batch_size=512, constraints={
        "t_cat_4": ParameterConstraints(compute_kernels=["dense"])})
    tables = planner.plan(dlrm(torch), sharders()).plan["sparse_arch.embedding_bag_collection"]
    assert tables["t_cat_4"].sharding_type == "data_parallel"
    assert tables["t_cat_4"].compute_kernel == "dense"


def test_bad_input_names_the_table_or_field(torchrec):
    import torch
    from torchrec.distributed.planner.types import ParameterConstraints

    from embshard.torchrec import EmbshardPlanner

    model = dlrm(torch)

    def error(planner_kwargs, module=model, shard=None):
        with pytest.raises(Error) as info:
            EmbshardPlanner(**planner_kwargs).plan(module, shard or sharders())
        return str(info.value)

    assert "no EmbeddingBagCollection" in error({"topology": topology()}, module=torch.nn.Linear(2, 2))
    assert "table 'nope'" in error({"topology": topology(),
                                    "constraints": {"nope": ParameterConstraints()}})
    assert "table 't_cat_4'" in error({"topology": topology(), "constraints": {
        "t_cat_4": ParameterConstraints(sharding_types=["grid_shard"])}})
    assert "'fused' allowed" in error({"topology": topology(), "constraints": {
        "t_cat_4": ParameterConstraints(compute_kernels=["key_value"])}})
    assert "'warp_wise'" in error({"topology": topology(), "constraints": {
        "t_cat_4": ParameterConstraints(sharding_types=["warp_wise"])}})
    assert "must be finite and ≥ 0" in error({"topology": topology(), "constraints": {
        "t_cat_4": ParameterConstraints(pooling_factors=[1.0, -2.0])}})
    assert "the sharder offers none of them on cpu" in error({"topology": topology(world=2, local=2, device="cpu"),
                                                            "constraints": {"t_cat_4": ParameterConstraints(sharding_types=["row_wise"])}})
    assert "not a whole number of hosts" in error({"topology": topology(world=6, local=4)})
    assert "batch_sizes" in error({"topology": topology(), "constraints": {
        "t_cat_4": ParameterConstraints(batch_sizes=[64])}})
    with pytest.raises(Error, match="storage_reservation"):
        EmbshardPlanner(topology=topology(), storage_reservation=1.5)


def test_placement_groups_reach_the_plan_by_torchrec_table_names(torchrec):
    import torch
    from embshard.torchrec import EmbshardPlanner

    planner = EmbshardPlanner(topology(world=4, local=4), sharder="joint",
                              colocate=[["t_cat_0", "t_cat_1"]], separate=[["t_cat_2", "t_cat_3"]])
    plan = planner.plan(dlrm(torch), sharders())
    assert plan is not None
    devices = {t["table"]: {s["device"] for s in t["shards"]} for t in planner.last_plan.tables}
    assert devices["t_cat_0"] == devices["t_cat_1"] and len(devices["t_cat_0"]) == 1
    assert not devices["t_cat_2"] & devices["t_cat_3"]
    with pytest.raises(embshard.Error, match="colocate names table 'nope', which the model does not have"):
        EmbshardPlanner(topology(world=4, local=4), colocate=[["t_cat_0", "nope"]]).plan(dlrm(torch), sharders())
