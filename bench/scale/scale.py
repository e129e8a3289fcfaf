"""The scale curve's driver (bench/scale/run.sh runs it in the bench's own venv).

Starts one `fake-model-server --by-turn-step` (Rust, loopback HTTP), then runs each language's
client (Rust scale-client, bench/scale/client.py, bench/scale/client.mjs), each point in its own
process so its RSS is its own, round-robin over the languages at every point:

- messages: N in 10, 100, 1,000, 10,000 (a realistic restored conversation of user / assistant
  tool-call / tool-result / assistant-text messages), K turns of the echo workload at that size;
- clients: C in 1, 10, 100, 1,000 clients in one process, each running K turns, all at once.

Writes OUT/scale.jsonl (one record per point), OUT/scale.md (the tables and the growth
classification) and the plot (--plot, PNG). Growth: the slope of log(per-turn ms) against log(N)
(or log(C)) between the last two points: < 0.5 flat, < 1.5 linear, >= 1.5 superlinear (flagged).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent

MESSAGES = [10, 100, 1_000, 10_000]
CLIENTS = [1, 10, 100, 1_000]
# Timed turns per point (after 2 warm-up turns in messages mode): fewer at the big sizes keeps
# the whole curve within minutes; medians need no more.
MESSAGE_TURNS = {10: 40, 100: 40, 1_000: 20, 10_000: 8}
CLIENT_TURNS = 10
CLIENT_TIMEOUT_S = 600
CLK_TCK = os.sysconf("SC_CLK_TCK")


def transcript(n: int) -> dict[str, Any]:
    """A conversation of exactly n messages (n even), shaped like real agent traffic: exchanges of
    user question -> assistant tool call -> tool result -> assistant answer, then a plain
    question and answer when n is not a multiple of 4."""
    if n % 2:
        raise ValueError("n must be even")
    msgs: list[dict[str, Any]] = []
    i = 0
    while len(msgs) + 4 <= n:
        i += 1
        path = f"src/module_{i}/handler.rs"
        msgs += [
            {
                "role": "user",
                "content": f"Question {i}: what does {path} export, and do the "
                "integration tests still cover it after the refactor?",
            },
            {
                "role": "assistant",
                "content": "",
                "tool_calls": [{"id": f"call_{i}", "name": "echo", "arguments": {"text": path}}],
            },
            {
                "role": "tool",
                "call_id": f"call_{i}",
                "name": "echo",
                "is_error": False,
                "content": f"pub fn handle_{i}(req: Request) -> Result<Response>\n"
                f"pub struct Handler{i}Config {{ retries: u32, timeout_ms: u64 }}\n"
                f"tests/it_{i}.rs: 3 tests reference handle_{i}",
            },
            {
                "role": "assistant",
                "content": f"{path} exports handle_{i} and Handler{i}Config; "
                f"three integration tests in tests/it_{i}.rs still "
                f"call handle_{i}, so the refactor is covered.",
            },
        ]
    while len(msgs) < n:
        i += 1
        msgs += [
            {"role": "user", "content": f"Thanks. Anything else about module {i}?"},
            {"role": "assistant", "content": "No, that is everything I found."},
        ]
    return {"messages": msgs}


class Server:
    """The Rust fake model server, answering by each request's step within its turn."""

    def __init__(self, binary: Path) -> None:
        self.proc = subprocess.Popen(
            [str(binary), "--scenario", str(HERE / "scenario.json"), "--by-turn-step"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline().strip()
        if not line.isdigit():
            self.stop()
            raise SystemExit(f"fake-model-server printed {line!r}")
        self.base_url = f"http://127.0.0.1:{int(line)}/v1"

    def cpu_s(self) -> float:
        fields = Path(f"/proc/{self.proc.pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / CLK_TCK

    def stop(self) -> None:
        if self.proc.stdin:
            self.proc.stdin.close()  # stdin EOF ends it
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


def run_point(cmd: list[str], server: Server) -> dict[str, Any]:
    cpu0 = server.cpu_s()
    t0 = time.perf_counter()
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=CLIENT_TIMEOUT_S)
    wall = time.perf_counter() - t0
    server_cpu = server.cpu_s() - cpu0
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed ({done.returncode}):\n{done.stderr[-4000:]}")
    rec: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    # The server's CPU over the client process's whole life, as a share of that wall time (one
    # core = 1.0) and per timed turn: what a reader subtracts to see the client's own cost.
    rec["process_wall_s"] = wall
    rec["server_cpu_share"] = server_cpu / wall
    turns = rec.get("clients", 1) * (rec["turns"] + rec.get("warmup", 0))
    rec["server_cpu_ms_per_turn"] = server_cpu * 1000.0 / turns
    return rec


def slope(xs: list[float], ys: list[float]) -> float:
    return (math.log(ys[-1]) - math.log(ys[-2])) / (math.log(xs[-1]) - math.log(xs[-2]))


def classify(s: float) -> str:
    if s < 0.5:
        return "flat"
    if s < 1.5:
        return "linear"
    return "SUPERLINEAR"


def growth(records: list[dict[str, Any]], key: str, metric: str) -> dict[str, dict[str, Any]]:
    out = {}
    for lang in sorted({r["lang"] for r in records}):
        pts = sorted((r[key], r[metric]) for r in records if r["lang"] == lang and key in r)
        if len(pts) >= 2:
            s = slope([p[0] for p in pts], [p[1] for p in pts])
            out[lang] = {"slope": s, "class": classify(s), "between": [pts[-2][0], pts[-1][0]]}
    return out


def table(records: list[dict[str, Any]], key: str, cols: list[tuple[str, str, str]]) -> str:
    head = "| lang | " + key + " | " + " | ".join(c[1] for c in cols) + " |"
    rule = "|---" * (len(cols) + 2) + "|"
    rows = [head, rule]
    for r in sorted((r for r in records if key in r), key=lambda r: (r["lang"], r[key])):
        cells = [format(r[c[0]], c[2]) for c in cols]
        rows.append(f"| {r['lang']} | {r[key]:,} | " + " | ".join(cells) + " |")
    return "\n".join(rows)


MSG_COLS = [
    ("turns", "turns", "d"),
    ("per_turn_ms", "per-turn ms (median)", ".2f"),
    ("restore_ms", "restore ms", ".2f"),
    ("cpu_ms_per_turn", "client CPU ms/turn", ".2f"),
    ("rss_mb", "RSS MB", ".1f"),
    ("peak_rss_mb", "peak RSS MB", ".1f"),
    ("server_cpu_ms_per_turn", "server CPU ms/turn", ".2f"),
    ("server_cpu_share", "server CPU share", ".2f"),
]
CLI_COLS = [
    ("turns", "turns each", "d"),
    ("per_turn_ms", "per-turn ms (wall/turns)", ".3f"),
    ("latency_median_ms", "latency median ms", ".2f"),
    ("cpu_ms_per_turn", "client CPU ms/turn", ".2f"),
    ("peak_rss_mb", "peak RSS MB", ".1f"),
    ("rss_per_client_kb", "RSS/client KB", ".0f"),
    ("created_rss_per_client_kb", "of it at creation KB", ".0f"),
    ("server_cpu_ms_per_turn", "server CPU ms/turn", ".2f"),
    ("server_cpu_share", "server CPU share", ".2f"),
]


def report(records: list[dict[str, Any]], meta: dict[str, Any]) -> str:
    lines = [
        f"Run {meta['date']} on {meta['host']} ({meta['cpus']} CPUs), build profile "
        f"`{meta['profile']}`, load average before {meta['load_before']} / after "
        f"{meta['load_after']}, total {meta['total_s']:.0f} s. Command: `{meta['command']}`.",
        "",
        "Messages in one conversation (restored before every turn; a turn = prompt -> "
        "one echo tool call -> final text, over loopback HTTP):",
        "",
        table(records, "messages", MSG_COLS),
        "",
    ]
    # Wall time on a loaded machine stretches long CPU bursts more than short ones (a process that
    # outruns its scheduler slice waits behind every other runnable job), so the client's own CPU
    # per turn is the steadier measure of growth; both are classified.
    for metric in ("per_turn_ms", "cpu_ms_per_turn", "peak_rss_mb"):
        for lang, g in growth(records, "messages", metric).items():
            lines.append(
                f"- {lang}: {metric} vs messages, slope {g['slope']:.2f} between "
                f"{g['between'][0]:,} and {g['between'][1]:,}: **{g['class']}**"
            )
    lines += [
        "",
        "Concurrent clients in one process (each runs its turns one after another, all "
        "clients at once):",
        "",
        table(records, "clients", CLI_COLS),
        "",
    ]
    # Latency grows with C by construction once the cores are busy (C turns share them); the
    # per-turn cost (wall / turns, CPU / turn) is what must stay flat.
    for metric in ("per_turn_ms", "cpu_ms_per_turn", "latency_median_ms", "peak_rss_mb"):
        for lang, g in growth(records, "clients", metric).items():
            lines.append(
                f"- {lang}: {metric} vs clients, slope {g['slope']:.2f} between "
                f"{g['between'][0]:,} and {g['between'][1]:,}: **{g['class']}**"
            )
    return "\n".join(lines) + "\n"


def plot(records: list[dict[str, Any]], path: Path, meta: dict[str, Any]) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(2, 2, figsize=(11, 8))
    colors = {"rust": "#b7410e", "python": "#3572a5", "node": "#3c873a"}
    for lang in ("rust", "python", "node"):
        m = sorted(
            (r for r in records if r["lang"] == lang and "messages" in r),
            key=lambda r: r["messages"],
        )
        c = sorted(
            (r for r in records if r["lang"] == lang and "clients" in r), key=lambda r: r["clients"]
        )
        kw = {"color": colors[lang], "marker": "o", "label": lang}
        if m:
            xs = [r["messages"] for r in m]
            ax[0][0].plot(xs, [r["per_turn_ms"] for r in m], **kw)
            ax[0][0].plot(
                xs,
                [r["cpu_ms_per_turn"] for r in m],
                color=colors[lang],
                marker="x",
                linestyle="--",
                label=f"{lang} client CPU",
            )
            ax[0][1].plot(xs, [r["peak_rss_mb"] for r in m], **kw)
        if c:
            xs = [r["clients"] for r in c]
            ax[1][0].plot(xs, [r["per_turn_ms"] for r in c], **kw)
            ax[1][0].plot(
                xs,
                [r["latency_median_ms"] for r in c],
                color=colors[lang],
                marker="x",
                linestyle="--",
                label=f"{lang} latency median",
            )
            ax[1][1].plot(xs, [r["peak_rss_mb"] for r in c], **kw)
    if any("messages" in r for r in records):
        ref = [10, 10_000]
        ax[0][0].plot(ref, [0.1, 100.0], color="grey", linestyle=":", label="linear (slope 1)")
    titles = [
        (
            "per turn vs messages",
            "messages in the conversation",
            "ms (solid: wall median, dashed: client CPU)",
            True,
        ),
        # Log y on the RSS panels too: on log-log axes linear growth is a straight line of
        # slope 1 (over the base RSS), where a linear y axis would make it look exponential.
        ("peak RSS vs messages", "messages in the conversation", "MB", True),
        (
            "per turn vs concurrent clients",
            "clients in one process",
            "ms (solid: wall/turns, dashed: latency)",
            True,
        ),
        ("peak RSS vs concurrent clients", "clients in one process", "MB", True),
    ]
    for a, (title, xl, yl, logy) in zip(
        [ax[0][0], ax[0][1], ax[1][0], ax[1][1]], titles, strict=True
    ):
        a.set_xscale("log")
        if logy:
            a.set_yscale("log")
        a.set_title(title)
        a.set_xlabel(xl)
        a.set_ylabel(yl)
        a.grid(True, which="both", alpha=0.3)
        a.legend(fontsize=7)
    fig.suptitle(
        f"contenox scale curve ({meta['profile']} build, {meta['date']}, "
        f"load {meta['load_before']})",
        fontsize=10,
    )
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--target", type=Path, default=REPO / "target")
    p.add_argument("--profile", default="release")
    p.add_argument("--out", type=Path, required=True)
    p.add_argument("--plot", type=Path)
    p.add_argument("--langs", default="rust,python,node")
    p.add_argument("--messages", default=",".join(map(str, MESSAGES)))
    p.add_argument("--clients", default=",".join(map(str, CLIENTS)))
    p.add_argument("--node", default="node")
    p.add_argument("--command", default=" ".join(sys.argv))
    a = p.parse_args()
    bins = a.target / a.profile
    langs = a.langs.split(",")
    client = {
        "rust": [str(bins / "scale-client")],
        "python": [sys.executable, str(HERE / "client.py")],
        "node": [a.node, str(HERE / "client.mjs")],
    }
    a.out.mkdir(parents=True, exist_ok=True)
    meta = {
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "host": platform.node(),
        "cpus": os.cpu_count(),
        "profile": a.profile,
        "command": a.command,
        "load_before": " ".join(f"{x:.2f}" for x in os.getloadavg()),
    }
    t0 = time.perf_counter()
    records: list[dict[str, Any]] = []
    jsonl = (a.out / "scale.jsonl").open("w")

    def keep(rec: dict[str, Any]) -> None:
        rec["load1"] = os.getloadavg()[0]
        records.append(rec)
        jsonl.write(json.dumps(rec) + "\n")
        jsonl.flush()
        point = f"messages={rec['messages']}" if "messages" in rec else f"clients={rec['clients']}"
        print(
            f"  {rec['lang']:6} {point:16} per-turn {rec['per_turn_ms']:.3f} ms  peak RSS "
            f"{rec['peak_rss_mb']:.1f} MB  server CPU share {rec['server_cpu_share']:.2f}",
            flush=True,
        )

    server = Server(bins / "fake-model-server")
    try:
        with tempfile.TemporaryDirectory(prefix="contenox-scale-") as tmp:
            for n in (int(x) for x in a.messages.split(",") if x):
                f = Path(tmp) / f"transcript_{n}.json"
                f.write_text(json.dumps(transcript(n)))
                print(f"messages={n}: transcript {f.stat().st_size / 1e6:.2f} MB", flush=True)
                for lang in langs:
                    keep(
                        run_point(
                            client[lang]
                            + [
                                "--base-url",
                                server.base_url,
                                "--mode",
                                "messages",
                                "--transcript",
                                str(f),
                                "--turns",
                                str(MESSAGE_TURNS.get(n, 10)),
                                "--warmup",
                                "2",
                            ],
                            server,
                        )
                    )
        for c in (int(x) for x in a.clients.split(",") if x):
            print(f"clients={c}", flush=True)
            for lang in langs:
                keep(
                    run_point(
                        client[lang]
                        + [
                            "--base-url",
                            server.base_url,
                            "--mode",
                            "clients",
                            "--clients",
                            str(c),
                            "--turns",
                            str(CLIENT_TURNS),
                            "--warmup",
                            "1",
                        ],
                        server,
                    )
                )
    finally:
        server.stop()
        jsonl.close()
    meta["total_s"] = time.perf_counter() - t0
    meta["load_after"] = " ".join(f"{x:.2f}" for x in os.getloadavg())
    md = report(records, meta)
    (a.out / "scale.md").write_text(md)
    print(md)
    if a.plot:
        plot(records, a.plot, meta)
        print(f"plot: {a.plot}")
    superlinear = [line for line in md.splitlines() if "SUPERLINEAR" in line]
    for line in superlinear:
        print(f"warning: {line}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
