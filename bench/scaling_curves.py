#!/usr/bin/python3
"""How a run's cost grows on one host: real `moonseed run`s swept along one axis at a time, each
point measured while it trains, as ratios to the axis's first point (docs/performance.md
"Scaling on one host", docs/scaling-design.md).

    /usr/bin/python3 bench/scaling_curves.py [--axis envs,actors,obs] [--seconds 20]
        [--moonseed build/moonseed] [--points 16,64,256,1024] [--out FILE.md]

Axes (each from examples/cartpole_vtrace.lua unless said):
  envs    one actor with 16, 64, 256 and 1024 envs
  actors  1, 2, 4, 16 and 64 actors of 16 envs
  obs     observation size: CartPole (16 bytes), MinAtar Breakout (400 bytes,
          examples/minatar_vtrace.lua), SyntheticAtari-v0 (210x160x3 bytes, bench/synthetic_atari.lua),
          2 actors of 16 envs each
Per point: env frames per second over the last two thirds of the run (the first third is
start-up), the learner's peak resident memory and the actors' together, each learner thread's
share of a core by its name (ms-infer, ms-train, ms-io, ms-prefetch: base/thread_name.h; "-" for one
the run does not have, e.g. ms-io with inference.io_threads = 0, the default), the
actors' processes' together, the mean inference batch and the FIFO's fill. `limit` names what
used the most of a core: the part that holds the run back once it nears 1.0 (the actors'
figure is a sum over processes, so it can pass 1.0 on several cores).
Needs only Debian's python3. Other work on the machine moves the figures: run it alone.
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

TICKS = os.sysconf("SC_CLK_TCK")
THREADS = ["ms-infer", "ms-train", "ms-io", "ms-prefetch"]


def read(path):
    try:
        with open(path) as f:
            return f.read()
    except OSError:
        return ""


def cpu_ticks(stat_text):
    """utime + stime of a /proc/.../stat line (fields after the command's closing paren)."""
    fields = stat_text[stat_text.rfind(")") + 2:].split()
    return int(fields[11]) + int(fields[12]) if len(fields) > 12 else 0


def threads_of(pid):
    """{thread name: CPU ticks} for the learner's threads, summed by name."""
    out = {}
    base = "/proc/%d/task" % pid
    for tid in os.listdir(base) if os.path.isdir(base) else []:
        name = read("%s/%s/comm" % (base, tid)).strip()
        out[name] = out.get(name, 0) + cpu_ticks(read("%s/%s/stat" % (base, tid)))
    return out


def children_of(pid):
    """PIDs whose parent is `pid` (the learner's local actors)."""
    kids = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            stat = read("/proc/%s/stat" % entry)
            fields = stat[stat.rfind(")") + 2:].split()
            if len(fields) > 1 and fields[1] == str(pid):
                kids.append(int(entry))
    return kids


def rss_kb(pid, key):
    for line in read("/proc/%d/status" % pid).splitlines():
        if line.startswith(key + ":"):
            return int(line.split()[1])
    return 0


def sample(pid):
    actors = children_of(pid)
    return {"t": time.time(), "threads": threads_of(pid),
            "actors": sum(cpu_ticks(read("/proc/%d/stat" % a)) for a in actors),
            "actors_rss_kb": sum(rss_kb(a, "VmRSS") for a in actors),
            "learner_hwm_kb": rss_kb(pid, "VmHWM")}


def run_point(args, script, overrides, label):
    runs = tempfile.mkdtemp(prefix="moonseed-scaling-")
    command = [args.moonseed, "run", script, "runs_dir=" + runs, "stop.seconds=0", "stop.return_mean=0",
               "stop.frames=0", "stop.wall_seconds=%g" % args.seconds, "log.interval_s=1",
               "checkpoint.interval_s=0", "--quiet"] + overrides
    log = open(os.path.join(runs, "output.txt"), "w")
    proc = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT)
    samples = []
    start = time.time()
    while proc.poll() is None:
        s = sample(proc.pid)
        if s["threads"]:
            samples.append(s)
        time.sleep(0.5)
    log.close()
    try:
        if proc.returncode != 0:
            raise SystemExit("%s: moonseed run exited %d:\n%s" % (label, proc.returncode,
                                                                 read(os.path.join(runs, "output.txt"))[-3000:]))
        run_dir = [d for d in os.listdir(runs) if os.path.isdir(os.path.join(runs, d))][0]
        rows = [json.loads(line) for line in open(os.path.join(runs, run_dir, "metrics.jsonl"))]
    finally:
        shutil.rmtree(runs, ignore_errors=True)
    ticks = [r for r in rows if "fps" in r and "frames" in r]
    window = [r for r in ticks if r["time_s"] >= args.seconds / 3]
    if len(window) < 2 or len(samples) < 4:
        raise SystemExit("%s: too short a run to measure (%d rows, %d samples); raise --seconds" %
                         (label, len(window), len(samples)))
    fps = (window[-1]["frames"] - window[0]["frames"]) / (window[-1]["time_s"] - window[0]["time_s"])
    # CPU shares over the same part of the run: from the sample a third in to the last one a
    # second before the stop (threads and actors that have exited no longer count).
    first = next(s for s in samples if s["t"] - start >= args.seconds / 3)
    last = [s for s in samples if s["t"] - start <= args.seconds - 1][-1]
    seconds = last["t"] - first["t"]
    if seconds <= 0:
        raise SystemExit("%s: too short a run to measure; raise --seconds" % label)
    share = {name: (last["threads"][name] - first["threads"][name]) / TICKS / seconds
             for name in THREADS if name in first["threads"] and name in last["threads"]}
    share["actors"] = (last["actors"] - first["actors"]) / TICKS / seconds
    return {"label": label, "fps": fps, "learner_mb": max(s["learner_hwm_kb"] for s in samples) / 1024,
            "actors_mb": max(s["actors_rss_kb"] for s in samples) / 1024, "share": share,
            "batch": window[-1].get("inference_batch_envs") or 0, "queue": window[-1].get("queue") or 0}


