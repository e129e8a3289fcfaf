"""Typed views of what the engine sends for a turn: usage, results, the transcript. Tool hints
(:class:`~contenox.Hints`) live in :mod:`contenox._hints`. What
the host's callbacks see (tool calls, outputs, the gate's decisions) lives in
:mod:`contenox._callbacks`, events in :mod:`contenox.events`; both are imported on first use."""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal, TypedDict, Union

if TYPE_CHECKING:
    from ._callbacks import PendingRequest

__all__ = [
    "CodeExecutionOptions",
    "CompactionOptions",
    "FallbackModel",
    "TelemetryOptions",
    "Effort",
    "ModelSettings",
    "Reasoning",
    "ToolChoice",
    "hints_wire",
    "JSON",
    "Outcome",
    "PolicySource",
    "HooksFileSource",
    "SandboxOptions",
    "Source",
    "Tier",
    "Transcript",
    "TurnResult",
    "Usage",
]

JSON = Union[dict[str, Any], list[Any], str, int, float, bool, None]
"""A JSON value as Python objects."""

LIFECYCLE_POINTS = (
    "on_prompt",
    "on_stop",
    "before_compact",
    "on_tool_error",
    "on_turn_start",
    "on_turn_end",
    "on_notification",
)
"""The lifecycle points a ``hooks`` mapping may name besides ``before_tool`` / ``after_tool``
(here, not in :mod:`contenox._lifecycle`, so that checking a ``hooks`` mapping imports none of
the lifecycle's dataclasses)."""

Outcome = Literal[
    "done", "cancelled", "max_turns", "error", "budget", "output_invalid", "suspended"
]
StopReason = Literal["refusal", "content_filter", "max_tokens"]
"""Why a model reply stopped short of a full answer; the turn ended there."""
"""How a turn ended."""

Source = Literal["builtin", "host", "mcp", "remote", "subagent"]
"""Where a tool comes from."""

Tier = Literal["core", "deferred"]
"""``core`` tools are sent to the model; ``deferred`` ones are reached through ``call_tool``."""

PolicySource = Union[Mapping[str, Any], str, os.PathLike[str]]
#: The ``hooks_file`` option: a hooks file in the Claude Code / codex / goose shape (a settings
#: mapping holding ``hooks``, the ``hooks`` mapping itself), its JSON text, or a file path.
HooksFileSource = Union[Mapping[str, Any], str, os.PathLike[str]]
"""An approval policy (hitl-policy-v1) as the option ``policy`` takes it: the document (a dict,
e.g. ``contenox.policies.default()``), its JSON text, or the path of a file holding it. The
engine reads and checks it whole; a policy that does not validate is a ConfigurationError."""


Effort = Literal["minimal", "low", "medium", "high"]
"""A reasoning effort."""

ToolChoice = Union[Literal["auto", "required", "none"], Mapping[str, str]]
"""``"auto"``, ``"required"``, ``"none"``, or ``{"name": TOOL}``: whether and which tool the
model must call. A choice that forces a call holds for the turn's first request only."""


class TextPart(TypedDict):
    """A prompt's text: ``{"type": "text", "text": "..."}``."""

    type: Literal["text"]
    text: str


class _ImageDataRequired(TypedDict):
    type: Literal["image"]
    data: str | bytes | bytearray | memoryview


class ImageDataPart(_ImageDataRequired, total=False):
    """An image's bytes: ``data`` as ``bytes`` (or base64 text); ``media_type``
    (``image/png``, ``image/jpeg``, ``image/gif``, ``image/webp``) may be left out, the engine
    reads it from the bytes' signature (and refuses one the bytes contradict)."""

    media_type: str


class ImagePathPart(TypedDict):
    """An image file beneath the client's root (checked when the turn starts, read for each
    request; PNG, JPEG, GIF or WebP by its bytes, at most 3.75 MiB)."""

    type: Literal["image"]
    path: str


PromptPart = Union[TextPart, ImageDataPart, ImagePathPart]
"""One part of a prompt given as a list."""

Prompt = Union[str, Sequence[PromptPart]]
"""What ``run`` and ``stream`` take: a string, or text and image parts in order. A bad part
(unknown ``type``, data that is not base64 or is empty, bytes that are not an image, a path
outside the root) is a :class:`ConfigurationError` naming it (``prompt[1].data``)."""


class Reasoning(TypedDict, total=False):
    """The option ``reasoning``: an ``effort`` (openai ``reasoning_effort``, anthropic
    ``thinking`` with a budget of 1024/2048/4096/8192 tokens, ollama ``think``) or, on the
    anthropic style, ``budget_tokens`` directly; exactly one."""

    effort: Effort
    budget_tokens: int


