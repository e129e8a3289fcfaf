"""A turn stepped by its host from Python (``client.step``): driven by hand it ends as ``run``
does; replaying the recorded results against an openai-style fake server sends no request and
runs no tool; results that do not fit raise StepError and change nothing; no key in an
action."""

from __future__ import annotations

import asyncio
import json
import tempfile
from pathlib import Path
from typing import Any

import contenox
import pytest
from conformance_runner import FakeServer

API_KEY = "sk-STEP-SECRET-KEY-0001"


def reply(*calls: tuple[str, str, dict[str, Any]]) -> dict[str, Any]:
    return {"tool_calls": [{"id": i, "name": n, "arguments": a} for i, n, a in calls]}


SCRIPT = [
    reply(("c0", "read", {"n": 0}), ("c1", "write", {"n": 1})),
    {"text": "all done"},
]


class Counts:
    def __init__(self) -> None:
        self.reads = 0
        self.writes = 0
        self.asks = 0

    def client(self, **kw: Any) -> contenox.Client:
        def read(n: int, ctx: contenox.ToolContext) -> str:
            self.reads += 1
            return f"read {n} as {ctx.idempotency_key}"

        def write(n: int, ctx: contenox.ToolContext) -> str:
            self.writes += 1
            return f"wrote {n} as {ctx.idempotency_key}"

        def wait_for(request: Any, cancel: Any) -> dict[str, Any]:
            self.asks += 1
            return {"approve": True}

        kw.setdefault("style", "scripted")
        if kw["style"] == "scripted":
            kw.setdefault("script", SCRIPT)
        return contenox.create_client(
            builtins=[],
            tools=[contenox.tool(read), contenox.tool(write)],
            policy={
                "default_action": "allow",
                "rules": [{"tool": "write", "action": "approve", "timeout_s": 600}],
            },
            wait_for=wait_for,
            **kw,
        )


def drive_sync(stepper: contenox.Stepper) -> list[dict[str, Any]]:
    """Answer each ask by feeding approve, perform the rest; the actions in order."""
    actions: list[dict[str, Any]] = []
    for _ in range(50):
        action = stepper.next_sync()
        actions.append(dict(action))
        if action["kind"] == "done":
            return actions
        if action["kind"] == "ask":
            stepper.feed(
                {
                    "kind": "answer",
                    "call_id": action["request"]["call_id"],
                    "answer": {"approve": True},
                }
            )
        else:
            stepper.perform_sync()
    raise AssertionError("the stepped turn did not end in 50 actions")


def test_a_turn_stepped_by_hand_ends_as_run_does() -> None:
    ran = Counts()
    expected = ran.client().run_sync("go")
    assert (ran.reads, ran.writes, ran.asks) == (1, 1, 1)

    counts = Counts()
    stepper = counts.client().step("go")
    actions = drive_sync(stepper)
    assert [a["kind"] for a in actions] == [
        "model_request",
        "tool_call",
        "ask",
        "tool_call",
        "model_request",
        "done",
    ]
    # The ask was fed, not asked of wait_for; each tool ran once.
    assert (counts.reads, counts.writes, counts.asks) == (1, 1, 0)
    result = actions[-1]["result"]
    assert isinstance(result, contenox.TurnResult)
    assert (result.outcome, result.final_text) == (expected.outcome, expected.final_text)
    mine = [m for m in result.transcript.messages if m["role"] == "tool"]
    theirs = [m for m in expected.transcript.messages if m["role"] == "tool"]
    assert len(mine) == len(theirs) == 2
    for m, t in zip(mine, theirs, strict=True):
        assert m["call_id"] == t["call_id"]
    key = f"{stepper.turn_id}:c1"
    assert actions[3]["idempotency_key"] == key
    assert key in json.dumps(mine, default=str)
    kinds = [e.type for e in stepper.events()]
    assert kinds[0] == "turn_start" and kinds[-1] == "turn_end"


