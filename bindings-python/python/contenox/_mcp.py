"""MCP servers as tool sources."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal, Union

from . import _native
from ._errors import ConfigurationError
from ._source import MemberState, ToolSourceBase, load_source

__all__ = ["McpSource", "ServerState", "load_mcp"]


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
    return McpSource(await load_source("mcp", text, on_server, ServerState))
