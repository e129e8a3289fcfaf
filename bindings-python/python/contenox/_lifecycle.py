"""The lifecycle hooks beside ``before_tool`` / ``after_tool`` (``docs/hooks.md``): what each
point gives the host's function and what the function may answer.

In ``hooks={...}`` next to ``before_tool`` / ``after_tool``, each sync or async:

- ``on_prompt(prompt)``: None (send it), :class:`ReplacePrompt`, :class:`AddContext` or
  :class:`RefusePrompt` (the turn ends with outcome ``error``, no model request);
- ``on_stop(final_text)``: None (the turn ends) or :class:`ContinueTurn` (the model goes back
  to work with the message, within ``max_turns``);
- ``before_compact(request)``: None (proceed), :class:`CompactInstructions` or
  :class:`VetoCompact`;
- ``on_tool_error(event, result)``, ``on_turn_start(prompt)``, ``on_turn_end(end)``,
  ``on_notification(notification)``: observe only (the return value is ignored).

The engine decides what an answer does. A function that raises, returns what its point does
not take, or gives no answer within ``hook_timeout_ms`` (default 60 s) never fails the turn: it
is logged and the point's fallback applies (the prompt is sent, the turn ends, the compaction
proceeds).

Imported on first use, like :mod:`contenox._callbacks`."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Literal, Union

from ._callbacks import ToolCallEvent, ToolOutput
from ._types import LIFECYCLE_POINTS, Outcome

__all__ = [
    "AddContext",
    "BeforeCompact",
    "CompactInstructions",
    "CompactRequest",
    "ContinueTurn",
    "Notification",
    "NotificationKind",
    "OnPrompt",
    "OnStop",
    "PromptAction",
    "RefusePrompt",
    "ReplacePrompt",
    "TurnEnd",
    "VetoCompact",
    "LIFECYCLE_POINTS",
]


# What the points give ----------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class CompactRequest:
    """The compaction ``before_compact`` is asked about."""

    trigger: Literal["auto", "manual"]
    """``auto`` (the threshold, or the server's context limit) or ``manual``
    (``client.compact()``)."""
    pre_tokens: int
    """The context's size now, in tokens."""
    instructions: str | None = None
    """The configured summary instructions (``compaction.instructions``), if any."""

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> CompactRequest:
        return cls(
            trigger=d["trigger"],
            pre_tokens=int(d["pre_tokens"]),
            instructions=d.get("instructions"),
        )


NotificationKind = Literal["ask", "budget_near"]
"""``ask``: a call waits for the host's answer; ``budget_near``: the turn is near a ceiling."""


@dataclass(frozen=True, slots=True)
class Notification:
    """Something the host may want to show a person (``on_notification``'s argument)."""

    kind: NotificationKind
    message: str

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Notification:
        return cls(kind=d["kind"], message=d["message"])


@dataclass(frozen=True, slots=True)
class TurnEnd:
    """How a turn ended (``on_turn_end``'s argument, the ``turn_end`` event's content)."""

    outcome: Outcome
    final_text: str
    error: str | None = None
    """What went wrong (outcome ``error``), which ceiling (outcome ``budget``)."""

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> TurnEnd:
        return cls(outcome=d["outcome"], final_text=d.get("final_text", ""), error=d.get("error"))


# What the points may answer ----------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ReplacePrompt:
    """``on_prompt``: send this text instead of the prompt's (its images stay)."""

    text: str


@dataclass(frozen=True, slots=True)
class AddContext:
    """``on_prompt``: send the prompt with this text added after it."""

    text: str


@dataclass(frozen=True, slots=True)
class RefusePrompt:
    """``on_prompt``: do not send the prompt; the turn ends with outcome ``error`` reading
    ``the prompt was refused by a hook: REASON`` and the conversation is left unchanged."""

    reason: str


@dataclass(frozen=True, slots=True)
class ContinueTurn:
    """``on_stop``: send the model back to work with this message (within ``max_turns``)."""

    message: str


@dataclass(frozen=True, slots=True)
class CompactInstructions:
    """``before_compact``: compact with these summary instructions this time."""

    text: str


@dataclass(frozen=True, slots=True)
class VetoCompact:
    """``before_compact``: do not compact now (the conversation stays whole)."""

    reason: str


PromptAction = Union[ReplacePrompt, AddContext, RefusePrompt, None]
"""What ``on_prompt`` may return (None: send the prompt as it is)."""

OnPrompt = Callable[[str], Union[PromptAction, Awaitable[PromptAction]]]
OnStop = Callable[[str], Union[ContinueTurn, Awaitable[Union[ContinueTurn, None]], None]]
CompactAnswer = Union[CompactInstructions, VetoCompact, None]
"""What ``before_compact`` may return (None: proceed)."""
BeforeCompact = Callable[[CompactRequest], Union[CompactAnswer, Awaitable[CompactAnswer]]]


# The bridge's half (called from Rust) ------------------------------------------------------


def args(point: str, d: Any) -> tuple[Any, ...]:
    """The arguments of ``point``'s function from the engine's JSON."""
    if point in ("on_prompt", "on_stop", "on_turn_start"):
        return (d,)
    if point == "before_compact":
        return (CompactRequest.from_dict(d),)
    if point == "on_tool_error":
        return (ToolCallEvent.from_dict(d["call"]), ToolOutput.from_dict(d["result"]))
    if point == "on_turn_end":
        return (TurnEnd.from_dict(d),)
    if point == "on_notification":
        return (Notification.from_dict(d),)
    raise ValueError(f"unknown lifecycle point {point}")


_ANSWERS: dict[str, tuple[str, dict[type, tuple[str, str]]]] = {
    "on_prompt": (
        "continue",
        {
            ReplacePrompt: ("replace", "text"),
            AddContext: ("add_context", "text"),
            RefusePrompt: ("refuse", "reason"),
        },
    ),
    "on_stop": ("stop", {ContinueTurn: ("continue", "message")}),
    "before_compact": (
        "proceed",
        {CompactInstructions: ("instructions", "text"), VetoCompact: ("veto", "reason")},
    ),
}


def answer_wire(point: str, value: Any) -> Any:
    """What ``point``'s function returned as the engine's JSON answer (``"continue"``,
    ``{"refuse": reason}``, ...); a TypeError (the point's fallback) for anything else."""
    if point not in _ANSWERS:
        return None  # observe-only points: the return value is ignored
    default, kinds = _ANSWERS[point]
    if value is None:
        return default
    found = kinds.get(type(value))
    if found is None:
        names = ", ".join(f"contenox.{k.__name__}" for k in kinds)
        raise TypeError(f"{point} returned {value!r}; return None or one of {names}")
    tag, field_name = found
    text = getattr(value, field_name)
    if not isinstance(text, str):
        raise TypeError(f"{point}: {type(value).__name__}.{field_name} must be a str")
    return {tag: text}