class ModelSettings(TypedDict, total=False):
    """Model settings, as ``create_client`` takes them and as ``run(prompt, settings=...)``
    replaces them for one run (each key given replaces the client's). Each reaches the request
    in its style's own spelling; one a style has no such thing for is a ConfigurationError."""

    temperature: float
    """0 and up (at most 2 on openai, 1 on anthropic)."""
    top_p: float
    """From 0 to 1."""
    top_k: int
    """Anthropic and ollama; at least 1."""
    stop: Sequence[str]
    """Sequences that end the answer."""
    seed: int
    """OpenAI and ollama."""
    tool_choice: ToolChoice
    parallel_tool_calls: bool
    """Whether the model may call several tools in one answer (openai and anthropic)."""
    reasoning: Reasoning
    extra_body: Mapping[str, Any]
    """Merged into the request body last (JSON merge patch); may not set ``model``,
    ``messages``, ``tools`` or ``stream``."""


class SandboxOptions(TypedDict, total=False):
    """The option ``sandbox``: how bash and background shells are confined."""

    enabled: bool
    """Confine commands with Landlock and seccomp where the kernel offers them (default True)."""
    network: bool
    """Whether commands may open network sockets (default True)."""
    writable: Sequence[str | os.PathLike[str]]
    """More directories (absolute paths) commands may write beneath, besides the root and
    ``$TMPDIR``."""


class _Record:
    """An immutable value: equal to and hashed as its ``_compared()`` fields, refusing assignment
    and deletion. A hand-written frozen record, not a dataclass: `dataclasses` compiles each
    class's methods from source in every process (about 4M instructions a class, plus 3.4M to
    import it), and every turn's result needs Usage and TurnResult (issue 18's cold start)."""

    __slots__ = ()

    def _compared(self) -> tuple[Any, ...]:
        raise NotImplementedError

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        return self._compared() == other._compared()

    def __hash__(self) -> int:
        return hash(self._compared())

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError(f"cannot assign to field {name!r}: {type(self).__name__} is immutable")

    def __delattr__(self, name: str) -> None:
        raise AttributeError(f"cannot delete field {name!r}: {type(self).__name__} is immutable")


def hints_wire(d: Mapping[str, Any] | None) -> dict[str, bool]:
    """Tool hints in the engine's wire form (camelCase, unknown ones left out), read from either
    spelling (``readOnly`` or ``read_only``, ``openWorld`` or ``open_world``). What
    ``Hints.from_dict(d).to_dict()`` gives, without defining :class:`~contenox.Hints`."""
    d = d or {}
    out: dict[str, bool] = {}
    for wire, snake in (
        ("readOnly", "read_only"),
        ("destructive", None),
        ("openWorld", "open_world"),
    ):
        value = d.get(wire, d.get(snake)) if snake else d.get(wire)
        if value is not None:
            out[wire] = value
    return out


class Usage(_Record):
    """Token usage of a response or of a whole turn. ``input_tokens`` counts the whole prompt,
    cached or not; the cache fields are the parts of it read from and written to the server's
    prompt cache; ``reasoning_tokens`` is the part of ``output_tokens`` the model spent
    reasoning (where the server says). Immutable, compared and hashed by value."""

    __slots__ = (
        "cache_creation_input_tokens",
        "cache_read_input_tokens",
        "input_tokens",
        "output_tokens",
        "reasoning_tokens",
    )
    __match_args__ = (
        "input_tokens",
        "output_tokens",
        "cache_read_input_tokens",
        "cache_creation_input_tokens",
        "reasoning_tokens",
    )

    input_tokens: int
    output_tokens: int
    cache_read_input_tokens: int
    cache_creation_input_tokens: int
    reasoning_tokens: int

    def __init__(
        self,
        input_tokens: int = 0,
        output_tokens: int = 0,
        cache_read_input_tokens: int = 0,
        cache_creation_input_tokens: int = 0,
        reasoning_tokens: int = 0,
    ) -> None:
        _set = object.__setattr__
        _set(self, "input_tokens", input_tokens)
        _set(self, "output_tokens", output_tokens)
        _set(self, "cache_read_input_tokens", cache_read_input_tokens)
        _set(self, "cache_creation_input_tokens", cache_creation_input_tokens)
        _set(self, "reasoning_tokens", reasoning_tokens)

    def _compared(self) -> tuple[int, int, int, int, int]:
        return (
            self.input_tokens,
            self.output_tokens,
            self.cache_read_input_tokens,
            self.cache_creation_input_tokens,
            self.reasoning_tokens,
        )

    def __repr__(self) -> str:
        return (
            f"Usage(input_tokens={self.input_tokens!r}, output_tokens={self.output_tokens!r}, "
            f"cache_read_input_tokens={self.cache_read_input_tokens!r}, "
            f"cache_creation_input_tokens={self.cache_creation_input_tokens!r}, "
            f"reasoning_tokens={self.reasoning_tokens!r})"
        )

    def __reduce__(self) -> tuple[Any, tuple[int, int, int, int, int]]:
        return (Usage, self._compared())

    @classmethod
    def from_dict(cls, d: dict[str, Any] | None) -> Usage:
        d = d or {}
        return cls(
            int(d.get("input_tokens", 0)),
            int(d.get("output_tokens", 0)),
            int(d.get("cache_read_input_tokens", 0)),
            int(d.get("cache_creation_input_tokens", 0)),
            int(d.get("reasoning_tokens", 0)),
        )

    def to_dict(self) -> dict[str, int]:
        # As the engine writes it: the cache and reasoning fields only when non-zero.
        out = {"input_tokens": self.input_tokens, "output_tokens": self.output_tokens}
        if self.cache_read_input_tokens:
            out["cache_read_input_tokens"] = self.cache_read_input_tokens
        if self.cache_creation_input_tokens:
            out["cache_creation_input_tokens"] = self.cache_creation_input_tokens
        if self.reasoning_tokens:
            out["reasoning_tokens"] = self.reasoning_tokens
        return out


