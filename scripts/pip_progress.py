#!/usr/bin/env python3
"""Shows the progress of `pip install -v .` (the C++ module's build) in a few lines.

    pip install -v . 2>&1 | python3 scripts/pip_progress.py LOG

Reads pip's verbose output on stdin, keeps all of it in LOG, and writes to stderr:
  * one line when the compilation starts, with its number of steps;
  * the steps done: on a terminal one line rewritten in place, elsewhere (CI logs) a line at
    every further tenth of the steps;
  * one closing line with the steps and the seconds they took.
Ninja's step lines ("[12/97] Building CXX object …") are the progress (builds of 3 steps or fewer,
ninja re-running CMake, are not shown); everything else only
goes to LOG, which the caller prints when pip fails (scripts/setup_python.sh).
"""
import re
import sys
import time

STEP = re.compile(r"^\s*\[(\d+)/(\d+)\]\s+(.*)$")
MIN_STEPS = 3  # a build of this many steps or fewer is ninja regenerating itself, not shown


class Progress:
    def __init__(self, out, on_terminal):
        self.out = out
        self.on_terminal = on_terminal
        self.total = 0
        self.done = 0
        self.shown_tenths = 0
        self.started = None

    def step(self, done, total, what):
        if total <= MIN_STEPS:  # ninja's own phases: re-checking globs, re-running CMake
            return
        if total != self.total:
            if self.started is None:
                self.started = time.monotonic()
            if self.on_terminal and self.total:
                self.out.write("\n")
            self.out.write(f"embshard: compiling the C++ module: {total} steps "
                           "(about 2 min on 2 cores the first time; a reinstall reuses them)\n")
            self.shown_tenths = 0
        self.done, self.total = done, total
        if self.on_terminal:
            self.out.write(f"\r\033[K  [{done}/{total}] {what[:100]}")
        else:
            tenths = done * 10 // total
            if tenths > self.shown_tenths:
                self.shown_tenths = tenths
                self.out.write(f"  [{done}/{total}] {tenths * 10}%\n")
        self.out.flush()

    def finish(self):
        if self.started is None:
            return
        if self.on_terminal:
            self.out.write("\n")
        seconds = time.monotonic() - self.started
        self.out.write(f"embshard: {self.done} of {self.total} build steps ran in {seconds:.0f} s\n")
        self.out.flush()


def main(argv):
    if len(argv) != 2:
        sys.stderr.write("usage: pip install -v . 2>&1 | pip_progress.py LOG\n")
        return 2
    progress = Progress(sys.stderr, sys.stderr.isatty())
    with open(argv[1], "w", encoding="utf-8", errors="replace") as log:
        for line in sys.stdin:
            log.write(line)
            match = STEP.match(line)
            if match and int(match.group(2)) > 0:
                progress.step(int(match.group(1)), int(match.group(2)), match.group(3).strip())
    progress.finish()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
