#!/usr/bin/python3
"""Learning curves of a MinAtar recipe: runs each game and seed with `moonseed run`, one after
the other (each run has the whole machine), and writes per game an SVG of return against frames
and against wall-clock minutes, plus a Markdown table of the results (docs/envs-minatar.md).

    /usr/bin/python3 bench/minatar_curves.py [--games Breakout,SpaceInvaders] [--seeds 1,2,3]
        [--frames 5000000] [--example examples/minatar_vtrace.lua] [--out docs/img]
        [--moonseed build/moonseed] [--runs /tmp/minatar-curves] [--metric return_mean]

Wall-clock time is the run's `time_s` (from the start of `moonseed run`, actors' start-up
included); the return is `return_mean` (the env's own return, mean of the last 100 episodes), or
with `--metric eval_return_mean` that of the evaluation envs (R2D2's training envs explore with
epsilons up to 0.4, so their return understates the policy; its recipes keep 2 envs per actor
evaluating at epsilon 1e-3).
Needs only Debian's python3 (no numpy, no matplotlib).
"""
import argparse
import json
import os
import subprocess
import sys
import time

GAMES = ["Asterix", "Breakout", "Freeway", "Seaquest", "SpaceInvaders"]
# The MinAtar paper's returns after 5M frames (Young & Tian 2019, its learning-curve figure, mean of
# 30 runs, full 6-action sets), read off the plot to about +-1 (+-5 for SpaceInvaders' AC):
# (DQN with experience replay, actor-critic AC(lambda = 0.8)). Drawn as dashed lines.
PAPER = {"Asterix": (17, 19), "Breakout": (10, 17.5), "Freeway": (50, 47.5), "Seaquest": (20, 15.5),
         "SpaceInvaders": (43, 185)}
COLORS = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e"]


def run_one(args, game, seed):
    runs_dir = os.path.join(args.runs, "%s-seed%d" % (game, seed))
    if args.reuse and os.path.isdir(runs_dir):
        return read_rows(runs_dir, args.metric)
    os.makedirs(runs_dir, exist_ok=True)
    command = [args.moonseed, "run", args.example, "env.id=MinAtar/%s-v1" % game, "seed=%d" % seed,
               "stop.frames=%d" % args.frames, "log.interval_s=10", "runs_dir=" + runs_dir]
    print("$ " + " ".join(command), flush=True)
    started = time.time()
    with open(os.path.join(runs_dir, "output.txt"), "w") as out:
        code = subprocess.call(command, stdout=out, stderr=subprocess.STDOUT)
    if code != 0:
        raise SystemExit("%s seed %d: moonseed run exited %d (see %s/output.txt)" % (game, seed, code, runs_dir))
    rows = read_rows(runs_dir, args.metric)
    print("  %s seed %d: %.0f s, final return %.2f" % (game, seed, time.time() - started,
                                                          rows[-1][2] if rows else float("nan")),
          flush=True)
    return rows


def read_rows(runs_dir, metric):
    """(frames, time_s, the metric) of each metrics row of the run under `runs_dir` that has it."""
    run_dir = [d for d in os.listdir(runs_dir) if os.path.isdir(os.path.join(runs_dir, d))][0]
    rows = []
    with open(os.path.join(runs_dir, run_dir, "metrics.jsonl")) as f:
        for line in f:
            row = json.loads(line)
            if row.get(metric) is not None and "frames" in row:
                rows.append((row["frames"], row["time_s"], row[metric]))
    return rows