class CodeExecutionOptions(TypedDict, total=False):
    """The ``code_execution`` option: turns on ``js_execution`` (``{}`` = every default) with
    these limits: ``timeout_ms`` (10000, wall time, inner tool calls included), ``memory_mb``
    (64), ``max_stack_kb`` (512), ``max_output_bytes`` (32768), ``max_tool_calls`` (100). An
    unknown key is a configuration error."""

    timeout_ms: int
    memory_mb: int
    max_stack_kb: int
    max_output_bytes: int
    max_tool_calls: int


class CompactionOptions(TypedDict, total=False):
    """The ``compaction`` option: compact when the context is over ``threshold_tokens``,
    keeping the ``keep_recent`` most recent messages (default 4); ``instructions`` are added to
    the summary request."""

    threshold_tokens: int
    keep_recent: int
    instructions: str


class FallbackModel(TypedDict, total=False):
    """An entry of the ``fallback`` option: a model tried when the one before it fails after
    its retries (overload, rate limit, server error, failed connection, timeout). ``model`` is
    required; ``style`` defaults to the client's. An entry of the client's style without
    ``base_url`` uses the client's server, key and headers; any other entry only what it gives
    (``api_key``, or ``api_key_env``: the environment variable holding it)."""

    style: Literal["openai", "openai-responses", "anthropic", "ollama"]
    base_url: str
    model: str
    api_key: str
    api_key_env: str
    headers: Mapping[str, str]


class TelemetryOptions(TypedDict, total=False):
    """The ``telemetry`` option's settings (or pass ``True`` for every default): OpenTelemetry
    spans of each turn, following the GenAI semantic conventions, posted over OTLP/HTTP (JSON),
    batched off the turn's path; ``close()`` sends what is queued. The standard ``OTEL_*``
    variables fill what is left out (``OTEL_EXPORTER_OTLP_ENDPOINT``,
    ``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT``, ``OTEL_EXPORTER_OTLP_HEADERS``,
    ``OTEL_SERVICE_NAME``, ``OTEL_RESOURCE_ATTRIBUTES``).

    ``endpoint``: the collector, a base (``http://127.0.0.1:4318``, ``/v1/traces`` added) or the
    traces URL. ``headers``: sent with every export, never on a span. ``include_contents``:
    prompts, answers, tool arguments and results on the spans (off by default).
    ``service_name``: the resource's ``service.name`` (default ``contenox``)."""

    endpoint: str
    headers: Mapping[str, str]
    include_contents: bool
    service_name: str


