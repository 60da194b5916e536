#!/usr/bin/env python3
"""scripts/pip_progress.py (issue 31 item 1: `pip install .` showed nothing for minutes): fed
pip's verbose output, it keeps all of it in the log and shows the compilation's steps in a few
lines: the start with the number of steps, each further tenth, the end with the time taken."""
import pathlib
import subprocess
import sys
import tempfile

ROOT = pathlib.Path(__file__).resolve().parents[2]
FILTER = ROOT / "scripts" / "pip_progress.py"

PIP_OUTPUT = "".join(
    ["Processing /repo\n", "  *** Configuring CMake...\n", "  -- Configuring done\n",
     "  [0/2] Re-checking globbed directories...\n", "  [1/2] Re-running CMake...\n"]
    + [f"  [{k}/40] Building CXX object CMakeFiles/embshard.dir/src/f{k}.cpp.o\n" for k in range(1, 41)]
    + ["  *** Installing project into wheel...\n", "Successfully installed embshard-0.1.0\n"])


def main() -> int:
    with tempfile.TemporaryDirectory() as tmp:
        log = pathlib.Path(tmp) / "pip.log"
        run = subprocess.run([sys.executable, str(FILTER), str(log)], input=PIP_OUTPUT,
                             capture_output=True, text=True, check=False)
        assert run.returncode == 0, run.stderr
        assert run.stdout == "", run.stdout
        shown = run.stderr.splitlines()
        assert shown[0].startswith("embshard: compiling the C++ module: 40 steps"), shown
        assert shown[1:11] == [f"  [{4 * k}/40] {10 * k}%" for k in range(1, 11)], shown
        assert shown[11].startswith("embshard: 40 of 40 build steps ran in "), shown
        assert len(shown) == 12, shown
        assert log.read_text() == PIP_OUTPUT  # every line kept for a failure's report
        quiet = subprocess.run([sys.executable, str(FILTER), str(log)], input="nothing to build\n",
                               capture_output=True, text=True, check=False)
        assert quiet.returncode == 0 and quiet.stderr == "", quiet.stderr
        bad = subprocess.run([sys.executable, str(FILTER)], input="", capture_output=True, text=True, check=False)
        assert bad.returncode == 2 and "usage" in bad.stderr, bad.stderr
    print("ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
