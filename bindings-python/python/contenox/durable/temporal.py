"""Contenox turns as Temporal workflows (``pip install contenox[temporal]``).

A turn is the workflow :class:`TurnWorkflow` (its id is the turn id). Its activities:
``contenox.run`` (the model requests and tool calls up to the turn's end or its first ask, in a
fresh client on the worker) and ``contenox.resume`` (the gate runs again, the answered tool runs,
the turn goes on). An ask is the update ``answer(call_id, answer)``, keyed by call id: the first
answer for an open call is accepted, any other is rejected (applied twice, or for a call that is
not open). The query ``pending`` lists the open requests. An ask waits until its absolute
deadline (the workflow's timer, kept by the server across worker crashes); unanswered by then,
the resume denies the call with the timeout sentence. When a resume stops at another ask the
workflow continues as new with the suspended state, so each run's history holds one checkpoint.

    import contenox
    from temporalio.client import Client
    from temporalio.worker import Worker
    from contenox.durable.temporal import TurnActivities, TurnWorkflow, start_turn

    def make_client(wait_for):
        return contenox.create_client(..., policy=..., wait_for=wait_for)

    client = await Client.connect("127.0.0.1:7233")
    async with Worker(client, task_queue="agents", workflows=[TurnWorkflow],
                      activities=TurnActivities(make_client).all()):
        handle = await start_turn(client, "Write the report.", turn_id="t-1", task_queue="agents")
        ...                         # later, from any process:
        await handle.execute_update(TurnWorkflow.answer, args=["call_1", {"approve": True}])
        state = await handle.result()
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from temporalio import activity, workflow
from temporalio.client import Client, WorkflowHandle
from temporalio.common import RetryPolicy

with workflow.unsafe.imports_passed_through():
    from contenox.durable._turn import ClientFactory, TurnState, run_once

__all__ = ["TurnActivities", "TurnInput", "TurnWorkflow", "start_turn"]

# The errors a retry cannot fix: a refused checkpoint or answer, a bad config.
_NOT_RETRYABLE = ["CheckpointError", "ConfigurationError", "ValueError", "TypeError"]


@dataclass
class TurnInput:
    """The workflow's argument: a prompt to start with, or (continued as new) the state of a
    turn suspended at its asks."""

    prompt: str | None = None
    state: dict[str, Any] | None = None
    activity_timeout_s: float = 1800.0
    """How long one run or resume activity may take (model requests and tools included)."""
    heartbeat_timeout_s: float = 30.0
    """A worker silent this long is taken for dead and the activity runs again elsewhere."""


class TurnActivities:
    """The activities, bound to the host's client factory (register ``.all()`` on a worker)."""

    def __init__(self, make_client: ClientFactory, *, heartbeat_every_s: float = 5.0) -> None:
        self._make_client = make_client
        self._heartbeat_every_s = heartbeat_every_s

    async def _beating(self, work: Any) -> TurnState:
        async def beat() -> None:
            while True:
                activity.heartbeat()
                await asyncio.sleep(self._heartbeat_every_s)

        beater = asyncio.create_task(beat())
        try:
            state: TurnState = await work
            return state
        finally:
            beater.cancel()

    @activity.defn(name="contenox.run")
    async def run(self, prompt: str) -> TurnState:
        """Run ``prompt`` until the turn ends or suspends at an ask."""
        return await self._beating(run_once(self._make_client, prompt=prompt))

    @activity.defn(name="contenox.resume")
    async def resume(self, checkpoint: str, answers: dict[str, Any]) -> TurnState:
        """Resume a suspended turn with the answers it got (keyed by call id)."""
        return await self._beating(
            run_once(self._make_client, checkpoint=checkpoint, answers=answers)
        )

    def all(self) -> Sequence[Callable[..., Any]]:
        return [self.run, self.resume]


@workflow.defn(name="contenox.turn")
class TurnWorkflow:
    """A turn, driven through its asks: see the module's documentation."""

    def __init__(self) -> None:
        self._pending: list[dict[str, Any]] = []
        self._answers: dict[str, Any] = {}

    @workflow.run
    async def run(self, turn: TurnInput) -> dict[str, Any]:
        options: dict[str, Any] = {
            "start_to_close_timeout": timedelta(seconds=turn.activity_timeout_s),
            "heartbeat_timeout": timedelta(seconds=turn.heartbeat_timeout_s),
            "retry_policy": RetryPolicy(
                maximum_attempts=3, non_retryable_error_types=_NOT_RETRYABLE
            ),
        }
        state: dict[str, Any]
        if turn.state is not None:
            state = turn.state
        elif turn.prompt is not None:
            state = await workflow.execute_activity("contenox.run", turn.prompt, **options)
        else:
            raise ValueError("TurnInput needs a prompt or a state")
        if state["outcome"] != "suspended":
            return state
        self._pending = list(state["pending"])
        for request in self._pending:
            await self._wait_for_answer(request)
        answers = dict(self._answers)
        self._pending = []
        state = await workflow.execute_activity(
            "contenox.resume", args=[state["checkpoint"], answers], **options
        )
        if state["outcome"] == "suspended":
            # History stays one checkpoint long: the next asks wait in a new run.
            workflow.continue_as_new(
                TurnInput(
                    state=state,
                    activity_timeout_s=turn.activity_timeout_s,
                    heartbeat_timeout_s=turn.heartbeat_timeout_s,
                )
            )
        return state

    async def _wait_for_answer(self, request: dict[str, Any]) -> None:
        call_id = request["call_id"]
        deadline_ms = request.get("deadline_ms")
        timeout = None
        if deadline_ms is not None:
            now_ms = workflow.now().timestamp() * 1000
            timeout = timedelta(milliseconds=max(0.0, deadline_ms - now_ms))
        try:
            await workflow.wait_condition(lambda: call_id in self._answers, timeout=timeout)
        except asyncio.TimeoutError:
            pass  # unanswered by the deadline: the resume denies it with the timeout sentence

    @workflow.update(name="answer")
    def answer(self, call_id: str, answer: dict[str, Any]) -> None:
        """Answer the ask of ``call_id`` (today's answer shape)."""
        self._answers[call_id] = answer

    @answer.validator
    def _answer_is_for_an_open_ask(self, call_id: str, answer: dict[str, Any]) -> None:
        if call_id in self._answers:
            raise ValueError(f"the ask of {call_id} is already answered")
        if not any(p["call_id"] == call_id for p in self._pending):
            raise ValueError(f"no open ask for call {call_id}")
        if not isinstance(answer, dict):
            raise ValueError("an answer is a JSON object")

    @workflow.query(name="pending")
    def pending(self) -> list[dict[str, Any]]:
        """The open requests (each with its ``call_id``), not yet answered."""
        return [p for p in self._pending if p["call_id"] not in self._answers]


async def start_turn(
    client: Client, prompt: str, *, turn_id: str, task_queue: str, **input_options: Any
) -> WorkflowHandle[TurnWorkflow, dict[str, Any]]:
    """Start the turn ``turn_id`` on ``task_queue`` (the workflow id: a second start with the
    same id is refused by the server while the first runs)."""
    return await client.start_workflow(
        TurnWorkflow.run,
        TurnInput(prompt=prompt, **input_options),
        id=turn_id,
        task_queue=task_queue,
    )
