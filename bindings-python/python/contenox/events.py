"""The events of a turn, one class per ``type``, the same events every binding sees.

Every event has ``type`` (the engine's snake_case tag), readable ``repr``, and ``to_dict()``
returning exactly what the engine serialized. ``Event`` is the union of them all; an event type
this version does not know arrives as :class:`UnknownEvent`.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Any, Literal, Union

from ._callbacks import PendingRequest
from ._hints import Hints
from ._types import Outcome, Source, StopReason, Usage

__all__ = [
    "Answer",
    "ChainTaskEnd",
    "ChainTaskStart",
    "Compact",
    "Event",
    "Gate",
    "OutputDelta",
    "Pending",
    "Progress",
    "Reasoning",
    "Fallback",
    "ReasoningDelta",
    "Request",
    "Retry",
    "Stop",
    "Text",
    "TextDelta",
    "Todos",
    "ToolCall",
    "ToolResult",
    "ToolStart",
    "TurnEnd",
    "TurnStart",
    "UnknownEvent",
    "UsageEvent",
    "event_from_dict",
]


@dataclass(frozen=True, slots=True, kw_only=True)
class _Base:
    raw: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)
    """The event as the engine serialized it."""

    def to_dict(self) -> dict[str, Any]:
        """The event as the engine serialized it (``type`` included)."""
        if self.raw:
            return dict(self.raw)
        out: dict[str, Any] = {}
        for f in fields(self):
            if f.name == "raw":
                continue
            v = getattr(self, f.name)
            if hasattr(v, "to_dict"):
                v = v.to_dict()
            if v is None and f.name in (
                "message",
                "metadata",
                "status",
                "error",
                "rule",
                "value",
                "next",
                "summary",
                "usage",
            ):
                continue
            if f.name == "agent":
                if not v:
                    continue
                v = list(v)
            out[f.name] = v
        return out


@dataclass(frozen=True, slots=True, kw_only=True)
class TurnStart(_Base):
    """The turn began."""

    type: Literal["turn_start"] = field(default="turn_start", repr=False)
    prompt: str


@dataclass(frozen=True, slots=True, kw_only=True)
class Request(_Base):
    """A model request is about to be sent (once per HTTP attempt)."""

    type: Literal["request"] = field(default="request", repr=False)
    index: int
    attempt: int
    agent: tuple[str, ...] = field(default=(), repr=False)
    """The chain of subagents this event comes from (``("researcher",)``); empty for the
    client's own."""


@dataclass(frozen=True, slots=True, kw_only=True)
class TextDelta(_Base):
    """A piece of streamed text."""

    type: Literal["text_delta"] = field(default="text_delta", repr=False)
    text: str
    agent: tuple[str, ...] = field(default=(), repr=False)
    """The chain of subagents this event comes from (``("researcher",)``); empty for the
    client's own."""


