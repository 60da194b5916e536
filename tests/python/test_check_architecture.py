#!/usr/bin/env python3
"""scripts/check_architecture.py passes on this repository, and fails on a copy of it whose map
names a path that does not exist, leaves a folder unnamed or grows past the size limit, naming
each problem."""
import os
import pathlib
import shutil
import subprocess
import sys
import tempfile

ROOT = pathlib.Path(__file__).resolve().parents[2]
CHECK = ROOT / "scripts" / "check_architecture.py"
MAP = "docs/architecture.md"


def run(root=None):
    args = [sys.executable, str(CHECK)] + ([str(root)] if root else [])
    return subprocess.run(args, capture_output=True, text=True, check=False)


def copy_tree(tree: pathlib.Path) -> None:
    """A copy of the repository as the check sees it: every folder, every Markdown file with its
    text, every other file empty (only its existence is read). Build outputs and hidden folders
    are left out."""
    for folder, dirs, files in os.walk(ROOT):
        here = pathlib.Path(folder)
        dirs[:] = [d for d in dirs if not d.startswith((".", "__")) and d != "build" and not d.startswith("build-")]
        target = tree / here.relative_to(ROOT)
        target.mkdir(parents=True, exist_ok=True)
        for name in files:
            if name.endswith(".md"):
                shutil.copyfile(here / name, target / name)
            else:
                (target / name).touch()


def main() -> int:
    ok = run()
    assert ok.returncode == 0, ok.stdout + ok.stderr
    with tempfile.TemporaryDirectory() as tmp:
        tree = pathlib.Path(tmp)
        copy_tree(tree)
        same = run(tree)
        assert same.returncode == 0, "the copy should pass as the repository does:\n" + same.stdout
        page = tree / MAP
        text = page.read_text(encoding="utf-8")
        page.write_text(text + "\nSee `src/shard/no_such_sharder.cpp` and `include/embshard/eval/`.\n",
                        encoding="utf-8")
        (tree / "src/shard/unnamed_algorithm").mkdir()
        bad = run(tree)
        assert bad.returncode == 1, bad.stdout
        assert f"{MAP}: `src/shard/no_such_sharder.cpp` does not exist" in bad.stdout, bad.stdout
        assert f"{MAP}: folder `src/shard/unnamed_algorithm/` is not named" in bad.stdout, bad.stdout
        assert "include/embshard/eval/" not in bad.stdout, bad.stdout  # a real folder is no problem
        readme = tree / "src/shard/README.md"
        readme.write_text(readme.read_text(encoding="utf-8") + "\n`bench/no_such_bench.sh`\n", encoding="utf-8")
        page.write_text(text + "\n" + "x" * 16000 + "\n", encoding="utf-8")
        big = run(tree)
        assert big.returncode == 1, big.stdout
        assert f"{MAP}: " in big.stdout and "over the limit of 15360" in big.stdout, big.stdout
        assert "src/shard/README.md: `bench/no_such_bench.sh` does not exist" in big.stdout, big.stdout
    print("check_architecture: passes here, fails on a bogus path, an unnamed folder and an oversized map")
    return 0


if __name__ == "__main__":
    sys.exit(main())
