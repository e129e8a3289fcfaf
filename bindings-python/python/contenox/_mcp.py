"""MCP servers as tool sources."""

from __future__ import annotations

import asyncio
import inspect
import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal, Union

from . import _native
from ._errors import ConfigurationError

__all__ = ["McpSource", "ServerState", "load_mcp"]


@dataclass(frozen=True, slots=True)
class ServerState:
    """How a server came out of :func:`load_mcp`: ``state`` is ``"ready"`` (with its number of
    ``tools``) or ``"failed"`` (with the ``error``, including the last lines of a stdio
    server's stderr)."""

    state: Literal["ready", "failed"]
    tools: int = 0
    error: str | None = None

    @property
    def ready(self) -> bool:
        return self.state == "ready"

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> ServerState:
        return cls(state=d["state"], tools=int(d.get("tools", 0)), error=d.get("error"))


OnServer = Callable[[str, ServerState], Any]
"""``on_server(name, state)`` with a :class:`ServerState`; sync or async, called on the
caller's loop."""


class McpSource:
    """The servers of an MCP config. Register their tools with ``client.register(tool)`` for
    each of :meth:`tools` (and :meth:`resource_tools`), or :meth:`register_into`."""

    def __init__(self, native: _native.McpSource) -> None:
        self._native = native

    def tools(self) -> list[_native.SourceTool]:
        """The tools of every server that came up (named ``<server>__<tool>``)."""
        return self._native.tools()

    def resource_tools(self) -> list[_native.SourceTool]:
        """``list_mcp_resources`` and ``read_mcp_resource`` over these servers."""
        return self._native.resource_tools()

    @property
    def servers(self) -> list[tuple[str, ServerState]]:
        """Each server's name and state, in name order."""
        return [(n, ServerState.from_dict(s)) for n, s in self._native.servers()]

    def register_into(self, client: Any, *, resource_tools: bool = False) -> None:
        """Register every tool into ``client``, keep the client's tools in step with the servers'
        ``notifications/tools/list_changed``, and stop the servers when the client is closed
        (the engine's ``register_into``); the resource tools too, when asked."""
        self._native.register_into(client._native)
        for t in self.resource_tools() if resource_tools else []:
            client.register(t)

    async def close(self) -> None:
        """Stop the servers."""
        await self._native.close()

    @property
    def closed(self) -> bool:
        return self._native.closed

    def __repr__(self) -> str:
        states = ", ".join(f"{n}: {s.state}" for n, s in self.servers)
        return f"<McpSource {states}>"


async def load_mcp(
    config: Union[Mapping[str, Any], str], *, on_server: OnServer | None = None
) -> McpSource:
    """Start the servers of an ``mcpServers`` config (a dict, or its JSON text), as Claude
    Desktop and Claude Code read it, and list their tools. Servers that fail are reported
    (``on_server``, ``source.servers``) and left out."""
    if isinstance(config, str):
        text = config
    else:
        try:
            text = json.dumps(dict(config))
        except (TypeError, ValueError) as e:
            raise ConfigurationError(f"the MCP config is not JSON: {e}") from e
    callback: Callable[[str, dict[str, Any]], None] | None = None
    pending: set[asyncio.Future[Any]] = set()
    if on_server is not None:
        user = on_server

        def callback(name: str, state: dict[str, Any]) -> None:
            result = user(name, ServerState.from_dict(state))
            if inspect.isawaitable(result):
                task = asyncio.ensure_future(result)
                pending.add(task)
                task.add_done_callback(pending.discard)

    return McpSource(await _native.load_mcp(text, callback))
