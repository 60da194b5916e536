"""The examples the README and docs/python.md show run as shown."""

import subprocess
import sys

from conftest import REPO, torchrec_or_skip


def test_plan_dlrm_example_prints_both_breakdowns():
    torchrec_or_skip()
    out = subprocess.run([sys.executable, str(REPO / "python" / "examples" / "plan_dlrm.py")],
                         capture_output=True, text=True, timeout=600, check=True).stdout
    assert out.count("step_ms") == 2 and "TorchRec's own planner" in out
    assert out.splitlines()[-1].startswith("step: embshard ")
