"""What the host's callbacks are given and give back: the tool call ``before_tool`` and
``after_tool`` see, a tool's :class:`ToolOutput`, the gate's decisions (:func:`deny`,
:func:`pending`), the request ``wait_for`` answers, the notice ``on_compact`` gets, and the
types of those callbacks.

Imported on first use (``contenox.ToolOutput``, a hook, ``wait_for``, compaction), not by
``import contenox``: each frozen dataclass costs about a millisecond to define (``dataclasses``
compiles its methods from source at run time), and a client that runs turns with plain tools
needs none of these (docs/benchmarks.md, "Python binding: the gap to the floor")."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, Union

from . import _native
from ._hints import Hints
from ._types import Source, Usage

__all__ = [
    "AfterTool",
    "Ask",
    "BeforeTool",
    "CompactNotice",
    "Deny",
    "Hooks",
    "Elicitation",
    "OnCompact",
    "PendingRequest",
    "ToolCallEvent",
    "ToolOutput",
    "WaitFor",
    "deny",
    "pending",
]


@dataclass(frozen=True, slots=True)
class ToolCallEvent:
    """A tool call as the gate sees it (the argument of ``before_tool`` and ``after_tool``)."""

    name: str
    arguments: Any
    call_id: str
    hints: Hints
    source: Source
    server: str | None = None
    agent: tuple[str, ...] = ()
    """The chain of subagents whose turn makes the call (``("researcher",)``); empty for the
    client's own calls."""

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> ToolCallEvent:
        return cls(
            name=d["name"],
            arguments=d.get("arguments"),
            call_id=d["call_id"],
            hints=Hints.from_dict(d.get("hints")),
            source=d.get("source", "host"),
            server=d.get("server"),
            agent=tuple(d.get("agent") or ()),
        )

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "name": self.name,
            "arguments": self.arguments,
            "call_id": self.call_id,
            "hints": self.hints.to_dict(),
            "source": self.source,
        }
        if self.server is not None:
            out["server"] = self.server
        if self.agent:
            out["agent"] = list(self.agent)
        return out


@dataclass(frozen=True, slots=True)
class Elicitation:
    """What an MCP server's ``elicitation/create`` asks (``PendingRequest.elicitation``)."""

    server: str
    message: str
    requested_schema: dict[str, Any]


@dataclass(frozen=True, slots=True)
class PendingRequest:
    """A request the host answers through ``wait_for``. The hook sets ``kind``, ``prompt``,
    ``timeout_ms`` and ``data``; the engine fills in the call (``call_id``, ``name``,
    ``arguments``)."""

    kind: str = ""
    prompt: str | None = None
    timeout_ms: int | None = None
    data: Any = None
    call_id: str = ""
    name: str = ""
    arguments: Any = None
    deadline_ms: int | None = None
    """In a suspended turn's ``pending``: when the ask times out, Unix milliseconds (a resumed
    ask keeps it; ``timeout_ms`` there is what was left of it when the turn suspended)."""

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> PendingRequest:
        return cls(
            kind=d.get("kind", ""),
            prompt=d.get("prompt"),
            timeout_ms=d.get("timeout_ms"),
            data=d.get("data"),
            call_id=d.get("call_id", ""),
            name=d.get("name", ""),
            arguments=d.get("arguments"),
            deadline_ms=d.get("deadline_ms"),
        )

    @property
    def elicitation(self) -> Elicitation | None:
        """What an MCP server's ``elicitation/create`` asks, when this is a request of kind
        ``elicitation`` (else ``None``): answer ``{"result": {...}}`` matching its
        ``requested_schema``, or ``{"approve": False}`` to decline."""
        if self.kind != "elicitation" or not isinstance(self.data, dict):
            return None
        return Elicitation(
            server=str(self.data.get("server", "")),
            message=str(self.data.get("message", "")),
            requested_schema=dict(self.data.get("requestedSchema") or {}),
        )

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"kind": self.kind}
        for key in ("prompt", "timeout_ms", "data", "deadline_ms"):
            value = getattr(self, key)
            if value is not None:
                out[key] = value
        out.update(call_id=self.call_id, name=self.name, arguments=self.arguments)
        return out


@dataclass(frozen=True, slots=True)
class ToolOutput:
    """A tool's result. Return one from a tool or ``after_tool`` to set ``is_error`` or
    ``metadata``; any other return value is the content (a str as is, other JSON compact)."""

    content: Any
    is_error: bool = False
    metadata: dict[str, Any] | None = None
    images: tuple[dict[str, Any], ...] = ()
    """The images the model sees after the content (``read`` of an image file), in the
    engine's form (``{"media_type", "data"}``, base64): kept when ``after_tool`` returns a
    ``dataclasses.replace`` of the result it was given."""

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> ToolOutput:
        return cls(
            content=d.get("content"),
            is_error=bool(d.get("is_error")),
            metadata=d.get("metadata"),
            images=tuple(d.get("images") or ()),
        )

    @classmethod
    def error(cls, message: str) -> ToolOutput:
        """An error result with this message."""
        return cls(content=message, is_error=True)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"content": self.content, "is_error": self.is_error}
        if self.metadata is not None:
            out["metadata"] = self.metadata
        if self.images:
            out["images"] = list(self.images)
        return out


