"""The exceptions of contenox: ``ContenoxError`` and its subclasses.

They are raised for misuse and invalid configuration only. Everything that happens inside a turn
(a model that fails, a tool that raises, a cancel) is reported through the turn's outcome and
events instead. One class per kind of the engine's error; the engine's cause chain is the
exception's ``__cause__`` chain (an I/O error below the engine as the matching ``OSError``, any
other link as :class:`ContenoxCause`), and ``causes`` holds the same messages, outermost first.
"""

from __future__ import annotations

from collections.abc import Sequence

__all__ = [
    "CheckpointError",
    "CompactionError",
    "BusyError",
    "ClosedError",
    "ConfigurationError",
    "ContenoxCause",
    "ContenoxError",
    "ContenoxIOError",
    "HttpError",
    "InternalError",
    "ModelError",
    "SerializationError",
    "ToolDefinitionError",
    "TranscriptError",
    "TransportError",
]


class ContenoxError(Exception):
    """Base class of every contenox error."""

    message: str
    causes: list[str]

    def __init__(self, message: str, *, causes: Sequence[str] | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.causes = list(causes) if causes else [message]

    def __str__(self) -> str:
        extra = [c for c in self.causes[1:] if c and c not in self.message]
        if not extra:
            return self.message
        return self.message + "".join(f"\n  caused by: {c}" for c in extra)


class ConfigurationError(ContenoxError):
    """An option is invalid: an unknown option or key, a wrong value, a missing ``model``, a
    ``base_url`` that is not a URL... Raised when the client is created. ``option`` names it as
    ``create_client`` spells it (``base_url``, ``script[0]``; empty when no single option is at
    fault), ``value`` is the bad value as JSON text, ``reason`` what is wrong and allowed."""

    option: str
    value: str | None
    reason: str

    def __init__(
        self,
        message: str,
        *,
        option: str = "",
        value: str | None = None,
        reason: str | None = None,
        causes: Sequence[str] | None = None,
    ) -> None:
        super().__init__(message, causes=causes)
        self.option = option
        self.value = value
        self.reason = message if reason is None else reason


class ClosedError(ContenoxError):
    """The client was closed (``client.close()``): it runs no more turns. Make a new client."""


class BusyError(ContenoxError):
    """A turn is running, and the operation needs the client idle (assigning
    ``client.transcript``). Wait for the turn to end, or cancel it, and try again."""


class TranscriptError(ContenoxError):
    """A transcript is not valid (a tool result without its call, a call without a result)."""


class CheckpointError(ContenoxError):
    """A checkpoint cannot be resumed: not a checkpoint, written by a newer engine, edited
    (its digest does not match), already resumed on this client, or an answer for a call that
    is not waiting (a wrong call id, or one already answered). Raised before anything runs."""


class StepError(ContenoxError):
    """A stepped turn's result does not fit: no action waits (before ``next()``, or after
    ``done``), or it is for another action (another kind, step or call id). Nothing changed."""


class InternalError(ContenoxError):
    """The engine failed where it should not (a turn's task panicked). A bug: report it."""


class ContenoxCause(Exception):
    """One link of an engine error's cause chain (below the engine, not an I/O error)."""


class ToolDefinitionError(ContenoxError):
    """A tool could not be registered (bad name, input schema that is not a JSON Schema...)."""


class ModelError(ContenoxError):
    """The model server failed outside a turn (for example while listing models)."""


class HttpError(ModelError):
    """The model server answered with an HTTP error."""

    status: int
    body: str
    retry_after: float | None

    def __init__(
        self,
        message: str,
        *,
        status: int,
        body: str,
        retry_after: float | None = None,
        causes: Sequence[str] | None = None,
    ) -> None:
        super().__init__(message, causes=causes)
        self.status = status
        self.body = body
        self.retry_after = retry_after


class TransportError(ModelError):
    """The model server could not be reached, or its answer broke off."""


class SerializationError(ContenoxError):
    """A transcript or config could not be read or written as JSON."""


class CompactionError(ContenoxError):
    """``client.compact()`` could not compact: the summary request or the host's compactor
    failed (the conversation is unchanged)."""


class ContenoxIOError(ContenoxError):
    """A file system error outside any tool."""