def svg(curves, x_index, x_label, x_scale, title, references=()):
    """A line chart: one polyline per seed, and a dashed line per (label, value) reference."""
    width, height, left, bottom, top, right = 480, 300, 55, 40, 30, 15
    xs = [p[x_index] * x_scale for rows in curves.values() for p in rows]
    ys = [p[2] for rows in curves.values() for p in rows] + [value for _, value in references]
    x_max = max(xs) if xs else 1.0
    y_min, y_max = min(0.0, min(ys) if ys else 0.0), max(ys) if ys else 1.0
    y_max = y_max if y_max > y_min else y_min + 1.0

    def px(x):
        return left + (width - left - right) * x / x_max

    def py(y):
        return height - bottom - (height - bottom - top) * (y - y_min) / (y_max - y_min)

    out = ['<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" font-family="sans-serif" '
           'font-size="11">' % (width, height),
           '<rect width="100%" height="100%" fill="white"/>',
           '<text x="%d" y="18" font-size="13">%s</text>' % (left, title)]
    for i in range(5):
        y = y_min + (y_max - y_min) * i / 4
        x = x_max * i / 4
        out.append('<line x1="%d" x2="%d" y1="%.1f" y2="%.1f" stroke="#ddd"/>' % (left, width - right, py(y), py(y)))
        out.append('<text x="%d" y="%.1f" text-anchor="end">%.3g</text>' % (left - 4, py(y) + 4, y))
        out.append('<text x="%.1f" y="%d" text-anchor="middle">%.3g</text>' % (px(x), height - bottom + 14, x))
    out.append('<text x="%d" y="%d" text-anchor="middle">%s</text>' % ((left + width) // 2, height - 8, x_label))
    out.append('<text x="12" y="%d" transform="rotate(-90 12 %d)" text-anchor="middle">return (last 100 '
               'episodes)</text>' % ((top + height - bottom) // 2, (top + height - bottom) // 2))
    for label, value in references:
        out.append('<line x1="%d" x2="%d" y1="%.1f" y2="%.1f" stroke="#555" stroke-dasharray="5,4"/>'
                   % (left, width - right, py(value), py(value)))
        out.append('<text x="%d" y="%.1f" text-anchor="end" fill="#555">%s</text>'
                   % (width - right - 4, py(value) - 4, label))
    for k, (seed, rows) in enumerate(sorted(curves.items())):
        points = " ".join("%.1f,%.1f" % (px(p[x_index] * x_scale), py(p[2])) for p in rows)
        color = COLORS[k % len(COLORS)]
        out.append('<polyline fill="none" stroke="%s" stroke-width="1.5" points="%s"/>' % (color, points))
        out.append('<text x="%d" y="%d" fill="%s">seed %d</text>' % (left + 8, top + 14 * (k + 1), color, seed))
    out.append("</svg>")
    return "\n".join(out) + "\n"


def at_frames(rows, frames):
    """The return of the last row at or before `frames`, or None when the run never got there."""
    if not rows or rows[-1][0] < frames * 0.999:
        return None
    before = [p for p in rows if p[0] <= frames * 1.001]
    return before[-1][2] if before else None


def at_minutes(rows, minutes):
    """The return of the last row at or before `minutes` of wall clock, or None when the run
    ended before then."""
    if not rows or rows[-1][1] < minutes * 60:
        return None
    before = [p for p in rows if p[1] <= minutes * 60]
    return before[-1][2] if before else None


def minutes_to(rows, value):
    """Wall-clock minutes at the first row whose return reaches `value`, or None."""
    for frames, time_s, ret in rows:
        if ret >= value:
            return time_s / 60
    return None


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--games", default=",".join(GAMES))
    parser.add_argument("--seeds", default="1,2,3")
    parser.add_argument("--frames", type=int, default=5000000)
    parser.add_argument("--example", default="examples/minatar_vtrace.lua")
    parser.add_argument("--out", default="docs/img")
    parser.add_argument("--moonseed", default="build/moonseed")
    parser.add_argument("--runs", default="/tmp/minatar-curves")
    parser.add_argument("--metric", default="return_mean", choices=["return_mean", "eval_return_mean"],
                        help="the return drawn: the training envs' or the evaluation envs'")
    parser.add_argument("--reuse", action="store_true",
                        help="read runs already under --runs instead of running them again")
    args = parser.parse_args()
    games = [g for g in args.games.split(",") if g]
    unknown = [g for g in games if g not in GAMES]
    if unknown:
        raise SystemExit("unknown game(s) %s; known: %s" % (", ".join(unknown), ", ".join(GAMES)))
    seeds = [int(s) for s in args.seeds.split(",") if s]
    os.makedirs(args.out, exist_ok=True)
    table = ["| game | seed | return at 1M frames | at 2.5M | at 5M | at 5 min | at 15 min | final "
             "| frames | minutes | paper DQN / AC(0.8) | minutes to DQN's |", "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for game in games:
        curves = {}
        for seed in seeds:
            rows = run_one(args, game, seed)
            curves[seed] = rows
            last = rows[-1] if rows else (0, 0, float("nan"))
            values = [at_frames(rows, f) for f in (1e6, 2.5e6, 5e6)] + [at_minutes(rows, m) for m in (5, 15)]
            cells = ["-" if v is None else "%.2f" % v for v in values]
            dqn, ac = PAPER[game]
            reached = minutes_to(rows, dqn)
            table.append("| %s-v1 | %d | %s | %.2f | %.2fM | %.1f | %g / %g | %s |" % (
                game, seed, " | ".join(cells), last[2], last[0] / 1e6, last[1] / 60, dqn, ac,
                "not reached" if reached is None else "%.1f" % reached))
        for x_index, suffix, label, scale in ((0, "frames", "frames (millions)", 1e-6),
                                              (1, "minutes", "wall-clock minutes, 2 cores", 1 / 60)):
            path = os.path.join(args.out, "minatar_%s_%s.svg" % (game.lower(), suffix))
            with open(path, "w") as f:
                dqn, ac = PAPER[game]
                f.write(svg(curves, x_index, label, scale, "MinAtar/%s-v1, %s" % (game, os.path.basename(args.example)),
                            (("paper DQN, 5M frames", dqn), ("paper AC(0.8), 5M frames", ac))))
            print("  wrote " + path, flush=True)
    print("\n".join(table))


if __name__ == "__main__":
    sys.exit(main())