@dataclass(frozen=True, slots=True, kw_only=True)
class OutputDelta(_Base):
    """The answer so far, read as JSON (a turn with an ``output_schema``): the best-effort value
    of the streamed text's prefix, open strings, lists and objects closed. Sent when it
    changes; not validated (``result.output`` is)."""

    type: Literal["output_delta"] = field(default="output_delta", repr=False)
    output: Any
    agent: tuple[str, ...] = field(default=(), repr=False)
    """The chain of subagents this event comes from (``("researcher",)``); empty for the
    client's own."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Text(_Base):
    """The whole text of one model response."""

    type: Literal["text"] = field(default="text", repr=False)
    text: str
    agent: tuple[str, ...] = field(default=(), repr=False)
    """The chain of subagents this event comes from (``("researcher",)``); empty for the
    client's own."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ReasoningDelta(_Base):
    """A piece of the model's streamed reasoning (its thinking, where the server shows it)."""

    type: Literal["reasoning_delta"] = field(default="reasoning_delta", repr=False)
    text: str
    agent: tuple[str, ...] = field(default=(), repr=False)
    """The chain of subagents this event comes from (``("researcher",)``); empty for the
    client's own."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Reasoning(_Base):
    """The whole text of one reasoning part of a model response (before its ``Text``)."""

    type: Literal["reasoning"] = field(default="reasoning", repr=False)
    text: str
    agent: tuple[str, ...] = field(default=(), repr=False)
    """The chain of subagents this event comes from (``("researcher",)``); empty for the
    client's own."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolCall(_Base):
    """The model asked for a tool call."""

    type: Literal["tool_call"] = field(default="tool_call", repr=False)
    call_id: str
    name: str
    arguments: Any
    agent: tuple[str, ...] = field(default=(), repr=False)
    """The chain of subagents this event comes from (``("researcher",)``); empty for the
    client's own."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Gate(_Base):
    """The gate's decision for a call: ``allow``, ``deny`` or ``ask``."""

    type: Literal["gate"] = field(default="gate", repr=False)
    call_id: str
    name: str
    decision: Literal["allow", "deny", "ask"]
    message: str | None = None
    hints: Hints = field(default_factory=Hints)
    source: Source = "host"
    rule: str | None = None
    """The approval policy's rule that matched (``rules[3]``, ``default_action``), when a policy
    is set."""
    agent: tuple[str, ...] = field(default=(), repr=False)
    """The chain of subagents this event comes from (``("researcher",)``); empty for the
    client's own."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Pending(_Base):
    """A call waits for the host's ``wait_for``."""

    type: Literal["pending"] = field(default="pending", repr=False)
    call_id: str
    name: str
    request: PendingRequest
    agent: tuple[str, ...] = field(default=(), repr=False)
    """The chain of subagents this event comes from (``("researcher",)``); empty for the
    client's own."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Answer(_Base):
    """The host answered a pending request (or the ask timed out, which denies)."""

    type: Literal["answer"] = field(default="answer", repr=False)
    call_id: str
    name: str
    answer: dict[str, Any]
    agent: tuple[str, ...] = field(default=(), repr=False)
    """The chain of subagents this event comes from (``("researcher",)``); empty for the
    client's own."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolStart(_Base):
    """A tool is about to execute."""

    type: Literal["tool_start"] = field(default="tool_start", repr=False)
    call_id: str
    name: str
    agent: tuple[str, ...] = field(default=(), repr=False)
    """The chain of subagents this event comes from (``("researcher",)``); empty for the
    client's own."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolResult(_Base):
    """A call's result, as the model will see it."""

    type: Literal["tool_result"] = field(default="tool_result", repr=False)
    call_id: str
    name: str
    content: str
    is_error: bool
    metadata: dict[str, Any] | None = None
    usage: Usage | None = None
    """Tokens the tool spent on models (a subagent's turn usage); counted in the turn's."""
    agent: tuple[str, ...] = field(default=(), repr=False)
    """The chain of subagents this event comes from (``("researcher",)``); empty for the
    client's own."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Progress(_Base):
    """Progress reported by a running tool (``ctx.progress(data)``)."""

    type: Literal["progress"] = field(default="progress", repr=False)
    call_id: str
    name: str
    data: Any
    agent: tuple[str, ...] = field(default=(), repr=False)
    """The chain of subagents this event comes from (``("researcher",)``); empty for the
    client's own."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Todos(_Base):
    """The turn's task list, replaced whole by ``todo_write``."""

    type: Literal["todos"] = field(default="todos", repr=False)
    todos: Any
    agent: tuple[str, ...] = field(default=(), repr=False)
    """The chain of subagents this event comes from (``("researcher",)``); empty for the
    client's own."""


