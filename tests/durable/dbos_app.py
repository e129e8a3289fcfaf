"""A DBOS app running contenox turns (process A or B of the DBOS crash tests).

    python dbos_app.py start TURN_ID PROMPT
        launch DBOS as executor $DURABLE_ROLE, start the turn, then wait (the test kills it)
    python dbos_app.py finish TURN_ID [--call ID --answer JSON] --dead EXECUTOR
        launch DBOS as executor $DURABLE_ROLE, send the answer (if any), take over the dead
        executor's turns, wait for this turn's result and print it (one JSON line)

``DURABLE_DB``: the DBOS system database URL (SQLite file or PostgreSQL).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys

from dbos import DBOS

from agent import make_client
from contenox.durable.dbos import DBOSTurns
from contenox.durable.dbos_stepped import DBOSSteppedTurns

turns = (DBOSSteppedTurns if os.environ.get("DURABLE_STEPPED") == "1" else DBOSTurns)(make_client)


def launch() -> None:
    DBOS(
        config={
            "name": "contenox-durable-test",
            "system_database_url": os.environ["DURABLE_DB"],
            "executor_id": os.environ["DURABLE_ROLE"],
            "application_version": "test",
            "log_level": "WARNING",
        }
    )
    DBOS.launch()


async def start(turn_id: str, prompt: str) -> None:
    await turns.start(prompt, turn_id=turn_id)
    print("started", flush=True)
    await asyncio.Event().wait()  # until killed


async def finish(turn_id: str, call: str | None, answer: str | None, dead: list[str]) -> None:
    if call is not None and answer is not None:
        await turns.answer(turn_id, call, json.loads(answer))
    turns.recover(dead)
    handle = await DBOS.retrieve_workflow_async(turn_id)
    state = await handle.get_result(polling_interval_sec=0.1)
    print(json.dumps(state), flush=True)


def main() -> None:
    parser = argparse.ArgumentParser()
    sub = parser.add_subparsers(dest="command", required=True)
    s = sub.add_parser("start")
    s.add_argument("turn_id")
    s.add_argument("prompt")
    f = sub.add_parser("finish")
    f.add_argument("turn_id")
    f.add_argument("--call")
    f.add_argument("--answer")
    f.add_argument("--dead", action="append", default=[])
    args = parser.parse_args()
    launch()
    try:
        if args.command == "start":
            asyncio.run(start(args.turn_id, args.prompt))
        else:
            asyncio.run(finish(args.turn_id, args.call, args.answer, args.dead))
    finally:
        DBOS.destroy()
    sys.exit(0)


if __name__ == "__main__":
    main()
