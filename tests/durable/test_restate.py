"""Restate crash tests (the Node adapter, contenox/restate): process A (a Node endpoint serving
the workflow) runs a turn whose gate asks before ``write``; once the workflow's state holds the
ask (its awakeable), A dies by SIGKILL; process B (a new endpoint on the same address) serves
the rest after the answer resolves the awakeable. Against a real restate-server (npm
@restatedev/restate-server), started by this module on 127.0.0.1 and stopped at its end.

Restate runs one invocation of a workflow key at a time by design, so the race here is two
answers sent at once (by two processes, as the others' B1 and B2 do): one wins, the tool runs
once.

Each test runs on both workflows where both apply: ``contenox-turn`` (turnWorkflow: the stretch
between two asks is one ``ctx.run``) and ``contenox-stepped-turn`` (steppedTurnWorkflow: each
model request and tool call its own ``ctx.run``, through ``client.step``)."""

from __future__ import annotations

import json
import re
import shutil
import tempfile
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from conftest import (
    PLANTED_KEY,
    Processes,
    assert_model_called_once_per_step,
    tool_messages,
)
from servers import Restate, fake_model, free_port, restate_server, wait_port, wait_until

HERE = Path(__file__).resolve().parent
APP = ["node", str(HERE / "restate" / "app.mjs")]
APPROVE = {"approve": True}
TIMEOUT_SENTENCE = "Approval timed out. The operation was automatically denied."
WORKFLOW = "contenox-turn"
STEPPED = "contenox-stepped-turn"
BOTH = pytest.mark.parametrize("workflow", [WORKFLOW, STEPPED])


@pytest.fixture(scope="module")
def restate() -> Iterator[Restate]:
    tmp = Path(tempfile.mkdtemp(prefix="contenox-restate-"))
    try:
        with restate_server(tmp) as server:
            yield server
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def post(url: str, body: Any, timeout: float = 30) -> Any:
    data = json.dumps(body).encode()
    req = urllib.request.Request(url, data=data, headers={"content-type": "application/json"})
    with urllib.request.urlopen(req, timeout=timeout) as r:
        text = r.read().decode()
    return json.loads(text) if text else None


def get(url: str, timeout: float = 30) -> Any:
    with urllib.request.urlopen(url, timeout=timeout) as r:
        return json.loads(r.read().decode())


class Turn:
    """One turn of the workflow on one endpoint address (A's, then B's)."""

    def __init__(
        self, procs: Processes, restate: Restate, turn_id: str, workflow: str = WORKFLOW
    ) -> None:
        self.procs = procs
        self.restate = restate
        self.turn_id = turn_id
        self.workflow = workflow
        self.port = free_port()

    def endpoint(self, role: str, **env: str) -> Any:
        proc = self.procs.start(role, [*APP, str(self.port)], **env)
        wait_port(self.port)
        return proc

    def url(self, handler: str) -> str:
        return f"{self.restate.ingress}/{self.workflow}/{self.turn_id}/{handler}"

    def pending(self) -> list[dict[str, Any]]:
        return list(post(self.url("pending"), None) or [])

    def answer(self, answer: Any) -> None:
        post(self.url("answer"), {"callId": "call_1", "answer": answer})

    def result(self, timeout: float = 90) -> Any:
        attach = f"{self.restate.ingress}/restate/workflow/{self.workflow}/{self.turn_id}/attach"
        return get(attach, timeout=timeout)


def start(procs: Processes, restate: Restate, turn: Turn, **env: str) -> Any:
    """Process A serving the workflows, registered, and the turn sent to it."""
    a = turn.endpoint("A", **env)
    post(f"{restate.admin}/deployments", {"uri": f"http://127.0.0.1:{turn.port}", "force": True})
    post(turn.url("run/send"), {"prompt": "Write the report."})
    return a


def start_and_crash(
    procs: Processes, restate: Restate, turn_id: str, workflow: str = WORKFLOW, **env: str
) -> Turn:
    turn = Turn(procs, restate, turn_id, workflow)
    a = start(procs, restate, turn, **env)

    def open_asks() -> list[dict[str, Any]]:
        assert a.poll() is None, f"A exited: {procs.log('A')}"
        return turn.pending()

    (ask,) = wait_until("the workflow holds the ask", open_asks, timeout=60)
    procs.kill(a)
    assert ask["callId"] == "call_1"
    assert ask["awakeable"]
    turn.ask = ask  # type: ignore[attr-defined]
    assert [g["role"] for g in procs.records("gate.jsonl")] == ["A"]
    assert procs.records("tool-runs.jsonl") == []
    assert len(procs.model.requests()) == 1
    return turn


