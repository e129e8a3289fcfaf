"""A Temporal worker running contenox turns (process A or B of the Temporal crash tests).

    python temporal_app.py start TURN_ID PROMPT
        run a worker, start the turn, then wait (the test kills it)
    python temporal_app.py finish TURN_ID [--call ID --answer JSON]
        run a worker, send the answer (if any; a rejected one is reported, not fatal: another
        process answered first), wait for the turn's result and print it (one JSON line)

``DURABLE_TEMPORAL``: the server's host:port; ``DURABLE_QUEUE``: the task queue;
``DURABLE_STEPPED=1``: the stepped adapter (contenox.durable.temporal_stepped: an activity per
model request and tool call) instead of contenox.durable.temporal.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
from typing import Any

from temporalio.client import Client, WorkflowUpdateFailedError
from temporalio.worker import Worker

from agent import make_client
from contenox.durable.temporal import TurnActivities, TurnWorkflow, start_turn
from contenox.durable.temporal_stepped import (
    SteppedActivities,
    SteppedTurnWorkflow,
    start_stepped_turn,
)


async def main() -> None:
    parser = argparse.ArgumentParser()
    sub = parser.add_subparsers(dest="command", required=True)
    s = sub.add_parser("start")
    s.add_argument("turn_id")
    s.add_argument("prompt")
    f = sub.add_parser("finish")
    f.add_argument("turn_id")
    f.add_argument("--call")
    f.add_argument("--answer")
    args = parser.parse_args()

    client = await Client.connect(os.environ["DURABLE_TEMPORAL"])
    queue = os.environ["DURABLE_QUEUE"]
    stepped = os.environ.get("DURABLE_STEPPED") == "1"
    workflow: Any = SteppedTurnWorkflow if stepped else TurnWorkflow
    activities: Any = (
        SteppedActivities(make_client, heartbeat_every_s=1.0)
        if stepped
        else TurnActivities(make_client, heartbeat_every_s=1.0)
    )
    async with Worker(client, task_queue=queue, workflows=[workflow], activities=activities.all()):
        if args.command == "start":
            # A worker silent this long is taken for dead (its activity runs again elsewhere).
            heartbeat_s = float(os.environ.get("DURABLE_HEARTBEAT_S", "30"))
            if stepped:
                await start_stepped_turn(
                    client,
                    args.prompt,
                    workflow_id=args.turn_id,
                    task_queue=queue,
                    heartbeat_timeout_s=heartbeat_s,
                )
            else:
                await start_turn(
                    client,
                    args.prompt,
                    turn_id=args.turn_id,
                    task_queue=queue,
                    heartbeat_timeout_s=heartbeat_s,
                )
            print("started", flush=True)
            await asyncio.Event().wait()  # until killed
        handle = client.get_workflow_handle(args.turn_id)
        if args.call is not None and args.answer is not None:
            try:
                await handle.execute_update(
                    workflow.answer, args=[args.call, json.loads(args.answer)]
                )
            except WorkflowUpdateFailedError as e:
                print(f"answer rejected: {e.cause}", file=sys.stderr, flush=True)
        state = await handle.result()
        print(json.dumps(state), flush=True)


if __name__ == "__main__":
    asyncio.run(main())
    # The SDK's Rust runtime threads can abort the interpreter's teardown (temporalio/sdk-python
    # issue 300, "PyGILState_Release ... finalizing"); the work is done and flushed: skip it.
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)
