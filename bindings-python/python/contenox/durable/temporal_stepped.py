"""Contenox turns as Temporal workflows with one activity per model request and per tool call
(``pip install contenox[temporal]``), through the stepped turn (``client.step``).

:mod:`contenox.durable.temporal` runs the stretch between two asks as one activity, so a crash
inside it does all of it again. Here the workflow :class:`SteppedTurnWorkflow` holds the turn's
state, as plain data: its start (prompt, turn id and clock, drawn from the workflow's own
deterministic ``uuid4`` and ``now``), the journal of every action result so far (what a
:class:`contenox.Stepper` is fed to reach the same point again) and the next action. Each
``model_request`` and each ``tool_call`` is the activity ``contenox.action``, which performs
exactly that one action on a worker and returns its result (recorded in the history once) and
the action after it. An ask is the update ``answer(call_id, answer)``, validated (an open call,
not answered yet), waited for until its absolute deadline on the workflow's timer; unanswered
by then, the call is denied with the timeout sentence.

**The activity's input is a delta, never the conversation.** It carries the turn id, the action
it expects, and the journal entries the worker may lack: those after the previous activity's
result (the answers the workflow recorded since), with a hash chain over the journal (its
position and hash before the delta, and after it). The base lives on the worker: the
:class:`SteppedActivities` keep the live stepper of each turn they served, keyed by turn id
and checked against the chain; the worker that did the previous action feeds the delta and
performs the next one at once. A worker without that base (another process, a restart, an
eviction) asks the workflow for the journal with the query ``journal`` (queries are not
recorded in the history), checks it against the chain, and builds the stepper again from the
start: the gate's hooks run again there (a policy changed to deny wins; an answer whose
request changed is dropped and the call asked again).

The workflow runs no contenox code, only bookkeeping, so replaying it never depends on the
host's hooks or config. It continues as new when its history reaches ``max_history_events``
(or when the server suggests it), carrying the journal: each run's history grows linearly.

    from contenox.durable.temporal_stepped import (
        SteppedActivities, SteppedTurnWorkflow, start_stepped_turn)

    async with Worker(client, task_queue="agents", workflows=[SteppedTurnWorkflow],
                      activities=SteppedActivities(make_client).all()):
        handle = await start_stepped_turn(client, "Write the report.", workflow_id="t-1",
                                          task_queue="agents")
        await handle.execute_update(SteppedTurnWorkflow.answer, args=["call_1", {"approve": True}])
        state = await handle.result()

What is not exactly-once: the action that was running when its worker died runs again on the
retry (a model request is sent again; a tool runs again with the same idempotency key,
``turn_id:call_id``). Everything recorded before it is fed, never redone.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

from temporalio import activity, workflow
from temporalio.client import Client, WorkflowHandle
from temporalio.common import RetryPolicy
from temporalio.exceptions import ApplicationError

with workflow.unsafe.imports_passed_through():
    import contenox
    from contenox.durable._turn import ClientFactory, state_of

__all__ = [
    "ActionInput",
    "SteppedActivities",
    "SteppedInput",
    "SteppedTurnWorkflow",
    "start_stepped_turn",
]

# What the engine says when an ask's time ran out (the other adapters say the same).
TIMEOUT_DENIAL = "Approval timed out. The operation was automatically denied."
# The errors a retry cannot fix: a journal that does not fit the turn, a bad config.
_NOT_RETRYABLE = ["ConfigurationError", "ValueError", "TypeError", "StepError"]


def _canonical(value: Any) -> bytes:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()


def chain_start(turn_id: str, clock_ms: int, prompt: Any) -> str:
    """The hash of a turn's start: the first link of its journal's chain."""
    return hashlib.sha256(_canonical([turn_id, clock_ms, prompt])).hexdigest()


def chain_next(link: str, entry: Any) -> str:
    """The chain's next link: the previous one and the entry, hashed."""
    return hashlib.sha256(link.encode() + b"\0" + _canonical(entry)).hexdigest()


def request_digest(request: Any) -> str:
    """What an answer is bound to: the ask's request (an answer stands in for that ask only)."""
    return hashlib.sha256(_canonical(request)).hexdigest()


@dataclass
class SteppedInput:
    """The workflow's argument: the turn's prompt, and (continued as new) where it stands."""

    prompt: Any
    """The prompt: text, or a list of content parts as ``client.step`` takes it."""
    turn_id: str | None = None
    clock_ms: int | None = None
    journal: list[dict[str, Any]] = field(default_factory=list)
    synced: int = 0
    """How many journal entries the worker of the last activity had fed (the delta's start)."""
    next: dict[str, Any] | None = None
    """The next action as the last activity saw it (``None``: not known yet)."""
    carry: str = "delta"
    """``delta`` (the default) or ``journal``: every activity carries the whole journal and
    builds its stepper from it (what an adapter without a base would do; for measuring)."""
    activity_timeout_s: float = 1800.0
    """How long one action's activity may take (a model request or a tool call)."""
    heartbeat_timeout_s: float = 30.0
    """A worker silent this long is taken for dead and the action runs again elsewhere."""
    max_history_events: int = 10_000
    """Continue as new when a run's history has this many events (or the server suggests it)."""


