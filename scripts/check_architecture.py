#!/usr/bin/env python3
"""Fails when docs/architecture.md, the map of the code, is too long or no longer true.

Usage: python3 scripts/check_architecture.py [ROOT]   (default: this repository; ctest runs it)

Reads docs/architecture.md and every README.md it links to (the folder READMEs that hold the
detail), and reports, one line each:
  - the page is over MAX_BYTES (15,360) bytes;
  - a path written in backticks does not exist;
  - a relative link does not lead to an existing file or folder;
  - a folder under include/embshard/ or src/ is not named on the page.

A backticked span is a path when it has no spaces, contains '/', and ends with '/' or with a file
extension (`src/shard/joint/joint.cpp`, `bench/scale.sh`, `include/embshard/eval/`). One brace
group is expanded (`src/nn/nn_json.{h,cpp}` is two paths). Skipped: paths outside the repository
(`../shared/...`), build outputs (`build/...`, `build-san/...`), globs and placeholders (any of
* ? [ ] < > $ ~ : = | , or a part in capitals such as DIR or OUT). A path exists when it exists
from the repository root or, as the code includes headers, from include/embshard/
(`cost/analytic.h`). A folder is named when the page has it in backticks from the repository
root, with or without the trailing '/' (`src/kernels/cuda/`). Prints a one-line summary and exits
1 when there is any problem, else 0.
"""
import pathlib
import re
import sys

MAX_BYTES = 15360
MAP = "docs/architecture.md"
HEADER_BASE = "include/embshard"
CODE_SPAN = re.compile(r"`([^`\n]+)`")
FENCE = re.compile(r"^```.*?^```", re.DOTALL | re.MULTILINE)
LINK = re.compile(r"\]\(([^)\s]+)\)")
BRACES = re.compile(r"\{([^{}]*)\}")
EXTENSION = re.compile(r"\.[A-Za-z0-9]+$")
PLACEHOLDER = re.compile(r"^[A-Z][A-Z0-9_]*$")
NOT_A_PATH = set("*?[]<>$~:=|,")


def code_spans(text: str) -> list:
    """The inline code spans of a Markdown text (fenced blocks are left out)."""
    return CODE_SPAN.findall(FENCE.sub("", text))


def expand(span: str) -> list:
    """`a.{h,cpp}` -> [a.h, a.cpp]; a span without braces is itself."""
    match = BRACES.search(span)
    if not match:
        return [span]
    return [span[:match.start()] + part + span[match.end():] for part in match.group(1).split(",")]


def as_path(candidate: str):
    """The path a span names, or None when it is not a path this check reads."""
    if not candidate or any(c.isspace() for c in candidate) or "/" not in candidate:
        return None
    if candidate.startswith("../") or any(c in NOT_A_PATH for c in candidate):
        return None
    parts = [p for p in candidate.split("/") if p]
    if not parts or parts[0] == "build" or parts[0].startswith("build-"):
        return None
    if any(PLACEHOLDER.match(p) for p in parts):
        return None
    if candidate.endswith("/") or EXTENSION.search(parts[-1]):
        return candidate
    return None


def paths_in(text: str) -> list:
    paths = []
    for span in code_spans(text):
        for candidate in expand(span):
            path = as_path(candidate)
            if path:
                paths.append(path)
    return paths


def exists(root: pathlib.Path, path: str) -> bool:
    return (root / path).exists() or (root / HEADER_BASE / path).exists()


def linked_readmes(root: pathlib.Path, page: pathlib.Path) -> list:
    """The README.md files the page links to, in the order it names them."""
    readmes = []
    for target in LINK.findall(page.read_text(encoding="utf-8")):
        target = target.split("#")[0]
        if target.endswith("README.md"):
            path = (page.parent / target).resolve()
            if path.is_file() and path not in readmes:
                readmes.append(path)
    return readmes


def broken_links(page: pathlib.Path, text: str) -> list:
    problems = []
    for target in LINK.findall(text):
        if re.match(r"^[a-z]+:", target) or target.startswith("#"):
            continue  # http:, mailto:, an anchor on the same page
        if not (page.parent / target.split("#")[0]).exists():
            problems.append(target)
    return problems


def folders_under(root: pathlib.Path) -> list:
    folders = []
    for base in (HEADER_BASE, "src"):
        if (root / base).is_dir():
            folders += sorted(p for p in (root / base).rglob("*") if p.is_dir()
                              and not any(part.startswith((".", "__")) for part in p.relative_to(root).parts))
    return [p.relative_to(root).as_posix() for p in folders]


def main() -> int:
    # The tree to check: the argument, else this repository.
    root = pathlib.Path(sys.argv[1]).resolve() if len(sys.argv) > 1 else pathlib.Path(__file__).resolve().parent.parent
    page = root / MAP
    if not page.is_file():
        print(f"{MAP}: no such file")
        print("check_architecture: 1 problem")
        return 1
    problems = []
    size = len(page.read_bytes())
    if size > MAX_BYTES:
        problems.append(f"{MAP}: {size} bytes, over the limit of {MAX_BYTES}")
    files = [page] + linked_readmes(root, page)
    for file in files:
        name = file.relative_to(root).as_posix()
        text = file.read_text(encoding="utf-8")
        for path in paths_in(text):
            if not exists(root, path):
                problems.append(f"{name}: `{path}` does not exist")
        for target in broken_links(file, text):
            problems.append(f"{name}: link ({target}) leads nowhere")
    named = set()
    for span in code_spans(page.read_text(encoding="utf-8")):
        named.update(c.rstrip("/") for c in expand(span))
    for folder in folders_under(root):
        if folder not in named:
            problems.append(f"{MAP}: folder `{folder}/` is not named")
    for problem in problems:
        print(problem)
    print(f"check_architecture: {MAP} ({size} bytes) and {len(files) - 1} READMEs, {len(problems)} problems")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
