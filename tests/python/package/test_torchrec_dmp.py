"""An EmbshardPlanner plan run by TorchRec's DistributedModelParallel on 2 CPU processes (gloo):
one forward and one backward with the fused SGD optimizer, outputs equal to the unsharded model's
before and after the update. One table is forced column-wise, the others are the planner's; on a
cpu topology TorchRec offers table-wise and column-wise (Gloo has no reduce-scatter for row-wise)."""

import os

import pytest

from conftest import torchrec_or_skip

WORLD = 2
BATCH = 8          # samples per rank
LR = 0.1
TABLES = {"t_small": (40, 8), "t_wide": (60, 16), "t_big": (200, 8), "t_cw": (50, 16)}


def make_model(torch):
    from torchrec.modules.embedding_configs import EmbeddingBagConfig
    from torchrec.modules.embedding_modules import EmbeddingBagCollection

    torch.manual_seed(0)
    return EmbeddingBagCollection(device=torch.device("cpu"), tables=[
        EmbeddingBagConfig(name=name, num_embeddings=rows, embedding_dim=dim, feature_names=[f"f_{name}"])
        for name, (rows, dim) in TABLES.items()])


def make_batch(torch, rank):
    from torchrec.sparse.jagged_tensor import KeyedJaggedTensor

    g = torch.Generator().manual_seed(100 + rank)
    keys, lengths, values = [], [], []
    for name, (rows, _) in TABLES.items():
        n = torch.randint(0, 4, (BATCH,), generator=g)
        keys.append(f"f_{name}")
        lengths.append(n)
        values.append(torch.randint(0, rows, (int(n.sum()),), generator=g))
    return KeyedJaggedTensor.from_lengths_sync(keys=keys, values=torch.cat(values),
                                               lengths=torch.cat(lengths))


def forward(model, batch):
    out = model(batch)
    return out.wait() if hasattr(out, "wait") else out


def copy_weights(torch, full, sharded):
    """Gives every local shard its slice of the unsharded weights (DMP initialises its own)."""
    copied = 0
    with torch.no_grad():
        for key, value in sharded.items():
            source = full[key.removeprefix("module.")]
            for shard in value.local_shards():
                r0, c0 = shard.metadata.shard_offsets
                nr, nc = shard.metadata.shard_sizes
                shard.tensor.copy_(source[r0:r0 + nr, c0:c0 + nc])
                copied += 1
    assert copied >= 1, "no local shard"


def worker(rank, store_path, result_dir):
    import copy
    import logging
    import warnings

    warnings.filterwarnings("ignore")
    logging.disable(logging.WARNING)
    import torch
    import torch.distributed as dist
    from fbgemm_gpu.split_embedding_configs import EmbOptimType
    from torchrec.distributed.embeddingbag import EmbeddingBagCollectionSharder
    from torchrec.distributed.model_parallel import DistributedModelParallel
    from torchrec.distributed.planner.types import ParameterConstraints, Topology
    from torchrec.distributed.types import ShardingEnv

    from embshard.torchrec import EmbshardPlanner

    dist.init_process_group("gloo", init_method=f"file://{store_path}", rank=rank, world_size=WORLD)
    model = make_model(torch)
    reference = copy.deepcopy(model)
    sharders = [EmbeddingBagCollectionSharder(fused_params={"optimizer": EmbOptimType.EXACT_SGD,
                                                            "learning_rate": LR})]
    planner = EmbshardPlanner(
        topology=Topology(world_size=WORLD, local_world_size=WORLD, compute_device="cpu"),
        batch_size=BATCH, sharder="torchrec",
        constraints={"t_cw": ParameterConstraints(sharding_types=["column_wise"], min_partition=8)})
    plan = planner.collective_plan(model, sharders, dist.group.WORLD)
    types = {name: ps.sharding_type for name, ps in plan.plan[""].items()}
    plans = [None] * WORLD
    dist.all_gather_object(plans, planner.last_plan.to_json())
    assert plans[0] == plans[1]
    # Every rank holds rank 0's plan, and a world that does not match the topology is an error
    # on every rank (before any collective, so none hangs).
    mismatched = EmbshardPlanner(topology=Topology(world_size=4, local_world_size=4, compute_device="cpu"))
    try:
        mismatched.collective_plan(model, sharders, dist.group.WORLD)
        raise AssertionError("a world of 2 planned for 4 ranks")
    except Exception as e:
        assert "the process group has 2 ranks but the topology's world_size is 4" in str(e), e
    assert types["t_cw"] == "column_wise", types
    sharded = DistributedModelParallel(model, env=ShardingEnv.from_process_group(dist.group.WORLD),
                                       plan=plan, sharders=sharders, device=torch.device("cpu"))
    copy_weights(torch, reference.state_dict(), sharded.state_dict())
    batch = make_batch(torch, rank)
    out = forward(sharded, batch)
    want = reference(batch)
    for key in want.keys():
        torch.testing.assert_close(out[key], want[key], rtol=1e-5, atol=1e-6)
    out.values().sum().backward()
    # The reference step: plain SGD on the mean of the ranks' losses (TorchRec averages the
    # embedding gradients over the world, as data parallelism does the dense ones).
    for r in range(WORLD):
        (reference(make_batch(torch, r)).values().sum() / WORLD).backward()
    with torch.no_grad():
        for p in reference.parameters():
            p -= LR * p.grad
    after = forward(sharded, batch)
    want_after = reference(batch)
    for key in want_after.keys():
        torch.testing.assert_close(after[key], want_after[key], rtol=1e-5, atol=1e-6)
    with open(os.path.join(result_dir, f"rank{rank}.ok"), "w") as f:
        f.write(repr(types))
    dist.destroy_process_group()


def test_dmp_forward_and_backward_equal_the_unsharded_model(tmp_path):
    torchrec_or_skip()
    import torch.multiprocessing as mp

    mp.start_processes(worker, args=(str(tmp_path / "store"), str(tmp_path)), nprocs=WORLD,
                       start_method="spawn", join=True)
    assert sorted(p.name for p in tmp_path.glob("rank*.ok")) == ["rank0.ok", "rank1.ok"]