def points(args, axis):
    cartpole = os.path.join(args.source, "examples", "cartpole_vtrace.lua")
    if axis == "envs":
        for n in [int(x) for x in args.points.split(",")]:
            yield "%d envs" % n, cartpole, ["topology.actors=1", "topology.envs_per_actor=%d" % n,
                                            "inference.max_batch=%d" % n]
    elif axis == "actors":
        for n in [1, 2, 4, 16, 64]:
            yield "%d actors" % n, cartpole, ["topology.actors=%d" % n, "topology.envs_per_actor=16",
                                              "inference.max_batch=%d" % min(16 * n, 1024)]
    elif axis == "obs":
        common = ["topology.actors=2", "topology.envs_per_actor=16", "inference.max_batch=32"]
        yield "CartPole (16 B)", cartpole, common
        yield "MinAtar Breakout (400 B)", os.path.join(args.source, "examples", "minatar_vtrace.lua"), common
        yield "SyntheticAtari (100 KB)", os.path.join(args.source, "bench", "synthetic_atari.lua"), common
    else:
        raise SystemExit("unknown axis %r (envs, actors, obs)" % axis)


def table(axis, results):
    base = results[0]
    lines = ["### %s" % axis, "",
             "| point | frames/s | vs first | learner MB | actors MB | " + " | ".join(THREADS) +
             " | actors | inference batch | queue | limit |",
             "|---" * (9 + len(THREADS)) + "|"]
    for r in results:
        limit = max(r["share"], key=r["share"].get)
        lines.append("| %s | %.0f | %.2f | %.0f | %.0f | %s | %.2f | %.1f | %d | %s |" % (
            r["label"], r["fps"], r["fps"] / base["fps"], r["learner_mb"], r["actors_mb"],
            " | ".join("%.2f" % r["share"][t] if t in r["share"] else "-" for t in THREADS), r["share"]["actors"],
            r["batch"], r["queue"], limit))
    return "\n".join(lines) + "\n"


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--axis", default="envs,actors,obs")
    parser.add_argument("--seconds", type=float, default=20)
    parser.add_argument("--points", default="16,64,256,1024", help="the envs axis's env counts")
    parser.add_argument("--moonseed", default="build/moonseed")
    parser.add_argument("--source", default=os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    parser.add_argument("--out", default="", help="also write the tables to this Markdown file")
    args = parser.parse_args()
    text = ""
    for axis in [a for a in args.axis.split(",") if a]:
        results = []
        for label, script, overrides in points(args, axis):
            print("  %s: %s" % (axis, label), flush=True)
            results.append(run_point(args, script, overrides, label))
        text += table(axis, results) + "\n"
        print(table(axis, results), flush=True)
    if args.out:
        with open(args.out, "w") as f:
            f.write(text)


if __name__ == "__main__":
    sys.exit(main())
