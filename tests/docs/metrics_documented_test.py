#!/usr/bin/python3
"""Every key `moonseed run` writes to metrics.jsonl is documented in docs/metrics.md.

Runs short V-trace, APPO and R2D2 trainings of the shipped CartPole examples (real
learner, real actor processes, experience recording and evaluation envs on,
so those columns appear too), then checks every key of every row against the
keys listed in the first column of docs/metrics.md's tables. The doc is read
at test time: a new column only needs its line in the doc.

usage: metrics_documented_test.py MOONSEED_BINARY SOURCE_DIR
"""
import json
import os
import re
import subprocess
import sys
import tempfile


def documented_keys(doc_path):
    """The names in backticks in the first cell of every table row."""
    keys = set()
    with open(doc_path, encoding="utf-8") as f:
        for line in f:
            if not line.startswith("|"):
                continue
            first = line.split("|")[1]
            keys.update(re.findall(r"`([A-Za-z0-9_]+)`", first))
    return keys


def run(binary, script, runs_dir, overrides):
    """One run to its stop rule; the rows of its metrics.jsonl."""
    os.makedirs(runs_dir)
    log_path = os.path.join(runs_dir, "learner.log")
    with open(log_path, "w") as log:
        code = subprocess.call([binary, "run", script, "runs_dir=" + runs_dir] + overrides,
                               stdout=log, stderr=subprocess.STDOUT, timeout=240)
    output = open(log_path).read()
    if code != 0:
        sys.exit("%s exited with %d:\n%s" % (script, code, output))
    dirs = [d for d in os.listdir(runs_dir) if os.path.isdir(os.path.join(runs_dir, d))]
    if len(dirs) != 1:
        sys.exit("expected one run directory in %s, found %s:\n%s" % (runs_dir, dirs, output))
    with open(os.path.join(runs_dir, dirs[0], "metrics.jsonl")) as f:
        return [json.loads(line) for line in f]


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    binary, source = sys.argv[1], sys.argv[2]
    documented = documented_keys(os.path.join(source, "docs", "metrics.md"))
    common = ["log.interval_s=0.25", "stop.seconds=4", "stop.return_mean=0", "record.enabled=true"]
    runs = {
        "V-trace": ("cartpole_vtrace.lua", []),
        "APPO": ("cartpole_appo.lua", []),
        "R2D2": ("cartpole_r2d2.lua", ["stop.eval_return_mean=0", "r2d2.min_fill=64", "r2d2.capacity=1000",
                                       "topology.eval_envs_per_actor=1"]),
    }
    missing = {}
    with tempfile.TemporaryDirectory(prefix="moonseed-metrics-doc-") as tmp:
        for algo, (script, extra) in runs.items():
            rows = run(binary, os.path.join(source, "examples", script), os.path.join(tmp, script),
                       common + extra)
            ticks = [r for r in rows if "event" not in r]
            if len(ticks) < 2 or not any(r.get("event") == "stop" for r in rows):
                sys.exit("%s: expected tick rows and a stop row, got %d rows" % (algo, len(rows)))
            # Counters are whole numbers in the JSON: they read back as integers.
            if not isinstance(rows[-1]["frames"], int):
                sys.exit("%s: frames written as %r, not a whole number" % (algo, rows[-1]["frames"]))
            for row in rows:
                for key in row:
                    if key not in documented:
                        missing.setdefault(key, set()).add(algo)
    if missing:
        for key, algos in sorted(missing.items()):
            print("metrics.jsonl key `%s` (%s) is not in docs/metrics.md's tables" % (key, ", ".join(sorted(algos))))
        sys.exit(1)
    print("every metrics.jsonl key of V-trace, APPO and R2D2 runs is documented in docs/metrics.md")


if __name__ == "__main__":
    main()
