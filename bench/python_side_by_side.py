"""Side by side: the same agent workload through contenox's Python API and through the
`openai-agents` SDK (Chat Completions mode, tracing off), in one run.

Workload: one turn = a prompt, one host tool call (echo), the tool result, the final answer:
two model requests against a zero-latency local model server (`fake-model-server --repeat`,
which cycles its two-response script forever). Every SDK runs in its own child process with its
own server, so each peak RSS is that SDK's alone. A third child measures the floor: the same two
HTTP requests per turn with the standard library's http.client and no agent loop, so
`overhead = per-turn time - floor`.

    python -m venv bench/.venv
    (cd bindings-python && maturin build --profile profiling --out ../target/dist/bench)
    bench/.venv/bin/pip install openai-agents target/dist/bench/contenox-*.whl
    cargo build --profile profiling -p contenox-conformance
    FAKE_MODEL_SERVER=target/profiling/fake-model-server \
      bench/.venv/bin/python bench/python_side_by_side.py [--turns 300] [--warmup 30]

Prints per-turn time (median, mean, p90), overhead over the floor, and peak RSS for each.
Not part of CI: numbers depend on the machine (results in docs/benchmarks-python.md).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]

SCENARIO = {
    "name": "bench_one_tool_call",
    "about": "one host tool call per turn, then the answer",
    "style": "openai",
    "prompt": "Echo hello, then say done.",
    "model": [
        {"tool_calls": [{"id": "call_1", "name": "echo", "arguments": {"text": "hello"}}]},
        {"text": "done"},
    ],
    "expect": {},
}
PROMPT = SCENARIO["prompt"]


def fake_server_binary() -> str:
    if os.environ.get("FAKE_MODEL_SERVER"):
        return os.environ["FAKE_MODEL_SERVER"]
    target = os.environ.get("CARGO_TARGET_DIR") or str(REPO / "target")
    return str(Path(target) / "debug" / "fake-model-server")


class FakeServer:
    def __init__(self, scenario_file: Path) -> None:
        self.proc = subprocess.Popen(
            [fake_server_binary(), "--scenario", str(scenario_file), "--repeat"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline().strip()
        if not line.isdigit():
            self.stop()
            raise SystemExit(f"fake-model-server printed {line!r}; does it support --repeat?")
        self.port = int(line)
        threading.Thread(target=self.proc.stdout.read, daemon=True).start()

    def stop(self) -> None:
        if self.proc.stdin and not self.proc.stdin.closed:
            self.proc.stdin.close()
        try:
            self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


def peak_rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux


# --- the children ----------------------------------------------------------------------------


async def bench_contenox(base_url: str, turns: int, warmup: int) -> list[float]:
    import contenox

    def echo(text: str) -> str:
        """Echo a text back."""
        return text

    client = contenox.create_client(
        style="openai",
        base_url=base_url,
        model="fake",
        api_key="test",
        builtins=[],
        tools=[contenox.Tool.from_function(echo, hints={"read_only": True})],
    )
    empty = contenox.Transcript()
    times: list[float] = []
    for i in range(warmup + turns):
        client.transcript = empty  # every turn starts a fresh conversation, as in openai-agents
        t0 = time.perf_counter()
        r = await client.run(PROMPT)
        dt = time.perf_counter() - t0
        if r.outcome != "done" or r.final_text != "done":
            raise SystemExit(f"contenox turn failed: {r}")
        if i >= warmup:
            times.append(dt)
    return times


async def bench_openai_agents(base_url: str, turns: int, warmup: int) -> list[float]:
    from agents import (
        Agent,
        OpenAIChatCompletionsModel,
        Runner,
        function_tool,
        set_tracing_disabled,
    )
    from openai import AsyncOpenAI

    set_tracing_disabled(True)

    @function_tool
    def echo(text: str) -> str:
        """Echo a text back."""
        return text

    model = OpenAIChatCompletionsModel(
        model="fake", openai_client=AsyncOpenAI(base_url=base_url, api_key="test", max_retries=0)
    )
    agent = Agent(name="bench", instructions="Use the echo tool.", tools=[echo], model=model)
    times: list[float] = []
    for i in range(warmup + turns):
        t0 = time.perf_counter()
        r = await Runner.run(agent, PROMPT)
        dt = time.perf_counter() - t0
        if r.final_output != "done":
            raise SystemExit(f"openai-agents turn failed: {r.final_output!r}")
        if i >= warmup:
            times.append(dt)
    return times


async def bench_floor(base_url: str, turns: int, warmup: int) -> list[float]:
    """Two plain HTTP requests per turn (keep-alive, non-streaming): the server's share."""
    import http.client
    from urllib.parse import urlsplit

    u = urlsplit(base_url)
    conn = http.client.HTTPConnection(u.hostname or "127.0.0.1", u.port)
    body = json.dumps({"model": "fake", "messages": [{"role": "user", "content": PROMPT}]})
    times: list[float] = []
    for i in range(warmup + turns):
        t0 = time.perf_counter()
        for _ in range(2):
            conn.request("POST", f"{u.path}/chat/completions", body,
                         {"content-type": "application/json"})
            resp = conn.getresponse()
            json.loads(resp.read())
        dt = time.perf_counter() - t0
        if i >= warmup:
            times.append(dt)
    conn.close()
    return times