@dataclass
class ActionInput:
    """One action's activity input: the turn id, the action expected, and a delta of the
    journal (see the module's documentation), never the conversation."""

    turn_id: str
    expect: str
    """``model:STEP``, ``tool:CALL_ID``, or ``""`` after an answer (whatever comes next)."""
    base: int
    """How many journal entries come before ``delta``."""
    base_link: str
    """The chain's link after those ``base`` entries."""
    delta: list[dict[str, Any]]
    head: str
    """The chain's link after ``delta``: the whole journal's."""
    start: dict[str, Any] | None = None
    """The turn's start (prompt, clock) when ``base`` is 0 (the delta is the whole journal)."""


@dataclass
class _Live:
    """A turn's stepper kept by a worker between its actions (the delta's base)."""

    client: contenox.Client
    stepper: contenox.Stepper
    chain: list[str]
    """The link after each fed entry: ``chain[i]`` after ``i`` entries."""
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)

    def close(self) -> None:
        self.stepper.cancel()
        self.client.close()


def _never_asked(request: contenox.PendingRequest, cancel: Any) -> dict[str, Any]:
    """A stepped turn's asks are actions the workflow answers; its wait_for is not called."""
    del request, cancel
    return {"approve": False, "message": "no host answers asks here"}


def _descriptor(action: Any) -> dict[str, Any]:
    """What the workflow needs to know of an action: small, never the conversation."""
    kind = action["kind"]
    if kind == "model_request":
        return {"kind": kind, "step": action["step"]}
    if kind == "tool_call":
        call = action["call"]
        return {
            "kind": kind,
            "call_id": call["id"],
            "name": call["name"],
            "idempotency_key": action["idempotency_key"],
        }
    if kind == "ask":
        return {"kind": kind, "request": dict(action["request"])}
    return {"kind": "done", "state": dict(state_of(action["result"]))}


