#!/usr/bin/env python3
"""Issue 18's figures from one run of the side-by-side harness (its results/runs.raw, JSONL).

    python3 bench/peers/gaps.py target/bench-peers/results/runs.raw

Every figure pairs a contenox client with a floor from the SAME round (run.sh goes round-robin
over the peers, so a drift in machine speed hits both alike) and takes the median over rounds:

- contenox-python against the streaming floor raw-http-stream-python (contenox streams, so that
  is the fair zero): fresh overhead ms/turn (target <= 0.5), session ratio (target <= 1.1x),
  cold start s (target <= 0.1; the whole process for one turn, measured from outside);
- contenox-node: peak RSS MB in each mode (target <= 56; the larger of getrusage from inside and
  /usr/bin/time -v from outside) and cold start s (target < 0.1);
- contenox-rust: per-turn ms beside the Python floors (the Rust HTTP floor is a criterion bench,
  docs/benchmarks.md).

Stdlib only; exits 1 if a needed record is missing, never on a missed target (it prints them).
"""

import json
import statistics
import sys
from collections.abc import Callable
from typing import Any

Rec = dict[str, Any]


def load(path: str) -> list[Rec]:
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


def steady(recs: list[Rec], name: str, mode: str) -> dict[int, Rec]:
    """{round: result} of the successful steady runs of `name` in `mode`."""
    return {
        r.get("round", 0): r
        for r in recs
        if r.get("name") == name
        and r.get("mode") == mode
        and r.get("phase") == "steady"
        and r.get("rc") == 0
        and "result" in r
    }


def cold(recs: list[Rec], name: str) -> dict[int, float]:
    """{round: whole-process wall seconds} of the one-turn runs of `name`."""
    return {
        r.get("round", 0): r["ext_wall_s"]
        for r in recs
        if r.get("name") == name and r.get("phase") == "cold" and r.get("rc") == 0
    }


def paired(
    a: dict[int, Rec], b: dict[int, Rec], f: Callable[[Rec, Rec], float]
) -> float | None:
    vals = [f(a[k], b[k]) for k in a if k in b]
    return statistics.median(vals) if vals else None


def rss(r: Rec) -> float:
    return max(r["result"].get("peak_rss_mb") or 0, r.get("timev_max_rss_mb") or 0)


def fmt(v: float | None, unit: str = "", nd: int = 2) -> str:
    return "n/a" if v is None else f"{v:.{nd}f}{unit}"


def verdict(v: float | None, ok: Callable[[float], bool]) -> str:
    return "" if v is None else ("  (met)" if ok(v) else "  (MISSED)")


def main() -> int:
    if len(sys.argv) != 2:
        print(__doc__.strip().splitlines()[2].strip(), file=sys.stderr)
        return 2
    recs = load(sys.argv[1])
    meta = next((r for r in recs if r.get("phase") == "meta"), {})
    print(
        f"run: {meta.get('started', '?')} .. {meta.get('finished', '?')}, "
        f"load {meta.get('load_start', '?')} -> {meta.get('load_end', '?')}, "
        f"{meta.get('turns', '?')} turns x {meta.get('repeats', '?')} rounds"
    )
    missing: list[str] = []
    rows: list[tuple[str, str, str]] = []

    py_f, fl_f = (
        steady(recs, "contenox-python", "fresh"),
        steady(recs, "raw-http-stream-python", "fresh"),
    )
    py_s, fl_s = (
        steady(recs, "contenox-python", "session"),
        steady(recs, "raw-http-stream-python", "session"),
    )
    if not (py_f and fl_f and py_s and fl_s):
        missing.append("contenox-python / raw-http-stream-python steady runs")
    over = paired(
        py_f, fl_f, lambda a, b: a["result"]["per_turn_ms"] - b["result"]["per_turn_ms"]
    )
    ratio = paired(
        py_s, fl_s, lambda a, b: a["result"]["per_turn_ms"] / b["result"]["per_turn_ms"]
    )
    py_cold = cold(recs, "contenox-python")
    py_cold_s = statistics.median(py_cold.values()) if py_cold else None
    fl_cold = cold(recs, "raw-http-stream-python")
    rows.append(
        (
            "python fresh overhead over the streaming floor",
            fmt(over, " ms/turn") + verdict(over, lambda v: v <= 0.5),
            "<= 0.5 ms",
        )
    )
    rows.append(
        (
            "python session / streaming floor",
            fmt(ratio, "x") + verdict(ratio, lambda v: v <= 1.1),
            "<= 1.1x",
        )
    )
    rows.append(
        (
            "python cold start (1 turn, whole process)",
            fmt(py_cold_s, " s", 3)
            + verdict(py_cold_s, lambda v: v <= 0.1)
            + (
                f"; streaming floor {statistics.median(fl_cold.values()):.3f} s"
                if fl_cold
                else ""
            ),
            "<= 0.1 s",
        )
    )

    for mode in ("fresh", "session"):
        nd = steady(recs, "contenox-node", mode)
        if not nd:
            missing.append(f"contenox-node {mode} runs")
        peak = statistics.median(rss(r) for r in nd.values()) if nd else None
        rows.append(
            (
                f"node peak RSS, {mode}",
                fmt(peak, " MB", 1) + verdict(peak, lambda v: v <= 56),
                "<= 56 MB",
            )
        )
    nd_cold = cold(recs, "contenox-node")
    nd_cold_s = statistics.median(nd_cold.values()) if nd_cold else None
    rows.append(
        (
            "node cold start (1 turn, whole process)",
            fmt(nd_cold_s, " s", 3) + verdict(nd_cold_s, lambda v: v < 0.1),
            "< 0.1 s",
        )
    )

    for mode in ("fresh", "session"):
        rs = steady(recs, "contenox-rust", mode)
        for floor in ("raw-http-python", "raw-http-stream-python"):
            fl = steady(recs, floor, mode)
            r = paired(
                rs,
                fl,
                lambda a, b: a["result"]["per_turn_ms"] / b["result"]["per_turn_ms"],
            )
            rows.append((f"rust {mode} / {floor}", fmt(r, "x"), "(context)"))

    w = max(len(r[0]) for r in rows)
    for name, val, target in rows:
        print(f"  {name:<{w}}  {val}   target {target}")
    if missing:
        print("missing: " + "; ".join(missing), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
