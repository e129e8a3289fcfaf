"""DBOS crash tests: process A starts a turn whose gate asks before ``write``, waits until DBOS
holds the ask, and dies by SIGKILL; process B (a new DBOS executor) sends the answer, takes over
A's turns, and the turn finishes. The model is the fake model server over HTTP (it counts its
requests); the tool and the gate log every run to files (agent.py)."""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from dbos import DBOSClient

from conftest import (
    PLANTED_KEY,
    Processes,
    assert_model_called_once_per_step,
    tool_messages,
)
from servers import postgres, wait_until

APP = [sys.executable, "dbos_app.py"]
APPROVE = json.dumps({"approve": True})
TIMEOUT_SENTENCE = "Approval timed out. The operation was automatically denied."


@pytest.fixture(params=["postgres", "sqlite"])
def database(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """The DBOS system database: a private PostgreSQL cluster, or a SQLite file (the default)."""
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'dbos.sqlite'}"
    else:
        with postgres() as url:
            yield url


def start_and_crash(procs: Processes, db: str, turn_id: str, **env: str) -> dict[str, Any]:
    """Process A starts the turn; once DBOS holds its ask, A is SIGKILLed. The pending request."""
    a = procs.start("A", [*APP, "start", turn_id, "Write the report."], DURABLE_DB=db, **env)
    client = DBOSClient(system_database_url=db)
    try:

        def pending() -> list[dict[str, Any]]:
            assert a.poll() is None, f"A exited: {procs.log('A')}"
            try:
                return list(client.get_event(turn_id, "pending", timeout_seconds=0) or [])
            except Exception:  # A has not created DBOS's tables yet
                return []

        (request,) = wait_until("DBOS holds the ask", pending, timeout=60)
    finally:
        client.destroy()
    procs.kill(a)
    assert request["call_id"] == "call_1"
    assert request["name"] == "write"
    # The gate asked in A, the tool did not run, the model was asked once.
    assert [g["role"] for g in procs.records("gate.jsonl")] == ["A"]
    assert procs.records("tool-runs.jsonl") == []
    assert len(procs.model.requests()) == 1
    return request


def finish(
    procs: Processes,
    db: str,
    turn_id: str,
    role: str,
    answer: str | None,
    dead: tuple[str, ...] = ("A",),
    **env: str,
) -> Any:
    argv = [*APP, "finish", turn_id, *(a for d in dead for a in ("--dead", d))]
    if answer is not None:
        argv += ["--call", "call_1", "--answer", answer]
    return procs.start(role, argv, DURABLE_DB=db, **env)


def checkpointed_turn_id(db: str, turn_id: str) -> str:
    """The engine's turn id in the checkpoint A's ``run`` step recorded."""
    client = DBOSClient(system_database_url=db)
    try:
        (step,) = [
            s for s in client.list_workflow_steps(turn_id) if s["function_name"].endswith(".run")
        ]
    finally:
        client.destroy()
    engine_turn_id: str = json.loads(step["output"]["checkpoint"])["turn_id"]
    return engine_turn_id


def assert_no_secret(db: str, turn_id: str) -> None:
    """Nothing DBOS recorded about the turn (its input, steps, events, result) holds the key."""
    client = DBOSClient(system_database_url=db)
    try:
        steps = client.list_workflow_steps(turn_id)
        (status,) = client.list_workflows(workflow_ids=[turn_id])
        events = client.get_event(turn_id, "pending", timeout_seconds=0)
        recorded = json.dumps([steps, status.input, status.output, events], default=str)
    finally:
        client.destroy()
    assert "checkpoint" in recorded  # the records are there, and read
    assert PLANTED_KEY not in recorded


def test_crash_at_ask_then_approve(procs: Processes, database: str) -> None:
    start_and_crash(procs, database, "turn-approve")
    b = finish(procs, database, "turn-approve", "B1", APPROVE)
    state = procs.output(b, "B1")
    assert state["outcome"] == "done", state
    assert state["final_text"] == "Wrote the report."
    # The tool ran exactly once, in B; the gate ran again in B before it.
    assert [r["role"] for r in procs.records("tool-runs.jsonl")] == ["B1"]
    # The key a side-effecting tool would use: the engine's turn id (kept through the
    # suspension, so the same in A's checkpoint and B's run) and the call id.
    (run,) = procs.records("tool-runs.jsonl")
    assert run["key"] == f"{checkpointed_turn_id(database, 'turn-approve')}:call_1", run
    assert [g["role"] for g in procs.records("gate.jsonl")] == ["A", "B1"]
    assert (procs.workdir / "files" / "report.txt").read_text() == "quarterly numbers"
    requests = assert_model_called_once_per_step(procs.model, 2)
    (result,) = tool_messages(requests[1])
    assert "wrote 17 bytes" in json.dumps(result)
    assert_no_secret(database, "turn-approve")


def test_policy_changed_to_deny_before_b(procs: Processes, database: str) -> None:
    start_and_crash(procs, database, "turn-deny")
    b = finish(procs, database, "turn-deny", "B1", APPROVE, DURABLE_GATE="deny")
    state = procs.output(b, "B1")
    assert state["outcome"] == "done", state
    assert procs.records("tool-runs.jsonl") == []
    assert not (procs.workdir / "files" / "report.txt").exists()
    assert [g["role"] for g in procs.records("gate.jsonl")] == ["A", "B1"]
    requests = assert_model_called_once_per_step(procs.model, 2)
    (result,) = tool_messages(requests[1])
    assert "The policy now denies write." in json.dumps(result)


