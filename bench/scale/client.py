"""The Python side of the scale curve (bench/scale/run.sh), through the contenox binding as a
user would write it. Same modes, workload, checks and JSON line as tests/src/bin/scale-client.rs:

  client.py --base-url URL --mode messages --transcript FILE --turns K [--warmup W]
  client.py --base-url URL --mode clients --clients C --turns K [--warmup W]   (asyncio.gather)
"""

from __future__ import annotations

import argparse
import asyncio
import json
import resource
import statistics
import sys
import time

import contenox

FINAL_TEXT = "done"


def rss_mb() -> tuple[float, float]:
    """(current, peak) resident set in MB from /proc/self/status (VmRSS, VmHWM)."""
    fields = {}
    with open("/proc/self/status") as f:
        for line in f:
            key, _, value = line.partition(":")
            if key in ("VmRSS", "VmHWM"):
                fields[key] = int(value.split()[0]) / 1024.0
    return fields["VmRSS"], fields["VmHWM"]


def cpu_s() -> float:
    ru = resource.getrusage(resource.RUSAGE_SELF)
    return ru.ru_utime + ru.ru_stime


def make_client(base_url: str) -> contenox.Client:
    client = contenox.create_client(
        style="openai",
        base_url=base_url,
        model="gpt-4o-mini",
        api_key="sk-dummy",
        system="You are a benchmark agent. Use the echo tool.",
        builtins=[],
    )

    @client.tool()
    def echo(text: str) -> str:
        """Echo the given text back.

        Args:
            text: the text
        """
        return text

    return client


async def turn(client: contenox.Client, i: int) -> float:
    t = time.perf_counter()
    r = await client.run(f"turn {i}")
    took = (time.perf_counter() - t) * 1000.0
    if r.final_text.strip() != FINAL_TEXT:
        raise SystemExit(f"turn {i}: {r.outcome} {r.final_text!r}")
    return took


async def messages(a: argparse.Namespace) -> dict[str, object]:
    text = a.transcript_text
    # Counted apart: reading `restored.messages` would make every restore re-serialize it.
    n = len(json.loads(text)["messages"])
    restored = contenox.Transcript.from_json(text)
    client = make_client(a.base_url)
    lat, restores = [], []
    cpu0 = cpu_s()
    for i in range(a.warmup + a.turns):
        t = time.perf_counter()
        client.transcript = restored
        restore = (time.perf_counter() - t) * 1000.0
        took = await turn(client, i + 1)
        grown = len(client.transcript.messages)
        if grown != n + 4:
            raise SystemExit(f"turn {i + 1}: {n} messages became {grown}, not {n + 4}")
        if i >= a.warmup:
            lat.append(took)
            restores.append(restore)
    cpu = cpu_s() - cpu0
    rss, peak = rss_mb()
    return {
        "messages": n,
        "turns": a.turns,
        "warmup": a.warmup,
        "per_turn_ms": statistics.median(lat),
        "restore_ms": statistics.median(restores),
        "cpu_ms_per_turn": cpu * 1000.0 / (a.warmup + a.turns),
        "rss_mb": rss,
        "peak_rss_mb": peak,
    }


async def clients(a: argparse.Namespace) -> dict[str, object]:
    base_rss, _ = rss_mb()
    everyone = [make_client(a.base_url) for _ in range(a.clients)]
    created_rss, _ = rss_mb()

    async def one(client: contenox.Client, first: int, turns: int) -> list[float]:
        return [await turn(client, i) for i in range(first, first + turns)]

    # Warm-up turns, all clients at once and untimed: connections open, lazy setup done.
    for w in range(a.warmup):
        await asyncio.gather(*(one(c, w + 1, 1) for c in everyone))
    cpu0 = cpu_s()
    t0 = time.perf_counter()
    per_client = await asyncio.gather(*(one(c, a.warmup + 1, a.turns) for c in everyone))
    wall = time.perf_counter() - t0
    cpu = cpu_s() - cpu0
    expected = 4 * (a.warmup + a.turns)
    for c in everyone:
        if (n := len(c.transcript.messages)) != expected:
            raise SystemExit(f"a client holds {n} messages, not {expected}")
    rss, peak = rss_mb()
    lat = [x for xs in per_client for x in xs]
    total = a.clients * a.turns
    return {
        "clients": a.clients,
        "turns": a.turns,
        "warmup": a.warmup,
        "total_turns": total,
        "wall_s": wall,
        "per_turn_ms": wall * 1000.0 / total,
        "latency_median_ms": statistics.median(lat),
        "cpu_ms_per_turn": cpu * 1000.0 / total,
        "rss_mb": rss,
        "peak_rss_mb": peak,
        "base_rss_mb": base_rss,
        "rss_per_client_kb": (peak - base_rss) * 1024.0 / a.clients,
        "created_rss_per_client_kb": (created_rss - base_rss) * 1024.0 / a.clients,
    }


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--base-url", required=True)
    p.add_argument("--mode", choices=["messages", "clients"], required=True)
    p.add_argument("--transcript")
    p.add_argument("--clients", type=int, default=1)
    p.add_argument("--turns", type=int, default=10)
    p.add_argument("--warmup", type=int, default=2)
    a = p.parse_args()
    if a.mode == "messages" and not a.transcript:
        p.error("--transcript is required in messages mode")
    if a.transcript:
        with open(a.transcript, encoding="utf-8") as f:
            a.transcript_text = f.read()
    run = messages if a.mode == "messages" else clients
    out = asyncio.run(run(a))
    out.update(lang="python", mode=a.mode)
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
