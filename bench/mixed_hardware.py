#!/usr/bin/env python3
"""Mixed hardware (issue 30 item 4; docs/data.md, "Mixed hardware"): a job of half SLOW hosts and
half FAST hosts, planned by `joint` knowing each device's speed ("mixed-aware"), against `joint`
planning the same tables as if every device were the SLOW kind and that plan run on the mix; both
judged by `sim` on the mix. Prints one CSV row per size: the two steps, how much faster the
mixed-aware plan is, the busiest device's kernel time (forward + backward compute) of each, and the
capacity ratio the judge sees (the mean of the kinds' HBM bandwidths over the slow kind's: the
figure by which `sim` scales every kernel term of a device, UVM rows aside, which cross each
device's own host link). Each host keeps its preset's NVLink and NIC; `links_flat_ms` is the mix
planned as if every host had the slow kind's links (as embshard costed a mix before hosts kept
their own) and judged on the mix as it is.

    bench/mixed_hardware.py OUT [--slow h100] [--fast h200] [--sizes 60x8,500x64,1000x128] [--seed S]

The slow hosts come first: `sim` costs every device in device 0's terms, scaled by HBM bandwidth
(the H200's own coefficients are measured, the other GPUs' are the 2080 Ti's scaled), so with the
slow kind first both plans are judged by the same model. Tasks: `embshard task gen --protocol
neuroshard:tables=T,max_dim=32,preset=SLOW --devices D --seed S` (as bench/scale.sh makes them),
on hosts of 8 devices (D a multiple of 16: as many hosts of each kind), or two hosts of D/2 (D even,
at most 8). One thread per plan.
"""

import argparse
import json
import os
import subprocess
import sys

E = os.environ.get("EMBSHARD", "build/bin/embshard")


def run(*args):
    result = subprocess.run([E, *args, "--quiet", "--threads", "1"], capture_output=True, text=True)
    if result.returncode != 0:
        sys.exit(f"{' '.join(args[:3])}: {result.stderr.strip()}")
    return result.stdout


def with_hosts(task, hosts, path):
    doc = dict(task)
    doc["topology"] = {"hosts": hosts}
    with open(path, "w", encoding="utf-8") as f:
        json.dump(doc, f)
    return path


def judged(task_path, plan_path, out_path):
    run("eval", "--task", task_path, "--plan", plan_path, "--out", out_path)
    doc = json.load(open(out_path, encoding="utf-8"))
    kernels = max(d["fw_comp_ms"] + d["bw_comp_ms"] for d in doc["devices"])
    return doc["objectives"]["step_ms"], kernels


def gpu_presets():
    """Each GPU preset's hardware at its defaults, as `embshard list --json` gives it."""
    doc = json.loads(run("list", "--json"))
    return {t["name"]: t["hardware"] for t in doc["topologies"] if t["name"] != "cpu"}


def main():
    presets = gpu_presets()
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out")
    parser.add_argument("--slow", default="h100", choices=sorted(presets))
    parser.add_argument("--fast", default="h200", choices=sorted(presets))
    parser.add_argument("--sizes", default="60x8,500x64,1000x128", help="TABLESxDEVICES,... (devices even)")
    parser.add_argument("--seed", type=int, default=3200)
    args = parser.parse_args()
    os.makedirs(args.out, exist_ok=True)
    slow_hw, fast_hw = presets[args.slow], presets[args.fast]
    capacity = (fast_hw["device"]["hbm_gbps"] / slow_hw["device"]["hbm_gbps"] + 1) / 2
    flat = f",intra_host_gbps={slow_hw['intra_host_gbps']},inter_host_gbps={slow_hw['inter_host_gbps']}"
    print("slow,fast,tables,devices,mixed_aware_ms,as_slow_on_mix_ms,faster_by,mixed_aware_kernels_ms,"
          "as_slow_kernels_ms,kernels_ratio,capacity_ratio,links_flat_ms")
    for size in args.sizes.split(","):
        tables, devices = (int(x) for x in size.split("x"))
        if not (devices % 2 == 0 and 2 <= devices <= 8 or devices % 16 == 0):
            sys.exit(f"--sizes {size}: give 2, 4, 6 or 8 devices (two hosts) or a multiple of 16 (hosts of 8, "
                     "as many of each kind)")
        per_host = 8 if devices >= 16 else devices // 2
        hosts = devices // per_host
        base = os.path.join(args.out, f"{tables}x{devices}")
        run("task", "gen", "--protocol", f"neuroshard:tables={tables},max_dim=32,preset={args.slow}", "--devices",
            str(devices), "--count", "1", "--seed", str(args.seed), "--out", base)
        task = json.load(open(os.path.join(base, "000.json"), encoding="utf-8"))
        kind = f"nodes={hosts // 2},gpus_per_node={per_host},hbm_gib=4,uvm_gib=256"
        mixed = with_hosts(task, [f"{args.slow}:{kind}", f"{args.fast}:{kind}"], base + "-mixed.json")
        flat_links = with_hosts(task, [f"{args.slow}:{kind}", f"{args.fast}:{kind}{flat}"], base + "-flat.json")
        kind = f"nodes={hosts},gpus_per_node={per_host},hbm_gib=4,uvm_gib=256"
        slow = with_hosts(task, [f"{args.slow}:{kind}"], base + "-slow.json")
        run("plan", "--task", mixed, "--out", base + "-mixed-plan.json")
        run("plan", "--task", slow, "--out", base + "-slow-plan.json")
        run("plan", "--task", flat_links, "--out", base + "-flat-plan.json")
        aware, aware_kernels = judged(mixed, base + "-mixed-plan.json", base + "-mixed-eval.json")
        as_slow, slow_kernels = judged(mixed, base + "-slow-plan.json", base + "-slow-eval.json")
        links_flat, _ = judged(mixed, base + "-flat-plan.json", base + "-flat-eval.json")
        print(f"{args.slow},{args.fast},{tables},{devices},{aware:.3f},{as_slow:.3f},{as_slow / aware - 1:.3f},"
              f"{aware_kernels:.3f},{slow_kernels:.3f},{slow_kernels / aware_kernels:.3f},{capacity:.3f},"
              f"{links_flat:.3f}", flush=True)


if __name__ == "__main__":
    main()
