"""Planning time through Python vs the CLI vs TorchRec's own planner, on one model (issue 16).

    $(bash scripts/setup_python.sh --torchrec) bench/python_planning.py [REPEATS] [SHARDER...]

The model is python/examples/plan_dlrm.py's: 26 Criteo tables at dim 128, 8 GPUs of 16 GiB, 512
samples per rank. Per repeat and sharder: `EmbshardPlanner.plan` (model → task → plan →
ShardingPlan), `embshard.plan` on the same task (the library call alone), `embshard plan` on the
task written to a file (a process: start, read, plan, write), and TorchRec's
`EmbeddingShardingPlanner.plan` on the model. CSV rows of each timing, then the medians.
"""

import csv
import logging
import os
import statistics
import subprocess
import sys
import tempfile
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
from embshard.torchrec import EmbshardPlanner  # noqa: E402

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CLI = os.path.join(REPO, "build", "bin", "embshard")
CRITEO = [1460, 583, 10131227, 2202608, 305, 24, 12517, 633, 3, 93145, 5683, 8351593, 3194, 27,
          14992, 5461306, 10, 5652, 2173, 4, 7046547, 18, 15, 286181, 105, 142572]


def timed(f):
    start = time.perf_counter()
    f()
    return (time.perf_counter() - start) * 1e3


def main(repeats=5, *sharders):
    sharders = sharders or ("torchrec", "neuroshard", "best")
    model = EmbeddingBagCollection(device=torch.device("meta"), tables=[
        EmbeddingBagConfig(name=f"t_cat_{i}", num_embeddings=n, embedding_dim=128,
                           feature_names=[f"cat_{i}"]) for i, n in enumerate(CRITEO)])
    topology = Topology(world_size=8, local_world_size=8, compute_device="cuda", hbm_cap=16 * 1024 ** 3)
    module_sharders = [EmbeddingBagCollectionSharder()]
    out = csv.writer(sys.stdout)
    out.writerow(["row", "path", "sharder", "repeat", "ms"])
    times = {}
    with tempfile.TemporaryDirectory() as tmp:
        for repeat in range(int(repeats)):
            for sharder in sharders:
                planner = EmbshardPlanner(topology=topology, batch_size=512, sharder=sharder)
                row = {"python_torchrec_planner": timed(lambda: planner.plan(model, module_sharders))}
                task = planner.last_task
                spec = planner.last_plan.provenance["sharder"] if sharder == "best" else sharder
                row["python_plan"] = timed(lambda: embshard.plan(task, sharder))
                task_path = os.path.join(tmp, "task.json")
                if not os.path.exists(task_path):
                    task.save(task_path)
                plan_path = os.path.join(tmp, f"plan-{repeat}-{len(times)}.json")
                cli_sharder = spec if sharder != "best" else None
                if cli_sharder:
                    row["cli_plan"] = timed(lambda: subprocess.run(
                        [CLI, "plan", "--task", task_path, "--sharder", cli_sharder, "--out",
                         plan_path, "--quiet"], check=True, capture_output=True))
                for path, ms in row.items():
                    out.writerow(["time", path, sharder, repeat, f"{ms:.2f}"])
                    times.setdefault((path, sharder), []).append(ms)
            ms = timed(lambda: EmbeddingShardingPlanner(topology=topology, batch_size=512).plan(
                model, module_sharders))
            out.writerow(["time", "torchrec_own_planner", "-", repeat, f"{ms:.2f}"])
            times.setdefault(("torchrec_own_planner", "-"), []).append(ms)
    for (path, sharder), values in times.items():
        out.writerow(["median", path, sharder, len(values), f"{statistics.median(values):.2f}"])


if __name__ == "__main__":
    main(*sys.argv[1:])
