"""Subagents and compaction through the Python API: the spelling, the callbacks, and what a
broken host answer does (scripted models; the conformance scenarios cover the engine's part)."""

from __future__ import annotations

from typing import Any

import contenox
import pytest
from conftest import text_of


def call(name: str, args: dict[str, Any], cid: str = "call_1") -> dict[str, Any]:
    return {"tool_calls": [{"id": cid, "name": name, "arguments": args}]}


def scripted(*entries: dict[str, Any], **kw: Any) -> contenox.Client:
    return contenox.create_client(style="scripted", script=list(entries), builtins=[], **kw)


async def test_async_tool_of_a_subagent_runs_on_the_callers_loop() -> None:
    # The child's turn is started by the engine, not from Python: its async tool still runs.
    async def nap(args: dict[str, Any]) -> str:
        return "rested"

    child = scripted(
        call("nap", {}),
        {"text": "Child done."},
        tools=[contenox.Tool("nap", nap, input_schema={"type": "object"})],
    )
    seen: list[tuple[str, ...]] = []

    async def before_tool(event: contenox.ToolCallEvent) -> None:
        seen.append(event.agent)

    parent = scripted(
        call("worker", {"prompt": "Nap."}),
        {"text": "Parent done."},
        hooks={"before_tool": before_tool},
    )
    parent.register(child.as_tool_with("worker", "Naps.", max_turns=3))
    run = parent.stream("Go.")
    events = [e async for e in run]
    result = await run.result()
    assert result.final_text == "Parent done."
    nap_result = next(e for e in events if e.type == "tool_result" and e.name == "nap")
    assert not nap_result.is_error and nap_result.content == "rested"
    assert nap_result.agent == ("worker",)
    # The parent's gate saw its own call, then the child's.
    assert seen == [(), ("worker",)]


def test_bad_subagent_options_are_a_configuration_error() -> None:
    child = scripted({"text": "x"})
    with pytest.raises(contenox.ConfigurationError, match="max_turns"):
        child.as_tool_with("worker", "Works.", max_turns=0)
    with pytest.raises(contenox.ConfigurationError):
        child.as_tool_with("worker", "Works.", conversation="sometimes")  # type: ignore[arg-type]


async def test_compact_on_demand_tells_on_compact() -> None:
    told: list[contenox.CompactNotice] = []
    client = scripted(
        {"text": "It is 4."},
        {"text": "The user asked 2 + 2; it is 4."},
        compaction={"threshold_tokens": 100_000, "keep_recent": 1},
        on_compact=told.append,
    )
    assert await client.compact() is None  # nothing to summarise yet
    await client.run("What is 2 + 2?")
    notice = await client.compact()
    assert notice is not None and notice.trigger == "manual"
    assert notice.summary == "The user asked 2 + 2; it is 4."
    assert told == [notice]
    assert text_of(client.transcript.messages[0]).endswith("The user asked 2 + 2; it is 4.")


async def test_a_compactor_returning_junk_leaves_the_conversation() -> None:
    def compactor(transcript: contenox.Transcript) -> Any:
        return {"messages": [{"role": "tool", "call_id": "nope", "name": "x", "content": ""}]}

    client = scripted({"text": "One."}, {"text": "Two."}, compactor=compactor)
    await client.run("First.")
    before = client.transcript
    with pytest.raises(contenox.CompactionError, match="invalid transcript"):
        await client.compact()
    assert client.transcript == before


async def test_a_compactor_that_raises_leaves_the_conversation() -> None:
    async def compactor(transcript: contenox.Transcript) -> contenox.Transcript:
        raise RuntimeError("no room")

    client = scripted({"text": "One."}, compactor=compactor)
    await client.run("First.")
    with pytest.raises(contenox.CompactionError, match="no room"):
        await client.compact()
    assert len(client.transcript) == 2
