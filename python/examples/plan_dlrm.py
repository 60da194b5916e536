"""Plan a DLRM-shaped TorchRec model with embshard and judge it beside TorchRec's own plan.

    python python/examples/plan_dlrm.py           (in the environment of scripts/setup_python.sh --torchrec)

The model holds the 26 categorical tables of Criteo Kaggle (DLRM's benchmark) at dim 128 on the
meta device, so nothing is allocated; 8 GPUs of 16 GiB, 512 samples per rank.
"""

import logging
import time
import warnings

warnings.filterwarnings("ignore")
logging.disable(logging.WARNING)

import torch  # noqa: E402
from torchrec.distributed.embeddingbag import EmbeddingBagCollectionSharder  # noqa: E402
from torchrec.distributed.planner import EmbeddingShardingPlanner  # noqa: E402
from torchrec.distributed.planner.types import Topology  # noqa: E402
from torchrec.modules.embedding_configs import EmbeddingBagConfig  # noqa: E402
from torchrec.modules.embedding_modules import EmbeddingBagCollection  # noqa: E402

import embshard  # noqa: E402
from embshard.torchrec import EmbshardPlanner, plan_from_sharding_plan  # noqa: E402

CRITEO = [1460, 583, 10131227, 2202608, 305, 24, 12517, 633, 3, 93145, 5683, 8351593, 3194, 27,
          14992, 5461306, 10, 5652, 2173, 4, 7046547, 18, 15, 286181, 105, 142572]

model = EmbeddingBagCollection(device=torch.device("meta"), tables=[
    EmbeddingBagConfig(name=f"t_cat_{i}", num_embeddings=rows, embedding_dim=128,
                       feature_names=[f"cat_{i}"]) for i, rows in enumerate(CRITEO)])
topology = Topology(world_size=8, local_world_size=8, compute_device="cuda", hbm_cap=16 * 1024 ** 3)
sharders = [EmbeddingBagCollectionSharder()]

planner = EmbshardPlanner(topology=topology, batch_size=512)          # sharder="best" by default
start = time.perf_counter()
plan = planner.plan(model, sharders)                                   # a torchrec ShardingPlan
ours_s = time.perf_counter() - start
start = time.perf_counter()
theirs = EmbeddingShardingPlanner(topology=topology, batch_size=512).plan(model, sharders)
theirs_s = time.perf_counter() - start

task = planner.last_task                                               # what embshard planned
ours = embshard.evaluate(task, planner.last_plan)                      # the sim judge
torchrec = embshard.evaluate(task, plan_from_sharding_plan(task, theirs, planner.tables))
print(f"embshard ({planner.last_plan.provenance['sharder'].split(':')[0]}), planned in {ours_s:.2f} s:")
print(ours)
print(f"TorchRec's own planner, planned in {theirs_s:.2f} s, judged the same way:")
print(torchrec)
print(f"step: embshard {ours.step_ms:.4f} ms, TorchRec {torchrec.step_ms:.4f} ms "
      f"({torchrec.step_ms / ours.step_ms:.2f}x)")