def journal(restate: Restate, turn_id: str) -> list[dict[str, Any]]:
    """The journal entries of the turn's invocations (Restate's SQL over its admin API)."""
    query = (
        "SELECT j.name, j.entry_type, j.raw_length, j.entry_json FROM sys_journal j "
        f"JOIN sys_invocation i ON j.id = i.id WHERE i.target_service_key = '{turn_id}'"
    )
    req = urllib.request.Request(
        f"{restate.admin}/query",
        data=json.dumps({"query": query}).encode(),
        headers={"content-type": "application/json", "accept": "application/json"},
    )
    with urllib.request.urlopen(req, timeout=30) as r:
        rows: list[dict[str, Any]] = json.loads(r.read())["rows"]
    return rows


def decoded(value: Any) -> Any:
    """An entry's JSON with its payloads (byte arrays) read as text."""
    if isinstance(value, list) and value and all(isinstance(b, int) for b in value):
        return bytes(value).decode("utf-8", "replace")
    if isinstance(value, list):
        return [decoded(v) for v in value]
    if isinstance(value, dict):
        return {k: decoded(v) for k, v in value.items()}
    return value


@BOTH
def test_crash_at_ask_then_approve(procs: Processes, restate: Restate, workflow: str) -> None:
    key = f"r-approve-{workflow}"
    turn = start_and_crash(procs, restate, key, workflow)
    turn.endpoint("B1")
    turn.answer(APPROVE)
    state = turn.result()
    assert state["outcome"] == "done", state
    assert state["finalText"] == "Wrote the report."
    assert [r["role"] for r in procs.records("tool-runs.jsonl")] == ["B1"]
    assert [g["role"] for g in procs.records("gate.jsonl")] == ["A", "B1"]
    requests = assert_model_called_once_per_step(procs.model, 2)
    (result,) = tool_messages(requests[1])
    assert "wrote 17 bytes" in json.dumps(result)
    entries = journal(restate, key)
    runs = [e.get("name") for e in entries if e.get("entry_type") == "Command: Run"]
    recorded = json.dumps([decoded(json.loads(e.get("entry_json") or "null")) for e in entries])
    if workflow == WORKFLOW:
        assert runs == ["run", "resume"], runs  # journaled once each, A's run not re-run in B
        assert "checkpoint" in recorded  # the journal is read, payloads and all
    else:
        # One entry per model request and per tool call, each journaled once (the unnamed
        # one is the turn's clock, ctx.date.now()).
        assert [r for r in runs if r] == ["model:0", "tool:call_1", "model:1"], runs
        assert "model_response" in recorded and "wrote 17 bytes" in recorded
        (run,) = procs.records("tool-runs.jsonl")
        assert run["key"] == f"{key}:call_1"
    assert PLANTED_KEY not in recorded


@BOTH
def test_answer_resolves_the_awakeable_by_id(
    procs: Processes, restate: Restate, workflow: str
) -> None:
    turn = start_and_crash(procs, restate, f"r-by-id-{workflow}", workflow)
    turn.endpoint("B1")
    awakeable = turn.ask["awakeable"]  # type: ignore[attr-defined]
    post(f"{restate.ingress}/restate/awakeables/{awakeable}/resolve", APPROVE)
    state = turn.result()
    assert state["outcome"] == "done", state
    assert [r["role"] for r in procs.records("tool-runs.jsonl")] == ["B1"]


def test_policy_changed_to_deny_before_b(procs: Processes, restate: Restate) -> None:
    turn = start_and_crash(procs, restate, "r-deny")
    turn.endpoint("B1", DURABLE_GATE="deny")
    turn.answer(APPROVE)
    state = turn.result()
    assert state["outcome"] == "done", state
    assert procs.records("tool-runs.jsonl") == []
    assert [g["role"] for g in procs.records("gate.jsonl")] == ["A", "B1"]
    requests = assert_model_called_once_per_step(procs.model, 2)
    (result,) = tool_messages(requests[1])
    assert "The policy now denies write." in json.dumps(result)


