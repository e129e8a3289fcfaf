"""The lifecycle hooks beside before_tool / after_tool, through ``hooks={...}``: each point's
argument and answer, sync and async, and a hook that raises, answers what its point does not
take, or hangs past ``hook_timeout_ms``: the point's fallback, never a failed turn."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import contenox
import pytest
from contenox._lifecycle import (
    AddContext,
    CompactInstructions,
    CompactRequest,
    ContinueTurn,
    Notification,
    RefusePrompt,
    ReplacePrompt,
    TurnEnd,
    VetoCompact,
)


def scripted(*entries: dict[str, Any], **kw: Any) -> contenox.Client:
    kw.setdefault("builtins", [])
    kw.setdefault("hook_timeout_ms", 300)
    return contenox.create_client(style="scripted", script=list(entries), **kw)


def first_text(r: contenox.TurnResult) -> str:
    content = r.transcript.messages[0]["content"]
    if isinstance(content, str):
        return content
    return "".join(p.get("text", "") for p in content)


def failing(args: Any) -> Any:
    raise RuntimeError("it broke")


async def test_every_point_is_called_in_order_with_typed_arguments() -> None:
    log: list[str] = []

    def on_turn_start(prompt: str) -> None:
        log.append(f"turn_start {prompt}")

    async def on_prompt(prompt: str) -> AddContext:
        log.append(f"prompt {prompt}")
        return AddContext("(from the hook)")

    def on_notification(n: Notification) -> None:
        assert isinstance(n, Notification)
        log.append(f"notification {n.kind}")

    def on_tool_error(event: contenox.ToolCallEvent, result: contenox.ToolOutput) -> None:
        log.append(f"tool_error {event.name} {event.call_id} {result.is_error} {result.content}")

    stops: list[str] = []

    def on_stop(final_text: str) -> ContinueTurn | None:
        stops.append(final_text)
        log.append(f"stop {final_text}")
        return ContinueTurn("check again") if len(stops) == 1 else None

    def on_turn_end(end: TurnEnd) -> None:
        log.append(f"turn_end {end.outcome} {end.final_text}")

    client = scripted(
        {"tool_calls": [{"id": "c1", "name": "fail", "arguments": {}}]},
        {"text": "first answer"},
        {"text": "second answer"},
        max_turns=5,
        hooks={
            "before_tool": lambda e: contenox.pending(kind="approval", prompt="run?"),
            "on_turn_start": on_turn_start,
            "on_prompt": on_prompt,
            "on_notification": on_notification,
            "on_tool_error": on_tool_error,
            "on_stop": on_stop,
            "on_turn_end": on_turn_end,
        },
        wait_for=lambda req, cancel: {"approve": True},
    )
    client.register(contenox.Tool("fail", failing))
    r = await client.run("hello")
    assert r.outcome == "done" and r.final_text == "second answer"
    assert log == [
        "turn_start hello",
        "prompt hello",
        "notification ask",
        "tool_error fail c1 True it broke",
        "stop first answer",
        "stop second answer",
        "turn_end done second answer",
    ]
    assert "hello" in first_text(r) and "(from the hook)" in first_text(r)
    assert any(
        m["role"] == "user" and "check again" in str(m["content"]) for m in r.transcript.messages
    )


async def test_on_prompt_replaces_or_refuses() -> None:
    client = scripted({"text": "ok"}, hooks={"on_prompt": lambda p: ReplacePrompt("tidy")})
    r = await client.run("messy")
    assert first_text(r) == "tidy"

    client = scripted({"text": "answered"}, hooks={"on_prompt": lambda p: RefusePrompt("not that")})
    r = await client.run("bad")
    assert r.outcome == "error"
    assert r.error == "the prompt was refused by a hook: not that"
    assert len(r.transcript.messages) == 0


def test_on_stop_is_bounded_by_max_turns_in_a_sync_run() -> None:
    calls: list[str] = []

    def on_stop(text: str) -> ContinueTurn:
        calls.append(text)
        return ContinueTurn("again")

    client = scripted(
        {"text": "one"},
        {"text": "two"},
        {"text": "three"},
        max_turns=2,
        hooks={"on_stop": on_stop},
    )
    r = client.run_sync("go")
    # Sent back once; at the last response max_turns allows it is not asked.
    assert r.outcome == "done" and r.final_text == "two"
    assert calls == ["one"]


async def test_before_compact_vetoes_or_sets_instructions() -> None:
    seen: list[CompactRequest] = []

    def veto(req: CompactRequest) -> VetoCompact:
        seen.append(req)
        return VetoCompact("not now")

    compaction = {"threshold_tokens": 1_000_000, "keep_recent": 1}
    client = scripted(
        {"text": "a"}, {"text": "b"}, compaction=compaction, hooks={"before_compact": veto}
    )
    await client.run("one")
    await client.run("two")
    assert await client.compact() is None
    assert len(client.transcript.messages) == 4
    assert seen[0].trigger == "manual" and seen[0].pre_tokens > 0

    async def instruct(req: CompactRequest) -> CompactInstructions:
        return CompactInstructions("keep names")

    client = scripted(
        {"text": "a"},
        {"text": "b"},
        {"text": "the summary"},
        compaction=compaction,
        hooks={"before_compact": instruct},
    )
    await client.run("one")
    await client.run("two")
    notice = await client.compact()
    assert notice is not None and notice.summary == "the summary"


def raising(*args: Any) -> Any:
    raise ValueError("hook bug")


async def async_raising(*args: Any) -> Any:
    raise ValueError("hook bug")


def sync_hang(*args: Any) -> Any:
    time.sleep(2)


async def async_hang(*args: Any) -> Any:
    await asyncio.sleep(30)


def wrong_answer(*args: Any) -> Any:
    return "refuse"  # a str is no answer: only the typed answers are


@pytest.mark.parametrize("hook", [raising, async_raising, sync_hang, async_hang, wrong_answer])
async def test_a_failing_hook_falls_back_and_the_turn_goes_on(hook: Any) -> None:
    points = (
        "on_prompt",
        "on_stop",
        "before_compact",
        "on_tool_error",
        "on_turn_start",
        "on_turn_end",
        "on_notification",
    )
    client = scripted(
        {"tool_calls": [{"id": "c1", "name": "fail", "arguments": {}}]},
        {"text": "done"},
        {"text": "second"},
        {"text": "the summary"},
        compaction={"threshold_tokens": 1_000_000, "keep_recent": 1},
        hooks={p: hook for p in points},
    )
    client.register(contenox.Tool("fail", failing))
    started = time.monotonic()
    r = await client.run("as it is")
    # on_prompt's fallback: the prompt as it is; on_stop's: the turn ends.
    assert r.outcome == "done" and r.final_text == "done"
    assert first_text(r) == "as it is"
    await client.run("more")
    # before_compact's fallback: the compaction proceeds.
    notice = await client.compact()
    assert notice is not None and notice.summary == "the summary"
    # Each hang is cut at hook_timeout_ms (300 ms), not the hook's own 2 s / 30 s.
    assert time.monotonic() - started < 15


def test_an_unknown_point_is_a_configuration_error() -> None:
    with pytest.raises(contenox.ConfigurationError, match="on_prompt"):
        scripted({"text": "x"}, hooks={"on_promt": lambda p: None})
    with pytest.raises(contenox.ConfigurationError, match="hook_timeout_ms"):
        scripted({"text": "x"}, hook_timeout_ms=0)
