"""The host-hooks design, spelled as it says: a gate from hints that denies with an error result
and asks with pending, wait_for_ctx answering, and background shells the host owns.

python examples/python/host_hooks.py
"""

from __future__ import annotations

import asyncio
import tempfile
from typing import Any

import contenox


def gate(call: contenox.ToolCallEvent) -> Any:
    if call.hints.read_only:
        return None  # let reads run
    if call.name == "write":
        return contenox.ToolOutput.error("no writes in this session")  # deny
    return {"result": contenox.pending(kind="input", prompt=f"Run {call.name}?")}  # ask


def answer(request: contenox.PendingRequest, cancel: contenox.CancelSignal) -> Any:
    print(f"asked: {request.prompt}")
    return {"approve": not cancel.is_cancelled()}


def call(call_id: str, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    """A scripted model reply with one tool call."""
    return {"tool_calls": [{"id": call_id, "name": name, "arguments": arguments}]}


async def main() -> None:
    shells = contenox.BackgroundShells()  # host-owned: clients share it, the host closes it
    with tempfile.TemporaryDirectory() as root:
        client = contenox.create_client(
            style="scripted",
            script=[
                call("c1", "write", {"path": "a.txt", "content": "x"}),
                call("c2", "bash", {"command": "echo building", "run_in_background": True}),
                {"text": "The write was refused; the build runs in the background."},
            ],
            root=root,
            builtins=["write", "bash"],
            background=shells,
            hooks={"before_tool": gate},
            wait_for_ctx=answer,
        )
        result = await client.run("Write a.txt, then start the build.")
        for message in result.transcript.messages:
            if message["role"] == "tool":
                text = "".join(p["text"] for p in message["content"] if p["type"] == "text")
                print(f"{message['name']}: {text.splitlines()[0]}")
        print(f"shells: {shells.ids()}")
        client.close()
        shells.close_all()  # on shutdown
        print(f"{result.outcome}: {result.final_text}")


if __name__ == "__main__":
    asyncio.run(main())
