"""MCP servers as tool sources."""

from __future__ import annotations

import inspect
import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal, Protocol, Union, runtime_checkable

from . import _native
from ._errors import ConfigurationError
from ._source import MemberState, ToolSourceBase, load_source

__all__ = ["McpAuth", "McpSource", "ServerState", "load_mcp"]


@runtime_checkable
class McpAuth(Protocol):
    """OAuth for MCP servers over HTTP (docs/mcp.md "OAuth"): the host keeps the tokens and
    performs the browser step; the engine does discovery, registration, PKCE and refresh.
    Each method may be sync or ``async``."""

    redirect_uri: str
    """The loopback URL the authorization server sends the browser back to."""

    def authorize(self, server: str, url: str) -> Any:
        """Open ``url`` for the person; return the full URL the browser was redirected to."""
        ...

    def load(self, key: str) -> Any:
        """The JSON text saved under ``key``, or ``None``."""
        ...

    def save(self, key: str, value: str) -> Any:
        """Keep ``value`` (it holds tokens: only the user may read it) under ``key``."""
        ...


@dataclass(frozen=True, slots=True)
class ServerState(MemberState):
    """How a server came out of :func:`load_mcp`: ``state`` is ``"ready"`` (with its number of
    ``tools``) or ``"failed"`` (with the ``error``, including the last lines of a stdio
    server's stderr)."""

    state: Literal["ready", "failed"]


OnServer = Callable[[str, ServerState], Any]
"""``on_server(name, state)`` with a :class:`ServerState`; sync or async, called on the
caller's loop."""


class McpSource(ToolSourceBase[ServerState]):
    """The servers of an MCP config. Register their tools (named ``<server>__<tool>``) with
    ``client.register(tool)`` for each of :meth:`tools` (and :meth:`resource_tools`), or
    :meth:`register_into`."""

    _state = ServerState

    def resource_tools(self) -> list[_native.SourceTool]:
        """``list_mcp_resources`` and ``read_mcp_resource`` over these servers."""
        return self._native.resource_tools()

    @property
    def servers(self) -> list[tuple[str, ServerState]]:
        """Each server's name and state, in name order."""
        return self._members()

    def register_into(self, client: Any, *, resource_tools: bool = False) -> None:
        """Register every tool into ``client``, keep the client's tools in step with the servers'
        ``notifications/tools/list_changed``, and stop the servers when the client is closed
        (the engine's ``add_source``); the resource tools too, when asked."""
        super().register_into(client)
        for t in self.resource_tools() if resource_tools else []:
            client.register(t)


async def load_mcp(
    config: Union[Mapping[str, Any], str],
    *,
    on_server: OnServer | None = None,
    auth: McpAuth | None = None,
) -> McpSource:
    """Start the servers of an ``mcpServers`` config (a dict, or its JSON text), as Claude
    Desktop and Claude Code read it, and list their tools. Servers that fail are reported
    (``on_server``, ``source.servers``) and left out. ``auth`` authorizes HTTP servers that ask
    for OAuth (:class:`McpAuth`)."""
    if isinstance(config, str):
        text = config
    else:
        try:
            text = json.dumps(dict(config))
        except (TypeError, ValueError) as e:
            raise ConfigurationError(f"the MCP config is not JSON: {e}") from e
    parts = None
    if auth is not None:

        def part(f: Callable[..., Any]) -> tuple[Callable[..., Any], bool]:
            return f, inspect.iscoroutinefunction(f)

        parts = (str(auth.redirect_uri), part(auth.authorize), part(auth.load), part(auth.save))
    return McpSource(await load_source("mcp", text, on_server, ServerState, parts))
