"""The adapters record a resumed turn's checkpoint as a delta of the one it resumed (so a turn
that asks k times records its conversation once, not k times): the rebuilt checkpoint is the
engine's own (it resumes; the engine checks the digest), and a wrong rebuild is refused."""

from __future__ import annotations

import json
from typing import Any

import pytest

import contenox
from contenox.durable._turn import apply_delta, delta_of, suspend

ASKS = 6
SCRIPT: list[dict[str, Any]] = [
    {"tool_calls": [{"id": f"c{i}", "name": "note", "arguments": {"text": f"step {i} " * 20}}]}
    for i in range(ASKS)
] + [{"text": "done"}]


def client_from(step: int) -> contenox.Client:
    """A client whose scripted model answers from ``step`` on (each resume is a new client)."""

    def note(text: str) -> str:
        """Take a note."""
        return f"noted {len(text)} characters"

    return contenox.create_client(
        style="scripted",
        script=SCRIPT[step:],
        builtins=[],
        tools=[note],
        hooks={"before_tool": lambda e: contenox.pending(kind="approval", prompt="Note?")},
        wait_for=suspend,
    )


async def test_deltas_rebuild_the_checkpoints_and_add_up_to_the_conversation_once() -> None:
    result = await client_from(0).run("go")
    checkpoint = result.checkpoint
    assert checkpoint is not None
    whole, deltas = [len(checkpoint)], [len(checkpoint)]
    for step in range(1, ASKS + 1):
        result = await client_from(step).resume(checkpoint, {f"c{step - 1}": {"approve": True}})
        if result.outcome != "suspended":
            break
        assert result.checkpoint is not None
        delta = delta_of(result.checkpoint, checkpoint)
        assert delta is not None
        rebuilt = apply_delta(checkpoint, delta)
        assert json.loads(rebuilt) == json.loads(result.checkpoint)
        whole.append(len(result.checkpoint))
        deltas.append(len(json.dumps(delta)))
        checkpoint = rebuilt  # the next resume runs on the rebuilt text
    assert result.outcome == "done", result
    assert result.final_text == "done"
    # Each whole checkpoint holds the conversation so far; the deltas stay about one step each.
    assert whole == sorted(whole) and whole[-1] > 1.5 * whole[1], whole
    assert max(deltas[1:]) < 1.5 * min(deltas[1:]), deltas


async def test_a_wrong_rebuild_is_refused() -> None:
    first = await client_from(0).run("go")
    assert first.checkpoint is not None
    second = await client_from(1).resume(first.checkpoint, {"c0": {"approve": True}})
    assert second.checkpoint is not None
    delta = delta_of(second.checkpoint, first.checkpoint)
    assert delta is not None
    delta["tail"][-1]["content"][0]["text"] = "noted nothing"  # a tool result changed
    with pytest.raises(contenox.CheckpointError):
        await client_from(2).resume(apply_delta(first.checkpoint, delta), {"c1": {"approve": True}})


def test_no_delta_without_a_shared_prefix() -> None:
    base = json.dumps({"transcript": {"messages": [{"role": "user", "content": "a"}]}})
    other = json.dumps({"transcript": {"messages": [{"role": "user", "content": "b"}]}})
    assert delta_of(other, base) is None