@dataclass(frozen=True, slots=True, kw_only=True)
class UsageEvent(_Base):
    """Usage of one model response."""

    type: Literal["usage"] = field(default="usage", repr=False)
    usage: Usage
    model: str | None = None
    """The model that answered (the config's ``model``, a chain task's, or the ``fallback``
    model the turn moved to): add usage up per model from these."""
    agent: tuple[str, ...] = field(default=(), repr=False)
    """The chain of subagents this event comes from (``("researcher",)``); empty for the
    client's own."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Compact(_Base):
    """The older part of the conversation was replaced by one summary."""

    type: Literal["compact"] = field(default="compact", repr=False)
    trigger: Literal["auto", "manual"]
    pre_tokens: int
    post_tokens: int
    summary: str | None = None
    usage: Usage = field(default_factory=Usage)
    agent: tuple[str, ...] = field(default=(), repr=False)
    """The chain of subagents this event comes from (``("researcher",)``); empty for the
    client's own."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Retry(_Base):
    """A model request failed and will be retried."""

    type: Literal["retry"] = field(default="retry", repr=False)
    attempt: int
    error: str
    wait_ms: int
    status: int | None = None
    agent: tuple[str, ...] = field(default=(), repr=False)
    """The chain of subagents this event comes from (``("researcher",)``); empty for the
    client's own."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Fallback(_Base):
    """The model failed after its retries (an overload, a rate limit, a server error, a failed
    connection or a timeout, before any byte of an answer): the request goes to the next model
    of the ``fallback`` option, which answers the rest of the turn."""

    type: Literal["fallback"] = field(default="fallback", repr=False)
    from_model: str
    """The model that failed."""
    to_model: str
    """The model the request goes to now."""
    error: str
    status: int | None = None
    agent: tuple[str, ...] = field(default=(), repr=False)
    """The chain of subagents this event comes from (``("researcher",)``); empty for the
    client's own."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Stop(_Base):
    """A model reply stopped short of a full answer (refused, filtered, cut at max tokens); the
    turn ends after it, and the result's ``stop_reason`` says the same."""

    type: Literal["stop"] = field(default="stop", repr=False)
    reason: StopReason
    agent: tuple[str, ...] = field(default=(), repr=False)
    """The chain of subagents this event comes from (``("researcher",)``); empty for the
    client's own."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ChainTaskStart(_Base):
    """A task of a chain starts (:meth:`contenox.Client.run_chain`)."""

    type: Literal["chain_task_start"] = field(default="chain_task_start", repr=False)
    task_id: str
    handler: str


@dataclass(frozen=True, slots=True, kw_only=True)
class ChainTaskEnd(_Base):
    """A task of a chain ended: the value its branches were matched against (absent when it
    failed), the task that runs next (absent when the chain ends), and why it failed."""

    type: Literal["chain_task_end"] = field(default="chain_task_end", repr=False)
    task_id: str
    handler: str
    value: str | None = None
    next: str | None = None
    error: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class TurnEnd(_Base):
    """The turn ended; every stream ends with exactly one."""

    type: Literal["turn_end"] = field(default="turn_end", repr=False)
    outcome: Outcome
    final_text: str
    usage: Usage
    error: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class UnknownEvent(_Base):
    """An event type this version of the binding does not know (a newer engine)."""

    type: str
    data: dict[str, Any] = field(default_factory=dict)


Event = Union[
    TurnStart,
    Request,
    TextDelta,
    OutputDelta,
    Text,
    ReasoningDelta,
    Reasoning,
    ToolCall,
    Gate,
    Pending,
    Answer,
    ToolStart,
    ToolResult,
    Progress,
    Todos,
    UsageEvent,
    Compact,
    Stop,
    Retry,
    Fallback,
    ChainTaskStart,
    ChainTaskEnd,
    TurnEnd,
    UnknownEvent,
]
"""Any event of a turn; narrow on ``event.type`` or with ``isinstance``."""

_CLASSES: dict[str, type[_Base]] = {
    "turn_start": TurnStart,
    "request": Request,
    "text_delta": TextDelta,
    "output_delta": OutputDelta,
    "text": Text,
    "reasoning_delta": ReasoningDelta,
    "reasoning": Reasoning,
    "tool_call": ToolCall,
    "gate": Gate,
    "pending": Pending,
    "answer": Answer,
    "tool_start": ToolStart,
    "tool_result": ToolResult,
    "progress": Progress,
    "todos": Todos,
    "usage": UsageEvent,
    "compact": Compact,
    "stop": Stop,
    "retry": Retry,
    "fallback": Fallback,
    "chain_task_start": ChainTaskStart,
    "chain_task_end": ChainTaskEnd,
    "turn_end": TurnEnd,
}

_FIELDS: dict[str, frozenset[str]] = {
    k: frozenset(f.name for f in fields(c) if f.name not in ("raw", "type"))
    for k, c in _CLASSES.items()
}


def event_from_dict(d: dict[str, Any]) -> Event:
    """An event object from the engine's serialized form."""
    kind = d.get("type", "")
    cls = _CLASSES.get(kind)
    if cls is None:
        return UnknownEvent(type=str(kind), data={k: v for k, v in d.items() if k != "type"}, raw=d)
    names = _FIELDS[kind]
    kwargs: dict[str, Any] = {k: v for k, v in d.items() if k in names}
    if "hints" in kwargs:
        kwargs["hints"] = Hints.from_dict(kwargs["hints"])
    if "usage" in kwargs:
        kwargs["usage"] = Usage.from_dict(kwargs["usage"])
    if "agent" in kwargs:
        kwargs["agent"] = tuple(kwargs["agent"] or ())
    if kind == "pending":
        kwargs["request"] = PendingRequest.from_dict(kwargs.get("request") or {})
    event: Event = cls(raw=d, **kwargs)  # type: ignore[assignment]
    return event
