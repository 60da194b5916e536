#!/usr/bin/env python3
"""The HTML reports in a real browser (headless Chromium, Debian's `chromium` package).

Makes a plan report (four sharders' plans of one task) and a comparison report with the real CLI,
opens each in headless Chromium with `?selfcheck` (the page then appends a <pre id="selfcheck">
with every SVG's rendered size and element count and every script error), and checks: no script
error, every SVG rendered with a non-zero size and drawn elements, the expected figures present.
Saves a screenshot of each report next to the reports (argument 2, a directory).

Usage: test_report_browser.py EMBSHARD_CLI OUT_DIR. Exit 77 (skipped) when Chromium is missing,
unless CI=true, where a missing browser is a failure.
"""
import html
import json
import os
import pathlib
import re
import shutil
import subprocess
import sys


def fail(message):
    print(f"FAIL: {message}")
    sys.exit(1)


def run(*args):
    result = subprocess.run(args, capture_output=True, text=True, timeout=600)
    if result.returncode != 0:
        fail(f"{' '.join(args)} exited {result.returncode}: {result.stdout}{result.stderr}")
    return result.stdout


def chromium():
    for name in ("chromium", "chromium-browser", "google-chrome"):
        path = shutil.which(name)
        if path:
            return path
    if os.environ.get("CI") == "true":
        fail("no Chromium on PATH (scripts/setup.sh installs Debian's chromium)")
    print("SKIP: no Chromium on PATH")
    sys.exit(77)


BROWSER_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
                 "--disable-dev-shm-usage", "--virtual-time-budget=5000"]


def self_check(browser, page, profile):
    dom = run(browser, *BROWSER_FLAGS, f"--user-data-dir={profile}", "--dump-dom",
              page.as_uri() + "?selfcheck")
    found = re.search(r'<pre id="selfcheck">(.*?)</pre>', dom, re.S)
    if not found:
        fail(f"{page}: the page's self-check did not run (no script ran?)")
    return json.loads(html.unescape(found.group(1)))


def check_report(browser, page, expected_svgs, must_contain, screenshot, profile):
    text = page.read_text(encoding="utf-8")
    for needle in must_contain:
        if needle not in text:
            fail(f"{page}: '{needle}' missing")
    if re.search(r"(src|href)=['\"]https?:", text):
        fail(f"{page}: the report fetches something from the network")
    check = self_check(browser, page, profile)
    if check["errors"]:
        fail(f"{page}: script errors: {check['errors']}")
    svgs = check["svgs"]
    if len(svgs) < expected_svgs:
        fail(f"{page}: {len(svgs)} SVG figures, expected at least {expected_svgs}")
    for i, svg in enumerate(svgs):
        if svg["w"] <= 0 or svg["h"] <= 0 or svg["n"] <= 0:
            fail(f"{page}: SVG {i} renders as {svg}")
    run(browser, *BROWSER_FLAGS, f"--user-data-dir={profile}", f"--screenshot={screenshot}",
        "--window-size=1280,2400", page.as_uri())
    if not screenshot.exists() or screenshot.stat().st_size < 10_000:
        fail(f"{screenshot}: no screenshot")
    print(f"ok: {page.name}: {len(svgs)} figures, no script errors, screenshot {screenshot}")


def main():
    cli, out = sys.argv[1], pathlib.Path(sys.argv[2])
    browser = chromium()
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    profile = out / "profile"
    run(cli, "task", "gen", "--quiet", "--protocol", "neuroshard", "--devices", "4", "--max-dim", "64",
        "--count", "3", "--seed", "7", "--out", str(out / "tasks"))
    task = out / "tasks" / "000.json"
    plans = []
    for sharder in ("greedy:balance=lookup", "torchrec:reservation=fixed_percentage,storage_reservation=0",
                    "neuroshard", "greedy:balance=size"):
        plan = out / (sharder.replace(":", "-").replace("=", "-").replace(",", "-") + ".json")
        run(cli, "plan", "--quiet", "--task", str(task), "--sharder", sharder, "--out", str(plan))
        plans.append(str(plan))
    plan_page = out / "plans.html"
    run(cli, "report", "--task", str(task), "--plan", ";".join(plans), "--out", str(plan_page))
    # 4 plans × (step bars, memory, placement map)
    check_report(browser, plan_page, 12, ["straggler", "ms per step", "budget", "The plans side by side"],
                 out / "plans.png", profile)
    compare_page = out / "compare.html"
    run(cli, "compare", "--quiet", "--tasks", str(out / "tasks"), "--sharders",
        "greedy;torchrec:reservation=fixed_percentage,storage_reservation=0;neuroshard", "--out", str(out / "results.csv"), "--report", str(compare_page))
    check_report(browser, compare_page, 2, ["W/T/L", "Step relative to", "step ÷ reference step"],
                 out / "compare.png", profile)
    # A re-plan after a host is added (8 devices on 2 hosts of 4: the task's own 4 as the old plan's).
    old_plan = out / "old.json"
    run(cli, "plan", "--quiet", "--task", str(task), "--out", str(old_plan))
    grown = json.loads(task.read_text())
    grown["topology"] = {"preset": "v100:nodes=2,gpus_per_node=4"}
    grown_task = out / "grown.json"
    grown_task.write_text(json.dumps(grown))
    replan_page = out / "replan.html"
    run(cli, "replan", "--quiet", "--task", str(grown_task), "--from", str(old_plan), "--max-move", "25%",
        "--report", str(replan_page))
    check_report(browser, replan_page, 1, ["GiB moved", "What each device sends and receives (the chosen plan)", "Every candidate"],
                 out / "replan.png", profile)
    samples = out / "compute.jsonl"
    run(cli, "profile", "compute", "--quiet", "--samples", "15", "--batch", "64", "--repeats", "1",
        "--warmup", "0", "--max-tables", "3", "--max-bytes", "100000000", "--out", str(samples))
    fit_page = out / "fit.html"
    run(cli, "profile", "calibrate", "--quiet", "--samples", str(samples), "--report", str(fit_page))
    check_report(browser, fit_page, 2, ["predicted ms", "measured ms", "median error, held out"],
                 out / "fit.png", profile)


if __name__ == "__main__":
    main()
