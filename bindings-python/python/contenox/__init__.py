"""contenox: an embeddable agent SDK. One Rust engine runs the agent loop; this package is its
thin, asyncio-native Python binding.

>>> import contenox
>>> client = contenox.create_client(style="scripted", script=[{"text": "hi"}])
>>> client.run_sync("hello").final_text
'hi'

- :func:`create_client` -> :class:`Client`: ``await client.run(prompt)``,
  ``client.run_sync(prompt)``, ``run = client.stream(prompt)`` (a :class:`Run`:
  ``async for event in run``, ``run.cancel()``, ``await run.result()``).
- Tools: ``@client.tool`` on a typed function (schema from the type hints and docstring), or
  :class:`Tool`; ``client.register`` / ``client.unregister`` at any time.
- The gate: ``hooks={"before_tool": fn, "after_tool": fn}`` returning None, :func:`deny` or
  :func:`pending`; ``wait_for=fn(request, cancel)`` answering asks.
- Approval policies: ``policy=`` (a hitl-policy-v1 document, its JSON text or a file path;
  presets in :mod:`contenox.policies`) decides first on every call; ``client.set_policy()``
  replaces it. Ceilings ``max_tool_calls`` / ``max_turn_tokens`` end a turn with ``budget``.
- Opt-ins: ``websearch=provider`` (:data:`WebSearch`) turns on the ``websearch`` builtin;
  ``background=True`` gives ``bash`` background shells (``client.background_shells()``).
- Events: :mod:`contenox.events`; results: :class:`TurnResult`; errors: :class:`ContenoxError`.
"""

from __future__ import annotations

import atexit as _atexit

from . import _native, events, policies
from ._client import (
    AfterTool,
    BackgroundShells,
    BeforeTool,
    Client,
    Compactor,
    Hooks,
    OnCompact,
    Run,
    WaitFor,
    create_client,
    list_models,
)
from ._errors import (
    BusyError,
    ClosedError,
    CompactionError,
    ConfigurationError,
    ContenoxCause,
    ContenoxError,
    ContenoxIOError,
    HttpError,
    InternalError,
    ModelError,
    SerializationError,
    ToolDefinitionError,
    TranscriptError,
    TransportError,
)
from ._mcp import McpSource, ServerState, load_mcp
from ._native import CancelSignal, NativeTool, ToolContext
from ._remote import HookState, HookTool, Protocol, RemoteHook, RemoteSource, load_remote
from ._tools import HintsLike, Tool, tool
from ._types import (
    JSON,
    Ask,
    CompactionOptions,
    CompactNotice,
    Deny,
    Hints,
    Outcome,
    PendingRequest,
    PolicySource,
    SandboxOptions,
    Source,
    Tier,
    ToolCallEvent,
    ToolOutput,
    Transcript,
    TurnResult,
    Usage,
    deny,
    pending,
)
from ._websearch import (
    SearchRequest,
    SearchResult,
    SearchResults,
    WebSearch,
    WebSearchProvider,
)
from .events import Event

__version__ = "0.1.0"

# At interpreter exit, engine threads stop entering Python and the ones inside it are awaited.
_atexit.register(_native.shutdown)

__all__ = [
    "JSON",
    "McpSource",
    "NativeTool",
    "ServerState",
    "load_mcp",
    "HookState",
    "HookTool",
    "Protocol",
    "RemoteHook",
    "RemoteSource",
    "load_remote",
    "AfterTool",
    "Ask",
    "BackgroundShells",
    "BeforeTool",
    "BusyError",
    "CancelSignal",
    "Client",
    "ClosedError",
    "CompactNotice",
    "CompactionError",
    "CompactionOptions",
    "Compactor",
    "ConfigurationError",
    "ContenoxCause",
    "ContenoxError",
    "ContenoxIOError",
    "Deny",
    "Event",
    "Hints",
    "HintsLike",
    "Hooks",
    "HttpError",
    "InternalError",
    "ModelError",
    "OnCompact",
    "Outcome",
    "PendingRequest",
    "PolicySource",
    "Run",
    "SandboxOptions",
    "SearchRequest",
    "SearchResult",
    "SearchResults",
    "SerializationError",
    "Source",
    "Tier",
    "Tool",
    "ToolCallEvent",
    "ToolContext",
    "ToolDefinitionError",
    "ToolOutput",
    "Transcript",
    "TranscriptError",
    "TransportError",
    "TurnResult",
    "Usage",
    "WaitFor",
    "WebSearch",
    "WebSearchProvider",
    "create_client",
    "deny",
    "events",
    "list_models",
    "pending",
    "policies",
    "tool",
]