class Transcript:
    """The conversation a client keeps across turns: read it, save it, restore it.

    ``client.transcript`` returns one; ``client.transcript = Transcript.load(path)`` restores
    one (the engine checks that it is valid)."""

    __slots__ = ("_json", "_messages", "_native")

    def __init__(self, messages: list[dict[str, Any]] | None = None) -> None:
        self._messages: list[dict[str, Any]] | None = list(messages or [])
        self._json: str | None = None
        self._native: Any = None

    @classmethod
    def from_json(cls, text: str) -> Transcript:
        """A transcript from its JSON text (as written by :meth:`to_json` or :meth:`save`)."""
        t = cls.__new__(cls)
        t._json = text
        t._messages = None
        t._native = None
        return t

    @classmethod
    def _from_native(cls, native: Any) -> Transcript:
        """A transcript the engine holds (``_native.Transcript``): written as JSON and parsed
        only when it is read, since most results' transcripts never are."""
        t = cls.__new__(cls)
        t._json = None
        t._messages = None
        t._native = native
        return t

    def _text(self) -> str:
        if self._json is None:
            self._json = self._native.to_json() if self._native is not None else "{}"
        return self._json

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> Transcript:
        """Read a transcript saved with :meth:`save`."""
        with open(path, encoding="utf-8") as f:
            return cls.from_json(f.read())

    @property
    def messages(self) -> list[dict[str, Any]]:
        """The messages, oldest first: ``{"role": "user" | "assistant" | "tool", "content":
        [part, ...], ...}``; a part is ``{"type": "text", "text": ...}``, ``{"type": "image",
        "media_type": ..., "data": <base64>}`` or ``{"type": "image", "path": ...}``,
        ``{"type": "reasoning", "text": ..., ...}`` or ``{"type": "tool_call", "id", "name",
        "arguments", ...}``; a tool result also has ``call_id``, ``name`` and ``is_error``."""
        if self._messages is None:
            data = json.loads(self._text() or "{}")
            self._messages = list(data.get("messages", []))
        return self._messages

    def to_dict(self) -> dict[str, Any]:
        """Core's document: ``{"version": 2, "messages": [...]}``."""
        return {"version": 2, "messages": self.messages}

    def to_json(self) -> str:
        """The transcript as JSON text."""
        if self._messages is None and (self._json is not None or self._native is not None):
            return self._text()
        return json.dumps(self.to_dict(), ensure_ascii=False, indent=2)

    def save(self, path: str | os.PathLike[str]) -> None:
        """Write the transcript as JSON to ``path``."""
        with open(path, "w", encoding="utf-8") as f:
            f.write(self.to_json())

    def __len__(self) -> int:
        if self._messages is None and self._json is None and self._native is not None:
            return len(self._native)
        return len(self.messages)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Transcript) and self.messages == other.messages

    __hash__ = None  # type: ignore[assignment]

    def __reduce__(self) -> tuple[Any, tuple[str]]:
        # Pickled and copied as its JSON text (the engine's handle is not picklable).
        return (Transcript.from_json, (self.to_json(),))

    def __repr__(self) -> str:
        roles = [m.get("role", "?") for m in self.messages]
        tail = ", ".join(roles[-6:])
        more = "…, " if len(roles) > 6 else ""
        return f"Transcript({len(roles)} messages: {more}{tail})"


