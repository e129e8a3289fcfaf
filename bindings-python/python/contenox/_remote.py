"""HTTP services as tool sources: remote hooks read from their OpenAPI document or spoken to in
one of five protocols."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Union
from urllib.parse import urlsplit, urlunsplit

from ._errors import ConfigurationError
from ._source import MemberState, ToolSourceBase, load_source

__all__ = ["HookState", "HookTool", "Protocol", "RemoteHook", "RemoteSource", "load_remote"]

Protocol = Literal["openapi", "openai", "openai-object", "ollama", "langserve-openai", "langserve"]
"""How a hook's service is spoken to: ``openapi`` (the default: every operation of its OpenAPI
document is a tool) or one of the five one-tool protocols."""

_REDACTED = "<redacted>"


@dataclass(frozen=True, slots=True)
class HookTool:
    """The one tool of a hook that speaks one of the five protocols (else it is read from
    ``GET {url}/schema``)."""

    input_schema: Mapping[str, Any]
    description: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {"description": self.description, "input_schema": dict(self.input_schema)}


@dataclass(frozen=True, slots=True)
class RemoteHook:
    """One HTTP service as a tool source. ``headers`` go with every request to it (discovery
    and calls); ``inject`` values are merged into every call. Neither is ever shown to the
    model, an event, an error message or this object's ``repr``/``str``."""

    name: str
    url: str
    protocol: Protocol = "openapi"
    headers: Mapping[str, str] = field(default_factory=dict)
    inject: Mapping[str, Any] = field(default_factory=dict)
    timeout_ms: int | None = None
    spec_url: str | None = None
    tool: HookTool | Mapping[str, Any] | None = None

    def to_dict(self) -> dict[str, Any]:
        """The hook as the engine reads it (the values included: do not log it)."""
        d: dict[str, Any] = {"name": self.name, "url": self.url, "protocol": self.protocol}
        if self.headers:
            d["headers"] = dict(self.headers)
        if self.inject:
            d["inject"] = dict(self.inject)
        if self.timeout_ms is not None:
            d["timeout_ms"] = self.timeout_ms
        if self.spec_url is not None:
            d["spec_url"] = self.spec_url
        if self.tool is not None:
            d["tool"] = self.tool.to_dict() if isinstance(self.tool, HookTool) else dict(self.tool)
        return d

    def __repr__(self) -> str:
        parts = [
            f"name={self.name!r}",
            f"url={_redact_url(self.url)!r}",
            f"protocol={self.protocol!r}",
            f"headers={_hidden(self.headers)}",
            f"inject={_hidden(self.inject)}",
        ]
        if self.timeout_ms is not None:
            parts.append(f"timeout_ms={self.timeout_ms!r}")
        if self.spec_url is not None:
            parts.append(f"spec_url={_redact_url(self.spec_url)!r}")
        if self.tool is not None:
            parts.append(f"tool={self.tool!r}")
        return f"RemoteHook({', '.join(parts)})"

    __str__ = __repr__


def _hidden(values: Mapping[str, Any]) -> str:
    """The keys of ``values`` with every value shown as ``<redacted>``."""
    return "{" + ", ".join(f"{k!r}: {_REDACTED!r}" for k in values) + "}"


def _redact_url(url: str) -> str:
    """The URL without its userinfo and query (either may carry a secret)."""
    try:
        u = urlsplit(url)
    except ValueError:
        return _REDACTED
    netloc = u.netloc.rsplit("@", 1)[-1]
    if "@" in u.netloc:
        netloc = f"{_REDACTED}@{netloc}"
    query = _REDACTED if u.query else ""
    return urlunsplit((u.scheme, netloc, u.path, query, ""))


@dataclass(frozen=True, slots=True)
class HookState(MemberState):
    """How a hook is now: ``state`` is ``"ready"`` (with its number of ``tools``) or
    ``"unavailable"`` (with the ``error``; it is probed again before each turn and on
    :meth:`RemoteSource.refresh`)."""

    state: Literal["ready", "unavailable"]


OnHook = Callable[[str, HookState], Any]
"""``on_hook(name, state)`` with a :class:`HookState`; sync or async, called on the caller's
loop once per hook as it settles during :func:`load_remote`."""

HookLike = Union[RemoteHook, Mapping[str, Any]]
"""A :class:`RemoteHook`, or a dict with the engine's keys (``name``, ``url``, ``protocol``,
``headers``, ``inject``, ``timeout_ms``, ``spec_url``, ``tool``)."""


class RemoteSource(ToolSourceBase[HookState]):
    """The hooks of one :func:`load_remote`. :meth:`register_into` a client (or pass it as
    ``create_client(remote=...)``): its tools are registered, unavailable hooks are probed
    before each turn and appear once they answer, :meth:`refresh` re-reads every hook."""

    _state = HookState

    @property
    def hooks(self) -> list[tuple[str, HookState]]:
        """Each hook's name and state now, in the order given."""
        return self._members()

    async def refresh(self) -> list[tuple[str, HookState]]:
        """Read every hook again (an unavailable one may come up, a ready one picks up a changed
        document); returns the states."""
        return self._members(await self._native.refresh())


def _hooks_json(hooks: Sequence[HookLike]) -> str:
    if isinstance(hooks, (str, bytes, Mapping)):
        raise ConfigurationError("remote hooks are a list of RemoteHook (or hook dicts)")
    items: list[dict[str, Any]] = []
    for h in hooks:
        if isinstance(h, RemoteHook):
            items.append(h.to_dict())
        elif isinstance(h, Mapping):
            d = dict(h)
            if isinstance(d.get("tool"), HookTool):
                d["tool"] = d["tool"].to_dict()
            items.append(d)
        else:
            raise ConfigurationError(
                f"a remote hook is a RemoteHook or a dict, got {type(h).__name__}"
            )
    try:
        return json.dumps(items)
    except (TypeError, ValueError) as e:
        raise ConfigurationError(f"the remote hooks are not JSON: {e}") from e


async def load_remote(hooks: Sequence[HookLike], *, on_hook: OnHook | None = None) -> RemoteSource:
    """Read every hook's tools at once. Hooks that cannot be read are reported (``on_hook``,
    ``source.hooks``) as unavailable and probed again later; invalid hooks (a bad URL, an
    unknown key, a name given twice) raise :class:`ConfigurationError` before anything is
    fetched."""
    text = _hooks_json(hooks)
    return RemoteSource(await load_source("remote", text, on_hook, HookState))