@dataclass(frozen=True, slots=True)
class CompactNotice:
    """What one compaction did (``on_compact``'s argument, ``client.compact()``'s result, the
    ``compact`` event's content)."""

    trigger: Literal["auto", "manual"]
    pre_tokens: int
    """The context's size before, in tokens (measured as the next request would be)."""
    post_tokens: int
    """The context's size after, in tokens (estimated)."""
    summary: str | None = None
    """The summary that replaced the older messages; None when a host compactor did it."""
    usage: Usage = field(default_factory=Usage)
    """What the summary request cost; counted in the turn's usage."""

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> CompactNotice:
        return cls(
            trigger=d["trigger"],
            pre_tokens=int(d["pre_tokens"]),
            post_tokens=int(d["post_tokens"]),
            summary=d.get("summary"),
            usage=Usage.from_dict(d.get("usage")),
        )

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "trigger": self.trigger,
            "pre_tokens": self.pre_tokens,
            "post_tokens": self.post_tokens,
        }
        if self.summary is not None:
            out["summary"] = self.summary
        out["usage"] = self.usage.to_dict()
        return out


# The gate's decisions -----------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Deny:
    """``before_tool`` refuses the call; the model sees an error result with ``message`` (or
    the engine's default denial text when it is ``None``). Make one with :func:`deny`."""

    message: str | None = None


@dataclass(frozen=True, slots=True)
class Ask:
    """``before_tool`` asks the host's ``wait_for``. Make one with :func:`pending`."""

    request: dict[str, Any]


def deny(message: str | None = None) -> Deny:
    """Return this from ``before_tool`` to refuse a call (the turn goes on)."""
    return Deny(message)


def pending(
    request: PendingRequest | dict[str, Any] | None = None,
    *,
    kind: str | None = None,
    prompt: str | None = None,
    timeout_ms: int | None = None,
    data: Any = None,
) -> Ask:
    """Return this from ``before_tool`` to ask ``wait_for`` first.

    ``request`` is a dict (``kind``, ``prompt``, ``timeout_ms``, ``data``) or a
    :class:`PendingRequest`; keyword arguments set the same fields."""
    if isinstance(request, PendingRequest):
        req: dict[str, Any] = {
            k: v
            for k, v in request.to_dict().items()
            if k in ("kind", "prompt", "timeout_ms", "data") and v is not None
        }
    elif request is None:
        req = {}
    elif isinstance(request, dict):
        req = dict(request)
    else:
        raise TypeError(f"pending() takes a dict or a PendingRequest, got {type(request).__name__}")
    for key, value in (
        ("kind", kind),
        ("prompt", prompt),
        ("timeout_ms", timeout_ms),
        ("data", data),
    ):
        if value is not None:
            req[key] = value
    return Ask(req)


# The callbacks' types ------------------------------------------------------------------------

BeforeTool = Callable[[ToolCallEvent], Union[Deny, Ask, Awaitable[Union[Deny, Ask, None]], None]]
"""``before_tool(event)``: return None (allow), ``contenox.deny(...)`` or
``contenox.pending(...)``; sync or async."""

AfterTool = Callable[[ToolCallEvent, ToolOutput], Any]
"""``after_tool(event, result)``: return None (keep the result) or a replacement (any JSON value
or a ``ToolOutput``); sync or async."""

Hooks = Mapping[str, Union[BeforeTool, AfterTool, Callable[..., Any], None]]
"""``{"before_tool": fn, "after_tool": fn}``, and the lifecycle points (``on_prompt``,
``on_stop``, ``before_compact``, ``on_tool_error``, ``on_turn_start``, ``on_turn_end``,
``on_notification``: :mod:`contenox._lifecycle`)."""

WaitFor = Callable[[PendingRequest, _native.CancelSignal], Any]
"""``wait_for(request, cancel)``: return ``{"approve": True}``,
``{"approve": False, "message": ...}`` or ``{"result": value}``; sync or async. A sync one runs
in a worker thread and can watch ``cancel``; an async one is cancelled with its turn."""

OnCompact = Callable[[CompactNotice], Any]
"""``on_compact(notice)``: told after every compaction (what the ``compact`` event says); sync or
async. A failure in it is ignored (the compaction stands)."""
