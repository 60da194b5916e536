#!/usr/bin/env python3
"""Fails when a layer includes a layer above it (docs/architecture.md, "Layers and folders").

Usage: python3 scripts/check_layers.py [ROOT]   (default: this repository; ctest runs it)

Every #include "embshard/<layer>/..." or private "<layer>/..." in include/embshard/<layer>/,
src/<layer>/ and apps/ is checked against ALLOWED: the layers a layer may include (its own is
always allowed). Prints each offending line as FILE:LINE: LAYER includes HEADER (layer OTHER)
and exits 1; exits 0 with a one-line summary otherwise.
"""
import pathlib
import re
import sys

# Each layer and the layers below it that it may include, bottom up.
ALLOWED = {
    "core": set(),
    "kernels": {"core"},
    "milp": {"core"},
    "data": {"core"},
    "plan": {"core", "data"},
    "profile": {"core", "data", "kernels"},
    "nn": {"core"},  # plain C++ layers (Mlp, LSTM) and their JSON, shared by cost models and policies
    "cost": {"core", "data", "plan", "profile", "nn"},  # profile: the HardwareFingerprint of trained weights
    "policy": {"core", "data", "plan", "cost", "nn"},
    "shard": {"core", "data", "plan", "cost", "policy", "milp", "nn"},
    "eval": {"core", "data", "plan", "cost", "policy", "shard", "milp", "profile", "kernels", "nn"},
    "report": {"core", "data", "plan", "cost", "policy", "shard", "eval"},
    "learn": {"core", "data", "plan", "cost", "policy", "profile", "nn"},  # the judge is handed in (cost/plan_judge.h)
    "apps": {"core", "data", "plan", "cost", "policy", "shard", "milp", "profile", "kernels", "eval",
             "report", "learn", "nn"},
    # The Python bindings (python/bindings): the library without libtorch, so never learn.
    "python": {"core", "data", "plan", "cost", "policy", "shard", "milp", "profile", "kernels", "eval",
               "report", "nn"},
}
INCLUDE = re.compile(r'#include\s+"(?:embshard/)?([a-z_]+)/[^"]+"')


def layer_of(path: pathlib.Path, root: pathlib.Path) -> str:
    parts = path.relative_to(root).parts
    if parts[0] in ("apps", "python"):
        return parts[0]
    return parts[2] if parts[0] == "include" else parts[1]


def main() -> int:
    # The tree to check: the argument, else this repository.
    root = pathlib.Path(sys.argv[1]).resolve() if len(sys.argv) > 1 else pathlib.Path(__file__).resolve().parent.parent
    files = [p for d in ("include/embshard", "src", "apps", "python/bindings") if (root / d).is_dir()
             for p in (root / d).rglob("*") if p.suffix in (".h", ".cpp", ".cu", ".cuh")]
    problems = []
    for path in files:
        layer = layer_of(path, root)
        if layer not in ALLOWED:
            continue  # generated/ and other non-layers
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            match = INCLUDE.match(line.strip())
            if not match or match.group(1) not in ALLOWED:
                continue  # a system header or a file beside this one (cli/args.h, commands.h)
            other = match.group(1)
            if other != layer and other not in ALLOWED[layer]:
                problems.append(f"{path.relative_to(root)}:{number}: {layer} includes {line.strip()[9:]} (layer {other})")
    for problem in problems:
        print(problem)
    print(f"check_layers: {len(files)} files, {len(problems)} includes of a layer above")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