CHILDREN = {"contenox": bench_contenox, "openai-agents": bench_openai_agents, "floor": bench_floor}


def child(which: str, base_url: str, turns: int, warmup: int) -> None:
    t0 = time.perf_counter()
    times = asyncio.run(CHILDREN[which](base_url, turns, warmup))
    total = time.perf_counter() - t0
    print(json.dumps({"times": times, "peak_rss_mib": peak_rss_mib(), "total_s": total}))


# --- the parent ------------------------------------------------------------------------------


def run_child(which: str, turns: int, warmup: int, scenario_file: Path) -> dict[str, Any]:
    server = FakeServer(scenario_file)
    try:
        out = subprocess.run(
            [sys.executable, __file__, "--child", which, "--base-url",
             f"http://127.0.0.1:{server.port}/v1", "--turns", str(turns), "--warmup", str(warmup)],
            capture_output=True,
            text=True,
            timeout=600,
        )
    finally:
        server.stop()
    if out.returncode != 0:
        raise SystemExit(f"{which} failed:\n{out.stdout}\n{out.stderr}")
    result: dict[str, Any] = json.loads(out.stdout.strip().splitlines()[-1])
    return result


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--turns", type=int, default=300)
    ap.add_argument("--warmup", type=int, default=30)
    ap.add_argument("--child")
    ap.add_argument("--base-url")
    args = ap.parse_args()
    if args.child:
        child(args.child, args.base_url, args.turns, args.warmup)
        return

    with tempfile.TemporaryDirectory() as tmp:
        scenario_file = Path(tmp) / "bench.json"
        scenario_file.write_text(json.dumps(SCENARIO))
        results = {w: run_child(w, args.turns, args.warmup, scenario_file)
                   for w in ("floor", "contenox", "openai-agents")}

    floor = statistics.median(results["floor"]["times"])
    import platform

    print(f"{args.turns} turns after {args.warmup} warm-up turns; one host tool call per turn; "
          f"Python {platform.python_version()}, {os.cpu_count()} cores")
    print(f"{'':16}{'median':>10}{'mean':>10}{'p90':>10}{'overhead':>10}{'peak RSS':>11}")
    rows = {}
    for name in ("contenox", "openai-agents", "floor"):
        t = sorted(results[name]["times"])
        med, mean, p90 = statistics.median(t), statistics.fmean(t), t[int(len(t) * 0.9)]
        over = med - floor
        rows[name] = (over, results[name]["peak_rss_mib"])
        print(f"{name:16}{med * 1e3:8.3f}ms{mean * 1e3:8.3f}ms{p90 * 1e3:8.3f}ms"
              f"{over * 1e3:8.3f}ms{results[name]['peak_rss_mib']:8.1f} MiB")
    c_over, c_rss = rows["contenox"]
    a_over, a_rss = rows["openai-agents"]
    print(f"per-turn overhead: openai-agents / contenox = {a_over / max(c_over, 1e-9):.1f}x "
          f"(budget >= 10x); peak RSS: contenox / openai-agents = {c_rss / a_rss:.2f} "
          f"(budget < 0.5)")


if __name__ == "__main__":
    main()
