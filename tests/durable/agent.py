"""The agent every durable-engine test process builds (processes A and B of a crash test): the
same config in each, read from the environment the test sets, as a real deployment would.

- ``DURABLE_BASE_URL``: the fake model server (OpenAI style).
- ``DURABLE_WORKDIR``: where the tool writes and the logs go.
- ``DURABLE_ROLE``: this process's name (``A``, ``B1``, ...), written into the logs.
- ``DURABLE_GATE``: ``ask`` (the gate asks before ``write``), ``deny`` (the policy changed) or
  ``allow`` (no ask: the turn runs through).
- ``DURABLE_STEPPED``: ``1`` = the DBOS app uses ``DBOSSteppedTurns`` (a step per model request
  and tool call).
- ``DURABLE_ASK_TIMEOUT_MS``: the ask's timeout, when set.
- ``DURABLE_ASK_PROMPT``: the ask's prompt (default ``Write the file?``; a process that asks
  something else asks a different request).
- ``DURABLE_COMPACTION``: ``1`` = the client compacts past 1 000 tokens, keeping 1 message.
- ``DURABLE_API_KEY``: the model's API key: a planted secret no engine record may hold.
- ``DURABLE_TOOL_HANGS``: the role whose ``write`` hangs once it has logged its run (the test
  kills that process while the tool runs).

The logs, one JSON object a line: ``gate.jsonl`` (every time the gate saw the call: role, pid,
call id) and ``tool-runs.jsonl`` (every time the tool ran: role, pid, path, and the idempotency
key the engine gave it, ``turn_id:call_id``).
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

import contenox


def _log(name: str, record: dict[str, Any]) -> None:
    path = Path(os.environ["DURABLE_WORKDIR"]) / name
    line = json.dumps({"role": os.environ.get("DURABLE_ROLE", "?"), "pid": os.getpid(), **record})
    with open(path, "a", encoding="utf-8") as f:
        f.write(line + "\n")
        f.flush()
        os.fsync(f.fileno())


def before_tool(event: contenox.ToolCallEvent) -> contenox.Ask | contenox.Deny | None:
    _log("gate.jsonl", {"call_id": event.call_id, "name": event.name})
    if event.name != "write":
        return None
    if os.environ.get("DURABLE_GATE", "ask") == "deny":
        return contenox.deny("The policy now denies write.")
    if os.environ.get("DURABLE_GATE") == "allow":
        return None
    timeout = os.environ.get("DURABLE_ASK_TIMEOUT_MS")
    return contenox.pending(
        kind="approval",
        prompt=os.environ.get("DURABLE_ASK_PROMPT", "Write the file?"),
        timeout_ms=int(timeout) if timeout else None,
    )


def make_client(wait_for: contenox.WaitFor) -> contenox.Client:
    workdir = Path(os.environ["DURABLE_WORKDIR"])
    files = workdir / "files"
    files.mkdir(exist_ok=True)
    client = contenox.create_client(
        style="openai",
        base_url=os.environ["DURABLE_BASE_URL"],
        model="fake",
        api_key=os.environ.get("DURABLE_API_KEY", "test"),
        builtins=[],
        root=str(files),
        hooks={"before_tool": before_tool},
        wait_for=wait_for,
        compaction={"threshold_tokens": 1000, "keep_recent": 1}
        if os.environ.get("DURABLE_COMPACTION") == "1"
        else None,
    )

    @client.tool
    def write(path: str, content: str, ctx: contenox.ToolContext) -> str:
        """Write content to a file (relative to the work directory)."""
        _log("tool-runs.jsonl", {"path": path, "key": ctx.idempotency_key})
        if os.environ.get("DURABLE_TOOL_HANGS") == os.environ.get("DURABLE_ROLE"):
            time.sleep(3600)  # the test kills this process while the tool runs
        (files / Path(path).name).write_text(content)
        return f"wrote {len(content)} bytes to {path}"

    return client
