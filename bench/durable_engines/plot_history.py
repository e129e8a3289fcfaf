"""Draws the stepped Temporal adapter's history sizes (history.py --stepped --out FILE) as a PNG.

    python bench/durable_engines/plot_history.py FILE docs/durable_history.png

Needs matplotlib (bench/scale/requirements.txt pins it; not in the project's .venv): run it with a
Python that has it. Log-log axes; a dotted line of slope 1 (linear) and one of slope 2
(quadratic) through the first delta point, to read the growth against.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any


def main() -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    records: list[dict[str, Any]] = [
        json.loads(line) for line in Path(sys.argv[1]).read_text().splitlines() if line.strip()
    ]
    fig, ax = plt.subplots(1, 2, figsize=(11, 4.5))
    series = (
        ("tools", "delta", "delta (the adapter), no ask", "tab:blue", "o"),
        ("asks", "delta", "delta, an ask per call", "tab:green", "s"),
        ("tools", "journal", "whole journal in every input, no ask", "tab:red", "^"),
    )
    for shape, carry, label, color, marker in series:
        rs = sorted(
            (r for r in records if r["shape"] == shape and r["carry"] == carry),
            key=lambda r: r["model_requests"],
        )
        if not rs:
            continue
        xs = [r["model_requests"] for r in rs]
        kw = {"color": color, "marker": marker, "label": label}
        ax[0].plot(xs, [r["all_runs_bytes"] for r in rs], **kw)
        ax[1].plot(xs, [r["activity_input_bytes"] for r in rs], **kw)
    for a, key in ((ax[0], "all_runs_bytes"), (ax[1], "activity_input_bytes")):
        base = [r for r in records if r["carry"] == "delta" and r["shape"] == "tools"]
        if base:
            first = min(base, key=lambda r: r["model_requests"])
            x0, y0 = first["model_requests"], first[key]
            xs = [x0, x0 * 100]
            a.plot(xs, [y0, y0 * 100], color="grey", linestyle=":", label="slope 1 (linear)")
            a.plot(xs, [y0, y0 * 10_000], color="grey", linestyle="--", label="slope 2")
        a.set_xscale("log")
        a.set_yscale("log")
        a.set_xlabel("model requests in one turn")
        a.grid(True, which="both", alpha=0.3)
    ax[0].set_ylabel("bytes")
    ax[0].set_title("Temporal history, all runs (fetch_history JSON)")
    ax[1].set_title("activity inputs, summed")
    ax[1].legend(fontsize=8)
    fig.suptitle("contenox.durable.temporal_stepped: history after N model requests")
    fig.tight_layout()
    fig.savefig(sys.argv[2], dpi=110)


if __name__ == "__main__":
    main()
