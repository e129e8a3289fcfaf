"""Type stubs of the native module ``contenox._native`` (Rust, PyO3). Not a public API: use
the ``contenox`` package, which wraps it."""

from collections.abc import Awaitable, Callable
from typing import Any

from ._types import Prompt

class CancelSignal:
    """A cancel signal handed to host code: ``wait_for``'s second argument and ``ctx.cancel``."""

    @property
    def cancelled(self) -> bool: ...
    def is_cancelled(self) -> bool:
        """True once the turn (or the wait) was cancelled."""
    def wait(self, timeout: float | None = None) -> bool:
        """Block, without the GIL, until cancelled or ``timeout`` seconds passed; True when
        cancelled. For sync callbacks (they run in a worker thread)."""
    def __bool__(self) -> bool: ...

class ToolContext:
    """The context of one tool call, passed as ``ctx`` to a tool that asks for it."""

    @property
    def call_id(self) -> str:
        """The call id the model gave (or the engine made)."""
    @property
    def name(self) -> str:
        """The tool's name."""
    @property
    def idempotency_key(self) -> str:
        """``turn_id:call_id``: names this call once across a turn's suspensions and resumes."""
    @property
    def root(self) -> str:
        """The client's root directory."""
    @property
    def cancel(self) -> CancelSignal:
        """The turn's cancel signal."""
    def progress(self, data: Any) -> None:
        """Report progress: a ``progress`` event carrying this JSON data."""

class Completer:
    def fileno(self) -> int: ...
    def drain(self) -> None: ...

class Done:
    def __call__(self, value: Any, error: BaseException | None) -> None: ...

_NativeTool = tuple[dict[str, Any], Callable[..., Any], bool]
_NativeCallable = tuple[Callable[..., Any], bool]
_NativeSearch = tuple[Callable[..., Any], bool, bool]

class Run:
    def try_batch(self) -> list[dict[str, Any]] | None: ...
    def next_batch(self) -> Awaitable[list[dict[str, Any]]]: ...
    def cancel(self) -> None: ...
    @property
    def done(self) -> bool: ...
    def result(self) -> Awaitable[dict[str, Any]]: ...

class Stepper:
    def next(self) -> Awaitable[dict[str, Any]]: ...
    def next_blocking(self) -> dict[str, Any]: ...
    def feed(self, result_json: str) -> None: ...
    def perform(self) -> Awaitable[dict[str, Any]]: ...
    def perform_blocking(self) -> dict[str, Any]: ...
    def journal(self) -> list[dict[str, Any]]: ...
    def options(self) -> dict[str, Any]: ...
    @property
    def turn_id(self) -> str: ...
    def events(self) -> list[dict[str, Any]]: ...
    def cancel(self) -> None: ...

class Transcript:
    """A conversation the engine holds, written as JSON only when read."""

    def to_json(self) -> str: ...
    def __len__(self) -> int: ...

