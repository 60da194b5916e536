"""bench/reproduce.py's steps through the `embshard` CLI, each cached under --work: task sets
(`task gen`, kept while their folder is there), trained policies (`train`, finished once
OUT.done exists, resumed from OUT.ckpt otherwise) and comparisons (`compare`, the CSV and the
sharders it was made for), so a rerun computes only what is missing. Also the atomic CSV writer
for the experiments' own caches. Depends on no other reproduce_* module."""
import csv
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
E = os.environ.get("EMBSHARD", os.path.join(HERE, "..", "build", "bin", "embshard"))


def run(*args):
    result = subprocess.run([E, *map(str, args)], capture_output=True, text=True)
    if result.returncode != 0:
        sys.exit(f"reproduce: embshard {' '.join(map(str, args))} failed:\n{result.stderr.strip()}")
    return result.stdout


def gen(protocol, devices, count, seed, out):
    if not os.path.isdir(out):
        run("task", "gen", "--quiet", "--protocol", protocol, "--devices", devices, "--count", count,
            "--seed", seed, "--out", out)
    return out


def compare(tasks, sharders, out, cost="default", input_comm="omit", objective="max_sum_ms"):
    """Per sharder (by our name): task → (objective ms, balance) of its valid plans; and the task
    count. The input all-to-all is omitted as in the papers' benchmarks unless `input_comm` says
    otherwise; `objective` is the CSV column reported (max_sum_ms, the papers'; step_ms). The CSV
    names sharders by canonical spec in the order they were given, so OUT.sharders keeps that
    order; a cached OUT made for other sharders is made again."""
    specs = list(sharders.values())
    assert len(set(specs)) == len(specs), "two names for one sharder spec"
    order_file = out + ".sharders"
    if not (os.path.exists(out) and os.path.exists(order_file)
            and sorted(open(order_file).read().splitlines()) == sorted(specs)):
        run("compare", "--quiet", "--tasks", tasks, "--sharders", ";".join(specs), "--cost", cost,
            "--backend", "sim", "--input-comm", input_comm, "--out", out)
        with open(order_file, "w") as f:
            f.write("\n".join(specs) + "\n")
    given = open(order_file).read().splitlines()   # the specs, in the CSV's order
    name_of = {spec: name for name, spec in sharders.items()}
    rows = list(csv.DictReader(open(out)))
    canonical = list(dict.fromkeys(r["sharder"] for r in rows))
    results = {name: {} for name in sharders}
    for row in rows:
        if row["status"] == "ok":
            name = name_of[given[canonical.index(row["sharder"])]]
            results[name][row["task_id"]] = (float(row[objective]), float(row["balance"]))
    return results, len({r["task_id"] for r in rows})


def train(kind, tasks, seed, out, *extra):
    """The policy OUT, trained unless a finished one is there (OUT.done); a policy a killed run left
    half-trained is resumed from its checkpoint, not taken as finished."""
    if not os.path.exists(out + ".done"):
        resume = ["--resume"] if os.path.isdir(out + ".ckpt") else []
        run("train", kind, "--tasks", tasks, "--backend", "sim", "--seed", seed, "--out", out, *resume, *extra)
        open(out + ".done", "w").close()
    return f"{kind}:policy={out}"


def write_csv(path, rows):
    fd, tmp = tempfile.mkstemp(dir=os.path.dirname(path), prefix=os.path.basename(path) + ".tmp-")
    with os.fdopen(fd, "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    os.replace(tmp, path)
