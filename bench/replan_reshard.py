#!/usr/bin/env python3
"""Re-planning that TorchRec's reshard can run, against re-planning freely (docs/benchmarks.md,
"Re-planning that TorchRec's reshard can run"): per seed, a NeuroShard-protocol task on 8 V100s
(one host) and on 16 H100s (two hosts) planned by joint:torchrec=true, bench/replan_suite.py's
statistics drift, then embshard.replan(max_move=0.1) without and with reshard=True, judged by sim.
Prints CSV rows. Usage: $(bash scripts/setup_python.sh) bench/replan_reshard.py [--seeds 9971-9976]"""
import argparse
import os
import random
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import embshard  # noqa: E402
from replan_suite import drift  # noqa: E402

PROTOCOLS = ("neuroshard:preset=v100,devices=8,max_dim=128", "neuroshard:preset=h100,devices=16,max_dim=128")
SHARDER = "joint:groups=none,torchrec=true"  # plans TorchRec's training path runs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", default="9971-9976", help="first-last")
    first, last = (int(x) for x in parser.parse_args().seeds.split("-"))
    print("preset,devices,seed,kept,scratch_curve_end,free,free_moved,reshard,reshard_moved,free_s,reshard_s")
    for seed in range(first, last + 1):
        for protocol in PROTOCOLS:
            task = embshard.Task.generate(protocol, seed=seed, index=0)
            old = embshard.plan(task, SHARDER, seed=seed)
            new = drift(task, random.Random(seed))
            t0 = time.time()
            free = embshard.replan(new, old, max_move=0.1, sharder=SHARDER, seed=seed)
            t1 = time.time()
            rs = embshard.replan(new, old, max_move=0.1, sharder=SHARDER, seed=seed, reshard=True)
            t2 = time.time()
            preset = protocol.split(",")[0].split("=")[1]
            devices = protocol.split("devices=")[1].split(",")[0]
            print(f"{preset},{devices},{seed},{free.kept['step_ms']:.4f},{free.target['step_ms']:.4f},"
                  f"{free.chosen['step_ms']:.4f},{free.chosen['moved_share']:.4f},{rs.chosen['step_ms']:.4f},"
                  f"{rs.chosen['moved_share']:.4f},{t1 - t0:.1f},{t2 - t1:.1f}", flush=True)


if __name__ == "__main__":
    main()
