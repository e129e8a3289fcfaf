"""Contenox turns as DBOS workflows with one DBOS step per model request and per tool call
(``pip install contenox[dbos]``), through the stepped turn (``client.step``).

:class:`~contenox.durable.dbos.DBOSTurns` records a turn's stretch between two asks as one step,
so a crash inside it does all of it again (model requests included). Here the workflow drives a
:class:`contenox.Stepper`: each ``model_request`` and ``tool_call`` action is a DBOS step that
performs it and records its result; a recovered workflow runs the turn again from its start and
feeds it the recorded results (no request sent again, no tool run again), so it picks up at the
first action with no record. The turn id is the workflow id and its clock a recorded step, so
the replay asks for the same actions. An ``ask`` is an event plus ``recv`` keyed by call id, as
in ``DBOSTurns``; the gate's hooks run again on replay (a policy changed to deny wins).

What is not exactly-once: a process that dies while a tool runs has not recorded its result, so
the tool runs again in the process that recovers the turn, with the same idempotency key
(``turn_id:call_id``).

    turns = DBOSSteppedTurns(make_client)   # before DBOS.launch()
    handle = await turns.start("Write the report.", turn_id="t-1")
"""

from __future__ import annotations

import time
from typing import Any

from dbos import DBOS

import contenox
from contenox.durable._turn import ClientFactory, TurnState, state_of
from contenox.durable.dbos import DBOSTurns

__all__ = ["DBOSSteppedTurns"]

# What the engine says when an ask's time ran out (contenox.ASK_TIMEOUT_DENIAL).
_TIMEOUT_DENIAL = "Approval timed out. The operation was automatically denied."
_NO_DEADLINE_WAIT_S = 3600.0


def _never_asked(request: contenox.PendingRequest, cancel: Any) -> dict[str, Any]:
    """A stepped turn's asks are actions the workflow answers; its wait_for is not called."""
    del request, cancel
    return {"approve": False, "message": "no host answers asks here"}


class DBOSSteppedTurns(DBOSTurns):
    """:class:`DBOSTurns` (``start``, ``answer``, ``pending``, ``recover`` as there) whose
    workflow records each model request and tool call as a step of its own."""

    def __init__(self, make_client: ClientFactory, *, name: str = "contenox.stepped") -> None:
        self.name = name
        # The stepper of each turn running in this process, by workflow id: the action step
        # performs the action waiting in it.
        live: dict[str, contenox.Stepper] = {}

        @DBOS.step(name=f"{name}.clock")
        async def now_ms() -> int:
            return int(time.time() * 1000)

        @DBOS.step(name=f"{name}.action")
        async def perform(turn_id: str, action: str) -> dict[str, Any]:
            # `action` names the action in DBOS's records (step number or call id).
            del action
            return await live[turn_id].perform()

        @DBOS.workflow(name=name)
        async def turn(prompt: str) -> TurnState:
            turn_id = DBOS.workflow_id
            if turn_id is None:
                raise RuntimeError("a DBOS workflow without its id")
            start = await now_ms()
            # Kept until the turn ends: the stepper's turn runs on this client.
            client = make_client(_never_asked)
            stepper = client.step(prompt, turn_id=turn_id, clock_ms=start)
            live[turn_id] = stepper
            try:
                while True:
                    action = await stepper.next()
                    if action["kind"] == "done":
                        await DBOS.set_event_async("pending", [])
                        return state_of(action["result"])
                    if action["kind"] == "ask":
                        request = action["request"]
                        call_id = str(request["call_id"])
                        answer = await _ask(request, call_id)
                        stepper.feed({"kind": "answer", "call_id": call_id, "answer": answer})
                        continue
                    if action["kind"] == "model_request":
                        name_ = f"model:{action['step']}"
                    elif action["kind"] == "summary_request":
                        name_ = f"summary:{action['step']}"
                    else:
                        name_ = f"tool:{action['call']['id']}"
                    recorded = len(stepper.journal)
                    result = await perform(turn_id, name_)
                    if len(stepper.journal) == recorded:
                        # DBOS gave the recorded result without running the step: replay it.
                        stepper.feed(result)
            finally:
                live.pop(turn_id, None)
                stepper.cancel()

        async def _ask(request: dict[str, Any], call_id: str) -> dict[str, Any]:
            timeout = request.get("timeout_ms")
            deadline = None if timeout is None else await now_ms() + int(timeout)
            request = {**request, "deadline_ms": deadline} if deadline else dict(request)
            await DBOS.set_event_async("pending", [request])
            await DBOS.set_event_async(f"ask:{call_id}", request)
            while True:
                if deadline is None:
                    wait = _NO_DEADLINE_WAIT_S
                else:
                    wait = max(0.0, (deadline - await now_ms()) / 1000)
                answer = await DBOS.recv_async(topic=call_id, timeout_seconds=wait)
                if answer is not None:
                    await DBOS.set_event_async("pending", [])
                    return dict(answer)
                if deadline is not None:
                    await DBOS.set_event_async("pending", [])
                    return {"approve": False, "message": _TIMEOUT_DENIAL}

        self._workflow = turn
