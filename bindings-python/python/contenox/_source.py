"""What every tool source (MCP servers, remote services) gives a client: its tools, its
members' states, closing; and the one loader both kinds start through."""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from . import _native

__all__: list[str] = []

State = TypeVar("State", bound="MemberState")


@dataclass(frozen=True, slots=True)
class MemberState:
    """How a member of a source (a server, a hook) is: ``state`` is ``"ready"`` (with its number
    of ``tools``) or another state with the ``error``."""

    state: str
    tools: int = 0
    error: str | None = None

    @property
    def ready(self) -> bool:
        return self.state == "ready"

    @classmethod
    def from_dict(cls: type[State], d: Mapping[str, Any]) -> State:
        return cls(state=d["state"], tools=int(d.get("tools", 0)), error=d.get("error"))


class ToolSourceBase(Generic[State]):
    """What :class:`McpSource` and :class:`RemoteSource` share: the engine's source, its tools,
    adding it to a client, closing it."""

    _state: type[State]
    """The class of a member's state (``ServerState``, ``HookState``), set by each kind."""

    def __init__(self, native: _native.ToolSource) -> None:
        self._native = native

    def tools(self) -> list[_native.SourceTool]:
        """Every tool of every ready member, as they are now."""
        return self._native.tools()

    def register_into(self, client: Any) -> None:
        """Register every tool into ``client`` and keep them in step with the source. Raises
        :class:`ToolDefinitionError` (registering nothing) when a name is taken there by a tool
        of another source."""
        client._native.add_source(self._native)

    async def close(self) -> None:
        """Stop the source and remove its tools from every client it was registered into."""
        await self._native.close()

    @property
    def closed(self) -> bool:
        return self._native.closed

    def _members(self, raw: list[list[Any]] | None = None) -> list[tuple[str, State]]:
        """Each member's name and state (now, or as ``raw`` gives them), in the source's order."""
        rows = self._native.states() if raw is None else raw
        return [(n, self._state.from_dict(s)) for n, s in rows]

    def __repr__(self) -> str:
        states = ", ".join(f"{n}: {s.state}" for n, s in self._members())
        return f"<{type(self).__name__} {states}>"


async def load_source(
    kind: str,
    text: str,
    on_member: Callable[[str, Any], Any] | None,
    state: type[MemberState],
    auth: Any = None,
) -> _native.ToolSource:
    """Start a source of ``kind`` (``"mcp"``, ``"remote"``) from its config (JSON text);
    ``on_member(name, state)`` is called on this loop as each member settles, sync or async."""
    callback: Callable[[str, dict[str, Any]], None] | None = None
    pending: set[asyncio.Future[Any]] = set()
    if on_member is not None:
        user = on_member

        def callback(name: str, raw: dict[str, Any]) -> None:
            result = user(name, state.from_dict(raw))
            if inspect.isawaitable(result):
                task = asyncio.ensure_future(result)
                pending.add(task)
                task.add_done_callback(pending.discard)

    return await _native.load_source(kind, text, callback, auth)
