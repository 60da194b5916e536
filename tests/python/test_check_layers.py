#!/usr/bin/env python3
"""scripts/check_layers.py passes on this repository and fails on a tree where a layer includes
one above it, naming the file, the line and both layers."""
import pathlib
import subprocess
import sys
import tempfile

ROOT = pathlib.Path(__file__).resolve().parents[2]
CHECK = ROOT / "scripts" / "check_layers.py"


def run(root=None):
    args = [sys.executable, str(CHECK)] + ([str(root)] if root else [])
    return subprocess.run(args, capture_output=True, text=True, check=False)


def main() -> int:
    ok = run()
    assert ok.returncode == 0, ok.stdout + ok.stderr
    with tempfile.TemporaryDirectory() as tmp:
        tree = pathlib.Path(tmp)
        (tree / "include/embshard/core").mkdir(parents=True)
        (tree / "src/shard").mkdir(parents=True)
        (tree / "include/embshard/core/low.h").write_text('#include <string>\n#include "embshard/core/other.h"\n')
        (tree / "src/shard/up.cpp").write_text('#include "embshard/shard/s.h"\n#include "embshard/eval/evaluator.h"\n')
        bad = run(tree)
        assert bad.returncode == 1, bad.stdout
        assert 'src/shard/up.cpp:2: shard includes "embshard/eval/evaluator.h" (layer eval)' in bad.stdout, bad.stdout
        assert "core/low.h" not in bad.stdout, bad.stdout
    print("check_layers: passes here, fails on an upward include")
    return 0


if __name__ == "__main__":
    sys.exit(main())
