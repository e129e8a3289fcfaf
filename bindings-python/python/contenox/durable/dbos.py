"""Contenox turns as DBOS workflows (``pip install contenox[dbos]``).

A turn is a workflow whose id is the turn id. Its steps: ``run`` (the model requests and tool
calls up to the turn's end or its first ask, in a fresh client), then for each ask an event
(``ask:<call_id>``, and ``pending`` with every open request) and a ``recv`` on the topic
``<call_id>`` whose timeout is the ask's absolute deadline (a recovered workflow does not restart
the clock: DBOS records when the wait ends), then ``resume`` (the gate runs again, the answered
tool runs, the turn goes on), and so on until the turn ends. SQLite by default (DBOS's embedded
default, no server); PostgreSQL by ``system_database_url``.

    import contenox
    from dbos import DBOS
    from contenox.durable.dbos import DBOSTurns

    def make_client(wait_for):
        return contenox.create_client(..., policy=..., wait_for=wait_for)

    turns = DBOSTurns(make_client)          # before DBOS.launch(): registers the workflow
    DBOS(config={"name": "agent", "system_database_url": "sqlite:///turns.sqlite"})
    DBOS.launch()
    handle = await turns.start("Write the report.", turn_id="t-1")
    ...                                     # later, in any process of the app:
    await turns.answer("t-1", "call_1", {"approve": True})
    result = await handle.get_result()      # a TurnState

Recovery: a process that died leaves its turns PENDING under its DBOS executor id; any live
process takes them over with ``DBOSTurns.recover([dead_executor_id])`` (DBOS re-enqueues them
and exactly one live process dequeues each, so racing recoveries run a turn once).
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

from dbos import DBOS, SetWorkflowID, WorkflowHandleAsync

from contenox.durable._turn import ClientFactory, TurnState, checkpoint_of, run_once, shrink

__all__ = ["DBOSTurns"]

# recv waits at most this long at a time for an ask without a deadline (it waits again after).
_NO_DEADLINE_WAIT_S = 3600.0


class DBOSTurns:
    """Registers the turn workflow and its steps with DBOS under ``name`` (the same name in every
    process of the app, before ``DBOS.launch()``), and starts, answers and recovers turns."""

    def __init__(self, make_client: ClientFactory, *, name: str = "contenox.turn") -> None:
        self.name = name

        @DBOS.step(name=f"{name}.run")
        async def run_step(prompt: str) -> TurnState:
            return await run_once(make_client, prompt=prompt)

        @DBOS.step(name=f"{name}.resume")
        async def resume_step(checkpoint: str, answers: dict[str, Any]) -> TurnState:
            # DBOS records step outputs, not inputs: a checkpoint it records as a delta of the
            # one resumed keeps a turn's history linear in its conversation.
            state = await run_once(make_client, checkpoint=checkpoint, answers=answers)
            return shrink(state, checkpoint)

        @DBOS.step(name=f"{name}.clock")
        async def now_ms() -> int:
            # A step: a replayed workflow reads the time it read the first time.
            return int(time.time() * 1000)

        @DBOS.workflow(name=name)
        async def turn(prompt: str) -> TurnState:
            state = await run_step(prompt)
            checkpoint: str | None = None
            while state["outcome"] == "suspended":
                checkpoint = checkpoint_of(state, checkpoint)
                await DBOS.set_event_async("pending", state["pending"])
                answers: dict[str, Any] = {}
                for request in state["pending"]:
                    call_id = str(request["call_id"])
                    await DBOS.set_event_async(f"ask:{call_id}", request)
                    answer = await _receive(call_id, request.get("deadline_ms"))
                    if answer is not None:
                        answers[call_id] = answer
                # No answer by the deadline: resume without one; the engine denies the call with
                # the timeout sentence (the deadline is in the checkpoint).
                state = await resume_step(checkpoint, answers)
            await DBOS.set_event_async("pending", [])
            return state

        async def _receive(call_id: str, deadline_ms: Any) -> Any:
            while True:
                if deadline_ms is None:
                    wait = _NO_DEADLINE_WAIT_S
                else:
                    wait = max(0.0, (int(deadline_ms) - await now_ms()) / 1000)
                answer = await DBOS.recv_async(topic=call_id, timeout_seconds=wait)
                if answer is not None or deadline_ms is not None:
                    return answer

        self._workflow = turn

    async def start(self, prompt: str, *, turn_id: str) -> WorkflowHandleAsync[TurnState]:
        """Start the turn ``turn_id`` (the workflow id: starting it again returns the same
        workflow, it does not run twice)."""
        with SetWorkflowID(turn_id):
            return await DBOS.start_workflow_async(self._workflow, prompt)

    @staticmethod
    async def pending(turn_id: str, *, timeout_s: float = 0.0) -> list[dict[str, Any]]:
        """The turn's open requests (each with its ``call_id``); ``[]`` when none is open."""
        value = await DBOS.get_event_async(turn_id, "pending", timeout_seconds=timeout_s)
        return list(value or [])

    @staticmethod
    async def answer(turn_id: str, call_id: str, answer: Mapping[str, Any]) -> None:
        """Answer the ask of ``call_id`` (today's answer shape: ``{"approve": True}``,
        ``{"approve": False, "message": ...}``, ``{"result": ...}``). The first answer for a
        call wins: later ones carry the same idempotency key and are dropped."""
        await DBOS.send_async(
            turn_id, dict(answer), topic=call_id, idempotency_key=f"{turn_id}:{call_id}:answer"
        )

    @staticmethod
    def recover(executor_ids: list[str]) -> list[str]:
        """Take over the PENDING turns of processes that died (their DBOS executor ids): DBOS
        re-enqueues them, one live process dequeues each. The workflow ids recovered."""
        return [h.get_workflow_id() for h in DBOS._recover_pending_workflows(executor_ids)]
