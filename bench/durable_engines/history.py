"""What the durable-engine adapters record, and what a durable turn costs over a plain one.

    scripts/setup.sh && cargo build -p contenox-conformance
    (cd bindings-python && VIRTUAL_ENV=../.venv ../.venv/bin/maturin develop)
    .venv/bin/python bench/durable_engines/history.py [--sizes 10,100,1000] [--ask-sizes 10,100]
        [--repeat 15]
    .venv/bin/python bench/durable_engines/history.py --stepped [--stepped-sizes 10,100,1000]
        [--journal-sizes 10,100] [--ask-sizes 10,100] [--out FILE]

Prints JSON lines (docs/benchmarks.md, "Durable engines"):

- ``history``: for a turn of N model requests, the bytes each engine recorded about it, as the
  engine's own JSON (DBOS: the workflow's steps, events, input and output read back with
  DBOSClient; Temporal: the workflow's event history, every run of it), in two shapes:
  ``tools`` (each reply but the last calls a tool the gate allows: no ask) and ``asks`` (each
  call is asked and answered: N - 1 asks, each a suspend and a resume).
- ``stepped`` (``--stepped``: only these): the stepped Temporal adapter
  (contenox.durable.temporal_stepped, an activity per model request and per tool call) for a
  turn of N model requests, each activity's input a delta of the journal (``carry=delta``, the
  adapter's default) or the whole journal (``carry=journal``: what an activity without a base
  on its worker needs, i.e. the conversation in every input): the history of every run, the
  largest run, how many runs (it continues as new at 10 000 events) and the activity inputs'
  bytes. ``--out FILE`` also writes them as JSON lines (plot_history.py draws them).
- ``overhead``: the wall time of one turn with one ask (answered at once) run plainly
  (``client.run`` with a ``wait_for`` that approves) and through each adapter, median of
  ``--repeat`` runs, interleaved.

The model is the fake model server (``--by-turn-step``: each request gets the script entry at its
step in the turn, whichever client sends it). Every server is started here on 127.0.0.1 and
stopped at the end.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
sys.path.insert(0, str(REPO / "tests" / "durable"))

from dbos import DBOS, DBOSClient  # noqa: E402
from temporalio.client import Client  # noqa: E402
from temporalio.testing import WorkflowEnvironment  # noqa: E402
from temporalio.worker import Worker  # noqa: E402

import contenox  # noqa: E402
from contenox.durable.dbos import DBOSTurns  # noqa: E402
from contenox.durable.temporal import TurnActivities, TurnWorkflow, start_turn  # noqa: E402
from contenox.durable.temporal_stepped import (  # noqa: E402
    SteppedActivities,
    SteppedTurnWorkflow,
    start_stepped_turn,
)
from servers import free_port, temporal_binary  # noqa: E402

ASK = {"mode": False}  # whether the gate asks before each call (set per measurement)


def scenario(n: int, tmp: Path) -> Path:
    """A script of n replies: n - 1 calls of ``note`` (each its own call id), then text."""
    model: list[dict[str, Any]] = [
        {"tool_calls": [{"id": f"call_{i}", "name": "note", "arguments": {"text": f"step {i}"}}]}
        for i in range(n - 1)
    ]
    model.append({"text": "done"})
    path = tmp / f"script-{n}.json"
    document = {"name": "bench", "style": "openai", "model": model, "prompt": "go"}
    path.write_text(json.dumps(document))
    return path


class Model:
    def __init__(self, script: Path) -> None:
        self.proc = subprocess.Popen(
            [str(REPO / "target" / "debug" / "fake-model-server"), "--scenario", str(script),
             "--by-turn-step"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
        )  # fmt: skip
        assert self.proc.stdout is not None
        self.url = f"http://127.0.0.1:{int(self.proc.stdout.readline())}/v1"

    def stop(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        self.proc.wait(10)


MODEL: dict[str, str] = {}


def before_tool(event: contenox.ToolCallEvent) -> contenox.Ask | None:
    return contenox.pending(kind="approval", prompt="Note?") if ASK["mode"] else None


def make_client(wait_for: contenox.WaitFor) -> contenox.Client:
    def note(text: str) -> str:
        """Take a note."""
        return f"noted: {text}"

    return contenox.create_client(
        style="openai",
        base_url=MODEL["url"],
        model="fake",
        api_key="bench",
        builtins=[],
        tools=[note],
        max_turns=100_000,
        hooks={"before_tool": before_tool},
        wait_for=wait_for,
    )


def approve(request: Any, cancel: Any) -> dict[str, bool]:
    return {"approve": True}


turns = DBOSTurns(make_client, name="bench.turn")


# --- DBOS -----------------------------------------------------------------------------------


async def dbos_turn(turn_id: str) -> dict[str, Any]:
    handle = await turns.start("go", turn_id=turn_id)
    answered: set[str] = set()
    while True:
        status = await handle.get_status()
        if status.status not in ("PENDING", "ENQUEUED"):
            break
        for request in await turns.pending(turn_id):
            if request["call_id"] not in answered:
                answered.add(request["call_id"])
                await turns.answer(turn_id, request["call_id"], {"approve": True})
        await asyncio.sleep(0.005)
    state: dict[str, Any] = dict(await handle.get_result())
    return state


def dbos_recorded(db: str, turn_id: str) -> int:
    client = DBOSClient(system_database_url=db)
    try:
        steps = client.list_workflow_steps(turn_id)
        (status,) = client.list_workflows(workflow_ids=[turn_id])
        return len(json.dumps([steps, status.input, status.output], default=str))
    finally:
        client.destroy()


# --- Temporal -------------------------------------------------------------------------------


async def temporal_turn(client: Client, turn_id: str) -> dict[str, Any]:
    handle = await start_turn(client, "go", turn_id=turn_id, task_queue="bench")
    result = asyncio.ensure_future(handle.result(follow_runs=True))
    answered: set[str] = set()
    while not result.done():
        try:
            current = client.get_workflow_handle(turn_id)
            for request in await current.query(TurnWorkflow.pending):
                if request["call_id"] not in answered:
                    answered.add(request["call_id"])
                    await current.execute_update(
                        TurnWorkflow.answer, args=[request["call_id"], {"approve": True}]
                    )
        except Exception:
            pass  # between runs (continued as new), or the update raced the run's end
        await asyncio.sleep(0.005)
    state: dict[str, Any] = await result
    return state


async def temporal_recorded(client: Client, turn_id: str) -> tuple[int, int]:
    """(bytes of the largest run's history, bytes over all runs)."""
    sizes = []
    async for wf in client.list_workflows(f"WorkflowId = '{turn_id}'"):
        history = await client.get_workflow_handle(turn_id, run_id=wf.run_id).fetch_history()
        sizes.append(len(history.to_json()))
    return max(sizes), sum(sizes)


async def stepped_turn(client: Client, workflow_id: str, carry: str) -> dict[str, Any]:
    handle = await start_stepped_turn(
        client, "go", workflow_id=workflow_id, task_queue="bench-stepped", carry=carry
    )
    result = asyncio.ensure_future(handle.result(follow_runs=True))
    answered: set[str] = set()
    while not result.done():
        try:
            current = client.get_workflow_handle(workflow_id)
            for request in await current.query(SteppedTurnWorkflow.pending):
                if request["call_id"] not in answered:
                    answered.add(request["call_id"])
                    await current.execute_update(
                        SteppedTurnWorkflow.answer, args=[request["call_id"], {"approve": True}]
                    )
        except Exception:
            pass  # between runs (continued as new), or the update raced the ask's end
        await asyncio.sleep(0.005)
    state: dict[str, Any] = await result
    return state


async def stepped_recorded(client: Client, workflow_id: str) -> dict[str, int]:
    """Bytes of every run's history (and the largest), runs, and the activity inputs' bytes."""
    sizes, inputs, largest_input = [], 0, 0
    async for wf in client.list_workflows(f"WorkflowId = '{workflow_id}'"):
        history = await client.get_workflow_handle(workflow_id, run_id=wf.run_id).fetch_history()
        sizes.append(len(history.to_json()))
        for event in history.events:
            if event.HasField("activity_task_scheduled_event_attributes"):
                n = event.activity_task_scheduled_event_attributes.input.ByteSize()
                inputs += n
                largest_input = max(largest_input, n)
    return {
        "all_runs_bytes": sum(sizes),
        "largest_run_bytes": max(sizes),
        "runs": len(sizes),
        "activity_input_bytes": inputs,
        "largest_activity_input_bytes": largest_input,
    }


async def stepped(args: argparse.Namespace, tmp: Path, temporal: Client) -> None:
    activities = SteppedActivities(make_client)
    async with Worker(
        temporal,
        task_queue="bench-stepped",
        workflows=[SteppedTurnWorkflow],
        activities=activities.all(),
    ):
        for shape, carry, sizes in (
            ("tools", "delta", args.stepped_sizes),
            ("tools", "journal", args.journal_sizes),
            ("asks", "delta", args.ask_sizes),
        ):
            ASK["mode"] = shape == "asks"
            for n in sizes:
                model = Model(scenario(n, tmp))
                MODEL["url"] = model.url
                try:
                    workflow_id = f"stepped-{shape}-{carry}-{n}"
                    t0 = time.perf_counter()
                    state = await stepped_turn(temporal, workflow_id, carry)
                    seconds = time.perf_counter() - t0
                    assert state["outcome"] == "done", state
                    # visibility (list_workflows) lags the close a little
                    await asyncio.sleep(1.5)
                    recorded = await stepped_recorded(temporal, workflow_id)
                finally:
                    model.stop()
                line = {
                    "measure": "stepped", "shape": shape, "carry": carry, "model_requests": n,
                    **recorded, "s": round(seconds, 2),
                }  # fmt: skip
                print(json.dumps(line), flush=True)
                if args.out is not None:
                    with open(args.out, "a") as f:
                        f.write(json.dumps(line) + "\n")
    activities.close()


# --- the measurements -------------------------------------------------------------------------


async def measure(args: argparse.Namespace, tmp: Path) -> None:
    env = await WorkflowEnvironment.start_local(
        dev_server_existing_path=temporal_binary(), ip="127.0.0.1", port=free_port()
    )
    try:
        if args.stepped:
            await stepped(args, tmp, env.client)
            return
        async with Worker(
            env.client,
            task_queue="bench",
            workflows=[TurnWorkflow],
            activities=TurnActivities(make_client).all(),
        ):
            await history(args, tmp, env.client)
            await overhead(args, tmp, env.client)
    finally:
        await env.shutdown()


async def history(args: argparse.Namespace, tmp: Path, temporal: Client) -> None:
    for shape, sizes in (("tools", args.sizes), ("asks", args.ask_sizes)):
        ASK["mode"] = shape == "asks"
        for n in sizes:
            model = Model(scenario(n, tmp))
            MODEL["url"] = model.url
            try:
                turn_id = f"{shape}-{n}"
                t0 = time.perf_counter()
                state = await dbos_turn(turn_id)
                dbos_s = time.perf_counter() - t0
                assert state["outcome"] == "done", state
                dbos_bytes = dbos_recorded(args.db, turn_id)
                t0 = time.perf_counter()
                state = await temporal_turn(temporal, turn_id)
                temporal_s = time.perf_counter() - t0
                assert state["outcome"] == "done", state
                run_max, total = await temporal_recorded(temporal, turn_id)
            finally:
                model.stop()
            print(json.dumps({
                "measure": "history", "shape": shape, "model_requests": n,
                "dbos_bytes": dbos_bytes, "temporal_largest_run_bytes": run_max,
                "temporal_all_runs_bytes": total, "dbos_s": round(dbos_s, 2),
                "temporal_s": round(temporal_s, 2),
            }), flush=True)  # fmt: skip


async def overhead(args: argparse.Namespace, tmp: Path, temporal: Client) -> None:
    ASK["mode"] = True
    model = Model(scenario(2, tmp))
    MODEL["url"] = model.url
    times: dict[str, list[float]] = {"plain": [], "dbos": [], "temporal": []}
    try:
        for i in range(args.repeat):
            t0 = time.perf_counter()
            client = make_client(approve)
            r = await client.run("go")
            client.close()
            times["plain"].append(time.perf_counter() - t0)
            assert r.outcome == "done", r
            t0 = time.perf_counter()
            await dbos_turn(f"overhead-{i}")
            times["dbos"].append(time.perf_counter() - t0)
            t0 = time.perf_counter()
            await temporal_turn(temporal, f"overhead-{i}")
            times["temporal"].append(time.perf_counter() - t0)
    finally:
        model.stop()
    medians = {k: round(statistics.median(v) * 1000, 1) for k, v in times.items()}
    print(json.dumps({"measure": "overhead", "runs": args.repeat, "median_ms": medians}))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", default="10,100,1000")
    parser.add_argument("--ask-sizes", default="10,100")
    parser.add_argument("--repeat", type=int, default=15)
    parser.add_argument("--stepped", action="store_true", help="only the stepped Temporal adapter")
    parser.add_argument("--stepped-sizes", default="10,100,1000")
    parser.add_argument("--journal-sizes", default="10,100")
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    args.stepped_sizes = [int(s) for s in args.stepped_sizes.split(",") if s]
    args.journal_sizes = [int(s) for s in args.journal_sizes.split(",") if s]
    args.sizes = [int(s) for s in args.sizes.split(",")]
    args.ask_sizes = [int(s) for s in args.ask_sizes.split(",") if s]
    with tempfile.TemporaryDirectory() as tmp_dir:
        tmp = Path(tmp_dir)
        args.db = f"sqlite:///{tmp / 'dbos.sqlite'}"
        DBOS(config={"name": "bench", "system_database_url": args.db, "log_level": "WARNING"})
        DBOS.launch()
        try:
            asyncio.run(measure(args, tmp))
        finally:
            DBOS.destroy()


if __name__ == "__main__":
    main()
