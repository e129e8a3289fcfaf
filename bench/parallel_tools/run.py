"""Tool calls side by side and while the model streams (issue 27), contenox against its peers in
one run. Every client runs the same turns against its own fake-model-server (the project's fake,
`--repeat`: it answers each turn's two requests from a two-entry script, forever):

- one:  the reply calls `nap` once (a read-only host tool that sleeps --ms), then `done`;
- four: the reply calls `nap` four times, then `done` (the goal: within 1.25x of `one`);
- lead: the reply calls `nap`, and its block ends 1 s before the reply does (`pause_after_ms`
  1000: the stream pauses after the next call, `echo`, begins), then `done`. A call started
  while the model streams has finished before the reply ends.

Clients: contenox Rust (tests/src/bin/parallel-client.rs; also with tool_concurrency none and
with stream_tools off), contenox Python and Node (this directory), the OpenAI Agents SDK
(Python) and the Vercel AI SDK (Node) from ../shared/bench-peers, installed by its install.sh
into target/bench-peers (bench/peers/run.sh copies it there; this script does too).

    cargo build -p contenox-conformance --bins          # fake-model-server, parallel-client
    (cd bindings-python && maturin develop)              # or bindings-python/ci.sh
    (cd bindings-node && npm run build:debug)            # or bindings-node/ci.sh
    python3 bench/parallel_tools/run.py [--rounds 3] [--turns 3] [--ms 300]

Prints the median turn wall time per client and workload (every turn of every round), and the
ratio four/one. Not part of CI: timings depend on the machine (docs/benchmarks.md).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
TARGET = Path(os.environ.get("CARGO_TARGET_DIR", REPO / "target"))
PEERS_SHARED = Path(os.environ.get("BENCH_PEERS_SHARED", REPO.parent / "shared" / "bench-peers"))
PEERS = Path(os.environ.get("BENCH_PEERS_WORK", TARGET / "bench-peers"))


def script(calls: list[dict]) -> dict:
    return {"name": "bench", "style": "openai", "prompt": "x",
            "model": [{"tool_calls": calls}, {"text": "done"}], "expect": {}}


WORKLOADS = {
    "one": script([{"name": "nap", "arguments": {}}]),
    "four": script([{"name": "nap", "arguments": {}} for _ in range(4)]),
    "lead": script([{"name": "nap", "arguments": {}, "pause_after_ms": 1000},
                    {"name": "echo", "arguments": {"n": 1}}]),
}


def clients(profile: str) -> dict[str, list[str]]:
    bin_dir = TARGET / profile
    py = REPO / "bindings-python" / ".venv" / "bin" / "python"
    peers_py = PEERS / ".venv" / "bin" / "python"
    peers_node = PEERS / "node" / "node_modules" / ".bin" / "node"
    rust = [str(bin_dir / "parallel-client")]
    out = {
        "contenox-rust": rust,
        "contenox-rust (tool_concurrency none)": rust + ["--sequential"],
        "contenox-rust (stream_tools off)": rust + ["--no-stream-tools"],
        "contenox-python": [str(py), str(HERE / "py_contenox.py")],
        "contenox-node": ["node", str(HERE / "node_contenox.mjs")],
    }
    if peers_py.exists():
        out["openai-agents-python"] = [str(peers_py), str(HERE / "py_openai_agents.py")]
    else:
        print(f"# no OpenAI Agents SDK: {peers_py} missing (run {PEERS_SHARED}/install.sh)",
              file=sys.stderr)
    if peers_node.exists():
        shutil.copy(HERE / "node_ai_sdk.mjs", PEERS / "clients" / "parallel_ai_sdk.mjs")
        out["vercel-ai-sdk-node"] = [str(peers_node), str(PEERS / "clients" / "parallel_ai_sdk.mjs")]
    else:
        print(f"# no Vercel AI SDK: {peers_node} missing", file=sys.stderr)
    return out


def run_one(cmd: list[str], scenario: Path, fake: Path, turns: int, ms: int) -> list[float]:
    server = subprocess.Popen([str(fake), "--scenario", str(scenario), "--repeat"],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert server.stdout is not None
        port = int(server.stdout.readline())
        env = dict(os.environ, CONTENOX_NODE=str(REPO / "bindings-node" / "index.mjs"))
        done = subprocess.run(
            cmd + ["--base-url", f"http://127.0.0.1:{port}/v1", "--turns", str(turns),
                   "--ms", str(ms)],
            capture_output=True, text=True, timeout=300, env=env)
        last = (done.stdout.strip().splitlines() or ["{}"])[-1]
        record = json.loads(last) if last.startswith("{") else {}
        if done.returncode != 0 or not record.get("ok"):
            raise RuntimeError(f"{cmd}: exit {done.returncode}: {done.stderr[-800:]} {last}")
        return record["turn_ms"]
    finally:
        assert server.stdin is not None
        server.stdin.close()
        server.wait(timeout=10)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--turns", type=int, default=3)
    ap.add_argument("--ms", type=int, default=300)
    ap.add_argument("--profile", default=os.environ.get("PROFILE", "debug"))
    ap.add_argument("--only", help="comma-separated client names")
    args = ap.parse_args()
    fake = TARGET / args.profile / "fake-model-server"
    todo = clients(args.profile)
    if args.only:
        todo = {k: v for k, v in todo.items() if k in args.only.split(",")}
    times: dict[tuple[str, str], list[float]] = {}
    failed: dict[str, str] = {}
    with tempfile.TemporaryDirectory() as tmp:
        files = {}
        for name, sc in WORKLOADS.items():
            files[name] = Path(tmp) / f"{name}.json"
            files[name].write_text(json.dumps(sc))
        # Round by round, every client and workload in turn: the machine's drift hits all alike.
        for _ in range(args.rounds):
            for client, cmd in todo.items():
                for w, f in files.items():
                    if client in failed:
                        continue
                    try:
                        times.setdefault((client, w), []).extend(
                            run_one(cmd, f, fake, args.turns, args.ms))
                    except Exception as e:  # a peer that fails is reported, not fatal
                        failed[client] = str(e)
    print(f"turn wall time, median ms of {args.rounds} rounds x {args.turns} turns, "
          f"nap = {args.ms} ms")
    print()
    print("| client | one call | four calls | four / one | call ends 1 s before the reply |")
    print("|---|---|---|---|---|")
    for client in todo:
        if client in failed:
            print(f"| {client} | failed: {failed[client][:200]} | | | |")
            continue
        m = {w: statistics.median(times[(client, w)]) for w in WORKLOADS}
        print(f"| {client} | {m['one']:.0f} | {m['four']:.0f} | {m['four'] / m['one']:.2f}x "
              f"| {m['lead']:.0f} |")
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
