"""The exceptions of contenox: ``ContenoxError`` and its subclasses.

They are raised for misuse and invalid configuration only. Everything that happens inside a turn
(a model that fails, a tool that raises, a cancel) is reported through the turn's outcome and
events instead. Each carries ``causes``: the engine's error chain, outermost first.
"""

from __future__ import annotations

from collections.abc import Sequence

__all__ = [
    "CancelledError",
    "ConfigurationError",
    "ContenoxError",
    "ContenoxIOError",
    "HttpError",
    "ModelError",
    "SerializationError",
    "ToolDefinitionError",
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
    """The configuration is invalid (unknown option, missing model, bad allowlist pattern...)."""


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


class CancelledError(ContenoxError):
    """An engine operation was cancelled (a cancelled *turn* is not an error: it ends with
    outcome ``cancelled``; cancelling an asyncio task raises ``asyncio.CancelledError``)."""


class SerializationError(ContenoxError):
    """A transcript or config could not be read or written as JSON."""


class ContenoxIOError(ContenoxError):
    """A file system error outside any tool."""
