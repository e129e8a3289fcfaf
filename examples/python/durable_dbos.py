"""A turn that outlives its process, on DBOS (SQLite: no server). The gate asks before the
model's ``write``; the turn suspends and DBOS holds the ask; an answer sent later (here from the
same process; in production from any process of the app, after a crash or a deploy) finishes it.

    pip install 'contenox[dbos]'
    python examples/python/durable_dbos.py
"""

from __future__ import annotations

import asyncio
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import contenox
from contenox.durable.dbos import DBOSTurns
from dbos import DBOS

work = Path(tempfile.mkdtemp(prefix="contenox-dbos-"))

# The scripted model stands in for a real one (swap in style="openai", model=..., api_key=...):
# each client the turn's steps build replays the next reply.
replies: Iterator[dict[str, Any]] = iter(
    [
        {
            "tool_calls": [
                {
                    "id": "call_1",
                    "name": "write",
                    "arguments": {"path": "notes.txt", "content": "hello"},
                }
            ]
        },
        {"text": "Wrote notes.txt."},
    ]
)


def ask_before_write(event: contenox.ToolCallEvent) -> contenox.Ask | None:
    if event.name == "write":
        return contenox.pending(kind="approval", prompt=f"Write {event.arguments['path']}?")
    return None


def make_client(wait_for: contenox.WaitFor) -> contenox.Client:
    """The same config in every process; secrets (API keys) come from here, never from the
    checkpoint DBOS records."""
    return contenox.create_client(
        style="scripted",
        script=[next(replies)],
        builtins=["write"],
        root=str(work),
        hooks={"before_tool": ask_before_write},
        wait_for=wait_for,
    )


turns = DBOSTurns(make_client)  # before DBOS.launch(): registers the workflow and its steps


async def main() -> None:
    handle = await turns.start("Write hello to notes.txt.", turn_id="turn-1")
    pending = await turns.pending("turn-1", timeout_s=30)
    print("waiting for:", [(p["call_id"], p["prompt"]) for p in pending])
    await turns.answer("turn-1", pending[0]["call_id"], {"approve": True})
    state = await handle.get_result()
    print("outcome:", state["outcome"], "|", state["final_text"])
    print("notes.txt:", (work / "notes.txt").read_text())


if __name__ == "__main__":
    DBOS(config={"name": "durable-example", "system_database_url": f"sqlite:///{work}/dbos.db"})
    DBOS.launch()
    try:
        asyncio.run(main())
    finally:
        DBOS.destroy()