def test_deadline_passed_denies_with_the_timeout_sentence(procs: Processes, database: str) -> None:
    request = start_and_crash(procs, database, "turn-late", DURABLE_ASK_TIMEOUT_MS="1500")
    deadline_ms = request["deadline_ms"]
    assert isinstance(deadline_ms, int)
    wait_until("the ask's deadline passed", lambda: time.time() * 1000 > deadline_ms + 100, 10)
    # B comes after the deadline and sends no answer: the turn goes on with the call denied.
    b = finish(procs, database, "turn-late", "B1", None, DURABLE_ASK_TIMEOUT_MS="1500")
    state = procs.output(b, "B1")
    assert state["outcome"] == "done", state
    assert procs.records("tool-runs.jsonl") == []
    requests = assert_model_called_once_per_step(procs.model, 2)
    (result,) = tool_messages(requests[1])
    assert TIMEOUT_SENTENCE in json.dumps(result)


def test_two_b_processes_race(procs: Processes, database: str) -> None:
    start_and_crash(procs, database, "turn-race")
    b1 = finish(procs, database, "turn-race", "B1", APPROVE)
    b2 = finish(procs, database, "turn-race", "B2", APPROVE)
    s1, s2 = procs.output(b1, "B1"), procs.output(b2, "B2")
    assert s1 == s2 and s1["outcome"] == "done", (s1, s2)
    runs = procs.records("tool-runs.jsonl")
    assert len(runs) == 1, runs
    winner = runs[0]["role"]
    # The gate ran again in the winner only; the model was asked once per step.
    assert [g["role"] for g in procs.records("gate.jsonl")] == ["A", winner]
    assert_model_called_once_per_step(procs.model, 2)


def test_crash_while_the_tool_runs_repeats_it_with_the_same_key(
    procs: Processes, database: str
) -> None:
    """What is not exactly-once: B1 dies while the approved tool runs (inside the resume step);
    B2 takes over and the step runs again, tool included. The tool gets the same idempotency
    key both times: a tool with side effects makes them conditional on it."""
    start_and_crash(procs, database, "turn-mid-tool")
    b1 = finish(procs, database, "turn-mid-tool", "B1", APPROVE, DURABLE_TOOL_HANGS="B1")
    wait_until("B1's tool runs", lambda: procs.records("tool-runs.jsonl"), timeout=60)
    procs.kill(b1)
    b2 = finish(procs, database, "turn-mid-tool", "B2", None, dead=("A", "B1"))
    state = procs.output(b2, "B2")
    assert state["outcome"] == "done", state
    runs = procs.records("tool-runs.jsonl")
    assert [r["role"] for r in runs] == ["B1", "B2"], runs
    assert (
        runs[0]["key"]
        == runs[1]["key"]
        == f"{checkpointed_turn_id(database, 'turn-mid-tool')}:call_1"
    )
    # The gate ran in each process that resumed; the model was still asked once per step.
    assert [g["role"] for g in procs.records("gate.jsonl")] == ["A", "B1", "B2"]
    assert_model_called_once_per_step(procs.model, 2)


STEPPED = {"DURABLE_STEPPED": "1"}


def test_stepped_crash_between_two_model_requests_does_not_repeat_the_first(
    procs: Processes, database: str
) -> None:
    """DBOSSteppedTurns records each model request and tool call as a step of its own: A dies
    while the tool runs, after the first model request and before the second (no ask in this
    turn); B recovers the turn: the first request is fed from DBOS's record, not sent again, the
    tool runs again with the same key (it never finished), then the second request."""
    env = {**STEPPED, "DURABLE_GATE": "allow"}
    argv = [*APP, "start", "turn-stepped", "Write the report."]
    a = procs.start("A", argv, DURABLE_DB=database, DURABLE_TOOL_HANGS="A", **env)
    wait_until("A's tool runs", lambda: procs.records("tool-runs.jsonl"), timeout=60)
    procs.kill(a)
    assert len(procs.model.requests()) == 1
    b = finish(procs, database, "turn-stepped", "B1", None, **env)
    state = procs.output(b, "B1")
    assert state["outcome"] == "done", state
    assert state["final_text"] == "Wrote the report."
    runs = procs.records("tool-runs.jsonl")
    assert [r["role"] for r in runs] == ["A", "B1"], runs
    assert runs[0]["key"] == runs[1]["key"] == "turn-stepped:call_1"
    assert [g["role"] for g in procs.records("gate.jsonl")] == ["A", "B1"]
    requests = assert_model_called_once_per_step(procs.model, 2)
    (result,) = tool_messages(requests[1])
    assert "wrote 17 bytes" in json.dumps(result)


def test_stepped_crash_at_ask_then_approve(procs: Processes, database: str) -> None:
    """The stepped adapter at an ask: A dies waiting for it; B answers and recovers the turn:
    the model request A made is fed from DBOS's record, the gate runs again, the tool once."""
    start_and_crash(procs, database, "turn-stepped-ask", **STEPPED)
    b = finish(procs, database, "turn-stepped-ask", "B1", APPROVE, **STEPPED)
    state = procs.output(b, "B1")
    assert state["outcome"] == "done", state
    (run,) = procs.records("tool-runs.jsonl")
    assert (run["role"], run["key"]) == ("B1", "turn-stepped-ask:call_1")
    assert [g["role"] for g in procs.records("gate.jsonl")] == ["A", "B1"]
    assert (procs.workdir / "files" / "report.txt").read_text() == "quarterly numbers"
    assert_model_called_once_per_step(procs.model, 2)