@BOTH
def test_deadline_passed_denies_with_the_timeout_sentence(
    procs: Processes, restate: Restate, workflow: str
) -> None:
    turn = start_and_crash(
        procs, restate, f"r-late-{workflow}", workflow, DURABLE_ASK_TIMEOUT_MS="1500"
    )
    deadline_ms = turn.ask["request"]["deadlineMs"]  # type: ignore[attr-defined]
    wait_until("the ask's deadline passed", lambda: time.time() * 1000 > deadline_ms + 100, 10)
    turn.endpoint("B1", DURABLE_ASK_TIMEOUT_MS="1500")
    state = turn.result()
    assert state["outcome"] == "done", state
    assert procs.records("tool-runs.jsonl") == []
    requests = assert_model_called_once_per_step(procs.model, 2)
    (result,) = tool_messages(requests[1])
    assert TIMEOUT_SENTENCE in json.dumps(result)


@BOTH
def test_two_answers_race(procs: Processes, restate: Restate, workflow: str) -> None:
    turn = start_and_crash(procs, restate, f"r-race-{workflow}", workflow)
    turn.endpoint("B1")
    outcomes: list[str] = []

    def send(answer: Any) -> None:
        try:
            turn.answer(answer)
            outcomes.append("accepted")
        except urllib.error.HTTPError as e:
            outcomes.append(f"refused {e.code}")

    threads = [threading.Thread(target=send, args=(APPROVE,)) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    state = turn.result()
    assert state["outcome"] == "done", (state, outcomes)
    runs = procs.records("tool-runs.jsonl")
    assert len(runs) == 1, runs
    assert [g["role"] for g in procs.records("gate.jsonl")] == ["A", "B1"]
    assert_model_called_once_per_step(procs.model, 2)


@BOTH
def test_crash_while_the_tool_runs_repeats_it(
    procs: Processes, restate: Restate, workflow: str
) -> None:
    """What is not exactly-once: B1 dies while the approved tool runs (inside
    ``ctx.run('resume')``); Restate retries the invocation on the deployment's address, where
    B2 now listens, and the journal has no result for ``resume``: it runs again, tool included,
    with the same idempotency key, and the turn finishes with the model asked once per step."""
    key = f"r-mid-tool-{workflow}"
    turn = start_and_crash(procs, restate, key, workflow)
    b1 = turn.endpoint("B1", DURABLE_TOOL_HANGS="B1")
    turn.answer(APPROVE)
    wait_until("B1's tool runs", lambda: procs.records("tool-runs.jsonl"), timeout=60)
    procs.kill(b1)
    turn.endpoint("B2")
    state = turn.result()
    assert state["outcome"] == "done", state
    runs = procs.records("tool-runs.jsonl")
    assert [r["role"] for r in runs] == ["B1", "B2"]
    # The key a side-effecting tool makes its work conditional on: the engine's turn id (drawn
    # in A, kept in the checkpoint; the stepped workflow's is the workflow key) and the call id,
    # the same in both processes.
    if workflow == WORKFLOW:
        assert re.fullmatch(r"turn_[0-9a-f]{32}:call_1", runs[0]["key"]), runs
    else:
        assert runs[0]["key"] == f"{key}:call_1", runs
    assert runs[1]["key"] == runs[0]["key"], runs
    assert [g["role"] for g in procs.records("gate.jsonl")] == ["A", "B1", "B2"]
    assert_model_called_once_per_step(procs.model, 2)


def test_stepped_crash_between_two_model_requests_does_not_repeat_the_first(
    procs: Processes, restate: Restate
) -> None:
    """The stepped workflow, no ask: A dies after the tool ran and its result was journaled,
    while its second model request is held unanswered (never reaching the model); B replays
    the first request and the tool from the journal (neither runs again) and sends the second.
    turnWorkflow would journal nothing before the turn's end here: B would send the first
    request again and run the tool again."""
    key = "s-between"
    turn = Turn(procs, restate, key, STEPPED)
    a = start(procs, restate, turn, DURABLE_GATE="allow", DURABLE_MODEL_HANGS="A")

    def held() -> list[dict[str, Any]]:
        assert a.poll() is None, f"A exited: {procs.log('A')}"
        return procs.records("model-hangs.jsonl")

    wait_until("A's second model request is held", held, timeout=60)
    procs.kill(a)
    assert [r["role"] for r in procs.records("tool-runs.jsonl")] == ["A"]
    assert len(procs.model.requests()) == 1
    turn.endpoint("B1", DURABLE_GATE="allow")
    state = turn.result()
    assert state["outcome"] == "done", state
    assert state["finalText"] == "Wrote the report."
    runs = procs.records("tool-runs.jsonl")
    assert [(r["role"], r["key"]) for r in runs] == [("A", f"{key}:call_1")], runs
    assert [g["role"] for g in procs.records("gate.jsonl")] == ["A", "B1"]
    requests = assert_model_called_once_per_step(procs.model, 2)
    (result,) = tool_messages(requests[1])
    assert "wrote 17 bytes" in json.dumps(result)
    entries = journal(restate, key)
    names = [e.get("name") for e in entries if e.get("entry_type") == "Command: Run"]
    assert [n for n in names if n] == ["model:0", "tool:call_1", "model:1"], names
    recorded = json.dumps([decoded(json.loads(e.get("entry_json") or "null")) for e in entries])
    assert PLANTED_KEY not in recorded


def test_stepped_a_non_answer_is_refused_and_the_ask_stays_open(
    procs: Processes, restate: Restate
) -> None:
    """Hostile input at the stepped workflow's ask: an answer that is not one (``{"maybe":
    true}``) is not fed; the workflow says why (its ``refused`` handler) and opens the ask again
    under a new awakeable; a real answer then finishes the turn, the tool once."""
    turn = start_and_crash(procs, restate, "s-not-an-answer", STEPPED)
    turn.endpoint("B1")
    first = turn.ask["awakeable"]  # type: ignore[attr-defined]
    turn.answer({"maybe": True})

    def reopened() -> list[dict[str, Any]]:
        return [a for a in turn.pending() if a["awakeable"] != first]

    (ask,) = wait_until("the ask is open again", reopened, timeout=60)
    assert ask["callId"] == "call_1"
    refused = post(turn.url("refused"), None)
    assert refused["callId"] == "call_1"
    assert "not one" in refused["reason"], refused
    assert procs.records("tool-runs.jsonl") == []
    turn.answer(APPROVE)
    state = turn.result()
    assert state["outcome"] == "done", state
    assert [r["role"] for r in procs.records("tool-runs.jsonl")] == ["B1"]
    assert_model_called_once_per_step(procs.model, 2)


def write_call(call_id: str, path: str) -> dict[str, Any]:
    return {"id": call_id, "name": "write", "arguments": {"path": path, "content": "numbers"}}


COMPACTING_TURN = {
    "name": "durable_compacting_turn",
    "style": "openai",
    "model": [
        {"tool_calls": [write_call("call_1", "a.txt")]},
        {
            "tool_calls": [write_call("call_2", "b.txt")],
            "usage": {"input_tokens": 1500, "output_tokens": 5},
        },
        {"text": "SUMMARY: two files written."},
        {"text": "Wrote both."},
    ],
    "prompt": "Write a.txt and b.txt.",
}


def test_stepped_compaction_summary_is_journaled_and_not_sent_again(
    tmp_path: Path, restate: Restate
) -> None:
    """A compacting client on the stepped workflow: the compaction's summary request is its own
    ``ctx.run`` (``summary:2``). A dies after it was journaled, its next model request held; B
    replays both model requests, both tool calls and the summary from the journal and sends only
    the last request: 4 requests in all, each tool call ran once, the last request carries the
    summary."""
    script = tmp_path / "compacting.json"
    script.write_text(json.dumps(COMPACTING_TURN))
    work = tmp_path / "work"
    work.mkdir()
    with fake_model(script) as model:
        procs = Processes(work, model)
        try:
            env = {"DURABLE_GATE": "allow", "DURABLE_COMPACTION_TOKENS": "1000"}
            key = "s-compacting"
            turn = Turn(procs, restate, key, STEPPED)
            hang = {"DURABLE_MODEL_HANGS": "A", "DURABLE_MODEL_PASSES": "3"}
            a = start(procs, restate, turn, **hang, **env)

            def held() -> list[dict[str, Any]]:
                assert a.poll() is None, f"A exited: {procs.log('A')}"
                return procs.records("model-hangs.jsonl")

            wait_until("A's request after the summary is held", held, timeout=60)
            procs.kill(a)
            assert len(model.requests()) == 3
            turn.endpoint("B1", **env)
            state = turn.result()
            assert state["outcome"] == "done", state
            assert state["finalText"] == "Wrote both."
            runs = procs.records("tool-runs.jsonl")
            assert [(r["role"], r["key"]) for r in runs] == [
                ("A", f"{key}:call_1"),
                ("A", f"{key}:call_2"),
            ], runs
            requests = assert_model_called_once_per_step(model, 4)
            last = json.dumps(requests[3])
            assert "SUMMARY: two files written." in last
            entries = journal(restate, key)
            names = [e.get("name") for e in entries if e.get("entry_type") == "Command: Run"]
            assert [n for n in names if n] == [
                "model:0",
                "tool:call_1",
                "model:1",
                "tool:call_2",
                "summary:2",
                "model:2",
            ], names
        finally:
            procs.stop_all()