class TurnResult(_Record):
    """What a finished turn returns. Immutable; compared and hashed by everything but its
    transcript."""

    __slots__ = (
        "checkpoint",
        "error",
        "final_text",
        "outcome",
        "output",
        "pending",
        "stop_reason",
        "transcript",
        "usage",
    )
    __match_args__ = (
        "outcome",
        "final_text",
        "usage",
        "transcript",
        "error",
        "stop_reason",
        "output",
        "checkpoint",
        "pending",
    )

    outcome: Outcome
    final_text: str
    usage: Usage
    transcript: Transcript
    error: str | None
    stop_reason: StopReason | None
    """Why the last model reply stopped short of a full answer (``refusal``,
    ``content_filter``, ``max_tokens``), when it did; the turn ended there."""
    output: Any
    """The final answer of a turn with an ``output_schema``, validated: an instance of the
    type given (pydantic model, dataclass, ``TypedDict``), or the JSON values for a dict schema.
    ``None`` unless the outcome is ``done`` (``output_invalid``: the answer did not match;
    ``final_text`` has it raw, ``error`` says why)."""
    checkpoint: str | None
    """For outcome ``suspended`` (a ``wait_for`` answered ``{"suspend": True}``): the JSON text
    :meth:`Client.resume` continues the turn from, in this process or another with the same
    config. It holds no secret of the config (keys, headers, ``secret_env``, MCP auth)."""
    pending: tuple[PendingRequest, ...]
    """For outcome ``suspended``: the requests waiting for an answer; answers to
    :meth:`Client.resume` are keyed by their ``call_id``."""

    def __init__(
        self,
        outcome: Outcome,
        final_text: str,
        usage: Usage,
        transcript: Transcript,
        error: str | None = None,
        stop_reason: StopReason | None = None,
        output: Any = None,
        checkpoint: str | None = None,
        pending: Sequence[PendingRequest] = (),
    ) -> None:
        _set = object.__setattr__
        _set(self, "checkpoint", checkpoint)
        _set(self, "pending", tuple(pending))
        _set(self, "outcome", outcome)
        _set(self, "final_text", final_text)
        _set(self, "usage", usage)
        _set(self, "transcript", transcript)
        _set(self, "error", error)
        _set(self, "stop_reason", stop_reason)
        _set(self, "output", output)

    def _compared(self) -> tuple[Any, ...]:
        return (
            self.outcome,
            self.final_text,
            self.usage,
            self.error,
            self.stop_reason,
            _hashable(self.output),
            self.checkpoint,
            self.pending,
        )

    def __repr__(self) -> str:
        stop = f", stop_reason={self.stop_reason!r}" if self.stop_reason else ""
        output = f", output={self.output!r}" if self.output is not None else ""
        pending = f", pending={list(self.pending)!r}" if self.pending else ""
        return (
            f"TurnResult(outcome={self.outcome!r}, final_text={self.final_text!r}, "
            f"usage={self.usage!r}, error={self.error!r}{stop}{output}{pending})"
        )

    def __reduce__(self) -> tuple[Any, tuple[Any, ...]]:
        return (
            TurnResult,
            (
                self.outcome,
                self.final_text,
                self.usage,
                self.transcript,
                self.error,
                self.stop_reason,
                self.output,
                self.checkpoint,
                self.pending,
            ),
        )

    @classmethod
    def from_native(
        cls, d: dict[str, Any], parse: Callable[[Any], Any] | None = None
    ) -> TurnResult:
        """The result the engine returned; ``parse`` makes its ``output`` (the validated JSON)
        the host's type. A value ``parse`` refuses (a pydantic validator the schema does not
        express) makes the outcome ``output_invalid`` with its message, never a raise."""
        outcome = d["outcome"]
        error = d.get("error")
        output = d.get("output")
        if parse is not None and output is not None:
            try:
                output = parse(output)
            except Exception as e:
                outcome, output = "output_invalid", None
                error = f"the answer matches the output schema, but its type refused it: {e}"
        return cls(
            outcome=outcome,
            final_text=d["final_text"],
            usage=Usage.from_dict(d.get("usage")),
            error=error,
            stop_reason=d.get("stop_reason"),
            transcript=Transcript._from_native(d["transcript"]),
            output=output,
            checkpoint=d.get("checkpoint"),
            pending=_pending(d.get("pending")),
        )

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "outcome": self.outcome,
            "final_text": self.final_text,
            "usage": self.usage.to_dict(),
        }
        if self.error is not None:
            out["error"] = self.error
        if self.stop_reason is not None:
            out["stop_reason"] = self.stop_reason
        if self.output is not None:
            out["output"] = _jsonable(self.output)
        if self.checkpoint is not None:
            out["checkpoint"] = self.checkpoint
        if self.pending:
            out["pending"] = [p.to_dict() for p in self.pending]
        out["transcript"] = self.transcript.to_dict()
        return out

    def _repr_html_(self) -> str:
        import html  # only notebooks render results

        err = f" — {html.escape(self.error)}" if self.error else ""
        return (
            f"<div><b>{html.escape(self.outcome)}</b>{err}: "
            f"{html.escape(self.final_text)} <small>({self.usage.input_tokens} in / "
            f"{self.usage.output_tokens} out tokens)</small></div>"
        )


def _pending(raw: Any) -> list[PendingRequest]:
    """A suspended turn's pending requests (none for every other outcome)."""
    if not raw:
        return []
    from ._callbacks import PendingRequest  # only a suspended turn has any

    return [PendingRequest.from_dict(p) for p in raw]


def _jsonable(value: Any) -> Any:
    """An output as JSON values: a pydantic model dumped, a dataclass as a dict, else as is."""
    dump = getattr(value, "model_dump", None)
    if callable(dump):
        return dump(mode="json")
    if hasattr(value, "__dataclass_fields__") and not isinstance(value, type):
        import dataclasses  # only for a dataclass output: the cold start never imports it

        return dataclasses.asdict(value)
    return value


def _hashable(value: Any) -> Any:
    """An output in a form results are compared and hashed by (JSON text for dicts and lists)."""
    if isinstance(value, (dict, list)):
        return json.dumps(value, sort_keys=True, default=str)
    try:
        hash(value)
    except TypeError:
        return repr(value)
    return value