class SteppedActivities:
    """The activity ``contenox.action``, bound to the host's client factory (register
    ``.all()`` on a worker). ``cache_size``: how many turns' steppers a worker keeps between
    their actions (the delta's base); 0 keeps none (every action asks the workflow for the
    journal)."""

    def __init__(
        self, make_client: ClientFactory, *, cache_size: int = 256, heartbeat_every_s: float = 5.0
    ) -> None:
        self._make_client = make_client
        self._cache_size = cache_size
        self._heartbeat_every_s = heartbeat_every_s
        self._live: OrderedDict[str, _Live] = OrderedDict()
        self.hits = 0
        """Actions whose turn this worker had (the delta was enough)."""
        self.queries = 0
        """Actions that asked the workflow for the journal (no base here)."""

    def all(self) -> Sequence[Callable[..., Any]]:
        return [self.action]

    def close(self) -> None:
        """Drop every kept stepper (and its client)."""
        while self._live:
            _, live = self._live.popitem()
            live.close()

    @activity.defn(name="contenox.action")
    async def action(self, inp: ActionInput) -> dict[str, Any]:
        """Feed the delta, perform the next model request or tool call (if the turn's next
        action is one), and return ``{"performed", "dropped", "next"}``."""

        async def beat() -> None:
            while True:
                activity.heartbeat()
                await asyncio.sleep(self._heartbeat_every_s)

        beater = asyncio.create_task(beat())
        try:
            return await self._act(inp)
        finally:
            beater.cancel()

    async def _act(self, inp: ActionInput) -> dict[str, Any]:
        links = [inp.base_link]
        for entry in inp.delta:
            links.append(chain_next(links[-1], entry))
        if links[-1] != inp.head:
            raise ApplicationError("the delta does not lead to its head", non_retryable=True)
        live = self._live.pop(inp.turn_id, None)
        fed = 0
        if live is not None:
            async with live.lock:
                fed = len(live.chain) - 1
                if not (
                    inp.base <= fed <= inp.base + len(inp.delta)
                    and live.chain[inp.base] == inp.base_link
                    and live.chain[fed] == links[fed - inp.base]
                ):
                    live.close()
                    live = None
        dropped: list[int] = []
        if live is None:
            live, todo, offset = await self._rebuild(inp)
        else:
            self.hits += 1
            todo, offset = inp.delta[fed - inp.base :], fed
        try:
            dropped = await self._feed(live, todo, offset)
            action = await live.stepper.next()
            performed = None
            if action["kind"] in ("model_request", "tool_call"):
                performed = await live.stepper.perform()
                live.chain.append(chain_next(live.chain[-1], performed))
                action = await live.stepper.next()
        except BaseException:
            live.close()
            raise
        if action["kind"] == "done":
            live.close()
        else:
            self._keep(inp.turn_id, live)
        return {"performed": performed, "dropped": dropped, "next": _descriptor(action)}

    def _keep(self, turn_id: str, live: _Live) -> None:
        if self._cache_size <= 0:
            live.close()
            return
        self._live[turn_id] = live
        while len(self._live) > self._cache_size:
            _, old = self._live.popitem(last=False)
            old.close()

    async def _rebuild(self, inp: ActionInput) -> tuple[_Live, list[dict[str, Any]], int]:
        """No base here: the whole journal (from the delta when it is all of it, else from the
        workflow's query), checked against the chain, fed to a new stepper from the start."""
        if inp.base == 0 and inp.start is not None:
            start, journal = inp.start, inp.delta
        else:
            self.queries += 1
            info = activity.info()
            if info.workflow_id is None:
                raise ApplicationError("contenox.action runs inside a stepped turn's workflow")
            handle = activity.client().get_workflow_handle(
                info.workflow_id, run_id=info.workflow_run_id
            )
            whole = await handle.query("journal")
            start, journal = whole["start"], list(whole["journal"])
        link = chain_start(inp.turn_id, int(start["clock_ms"]), start["prompt"])
        for entry in journal:
            link = chain_next(link, entry)
        if link != inp.head:
            raise ApplicationError("the workflow's journal does not match the activity's head")
        client = self._make_client(_never_asked)
        try:
            stepper = client.step(
                start["prompt"], turn_id=inp.turn_id, clock_ms=int(start["clock_ms"])
            )
        except BaseException:
            client.close()
            raise
        first = chain_start(inp.turn_id, int(start["clock_ms"]), start["prompt"])
        return _Live(client, stepper, [first]), journal, 0

    async def _feed(self, live: _Live, entries: list[dict[str, Any]], offset: int) -> list[int]:
        """Feed ``entries`` (journal positions from ``offset``); an answer the turn no longer
        asks for (the gate now decides otherwise, or asks something else) is dropped, its
        position returned. Anything else that does not fit is a turn that is not this one."""
        dropped = []
        for i, entry in enumerate(entries):
            action = await live.stepper.next()
            if entry.get("kind") == "answer":
                bound = entry.get("for")
                if action["kind"] != "ask" or (
                    action["request"]["call_id"] != entry.get("call_id")
                    or bound != request_digest(action["request"])
                ):
                    dropped.append(offset + i)
                    continue
                result = {k: v for k, v in entry.items() if k != "for"}
            else:
                result = entry
            try:
                live.stepper.feed(result)
            except contenox.StepError as e:
                raise ApplicationError(
                    f"journal entry {offset + i} does not fit the turn: {e}", non_retryable=True
                ) from e
            live.chain.append(chain_next(live.chain[-1], entry))
        return dropped