class Client:
    @staticmethod
    def create(
        config_json: str,
        tools: list[_NativeTool | SourceTool],
        before_tool: _NativeCallable | None = None,
        after_tool: _NativeCallable | None = None,
        wait_for: _NativeCallable | None = None,
        websearch: _NativeSearch | None = None,
        on_compact: _NativeCallable | None = None,
        compactor: _NativeCallable | None = None,
        background_shells: BackgroundShells | None = None,
        lifecycle: dict[str, _NativeCallable] | None = None,
        *,
        host_tracer: tuple[Callable[[], str | None], Callable[[list[dict[str, Any]]], None]]
        | None = None,
    ) -> Client: ...
    def run(
        self,
        prompt: Prompt,
        allow: list[str] | None = None,
        settings: str | None = None,
        output_schema: str | None = None,
        output_retries: int | None = None,
    ) -> Awaitable[dict[str, Any]]: ...
    def run_blocking(
        self,
        prompt: Prompt,
        allow: list[str] | None = None,
        settings: str | None = None,
        output_schema: str | None = None,
        output_retries: int | None = None,
    ) -> dict[str, Any]: ...
    def run_chain_blocking(
        self,
        chain_json: str,
        input: str,
        allow: list[str] | None = None,
        settings: str | None = None,
    ) -> dict[str, Any]: ...
    def resume(self, checkpoint: str, answers_json: str) -> Awaitable[dict[str, Any]]: ...
    def resume_blocking(self, checkpoint: str, answers_json: str) -> dict[str, Any]: ...
    def resume_stream(self, checkpoint: str, answers_json: str) -> Run: ...
    def step(
        self,
        prompt: Prompt,
        allow: list[str] | None = None,
        settings: str | None = None,
        output_schema: str | None = None,
        output_retries: int | None = None,
        turn_id: str | None = None,
        clock_ms: int | None = None,
    ) -> Stepper: ...
    def needs_loop(self) -> bool: ...
    def wait_idle(self, timeout: float) -> bool: ...
    def stream(
        self,
        prompt: Prompt,
        allow: list[str] | None = None,
        settings: str | None = None,
        output_schema: str | None = None,
        output_retries: int | None = None,
    ) -> Run: ...
    def run_chain(
        self,
        chain_json: str,
        input: str,
        allow: list[str] | None = None,
        settings: str | None = None,
    ) -> Awaitable[dict[str, Any]]: ...
    def stream_chain(
        self,
        chain_json: str,
        input: str,
        allow: list[str] | None = None,
        settings: str | None = None,
    ) -> Run: ...
    def register(self, tool: _NativeTool | SourceTool) -> None: ...
    def add_source(self, source: ToolSource) -> None: ...
    def unregister(self, name: str) -> bool: ...
    def tools(self) -> list[dict[str, Any]]: ...
    def transcript(self) -> Transcript: ...
    def set_transcript_json(self, json: str) -> None: ...
    def set_transcript(self, transcript: Transcript) -> None: ...
    def list_models(self) -> Awaitable[list[dict[str, Any]]]: ...
    def as_tool_with(self, name: str, description: str, options_json: str) -> SourceTool: ...
    def compact(self) -> Awaitable[dict[str, Any] | None]: ...
    def config(self) -> dict[str, Any]: ...
    def policy(self) -> dict[str, Any] | None: ...
    def set_policy(self, source: Any) -> None: ...
    def background_shells(self) -> BackgroundShells | None: ...
    def close(self) -> None: ...
    @property
    def closed(self) -> bool: ...

class SourceTool:
    """A tool that lives in the engine (an MCP server's tool, a resource tool, a subagent)."""

    @property
    def name(self) -> str: ...
    @property
    def source(self) -> str: ...
    @property
    def server(self) -> str | None: ...
    def spec(self) -> dict[str, Any]: ...

class ToolSource:
    def tools(self) -> list[SourceTool]: ...
    def resource_tools(self) -> list[SourceTool]: ...
    def states(self) -> list[list[Any]]: ...
    def refresh(self) -> Awaitable[list[list[Any]]]: ...
    def close(self) -> Awaitable[None]: ...
    @property
    def closed(self) -> bool: ...

def load_source(
    kind: str,
    json: str,
    on_member: Callable[[str, dict[str, Any]], None] | None = None,
    auth: tuple[
        str,
        tuple[Callable[..., Any], bool],
        tuple[Callable[..., Any], bool],
        tuple[Callable[..., Any], bool],
    ]
    | None = None,
) -> Awaitable[ToolSource]: ...

class OnDone:
    def __call__(self, fut: Any) -> None: ...

def shutdown() -> None:
    """At interpreter exit: engine threads stop entering Python; wait for those inside it."""

def list_models(config_json: str) -> Awaitable[list[dict[str, Any]]]: ...
def policy_preset(name: str) -> str:
    """A preset policy's document as JSON text (``default``, ``strict``, ``dev``)."""

def runtime_pid() -> int:
    """The pid that built the tokio runtime in use (0 before the first use)."""

def ensure_runtime() -> int:
    """Make sure this process has its runtime; the pid that built it."""

def engine_version() -> str: ...

class BackgroundShells:
    def __init__(self) -> None: ...
    def ids(self) -> list[str]: ...
    def status(self, id: str) -> str | None: ...
    def close_all(self) -> None: ...
