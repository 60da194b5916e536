"""Load an embshard TorchRec plan file into a ``torchrec.distributed.types.ShardingPlan``.

The file is what ``embshard::torchrec_plan_json`` writes (include/embshard/plan/torchrec_export.h):

    {"world_size": W, "local_world_size": L, "compute_device": "cuda",
     "plan": {"<module_path>": {"<table>": {
         "sharding_type": "row_wise", "compute_kernel": "fused", "ranks": [0, 1],
         "shards": [{"shard_offsets": [0, 0], "shard_sizes": [500, 64],
                     "placement": "rank:0/cuda:0"}, ...],
         "cache_params": {"algorithm": "LRU", "load_factor": 0.25}}}}}   # optional

Hand the result to DistributedModelParallel(model, plan=..., ...) on a world of W ranks with L
per host; module paths and table names must match the model exactly. TorchRec is imported
inside the function, so this module imports (and its docs render) without TorchRec installed.
"""

import json


def load_sharding_plan(path):
    """Returns the ShardingPlan stored in the embshard TorchRec plan file at ``path``.

    Each table becomes a ParameterSharding whose sharding_spec is an EnumerableShardingSpec of
    one ShardMetadata per shard (None for data_parallel), with CacheParams when the file gives
    cache_params. The file's world_size / local_world_size are not part of a ShardingPlan; read
    them with ``json.load`` if the launcher needs to check its world against them.
    """
    from torchrec.distributed.types import (
        CacheAlgorithm,
        CacheParams,
        EmbeddingModuleShardingPlan,
        EnumerableShardingSpec,
        ParameterSharding,
        ShardingPlan,
        ShardMetadata,
    )

    def sharding_spec(table):
        if table["sharding_type"] == "data_parallel":
            return None
        return EnumerableShardingSpec([
            ShardMetadata(shard_offsets=list(s["shard_offsets"]),
                          shard_sizes=list(s["shard_sizes"]),
                          placement=s["placement"])
            for s in table["shards"]])

    def cache_params(table):
        if "cache_params" not in table:
            return None
        params = table["cache_params"]
        return CacheParams(algorithm=CacheAlgorithm[params["algorithm"]],
                           load_factor=float(params["load_factor"]))

    with open(path, encoding="utf-8") as f:
        document = json.load(f)
    plan = {}
    for module_path, tables in document["plan"].items():
        module_plan = EmbeddingModuleShardingPlan()
        for name, table in tables.items():
            module_plan[name] = ParameterSharding(
                sharding_type=table["sharding_type"],
                compute_kernel=table["compute_kernel"],
                ranks=list(table["ranks"]),
                sharding_spec=sharding_spec(table),
                cache_params=cache_params(table))
        plan[module_path] = module_plan
    return ShardingPlan(plan=plan)