@workflow.defn(name="contenox.stepped_turn")
class SteppedTurnWorkflow:
    """A stepped turn: see the module's documentation."""

    def __init__(self) -> None:
        self._start: dict[str, Any] = {}
        self._journal: list[dict[str, Any]] = []
        self._pending: list[dict[str, Any]] = []
        self._answers: dict[str, dict[str, Any]] = {}

    @workflow.run
    async def run(self, turn: SteppedInput) -> dict[str, Any]:
        turn_id = turn.turn_id or "turn_" + workflow.uuid4().hex
        clock_ms = turn.clock_ms
        if clock_ms is None:
            clock_ms = int(workflow.now().timestamp() * 1000)
        self._start = {"prompt": turn.prompt, "clock_ms": clock_ms}
        self._journal = list(turn.journal)
        chain = [chain_start(turn_id, clock_ms, turn.prompt)]
        for entry in self._journal:
            chain.append(chain_next(chain[-1], entry))
        synced, nxt = turn.synced, turn.next
        options: dict[str, Any] = {
            "start_to_close_timeout": timedelta(seconds=turn.activity_timeout_s),
            "heartbeat_timeout": timedelta(seconds=turn.heartbeat_timeout_s),
            "retry_policy": RetryPolicy(
                maximum_attempts=3, non_retryable_error_types=_NOT_RETRYABLE
            ),
        }
        while True:
            kind = None if nxt is None else nxt["kind"]
            if kind == "done":
                assert nxt is not None
                state: dict[str, Any] = nxt["state"]
                return state
            if kind == "ask":
                assert nxt is not None
                self._journal.append(await self._ask(nxt["request"]))
                chain.append(chain_next(chain[-1], self._journal[-1]))
                nxt = None
                continue
            info = workflow.info()
            if (
                info.get_current_history_length() >= turn.max_history_events
                or info.is_continue_as_new_suggested()
            ):
                workflow.continue_as_new(
                    SteppedInput(
                        prompt=turn.prompt,
                        turn_id=turn_id,
                        clock_ms=clock_ms,
                        journal=self._journal,
                        synced=synced,
                        next=nxt,
                        carry=turn.carry,
                        activity_timeout_s=turn.activity_timeout_s,
                        heartbeat_timeout_s=turn.heartbeat_timeout_s,
                        max_history_events=turn.max_history_events,
                    )
                )
            base = 0 if turn.carry == "journal" else synced
            if nxt is None:
                expect = ""
            elif kind == "model_request":
                expect = f"model:{nxt['step']}"
            else:
                expect = f"tool:{nxt['call_id']}"
            out = await workflow.execute_activity(
                "contenox.action",
                ActionInput(
                    turn_id=turn_id,
                    expect=expect,
                    base=base,
                    base_link=chain[base],
                    delta=self._journal[base:],
                    head=chain[-1],
                    start=self._start if base == 0 else None,
                ),
                activity_id=f"{len(self._journal)}:{expect or 'next'}",
                **options,
            )
            dropped = sorted(out["dropped"])
            if dropped:
                for position in reversed(dropped):
                    del self._journal[position]
                del chain[dropped[0] + 1 :]
                for entry in self._journal[dropped[0] :]:
                    chain.append(chain_next(chain[-1], entry))
            if out["performed"] is not None:
                self._journal.append(out["performed"])
                chain.append(chain_next(chain[-1], out["performed"]))
            synced, nxt = len(self._journal), out["next"]

    async def _ask(self, request: dict[str, Any]) -> dict[str, Any]:
        """Wait for the ask's answer until its deadline; the journal entry to feed."""
        call_id = str(request["call_id"])
        timeout_ms = request.get("timeout_ms")
        now_ms = workflow.now().timestamp() * 1000
        deadline_ms = None if timeout_ms is None else int(now_ms + int(timeout_ms))
        self._pending = [{**request, "deadline_ms": deadline_ms} if deadline_ms else request]
        timeout = None
        if deadline_ms is not None:
            timeout = timedelta(milliseconds=max(0.0, deadline_ms - now_ms))
        try:
            await workflow.wait_condition(lambda: call_id in self._answers, timeout=timeout)
            answer = self._answers[call_id]
        except asyncio.TimeoutError:
            answer = {"approve": False, "message": TIMEOUT_DENIAL}
        self._pending = []
        return {
            "kind": "answer",
            "call_id": call_id,
            "answer": answer,
            "for": request_digest(request),
        }

    @workflow.update(name="answer")
    def answer(self, call_id: str, answer: dict[str, Any]) -> None:
        """Answer the ask of ``call_id`` (``{"approve": bool, "message"?}`` or
        ``{"result": value}``)."""
        self._answers[call_id] = answer

    @answer.validator
    def _answer_is_for_an_open_ask(self, call_id: str, answer: dict[str, Any]) -> None:
        if call_id in self._answers:
            raise ValueError(f"the ask of {call_id} is already answered")
        if not any(p["call_id"] == call_id for p in self._pending):
            raise ValueError(f"no open ask for call {call_id}")
        if not isinstance(answer, dict):
            raise ValueError("an answer is a JSON object")
        if "suspend" in answer:
            raise ValueError("a stepped turn does not suspend: its workflow keeps the state")
        if not isinstance(answer.get("approve"), bool) and "result" not in answer:
            raise ValueError('an answer has "approve" (true or false) or "result"')

    @workflow.query(name="pending")
    def pending(self) -> list[dict[str, Any]]:
        """The open request (with its ``call_id`` and absolute ``deadline_ms``), if any."""
        return [p for p in self._pending if p["call_id"] not in self._answers]

    @workflow.query(name="journal")
    def journal(self) -> dict[str, Any]:
        """The turn's start and its journal: what an activity without a base builds its
        stepper from (a query: not recorded in the history)."""
        return {"start": self._start, "journal": self._journal}


async def start_stepped_turn(
    client: Client, prompt: Any, *, workflow_id: str, task_queue: str, **input_options: Any
) -> WorkflowHandle[SteppedTurnWorkflow, dict[str, Any]]:
    """Start a stepped turn as the workflow ``workflow_id`` on ``task_queue`` (a second start
    with the same id is refused by the server while the first runs). The turn's own id
    (``turn_<32 hex>``, the prefix of every idempotency key) is drawn by the workflow."""
    return await client.start_workflow(
        SteppedTurnWorkflow.run,
        SteppedInput(prompt=prompt, **input_options),
        id=workflow_id,
        task_queue=task_queue,
    )
