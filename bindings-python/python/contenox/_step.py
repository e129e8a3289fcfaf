"""A turn stepped by its host (``client.step``): each model request, tool call and ask is
handed out as an action dict, and the turn goes on only with its result, either one recorded
before (:meth:`Stepper.feed`: no I/O) or the one the engine gets by doing it now
(:meth:`Stepper.perform`). A durable engine records each result as its own step and, after a
crash, replays them: the same start (:meth:`Stepper.options`) and the same results give the
same actions."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any, Literal, TypedDict, Union

from . import _native
from ._output import Parse
from ._types import TurnResult

if TYPE_CHECKING:
    from .events import Event


class ModelRequestAction(TypedDict):
    """Send this request to the model; give back a ``model_response`` result."""

    kind: Literal["model_request"]
    turn_id: str
    step: int
    request: Any
    """The request body as the model's wire style has it (never headers, so never a key)."""


class SummaryRequestAction(TypedDict):
    """Send this summary request (the turn compacts before model request ``step``); give back
    a ``model_response`` result with ``"summary": True``."""

    kind: Literal["summary_request"]
    turn_id: str
    step: int
    request: Any
    """The request body: the older messages written out, no tools."""


class ToolCallAction(TypedDict):
    """Run this call (it passed the gate); give back a ``tool_result`` result."""

    kind: Literal["tool_call"]
    call: dict[str, Any]
    idempotency_key: str
    """``turn_id:call_id``: what the tool's ``ctx.idempotency_key`` is too."""


class AskAction(TypedDict):
    """The gate asks; give back an ``answer`` result."""

    kind: Literal["ask"]
    request: dict[str, Any]


class DoneAction(TypedDict):
    """The turn ended; every later ``next()`` gives it again."""

    kind: Literal["done"]
    result: TurnResult


Action = Union[ModelRequestAction, SummaryRequestAction, ToolCallAction, AskAction, DoneAction]
"""What a stepped turn waits for next (``action["kind"]`` tells which)."""

ActionResult = dict[str, Any]
"""``{"kind": "model_response", "step", "reply" | "error"}`` (and ``"summary": True`` for a
``summary_request``), ``{"kind": "tool_result",
"call_id", "output": {"content", "is_error"}}`` or ``{"kind": "answer", "call_id", "answer"}``
(the answer in ``wait_for``'s shape)."""


class Stepper:
    """A stepped turn: ``await next()`` gives the action waiting, ``feed(result)`` or ``await
    perform()`` answers it, until the ``done`` action (its ``result`` is what ``run`` returns).
    ``next_sync`` / ``perform_sync`` block without asyncio (sync callbacks only, as
    ``run_sync``). Dropped before the turn ended, it cancels the turn."""

    def __init__(self, native: _native.Stepper, parse: Parse | None = None) -> None:
        self._native = native
        self._parse = parse

    def _action(self, d: dict[str, Any]) -> Action:
        if d["kind"] == "done":
            d["result"] = TurnResult.from_native(d["result"], self._parse)
        return d  # type: ignore[return-value]

    async def next(self) -> Action:
        """The next action: the one still waiting if there is one (asking twice gives the same
        action), else the turn runs on to its next model request, tool call, ask or its end."""
        return self._action(await self._native.next())

    def next_sync(self) -> Action:
        """:meth:`next`, blocking."""
        return self._action(self._native.next_blocking())

    def feed(self, result: ActionResult) -> None:
        """Give the waiting action its result (one recorded before). Raises
        :class:`StepError`, changing nothing, when no action waits (call ``next()`` first; the
        turn may be done) or the result is for another action (kind, step or call id)."""
        self._native.feed(json.dumps(result))

    async def perform(self) -> ActionResult:
        """Do the waiting action's I/O now (the model request, the tool, ``wait_for``) and
        return its result, which the turn goes on with: record it to replay."""
        result: ActionResult = await self._native.perform()
        return result

    def perform_sync(self) -> ActionResult:
        """:meth:`perform`, blocking."""
        result: ActionResult = self._native.perform_blocking()
        return result

    @property
    def journal(self) -> list[ActionResult]:
        """Every result given so far, in order (fed or performed)."""
        journal: list[ActionResult] = self._native.journal()
        return journal

    @property
    def options(self) -> dict[str, Any]:
        """The start state a replay gives again: ``client.step(prompt, **stepper.options)``."""
        options: dict[str, Any] = self._native.options()
        return options

    @property
    def turn_id(self) -> str:
        """The turn's id (the prefix of every idempotency key)."""
        return self._native.turn_id

    def events(self) -> list[Event]:
        """The events emitted so far and not yet taken (the same objects a :class:`Run`
        yields)."""
        from .events import event_from_dict  # loaded when first used (a cold import skips it)

        return [event_from_dict(d) for d in self._native.events()]

    def cancel(self) -> None:
        """Cancel the turn: ``next()`` then gives ``done`` with outcome ``cancelled``."""
        self._native.cancel()
