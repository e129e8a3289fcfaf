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
from typing import TYPE_CHECKING as _TYPE_CHECKING
from typing import Any as _Any

from . import _native
from ._client import (
    BackgroundShells,
    Client,
    Compactor,
    Run,
    create_client,
    list_models,
)
from ._errors import (
    BusyError,
    CheckpointError,
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
    StepError,
    ToolDefinitionError,
    TranscriptError,
    TransportError,
)
from ._native import CancelSignal, SourceTool, ToolContext
from ._step import Stepper
from ._tools import Tool, tool
from ._types import (
    JSON,
    CodeExecutionOptions,
    CompactionOptions,
    Effort,
    FallbackModel,
    HooksFileSource,
    ImageDataPart,
    ImagePathPart,
    ModelSettings,
    Outcome,
    PolicySource,
    Prompt,
    PromptPart,
    Reasoning,
    SandboxOptions,
    Source,
    StopReason,
    TelemetryOptions,
    TextPart,
    Tier,
    ToolChoice,
    Transcript,
    TurnResult,
    Usage,
)

if _TYPE_CHECKING:
    from . import events, policies
    from ._callbacks import (
        AfterTool,
        Ask,
        BeforeTool,
        CompactNotice,
        Deny,
        Elicitation,
        Hooks,
        OnCompact,
        PendingRequest,
        ToolCallEvent,
        ToolOutput,
        WaitFor,
        deny,
        pending,
    )
    from ._hints import Hints, HintsLike
    from ._lifecycle import (
        AddContext,
        BeforeCompact,
        CompactInstructions,
        CompactRequest,
        ContinueTurn,
        Notification,
        NotificationKind,
        OnPrompt,
        OnStop,
        PromptAction,
        RefusePrompt,
        ReplacePrompt,
        TurnEnd,
        VetoCompact,
    )
    from ._mcp import McpAuth, McpSource, ServerState, load_mcp
    from ._remote import HookState, HookTool, Protocol, RemoteHook, RemoteSource, load_remote
    from ._websearch import (
        SearchRequest,
        SearchResult,
        SearchResults,
        WebSearch,
        WebSearchProvider,
    )
    from .events import Event

# Imported on first use (module __getattr__, PEP 562): the event classes, what hooks and other
# callbacks see, MCP, remote tools, web search and the policy presets are not needed to create a
# client and run a turn, and defining their dataclasses at import was most of `import contenox`.
_LAZY = {
    "AfterTool": ("._callbacks", "AfterTool"),
    "Ask": ("._callbacks", "Ask"),
    "BeforeTool": ("._callbacks", "BeforeTool"),
    "CompactNotice": ("._callbacks", "CompactNotice"),
    "Deny": ("._callbacks", "Deny"),
    "Elicitation": ("._callbacks", "Elicitation"),
    "Hooks": ("._callbacks", "Hooks"),
    "Hints": ("._hints", "Hints"),
    "HintsLike": ("._hints", "HintsLike"),
    "OnCompact": ("._callbacks", "OnCompact"),
    "PendingRequest": ("._callbacks", "PendingRequest"),
    "ToolCallEvent": ("._callbacks", "ToolCallEvent"),
    "ToolOutput": ("._callbacks", "ToolOutput"),
    "WaitFor": ("._callbacks", "WaitFor"),
    "deny": ("._callbacks", "deny"),
    "AddContext": ("._lifecycle", "AddContext"),
    "BeforeCompact": ("._lifecycle", "BeforeCompact"),
    "CompactInstructions": ("._lifecycle", "CompactInstructions"),
    "CompactRequest": ("._lifecycle", "CompactRequest"),
    "ContinueTurn": ("._lifecycle", "ContinueTurn"),
    "Notification": ("._lifecycle", "Notification"),
    "NotificationKind": ("._lifecycle", "NotificationKind"),
    "OnPrompt": ("._lifecycle", "OnPrompt"),
    "OnStop": ("._lifecycle", "OnStop"),
    "PromptAction": ("._lifecycle", "PromptAction"),
    "RefusePrompt": ("._lifecycle", "RefusePrompt"),
    "ReplacePrompt": ("._lifecycle", "ReplacePrompt"),
    "TurnEnd": ("._lifecycle", "TurnEnd"),
    "VetoCompact": ("._lifecycle", "VetoCompact"),
    "pending": ("._callbacks", "pending"),
    "events": (".events", None),
    "policies": (".policies", None),
    "Event": (".events", "Event"),
    "McpSource": ("._mcp", "McpSource"),
    "ServerState": ("._mcp", "ServerState"),
    "load_mcp": ("._mcp", "load_mcp"),
    "McpAuth": ("._mcp", "McpAuth"),
    "HookState": ("._remote", "HookState"),
    "HookTool": ("._remote", "HookTool"),
    "Protocol": ("._remote", "Protocol"),
    "RemoteHook": ("._remote", "RemoteHook"),
    "RemoteSource": ("._remote", "RemoteSource"),
    "load_remote": ("._remote", "load_remote"),
    "SearchRequest": ("._websearch", "SearchRequest"),
    "SearchResult": ("._websearch", "SearchResult"),
    "SearchResults": ("._websearch", "SearchResults"),
    "WebSearch": ("._websearch", "WebSearch"),
    "WebSearchProvider": ("._websearch", "WebSearchProvider"),
}


def __getattr__(name: str) -> _Any:
    if name == "NativeTool":
        # The old name of SourceTool (the name in Node, Kotlin and Swift); kept for a release.
        import warnings

        warnings.warn(
            "contenox.NativeTool is now contenox.SourceTool", DeprecationWarning, stacklevel=2
        )
        return SourceTool
    try:
        module_name, attr = _LAZY[name]
    except KeyError:
        raise AttributeError(f"module 'contenox' has no attribute {name!r}") from None
    import importlib

    module = importlib.import_module(module_name, __name__)
    value = module if attr is None else getattr(module, attr)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))


__version__ = "0.1.0"

# At interpreter exit, engine threads stop entering Python and the ones inside it are awaited.
_atexit.register(_native.shutdown)

__all__ = [
    "JSON",
    "AddContext",
    "BeforeCompact",
    "CompactInstructions",
    "CompactRequest",
    "ContinueTurn",
    "Notification",
    "NotificationKind",
    "OnPrompt",
    "OnStop",
    "PromptAction",
    "RefusePrompt",
    "ReplacePrompt",
    "TurnEnd",
    "VetoCompact",
    "McpAuth",
    "McpSource",
    "SourceTool",
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
    "CheckpointError",
    "StepError",
    "Stepper",
    "CompactNotice",
    "CompactionError",
    "CodeExecutionOptions",
    "CompactionOptions",
    "Compactor",
    "FallbackModel",
    "TelemetryOptions",
    "ConfigurationError",
    "ContenoxCause",
    "ContenoxError",
    "ContenoxIOError",
    "Deny",
    "Effort",
    "Elicitation",
    "Event",
    "Hints",
    "HintsLike",
    "Hooks",
    "HttpError",
    "InternalError",
    "ModelError",
    "ModelSettings",
    "OnCompact",
    "Outcome",
    "PendingRequest",
    "PolicySource",
    "HooksFileSource",
    "Reasoning",
    "Prompt",
    "PromptPart",
    "TextPart",
    "ImageDataPart",
    "ImagePathPart",
    "Run",
    "SandboxOptions",
    "SearchRequest",
    "SearchResult",
    "SearchResults",
    "SerializationError",
    "Source",
    "StopReason",
    "Tier",
    "Tool",
    "ToolCallEvent",
    "ToolChoice",
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