def test_replaying_the_journal_gives_the_same_actions_and_does_no_io() -> None:
    scenario = {"name": "step", "style": "openai", "model": SCRIPT, "prompt": "go", "expect": {}}
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "scenario.json"
        path.write_text(json.dumps(scenario))
        server = FakeServer(path)
        try:
            kw = {
                "style": "openai",
                "base_url": server.base_url("openai"),
                "model": "fake",
                "api_key": API_KEY,
                "headers": {"X-Secret": "STEP-HEADER-0002"},
            }
            first = Counts()
            stepper = first.client(**kw).step("go")
            actions = drive_sync(stepper)
            assert len(server.requests()) == 2
            journal = stepper.journal
            assert [r["kind"] for r in journal] == [
                "model_response",
                "tool_result",
                "answer",
                "tool_result",
                "model_response",
            ]
            # The request bodies are the wire's, without the key or headers.
            body = actions[0]["request"]
            assert body["model"] == "fake" and body["messages"][-1]["content"] == "go"
            text = json.dumps(actions[:-1])
            assert API_KEY not in text and "STEP-HEADER-0002" not in text

            # Another process would do this: the same start, the recorded results fed.
            again = Counts()
            replay = again.client(**kw).step("go", **stepper.options)
            replayed: list[dict[str, Any]] = []
            for recorded in journal:
                action = replay.next_sync()
                replayed.append(dict(action))
                replay.feed(recorded)
            done = replay.next_sync()
            assert done["kind"] == "done"
            assert replayed == actions[:-1]
            assert (again.reads, again.writes, again.asks) == (0, 0, 0)
            assert len(server.requests()) == 2, "the replay sent no request"
            assert done["result"].final_text == "all done"
        finally:
            server.stop()


def test_results_that_do_not_fit_raise_step_error_and_change_nothing() -> None:
    counts = Counts()

    async def main() -> None:
        stepper = counts.client().step("go")
        with pytest.raises(contenox.StepError, match="call next\\(\\) first"):
            stepper.feed({"kind": "tool_result", "call_id": "c0", "output": {"content": "x"}})
        first = await stepper.next()
        assert first["kind"] == "model_request"
        assert await stepper.next() == first
        with pytest.raises(contenox.StepError, match="model_request; a ask result"):
            stepper.feed({"kind": "answer", "call_id": "c0", "answer": {"approve": True}})
        with pytest.raises(contenox.StepError, match="step 0"):
            stepper.feed({"kind": "model_response", "step": 3, "reply": {"text": "x"}})
        with pytest.raises(contenox.StepError, match="not an action result"):
            stepper.feed({"kind": "nonsense"})
        recorded = await stepper.perform()
        assert recorded["kind"] == "model_response" and recorded["step"] == 0
        read = await stepper.next()
        assert read["kind"] == "tool_call"
        stepper.feed({"kind": "tool_result", "call_id": "c0", "output": {"content": "fed"}})
        with pytest.raises(contenox.StepError):
            stepper.feed({"kind": "tool_result", "call_id": "c0", "output": {"content": "again"}})
        ask = await stepper.next()
        assert ask["kind"] == "ask"
        with pytest.raises(contenox.StepError, match="not one"):
            stepper.feed({"kind": "answer", "call_id": "c1", "answer": "yes"})
        stepper.feed(
            {"kind": "answer", "call_id": "c1", "answer": {"approve": False, "message": "no"}}
        )
        for _ in range(10):
            action = await stepper.next()
            if action["kind"] == "done":
                break
            await stepper.perform()
        assert action["kind"] == "done"
        assert action["result"].outcome == "done"
        with pytest.raises(contenox.StepError, match="the turn is done"):
            stepper.feed({"kind": "tool_result", "call_id": "c1", "output": {"content": "x"}})
        with pytest.raises(contenox.StepError):
            await stepper.perform()
        assert (await stepper.next())["kind"] == "done"

    asyncio.run(main())
    assert (counts.reads, counts.writes, counts.asks) == (0, 0, 0)
