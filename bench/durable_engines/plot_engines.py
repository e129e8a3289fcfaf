"""Draws what each durable engine records for one turn of N model requests, and the checkpoint's
size, from the measured series in a JSON-lines file (one series per line: name, the command that
measured it, [N, bytes] points), as a PNG:

    python bench/durable_engines/plot_engines.py docs/durable_engines.jsonl docs/durable_engines.png

The numbers are the ones docs/benchmarks.md records (each series names the command that produced
it). Needs matplotlib (bench/scale/requirements.txt pins it; not in the project's .venv). Log-log
axes with a dotted slope-1 line (linear) and a dashed slope-2 line (quadratic) to read growth
against.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path


def main() -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    series = [json.loads(line) for line in Path(sys.argv[1]).read_text().splitlines() if line]
    fig, ax = plt.subplots(figsize=(9, 5.5))
    markers = "os^vD<>p"
    for i, s in enumerate(series):
        xs = [p[0] for p in s["points"]]
        ys = [p[1] for p in s["points"]]
        ax.plot(xs, ys, marker=markers[i % len(markers)], label=s["series"])
    x0, y0 = 10, 3533
    ax.plot([x0, 1000], [y0, y0 * 100], ":", color="grey", label="slope 1 (linear)")
    quadratic = [y0 * 10, y0 * 10 * 10_000]
    ax.plot([x0, 1000], quadratic, "--", color="grey", label="slope 2 (quadratic)")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("model requests in one turn")
    ax.set_ylabel("bytes the engine records (or the checkpoint's size)")
    ax.set_title("durable turns: what is recorded after N model requests")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=7.5, loc="upper left")
    fig.tight_layout()
    fig.savefig(sys.argv[2], dpi=100)


if __name__ == "__main__":
    main()
