"""What the Restate adapter (contenox/restate) journals about a turn, and one turn's time.

    scripts/setup.sh && cargo build -p contenox-conformance
    (cd bindings-node && npm run build:debug)
    .venv/bin/python bench/durable_engines/restate_history.py [--ask-sizes 10,100] [--repeat 15]
        [--workflow contenox-turn | contenox-stepped-turn]

Prints JSON lines (docs/benchmarks.md, "Durable engines"): for a turn of N model requests whose
every ``write`` call is asked and answered, the bytes of the turn's journal entries
(``sys_journal.raw_length``, through Restate's SQL); and the median wall time of a turn with one
ask answered at once. The endpoint is tests/durable/restate/app.mjs (the crash tests' agent),
the server restate-server on 127.0.0.1, the model the fake model server (``--by-turn-step``).
``--workflow contenox-stepped-turn`` measures steppedTurnWorkflow (one ``ctx.run`` per model
request and tool call) instead of turnWorkflow.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "tests" / "durable"))

from servers import Restate, free_port, restate_server, stop_process, wait_port  # noqa: E402

WORKFLOW = "contenox-turn"


def post(url: str, body: Any, accept_json: bool = False) -> Any:
    headers = {"content-type": "application/json"}
    if accept_json:
        headers["accept"] = "application/json"
    req = urllib.request.Request(url, data=json.dumps(body).encode(), headers=headers)
    with urllib.request.urlopen(req, timeout=120) as r:
        text = r.read().decode()
    return json.loads(text) if text else None


def scenario(n: int, tmp: Path) -> Path:
    model: list[dict[str, Any]] = [
        {
            "tool_calls": [
                {"id": f"call_{i}", "name": "write", "arguments": {"path": f"f{i}", "content": "x"}}
            ]
        }
        for i in range(n - 1)
    ]
    model.append({"text": "done"})
    path = tmp / f"script-{n}.json"
    path.write_text(json.dumps({"name": "b", "style": "openai", "model": model, "prompt": "go"}))
    return path


class Endpoint:
    """The fake model server for an n-request script and an endpoint serving turns on it."""

    def __init__(self, restate: Restate, n: int, tmp: Path) -> None:
        self.model = subprocess.Popen(
            [str(REPO / "target" / "debug" / "fake-model-server"), "--scenario",
             str(scenario(n, tmp)), "--by-turn-step"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
        )  # fmt: skip
        assert self.model.stdout is not None
        port = int(self.model.stdout.readline())
        work = tmp / f"work-{n}"
        work.mkdir()
        self.port = free_port()
        env = {
            **os.environ,
            "DURABLE_BASE_URL": f"http://127.0.0.1:{port}/v1",
            "DURABLE_WORKDIR": str(work),
            "DURABLE_ROLE": "bench",
            "DURABLE_MAX_TURNS": "100000",
        }
        app = REPO / "tests" / "durable" / "restate" / "app.mjs"
        self.proc = subprocess.Popen(
            ["node", str(app), str(self.port)], env=env, stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )  # fmt: skip
        wait_port(self.port)
        post(
            f"{restate.admin}/deployments", {"uri": f"http://127.0.0.1:{self.port}", "force": True}
        )

    def stop(self) -> None:
        stop_process(self.proc)
        assert self.model.stdin is not None
        self.model.stdin.close()
        self.model.wait(10)


def turn(restate: Restate, turn_id: str) -> dict[str, Any]:
    base = f"{restate.ingress}/{WORKFLOW}/{turn_id}"
    post(f"{base}/run/send", {"prompt": "go"})
    answered: set[str] = set()
    while True:
        for ask in post(f"{base}/pending", None) or []:
            if ask["callId"] not in answered:
                answered.add(ask["callId"])
                post(f"{base}/answer", {"callId": ask["callId"], "answer": {"approve": True}})
        out = f"{restate.ingress}/restate/workflow/{WORKFLOW}/{turn_id}/output"
        try:
            with urllib.request.urlopen(out, timeout=30) as r:
                state: dict[str, Any] = json.loads(r.read())
                return state
        except urllib.error.HTTPError as e:
            if e.code != 470:  # "not ready yet"
                raise
        time.sleep(0.005)


def journal_bytes(restate: Restate, turn_id: str) -> int:
    query = (
        "SELECT sum(j.raw_length) AS bytes FROM sys_journal j JOIN sys_invocation i "
        f"ON j.id = i.id WHERE i.target_service_key = '{turn_id}'"
    )
    rows = post(f"{restate.admin}/query", {"query": query}, accept_json=True)["rows"]
    return int(rows[0]["bytes"])


def main() -> None:
    global WORKFLOW
    parser = argparse.ArgumentParser()
    parser.add_argument("--ask-sizes", default="10,100")
    parser.add_argument("--repeat", type=int, default=15)
    parser.add_argument("--workflow", default=WORKFLOW)
    args = parser.parse_args()
    WORKFLOW = args.workflow
    with tempfile.TemporaryDirectory() as tmp_dir:
        tmp = Path(tmp_dir)
        with restate_server(tmp) as restate:
            for n in [int(s) for s in args.ask_sizes.split(",")]:
                endpoint = Endpoint(restate, n, tmp)
                try:
                    t0 = time.perf_counter()
                    state = turn(restate, f"asks-{n}")
                    seconds = time.perf_counter() - t0
                finally:
                    endpoint.stop()
                assert state["outcome"] == "done", state
                print(json.dumps({
                    "measure": "history", "engine": "restate", "workflow": WORKFLOW,
                    "shape": "asks",
                    "model_requests": n, "journal_bytes": journal_bytes(restate, f"asks-{n}"),
                    "seconds": round(seconds, 2),
                }), flush=True)  # fmt: skip
            endpoint = Endpoint(restate, 2, tmp)
            times = []
            try:
                for i in range(args.repeat):
                    t0 = time.perf_counter()
                    assert turn(restate, f"overhead-{i}")["outcome"] == "done"
                    times.append(time.perf_counter() - t0)
            finally:
                endpoint.stop()
            median_ms = round(statistics.median(times) * 1000, 1)
            print(json.dumps({"measure": "overhead", "engine": "restate", "workflow": WORKFLOW,
                              "median_ms": median_ms}))  # fmt: skip


if __name__ == "__main__":
    main()
