#!/usr/bin/python3
"""Draws the CSV of `moonseed plot --csv` with matplotlib (Debian: python3-matplotlib).

For a figure made in your own style, or beside curves from other libraries: the CSV holds the
series exactly as `moonseed plot` drew them (smoothed as drawn, the seeds' mean and band), one
row per point: metric, env, line, x (frames or time_s), y, low, high (low and high empty for a
single run). This script draws one panel per metric and env, as `moonseed plot` does
(docs/plot.md "Your own figure").

  build/moonseed plot runs --csv curves.csv -o curves.png
  /usr/bin/python3 examples/plot_csv_matplotlib.py curves.csv -o curves-matplotlib.png
"""
import argparse
import csv
import sys
from collections import OrderedDict

import matplotlib

matplotlib.use("Agg")  # no display needed
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.ticker import EngFormatter  # noqa: E402


def read_panels(path):
    """{(metric, env): {line: {"x": [...], "y": [...], "low": [...], "high": [...]}}}, in file order."""
    panels = OrderedDict()
    with open(path, newline="") as f:
        rows = csv.reader(f)
        header = next(rows)
        if header[:3] != ["metric", "env", "line"] or len(header) != 7:
            sys.exit("%s: not a CSV of `moonseed plot --csv` (its header: %s)" % (path, ",".join(header)))
        x_name = header[3]
        for metric, env, line, x, y, low, high in rows:
            series = panels.setdefault((metric, env), OrderedDict()).setdefault(
                line, {"x": [], "y": [], "low": [], "high": []})
            series["x"].append(float(x))
            series["y"].append(float(y))
            if low != "":
                series["low"].append(float(low))
                series["high"].append(float(high))
    return x_name, panels


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("csv", help="the CSV of `moonseed plot --csv`")
    parser.add_argument("-o", "--output", default="curves-matplotlib.png", help="the image (.png, .svg, .pdf)")
    parser.add_argument("--title", default="", help="a title above the panels")
    args = parser.parse_args()

    x_name, panels = read_panels(args.csv)
    if not panels:
        sys.exit("%s has no rows" % args.csv)
    envs = list(OrderedDict.fromkeys(env for _, env in panels))
    metrics = list(OrderedDict.fromkeys(metric for metric, _ in panels))
    cols = min(len(envs), 3)
    fig, axes = plt.subplots(len(metrics), cols, figsize=(6 * cols if cols > 1 else 9, 4 * len(metrics)),
                             squeeze=False)
    colours = {}
    for r, metric in enumerate(metrics):
        for c, env in enumerate(envs[:cols]):
            ax = axes[r][c]
            lines = panels.get((metric, env))
            if not lines:
                ax.set_visible(False)
                continue
            for name, s in lines.items():
                colour = colours.setdefault(name, "C%d" % (len(colours) % 10))
                if s["low"]:
                    ax.fill_between(s["x"], s["low"], s["high"], color=colour, alpha=0.25, linewidth=0)
                ax.plot(s["x"], s["y"], color=colour, linewidth=2, label=name)
            ax.set_title((env + ": " if len(envs) > 1 else "") + metric)
            ax.set_xlabel("env frames" if x_name == "frames" else "wall time (s)")
            ax.set_ylabel(metric)
            ax.xaxis.set_major_formatter(EngFormatter(sep=""))
            ax.set_xlim(left=0)
            ax.grid(True, alpha=0.3)
            ax.legend(loc="lower right", fontsize="small")
    if args.title:
        fig.suptitle(args.title)
    fig.tight_layout()
    fig.savefig(args.output, dpi=100)
    print("wrote %s (%d panels)" % (args.output, len(panels)))


if __name__ == "__main__":
    main()
