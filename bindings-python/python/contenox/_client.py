"""The client, its run handle, and ``create_client``."""

from __future__ import annotations

import json
import os
from collections.abc import AsyncIterator, Callable, Coroutine, Generator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal, TypeVar, Union, overload

from . import _native
from ._bridge import is_async
from ._errors import ConfigurationError
from ._output import OutputSchema, OutputSpec, Parse, output_spec
from ._step import Stepper
from ._telemetry import host_tracer
from ._tools import Tool, _hints_dict
from ._types import (
    LIFECYCLE_POINTS,
    CodeExecutionOptions,
    CompactionOptions,
    FallbackModel,
    HooksFileSource,
    ModelSettings,
    PolicySource,
    Prompt,
    Reasoning,
    SandboxOptions,
    TelemetryOptions,
    Tier,
    ToolChoice,
    Transcript,
    TurnResult,
)

if TYPE_CHECKING:
    # The callbacks' types and values are defined on first use (see _callbacks).
    from ._callbacks import CompactNotice, Hooks, OnCompact, WaitFor
    from ._hints import HintsLike

    # Imported when first used: a client that never streams, searches or uses remote tools
    # does not pay for defining their classes at import.
    from ._remote import RemoteSource
    from ._websearch import WebSearch
    from .events import Event

__all__ = [
    "BackgroundShells",
    "Client",
    "Compactor",
    "Run",
    "create_client",
    "list_models",
]

F = TypeVar("F", bound=Callable[..., Any])

Compactor = Callable[[Transcript], Any]
"""``compactor(transcript)``: return a shorter :class:`Transcript` (or ``{"messages": [...]}``)
to replace the conversation, or None to let the engine summarise it; sync or async. An invalid
or empty result, or an exception, leaves the conversation unchanged and ends the turn with
``error``."""

ToolLike = Union[Tool, _native.SourceTool, Callable[..., Any]]
"""A :class:`Tool`, an engine tool (``SourceTool``: MCP and remote tools, subagents), or a
typed function."""


def _as_tool(t: ToolLike) -> Tool | _native.SourceTool:
    if isinstance(t, (Tool, _native.SourceTool)):
        return t
    if callable(t):
        return Tool.from_function(t)
    raise TypeError(f"a tool is a contenox.Tool or a typed function, got {type(t).__name__}")


def _answers_json(answers: Mapping[str, Mapping[str, Any]] | None) -> str:
    """Answers keyed by call id, as the JSON text the engine reads (and checks)."""
    if answers is None:
        return "{}"
    if not isinstance(answers, Mapping):
        raise TypeError(
            f"answers must be a mapping of call id to answer, got {type(answers).__name__}"
        )
    return json.dumps({str(k): dict(v) for k, v in answers.items()})


def _list(v: Sequence[str] | None) -> list[str] | None:
    return None if v is None else list(v)


def _native_parts(t: Tool | _native.SourceTool) -> Any:
    return t if isinstance(t, _native.SourceTool) else t._native_parts()


def _policy_value(policy: PolicySource | None) -> Any:
    """The ``policy`` option as JSON: a mapping as a dict, a path as its text (the engine tells
    a document's JSON text from a path)."""
    if isinstance(policy, os.PathLike):
        return os.fspath(policy)
    if isinstance(policy, Mapping):
        return dict(policy)
    return policy


def _settings_json(settings: ModelSettings | Mapping[str, Any] | None) -> str | None:
    """A run's ``settings`` as the engine's JSON (None when not given); the engine checks them."""
    if settings is None:
        return None
    if not isinstance(settings, Mapping):
        raise ConfigurationError(
            f"settings must be a mapping of model settings, got {type(settings).__name__}"
        )
    try:
        return json.dumps({k: v for k, v in settings.items() if v is not None})
    except (TypeError, ValueError) as e:
        raise ConfigurationError(f"settings: not JSON: {e}") from e


def _config_json(options: Mapping[str, Any]) -> str:
    config: dict[str, Any] = {}
    for key, value in options.items():
        if value is None:
            continue
        if key == "root":
            value = os.fspath(value)
        elif key in ("policy", "hooks_file"):
            value = _policy_value(value)
        elif key == "sandbox" and isinstance(value, Mapping):
            value = dict(value)
            if value.get("writable") is not None:
                value["writable"] = [os.fspath(p) for p in value["writable"]]
        config[key] = value
    try:
        return json.dumps(config)
    except (TypeError, ValueError) as e:
        raise ConfigurationError(f"the options are not JSON: {e}") from e


def _prompt_text(prompt: Prompt) -> str:
    """How a run shows its prompt: its text, an image as ``[image]``."""
    if isinstance(prompt, str):
        return prompt
    shown = []
    for part in prompt:
        if isinstance(part, Mapping) and part.get("type") == "text":
            shown.append(str(part.get("text", "")))
        else:
            shown.append("[image]")
    return " ".join(shown)


class Run:
    """A running turn: ``async for event in run``, ``run.cancel()``, ``await run.result()``
    (or ``await run``).

    Cancelling the asyncio task that awaits the run (its result or its next event) cancels the
    turn in the engine too. In a notebook a run renders as a table of its calls, the gate's
    decisions and the results."""

    def __init__(self, native: _native.Run, prompt: str, parse: Parse | None = None) -> None:
        self._native = native
        self.prompt = prompt
        self._parse = parse
        self.events: list[Event] = []
        """Every event received so far, in order."""
        self._pos = 0
        self._ended = False
        self._result: TurnResult | None = None

    def _take(self, batch: list[dict[str, Any]]) -> None:
        from .events import event_from_dict

        if not batch:
            self._ended = True
        self.events.extend(event_from_dict(d) for d in batch)

    def __aiter__(self) -> AsyncIterator[Event]:
        return self

    async def __anext__(self) -> Event:
        if self._pos >= len(self.events) and not self._ended:
            batch = self._native.try_batch()
            if batch is None:
                try:
                    batch = await self._native.next_batch()
                except BaseException as e:
                    _cancel_on_cancelled(self, e)
                    raise
            self._take(batch)
        if self._pos < len(self.events):
            self._pos += 1
            return self.events[self._pos - 1]
        raise StopAsyncIteration

    def cancel(self) -> None:
        """Cancel the turn: it ends with outcome ``cancelled``, its transcript kept."""
        self._native.cancel()

    @property
    def done(self) -> bool:
        """True once the turn ended."""
        return self._native.done

    async def result(self) -> TurnResult:
        """Wait for the turn to end and return its result (events not yet iterated stay
        available to ``async for`` and in ``run.events``)."""
        if self._result is None:
            try:
                d = await self._native.result()
            except BaseException as e:
                _cancel_on_cancelled(self, e)
                raise
            while not self._ended:
                batch = self._native.try_batch()
                if batch is None:
                    batch = await self._native.next_batch()
                self._take(batch)
            self._result = TurnResult.from_native(d, self._parse)
        return self._result

    def __await__(self) -> Generator[Any, None, TurnResult]:
        return self.result().__await__()

    def __repr__(self) -> str:
        state = self._result.outcome if self._result else ("ended" if self._ended else "running")
        return f"<Run {self.prompt[:40]!r} {state}, {len(self.events)} events>"

    def _repr_html_(self) -> str:
        import html  # only notebooks render runs

        from .events import Answer, Gate, ToolCall, ToolResult, TurnEnd

        calls: dict[str, dict[str, Any]] = {}
        order: list[str] = []
        end: TurnEnd | None = None
        for e in self.events:
            if isinstance(e, ToolCall):
                calls[e.call_id] = {"name": e.name, "args": e.arguments}
                order.append(e.call_id)
            elif isinstance(e, Gate):
                c = calls.setdefault(e.call_id, {"name": e.name})
                c["gate"] = e.decision + (f": {e.message}" if e.message else "")
            elif isinstance(e, Answer):
                c = calls.setdefault(e.call_id, {"name": e.name})
                c["answer"] = json.dumps(e.answer)
            elif isinstance(e, ToolResult):
                c = calls.setdefault(e.call_id, {"name": e.name})
                c["result"] = e.content
                c["error"] = e.is_error
            elif isinstance(e, TurnEnd):
                end = e

        def cell(v: Any, limit: int = 200) -> str:
            text = v if isinstance(v, str) else json.dumps(v, ensure_ascii=False)
            if len(text) > limit:
                text = text[:limit] + "…"
            return html.escape(text)

        rows = []
        for cid in order:
            c = calls[cid]
            style = ' style="color:#b00"' if c.get("error") else ""
            rows.append(
                f"<tr><td><code>{cell(c['name'])}</code></td><td><code>{cell(c.get('args', ''))}"
                f"</code></td><td>{cell(c.get('gate', ''))}</td><td>{cell(c.get('answer', ''))}"
                f"</td><td{style}>{cell(c.get('result', ''))}</td></tr>"
            )
        head = "<tr><th>tool</th><th>arguments</th><th>gate</th><th>answer</th><th>result</th></tr>"
        table = f"<table>{head}{''.join(rows)}</table>" if rows else "<i>no tool calls</i>"
        if end is not None:
            status = (
                f"<b>{html.escape(end.outcome)}</b>: {cell(end.final_text, 500)} "
                f"<small>({end.usage.input_tokens} in / {end.usage.output_tokens} out tokens)"
                "</small>"
            )
        else:
            status = "<b>running</b>"
        return f"<div><div>▶ {cell(self.prompt, 200)}</div>{table}<div>{status}</div></div>"


def _cancel_on_cancelled(run: Run, e: BaseException) -> None:
    """Cancel the turn when the task awaiting it was cancelled (``e`` is asyncio's
    CancelledError: asyncio is imported by then, whoever awaits)."""
    import asyncio

    if isinstance(e, asyncio.CancelledError):
        run.cancel()


def _run_coroutine(native: _native.Client, coro: Coroutine[Any, Any, TurnResult]) -> TurnResult:
    """Run ``coro`` (a turn of ``native``) to its end from sync code: on a fresh event loop, or,
    inside a running one (Jupyter), on a helper thread with its own loop. Only for a client with
    async callbacks, which need a loop; asyncio is imported here, not with the package.

    Ctrl-C cancels the turn (asyncio.run cancels the task awaiting it); the turn's end (its
    ``cancelled`` results in the transcript, its commands killed) is awaited, at most 10 s,
    before KeyboardInterrupt reaches the caller, as on the path without asyncio."""
    import asyncio

    try:
        asyncio.get_running_loop()
    except RuntimeError:
        try:
            return asyncio.run(coro)
        except KeyboardInterrupt:
            native.wait_idle(10.0)
            raise
    import concurrent.futures

    with concurrent.futures.ThreadPoolExecutor(1, "contenox-run-sync") as pool:
        return pool.submit(asyncio.run, coro).result()


class BackgroundShells:
    """Background shells: the processes ``bash`` with ``run_in_background`` started.

    Make one and give it to clients (``create_client(background=shells)``; clients given the
    same one share its shells), and call :meth:`close_all` on shutdown; or let a client make its
    own (``background=True``) and get it with :meth:`Client.background_shells`. Every shell is
    killed (its whole process group) by :meth:`close_all`, when its turn is cancelled, and by
    ``close()`` of the client whose turn started it."""

    __slots__ = ("_native",)

    def __init__(self) -> None:
        self._native = _native.BackgroundShells()

    @classmethod
    def _of(cls, native: _native.BackgroundShells) -> BackgroundShells:
        shells = cls.__new__(cls)
        shells._native = native
        return shells

    def ids(self) -> list[str]:
        """The ids of every shell started so far, oldest first (``shell_1``, ``shell_2``, ...),
        finished ones included."""
        return self._native.ids()

    def status(self, shell_id: str) -> str | None:
        """A shell's status: ``"running"``, ``"exited N"`` or ``"killed"``; None for an
        unknown id."""
        return self._native.status(shell_id)

    def close_all(self) -> None:
        """Kill every running shell's process group. The clients stay open."""
        self._native.close_all()

    def __repr__(self) -> str:
        return f"<contenox.BackgroundShells {self.ids()}>"


def _chain_text(chain: Mapping[str, Any] | str) -> str:
    return chain if isinstance(chain, str) else json.dumps(chain)


class Client:
    """An agent client: one conversation, its tools, its gate and its model. Make one with
    :func:`create_client`."""

    def __init__(self, native: _native.Client, output: OutputSpec | None = None) -> None:
        self._native = native
        # The client's output_schema as read (its parser makes `result.output` the type).
        self._output = output

    def _output_for(
        self, output_schema: OutputSchema | None, output_retries: int | None
    ) -> tuple[str | None, int | None, Parse | None]:
        """A run's output options for the engine (schema JSON text, retries) and the parser
        of its result: the run's own schema, else the client's."""
        own = output_spec(output_schema)
        if own is not None:
            return own.schema_json, output_retries, own.parse
        return None, output_retries, self._output.parse if self._output else None

    async def run(
        self,
        prompt: Prompt,
        *,
        allow: Sequence[str] | None = None,
        settings: ModelSettings | None = None,
        output_schema: OutputSchema | None = None,
        output_retries: int | None = None,
    ) -> TurnResult:
        """Run one turn to its end. Resolves with outcome ``done``, ``cancelled``,
        ``max_turns``, ``budget`` or ``error`` (the transcript kept in each case). Cancelling the
        awaiting task cancels the turn and raises ``asyncio.CancelledError``.

        ``allow``: an allowlist for this turn only (``*``, names, ``!name``), intersected with
        the client's: it can only narrow. ``settings``: model settings for this turn only
        (``{"temperature": 0, "seed": 7}``; each key given replaces the client's), checked as
        the client's are: a :class:`ConfigurationError` before anything is sent.

        ``prompt``: a string, or text and image parts in order (:data:`Prompt`):
        ``[{"type": "text", "text": "What is this?"}, {"type": "image", "data": png_bytes}]``
        or ``{"type": "image", "path": "shots/login.png"}`` for a file beneath the root. The
        engine checks every part before the turn starts; a bad one is a
        :class:`ConfigurationError` naming it (``prompt[1].data``).

        ``output_schema`` / ``output_retries``: this turn's typed answer instead of the
        client's (see :func:`create_client`); ``result.output`` is the validated answer."""
        schema, retries, parse = self._output_for(output_schema, output_retries)
        return TurnResult.from_native(
            await self._native.run(prompt, _list(allow), _settings_json(settings), schema, retries),
            parse,
        )

    def run_sync(
        self,
        prompt: Prompt,
        *,
        allow: Sequence[str] | None = None,
        settings: ModelSettings | None = None,
        output_schema: OutputSchema | None = None,
        output_retries: int | None = None,
    ) -> TurnResult:
        """:meth:`run` for scripts: blocks until the turn ends, without asyncio.

        The engine runs the turn on its own threads while this thread waits (without the GIL);
        sync tools, hooks, ``wait_for`` and the other callbacks run as they do for
        :meth:`run`. Ctrl-C (or any exception a signal handler raises) cancels the turn, waits
        for it to end (at most 10 s), and raises ``KeyboardInterrupt`` here. Nothing imports
        asyncio on this path.

        A client given an ``async def`` callable (tool, hook, ``wait_for``, search, compactor;
        its own or a subagent's) needs an event loop to run it on: its turn runs through
        ``asyncio.run`` instead (inside a running loop, such as Jupyter's, on a helper thread
        with its own loop), as before."""
        if self._native.needs_loop():
            return _run_coroutine(
                self._native,
                self.run(
                    prompt,
                    allow=allow,
                    settings=settings,
                    output_schema=output_schema,
                    output_retries=output_retries,
                ),
            )
        schema, retries, parse = self._output_for(output_schema, output_retries)
        return TurnResult.from_native(
            self._native.run_blocking(
                prompt, _list(allow), _settings_json(settings), schema, retries
            ),
            parse,
        )

    def stream(
        self,
        prompt: Prompt,
        *,
        allow: Sequence[str] | None = None,
        settings: ModelSettings | None = None,
        output_schema: OutputSchema | None = None,
        output_retries: int | None = None,
    ) -> Run:
        """Start a turn and return its :class:`Run` handle (``allow``, ``settings``,
        ``output_schema`` and ``output_retries`` as in :meth:`run`). With an output schema,
        ``output_delta`` events carry the answer's JSON so far as it streams."""
        schema, retries, parse = self._output_for(output_schema, output_retries)
        return Run(
            self._native.stream(prompt, _list(allow), _settings_json(settings), schema, retries),
            _prompt_text(prompt),
            parse,
        )

    async def resume(
        self, checkpoint: str, answers: Mapping[str, Mapping[str, Any]] | None = None
    ) -> TurnResult:
        """Go on with a turn that ended ``suspended`` (its ``wait_for`` answered
        ``{"suspend": True}``), from ``result.checkpoint``, in this process or another with the
        same config. ``answers`` are keyed by the ``call_id`` of ``result.pending``, in
        ``wait_for``'s answer shape (``{"approve": True}``, ``{"approve": False, "message":
        ...}``, ``{"result": value}``); a request left out is asked again through ``wait_for``
        with what is left of its time. Resolves as :meth:`run` does.

        The gate runs again first: a policy or ``before_tool`` that now denies wins, and an
        answer counts only while the gate asks the same. An ask past its deadline is denied as
        timed out. Results recorded before the turn suspended are replayed, not run again.

        Raises :class:`CheckpointError` before anything runs when the checkpoint is not one,
        was written by a newer engine, was edited, was already resumed on this client, or an
        answer names a call that is not waiting (a wrong id, or one already answered)."""
        return TurnResult.from_native(
            await self._native.resume(checkpoint, _answers_json(answers)), self._resume_parse()
        )

    def resume_sync(
        self, checkpoint: str, answers: Mapping[str, Mapping[str, Any]] | None = None
    ) -> TurnResult:
        """:meth:`resume` for scripts: blocks until the turn ends, without asyncio (as
        :meth:`run_sync`)."""
        if self._native.needs_loop():
            return _run_coroutine(self._native, self.resume(checkpoint, answers))
        return TurnResult.from_native(
            self._native.resume_blocking(checkpoint, _answers_json(answers)),
            self._resume_parse(),
        )

    def resume_stream(
        self, checkpoint: str, answers: Mapping[str, Mapping[str, Any]] | None = None
    ) -> Run:
        """:meth:`resume` as a :class:`Run` handle: events as they happen (from ``turn_start``
        with the turn's first prompt; results replayed from the checkpoint emit no event
        again)."""
        return Run(
            self._native.resume_stream(checkpoint, _answers_json(answers)),
            "",
            self._resume_parse(),
        )

    def step(
        self,
        prompt: Prompt,
        *,
        allow: Sequence[str] | None = None,
        settings: ModelSettings | None = None,
        output_schema: OutputSchema | None = None,
        output_retries: int | None = None,
        turn_id: str | None = None,
        clock_ms: int | None = None,
    ) -> Stepper:
        """Start a turn stepped by the host (a :class:`Stepper`): each model request, tool
        call (with its idempotency key ``turn_id:call_id``) and ask waits for its result,
        fed from a record (no I/O) or performed now. ``turn_id`` and ``clock_ms`` are the
        start state a replay gives again (``stepper.options``). A stepped turn runs its calls
        one at a time, an ask's ``{"suspend": True}`` is a denial (the host holds its state),
        and a compaction's summary request is an action too (``summary_request``)."""
        schema, retries, parse = self._output_for(output_schema, output_retries)
        native = self._native.step(
            prompt,
            _list(allow),
            _settings_json(settings),
            schema,
            retries,
            turn_id,
            clock_ms,
        )
        return Stepper(native, parse)

    def _resume_parse(self) -> Parse | None:
        """A resumed turn's answer type: the client's (a run's own schema is the checkpoint's,
        checked by the engine; its answer comes back as JSON values)."""
        return self._output.parse if self._output else None

    async def run_chain(
        self,
        chain: Mapping[str, Any] | str,
        input: str = "",
        *,
        allow: Sequence[str] | None = None,
        settings: ModelSettings | None = None,
    ) -> TurnResult:
        """Run a task chain (the chain JSON: a dict or its text) on ``input``, as one turn of
        this client: its model and tool calls go through this client's gate, allowlists and
        events (plus ``chain_task_start`` / ``chain_task_end``). A chain that does not read
        raises :class:`ConfigurationError` naming the field, before anything runs. ``final_text`` is
        the output of the last task that ran. ``allow`` and ``settings`` as in :meth:`run`."""
        return TurnResult.from_native(
            await self._native.run_chain(
                _chain_text(chain), input, _list(allow), _settings_json(settings)
            )
        )

    def run_chain_sync(
        self,
        chain: Mapping[str, Any] | str,
        input: str = "",
        *,
        allow: Sequence[str] | None = None,
        settings: ModelSettings | None = None,
    ) -> TurnResult:
        """:meth:`run_chain` for scripts: blocks until the chain ends, without asyncio (as
        :meth:`run_sync`)."""
        if self._native.needs_loop():
            return _run_coroutine(
                self._native, self.run_chain(chain, input, allow=allow, settings=settings)
            )
        return TurnResult.from_native(
            self._native.run_chain_blocking(
                _chain_text(chain), input, _list(allow), _settings_json(settings)
            )
        )

    def stream_chain(
        self,
        chain: Mapping[str, Any] | str,
        input: str = "",
        *,
        allow: Sequence[str] | None = None,
        settings: ModelSettings | None = None,
    ) -> Run:
        """Start a task chain on ``input`` and return its :class:`Run` handle."""
        return Run(
            self._native.stream_chain(
                _chain_text(chain), input, _list(allow), _settings_json(settings)
            ),
            input,
        )

    @overload
    def tool(self, fn: F) -> F: ...

    @overload
    def tool(
        self,
        *,
        name: str | None = None,
        description: str | None = None,
        hints: HintsLike = None,
        tier: Tier = "core",
    ) -> Callable[[F], F]: ...

    def tool(
        self,
        fn: Callable[..., Any] | None = None,
        *,
        name: str | None = None,
        description: str | None = None,
        hints: HintsLike = None,
        tier: Tier = "core",
    ) -> Any:
        """Register a typed function as a tool; the function is returned unchanged.

        ``@client.tool`` or ``@client.tool(hints={"read_only": True}, tier="deferred")``."""

        def register(f: F) -> F:
            self.register(
                Tool.from_function(f, name=name, description=description, hints=hints, tier=tier)
            )
            return f

        return register(fn) if fn is not None else register

    def register(self, tool: ToolLike) -> Tool | _native.SourceTool:
        """Add a tool (a :class:`Tool`, an MCP tool, or a typed function), replacing one of
        the same name. Works at any time: registered during a turn, it is offered from that
        turn's next model request."""
        t = _as_tool(tool)
        self._native.register(_native_parts(t))
        return t

    def unregister(self, name: str) -> bool:
        """Remove a tool; True when it was there."""
        return self._native.unregister(name)

    @property
    def tools(self) -> list[dict[str, Any]]:
        """The specs of every registered tool (builtins and host tools)."""
        return self._native.tools()

    @property
    def transcript(self) -> Transcript:
        """The conversation so far. Assign a :class:`Transcript` to restore one."""
        return Transcript._from_native(self._native.transcript())

    @transcript.setter
    def transcript(self, value: Transcript) -> None:
        native = value._native
        if native is not None and value._messages is None:
            # Unchanged since the engine handed it over: no JSON round trip.
            self._native.set_transcript(native)
        else:
            self._native.set_transcript_json(value.to_json())

    @property
    def policy(self) -> dict[str, Any] | None:
        """The approval policy in force (the one given at creation, or the last
        :meth:`set_policy`), as its document; None without one."""
        doc: dict[str, Any] | None = self._native.policy()
        return doc

    def set_policy(self, policy: PolicySource | None) -> None:
        """Replace the approval policy (a document, its JSON text or a file path, as the
        ``policy`` option takes it; None removes it). It applies from the next tool call, also
        within a running turn. A policy that does not validate raises
        :class:`ConfigurationError` and the old one stays."""
        self._native.set_policy(_policy_value(policy))

    @property
    def config(self) -> dict[str, Any]:
        """The engine's config of this client (defaults filled in; ``policy`` as given at
        creation, see :attr:`policy` for the one in force)."""
        result: dict[str, Any] = self._native.config()
        return result

    async def list_models(self) -> list[dict[str, Any]]:
        """The models the configured server offers."""
        return await self._native.list_models()

    def background_shells(self) -> BackgroundShells | None:
        """The client's background shells (the ones given as ``background=``, or its own), or
        None when ``background`` is off."""
        native = self._native.background_shells()
        return None if native is None else BackgroundShells._of(native)

    def close(self) -> None:
        """Cancel every running turn, kill every background shell, and refuse new turns."""
        self._native.close()

    @property
    def closed(self) -> bool:
        return self._native.closed

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    async def __aenter__(self) -> Client:
        return self

    async def __aexit__(self, *exc: object) -> None:
        self.close()

    def as_tool_with(
        self,
        name: str,
        description: str,
        *,
        conversation: Literal["fresh", "kept"] | None = None,
        max_turns: int | None = None,
        allow: Sequence[str] | None = None,
        input_schema: Mapping[str, Any] | None = None,
        hints: HintsLike | None = None,
        max_depth: int | None = None,
    ) -> _native.SourceTool:
        """This client as a tool of another client (a subagent): ``parent.register(it)``. Each
        call runs one turn of this client on the call's ``prompt`` and returns its final text;
        a turn that ends in ``error``, ``max_turns``, ``budget`` or ``cancelled`` is an error
        result saying so. Every call the subagent makes passes its own gate and then the
        parent's; its asks go to the parent's ``wait_for`` when it has none; its events reach
        the parent's stream tagged with ``agent``.

        ``conversation``: ``"fresh"`` (default: every call starts from an empty conversation)
        or ``"kept"``. ``max_turns``: model responses per call. ``allow``: the tools the
        subagent may use (narrows its own allowlist). ``input_schema``: the tool's input
        instead of ``{prompt}`` (the arguments, as JSON, are the prompt). ``hints``: what the
        parent's gate sees for the call. ``max_depth``: how deep subagents may nest (default
        3)."""
        options: dict[str, Any] = {
            "conversation": conversation,
            "max_turns": max_turns,
            "allow": _list(allow),
            "input_schema": dict(input_schema) if input_schema is not None else None,
            "hints": None if hints is None else _hints_dict(hints),
            "max_depth": max_depth,
        }
        wire = {k: v for k, v in options.items() if v is not None}
        return self._native.as_tool_with(name, description, json.dumps(wire))

    async def compact(self) -> CompactNotice | None:
        """Compact the conversation now: the older part replaced by the model's summary (or
        by the ``compactor``'s transcript), keeping the ``compaction`` option's
        ``keep_recent`` most recent messages (4 without it). Waits for a running turn. None
        when there is nothing older to summarise; :class:`CompactionError` when the summary
        request (or the compactor) failed, the conversation then unchanged. ``on_compact`` is
        told, as for an automatic compaction."""
        notice = await self._native.compact()
        if notice is None:
            return None
        from ._callbacks import CompactNotice

        return CompactNotice.from_dict(notice)

    def __repr__(self) -> str:
        c = self.config
        return f"<contenox.Client style={c.get('style')} model={c.get('model')!r}>"


def _callable(fn: Any, what: str) -> tuple[Any, bool] | None:
    if fn is None:
        return None
    if not callable(fn):
        raise ConfigurationError(f"{what} must be callable, got {type(fn).__name__}")
    return (fn, is_async(fn))


def _takes_cancel(fn: Callable[..., Any]) -> bool:
    """Whether ``fn`` takes a second positional argument (the cancel signal)."""
    import inspect

    try:
        params = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        return False
    positional = 0
    for p in params:
        if p.kind is inspect.Parameter.VAR_POSITIONAL:
            return True
        if p.kind in (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD):
            positional += 1
    return positional >= 2


def _search_callable(provider: WebSearch | None) -> tuple[Any, bool, bool] | None:
    """``websearch=``: a provider object's ``search`` method, or the function itself, with
    whether it is async and whether it takes the cancel signal."""
    if provider is None:
        return None
    search = getattr(provider, "search", None)
    fn = search if callable(search) else provider
    if not callable(fn):
        raise ConfigurationError(
            "websearch must be a function search(request) or an object with a search method, "
            f"got {type(provider).__name__}"
        )
    return (fn, is_async(fn), _takes_cancel(fn))


def create_client(
    *,
    style: str | None = None,
    base_url: str | None = None,
    model: str | None = None,
    api_key: str | None = None,
    headers: Mapping[str, str] | None = None,
    system: str | None = None,
    root: str | os.PathLike[str] | None = None,
    builtins: Sequence[str] | None = None,
    allow: Sequence[str] | None = None,
    max_turns: int | None = None,
    max_tokens: int | None = None,
    retry: Mapping[str, Any] | None = None,
    script: Sequence[Mapping[str, Any]] | None = None,
    background: bool | BackgroundShells | None = None,
    notebook_edit: bool | None = None,
    code_execution: CodeExecutionOptions | None = None,
    secret_env: Sequence[str] | None = None,
    connect_timeout_ms: int | None = None,
    request_timeout_ms: int | None = None,
    idle_timeout_ms: int | None = None,
    policy: PolicySource | None = None,
    hooks_file: HooksFileSource | None = None,
    hook_timeout_ms: int | None = None,
    max_tool_calls: int | None = None,
    max_turn_tokens: int | None = None,
    shell_env: Sequence[str] | None = None,
    sandbox: SandboxOptions | None = None,
    web_fetch_allow_private: bool | None = None,
    tool_concurrency: Literal["read_only", "all", "none"] | None = None,
    max_concurrent_tools: int | None = None,
    stream_tools: bool | None = None,
    compaction: CompactionOptions | None = None,
    temperature: float | None = None,
    top_p: float | None = None,
    top_k: int | None = None,
    stop: Sequence[str] | None = None,
    seed: int | None = None,
    tool_choice: ToolChoice | None = None,
    parallel_tool_calls: bool | None = None,
    reasoning: Reasoning | None = None,
    extra_body: Mapping[str, Any] | None = None,
    prompt_cache: bool | None = None,
    fallback: Sequence[FallbackModel | str] | None = None,
    images: bool | None = None,
    output_schema: OutputSchema | None = None,
    output_retries: int | None = None,
    telemetry: bool | TelemetryOptions | None = None,
    on_compact: OnCompact | None = None,
    compactor: Compactor | None = None,
    hooks: Hooks | None = None,
    wait_for: WaitFor | None = None,
    wait_for_ctx: WaitFor | None = None,
    tools: Sequence[ToolLike] = (),
    websearch: WebSearch | None = None,
    remote: RemoteSource | Sequence[RemoteSource] | None = None,
    **options: Any,
) -> Client:
    """Create a client. The options are the engine's (``Config``), with the same names and
    defaults in every binding; an option left out (or None) takes the engine's default, and
    an unknown one is a :class:`ConfigurationError` with the engine's message.

    The model: ``style`` (``openai``, ``anthropic``, ``ollama``, ``scripted``), ``base_url``,
    ``model``, ``api_key``, ``headers``, ``max_tokens`` (each request's output limit),
    ``retry``, ``script`` (the scripted style's responses), ``connect_timeout_ms``,
    ``request_timeout_ms`` (until the server starts its answer; default 10 minutes) and
    ``idle_timeout_ms`` (the longest silence inside an answer; default 10 minutes).
    ``fallback``: models tried in order when the model fails after its retries with an
    overload, a rate limit, a server error, a failed connection or a timeout
    (:class:`FallbackModel`, or a model name alone for another model on the same server; a
    ``fallback`` event tells the move).

    The turn: ``system``, ``max_turns`` (model responses per turn), and the per-turn ceilings
    ``max_tool_calls`` and ``max_turn_tokens`` (input + output tokens), which end the turn with
    outcome ``budget``. ``tool_concurrency``: which calls of one reply run side by side
    (``"read_only"``, the default: read-only and subagent calls, a write waits for the calls
    before it and the calls after it wait for it; ``"all"``; ``"none"``), at most
    ``max_concurrent_tools`` at once (default 8); gates, events' order and results keep the
    model's order. ``stream_tools`` (default True): a call starts while the model still
    streams, once its arguments are complete.

    Tools: ``root`` (file tools are confined to it), ``builtins``, ``allow``, the opt-ins
    ``background`` (True, or a host-made :class:`BackgroundShells`) and ``notebook_edit``,
    ``web_fetch_allow_private`` (let ``web_fetch`` reach loopback and private addresses),
    ``secret_env`` (variables never passed to commands), ``shell_env`` (what bash gets besides
    its allowlisted environment: ``NAME``, ``PREFIX*``, ``NAME=value``) and ``sandbox``
    (``{"enabled", "network", "writable"}``).

    The gate: ``policy``, an approval policy (a document such as
    ``contenox.policies.default()``, its JSON text or a file path), decides first on every
    call; ``hooks_file``, a hooks file in the shape Claude Code, codex and goose share (a
    settings mapping holding ``hooks``, the ``hooks`` mapping, its JSON text or a file path),
    runs its command hooks (``PreToolUse`` may deny or ask) in the bash sandbox, see
    ``docs/hooks.md``; ``hooks={"before_tool": fn, "after_tool": fn}`` may only narrow what
    it allows; the same mapping takes the lifecycle hooks ``on_prompt``, ``on_stop``,
    ``before_compact``, ``on_tool_error``, ``on_turn_start``, ``on_turn_end`` and
    ``on_notification`` (:mod:`contenox._lifecycle`: :class:`ReplacePrompt`,
    :class:`RefusePrompt`, :class:`ContinueTurn`, :class:`VetoCompact`, ...), each given at most
    ``hook_timeout_ms`` (default 60 s) before its point's fallback applies;
    ``wait_for=fn(request, cancel)`` answers asks (or ``wait_for_ctx``, the design's name for
    the same cancellable ask: the function gets the turn's cancel signal). ``before_tool``
    returns None (allow), ``deny(message)`` or an error result such as
    ``ToolOutput.error(message)`` (deny), or ``pending(request)`` (ask); either may come as
    ``{"result": ...}``. ``tools=[...]``, hooks and ``wait_for`` take Python callables, sync or
    async. ``websearch``: a search provider (a function
    ``search(request)`` or an object with a ``search`` method, sync or async) turns on the
    opt-in ``websearch`` builtin. ``remote``: sources from :func:`contenox.load_remote` whose
    tools the client gets (as ``source.register_into(client)``).

    Model settings (:class:`ModelSettings`; ``run(prompt, settings=...)`` replaces them for one
    turn): ``temperature``, ``top_p``, ``top_k`` (anthropic, ollama), ``stop``, ``seed``
    (openai, ollama), ``tool_choice`` (``"auto"``, ``"required"``, ``"none"`` or ``{"name":
    tool}``), ``parallel_tool_calls``, ``reasoning`` (``{"effort": "low"}`` or, on anthropic,
    ``{"budget_tokens": N}``) and ``extra_body`` (merged into the request body last). Each
    reaches the request in its style's spelling; one a style has no such thing for is a
    ConfigurationError. ``images``: whether the model takes images (on by default; False refuses
    a prompt with images and turns a tool result's images into an error result the model
    sees). ``prompt_cache``: anthropic prompt caching, on by default (False turns
    it off).

    Code execution: ``code_execution={}`` turns on ``js_execution`` (model-written JavaScript
    whose ``await tools.NAME(args)`` calls pass the same gate as direct calls) with the default
    limits; its keys are ``timeout_ms``, ``memory_mb``, ``max_stack_kb``, ``max_output_bytes``,
    ``max_tool_calls``.

    A typed answer: ``output_schema`` (a JSON Schema dict, or a pydantic model class, a
    dataclass or a ``TypedDict``, described by pydantic's ``TypeAdapter``) is what every turn's
    final answer must be; the model may call tools first. ``result.output`` is the validated
    answer (an instance of the type given). An invalid answer is sent back with the errors up
    to ``output_retries`` times (default 2), then the outcome is ``output_invalid``. A run may
    give its own (``run(prompt, output_schema=...)``).

    Telemetry: ``telemetry=True`` (or :class:`TelemetryOptions`: ``endpoint``, ``headers``,
    ``include_contents``, ``service_name``) traces each turn as OpenTelemetry spans following
    the GenAI semantic conventions (``invoke_agent``, ``chat {model}``, ``execute_tool
    {name}``, a subagent's turn under its call), posted over OTLP/HTTP to the endpoint (or the
    standard ``OTEL_*`` variables'); a collector that is down fails no turn; ``close()`` sends
    what is queued.

    Compaction: ``compaction={"threshold_tokens": N, "keep_recent": 4, "instructions": ...}``
    summarises the older part of the conversation when the context is over N tokens (and
    when a server refuses a request as too long); ``on_compact=fn(notice)`` is told after
    each one; ``compactor=fn(transcript)`` may compact in its own way."""
    output = output_spec(output_schema)
    config = _config_json(
        {
            "style": style,
            "base_url": base_url,
            "model": model,
            "api_key": api_key,
            "headers": dict(headers) if headers is not None else None,
            "system": system,
            "root": root,
            "builtins": list(builtins) if builtins is not None else None,
            "allow": list(allow) if allow is not None else None,
            "max_turns": max_turns,
            "max_tokens": max_tokens,
            "retry": dict(retry) if retry is not None else None,
            "script": [dict(e) for e in script] if script is not None else None,
            "background": None if isinstance(background, BackgroundShells) else background,
            "notebook_edit": notebook_edit,
            "code_execution": dict(code_execution) if code_execution is not None else None,
            "secret_env": list(secret_env) if secret_env is not None else None,
            "connect_timeout_ms": connect_timeout_ms,
            "request_timeout_ms": request_timeout_ms,
            "idle_timeout_ms": idle_timeout_ms,
            "policy": policy,
            "hooks_file": hooks_file,
            "hook_timeout_ms": hook_timeout_ms,
            "max_tool_calls": max_tool_calls,
            "max_turn_tokens": max_turn_tokens,
            "shell_env": list(shell_env) if shell_env is not None else None,
            "sandbox": sandbox,
            "web_fetch_allow_private": web_fetch_allow_private,
            "tool_concurrency": tool_concurrency,
            "max_concurrent_tools": max_concurrent_tools,
            "stream_tools": stream_tools,
            "compaction": dict(compaction) if compaction is not None else None,
            "temperature": temperature,
            "top_p": top_p,
            "top_k": top_k,
            "stop": list(stop) if stop is not None else None,
            "seed": seed,
            "tool_choice": dict(tool_choice) if isinstance(tool_choice, Mapping) else tool_choice,
            "parallel_tool_calls": parallel_tool_calls,
            "reasoning": dict(reasoning) if reasoning is not None else None,
            "extra_body": dict(extra_body) if extra_body is not None else None,
            "prompt_cache": prompt_cache,
            "fallback": [f if isinstance(f, str) else dict(f) for f in fallback]
            if fallback is not None
            else None,
            "images": images,
            "output_schema": json.loads(output.schema_json) if output is not None else None,
            "output_retries": output_retries,
            "telemetry": dict(telemetry) if isinstance(telemetry, Mapping) else telemetry,
            **options,
        }
    )
    if wait_for is not None and wait_for_ctx is not None:
        raise ConfigurationError(
            "give wait_for or wait_for_ctx, not both (they are two names of the same ask)"
        )
    hooks = dict(hooks or {})
    unknown = sorted(set(hooks) - {"before_tool", "after_tool", *LIFECYCLE_POINTS})
    if unknown:
        raise ConfigurationError(
            f"unknown hook {', '.join(unknown)}; hooks are before_tool, after_tool, "
            + ", ".join(LIFECYCLE_POINTS)
        )
    lifecycle: dict[str, tuple[Any, bool]] = {}
    for point in LIFECYCLE_POINTS:
        given = _callable(hooks.get(point), point)
        if given is not None:
            lifecycle[point] = given
    native = _native.Client.create(
        config,
        [_native_parts(_as_tool(t)) for t in tools],
        _callable(hooks.get("before_tool"), "before_tool"),
        _callable(hooks.get("after_tool"), "after_tool"),
        (
            _callable(wait_for, "wait_for")
            if wait_for is not None
            else _callable(wait_for_ctx, "wait_for_ctx")
        ),
        _search_callable(websearch),
        _callable(on_compact, "on_compact"),
        _callable(compactor, "compactor"),
        background._native if isinstance(background, BackgroundShells) else None,
        lifecycle or None,
        # Looked up only when telemetry is on (the engine ignores it otherwise): no import of
        # opentelemetry for a client that does not trace.
        host_tracer=host_tracer() if telemetry is not None and telemetry is not False else None,
    )
    client = Client(native, output)
    sources: list[RemoteSource] = []
    if remote is not None:
        from ._remote import RemoteSource

        sources = [remote] if isinstance(remote, RemoteSource) else list(remote)
    try:
        for source in sources:
            source.register_into(client)
    except BaseException:
        client.close()
        raise
    return client


async def list_models(
    *,
    style: str | None = None,
    base_url: str | None = None,
    api_key: str | None = None,
    model: str | None = None,
    headers: Mapping[str, str] | None = None,
    **options: Any,
) -> list[dict[str, Any]]:
    """The models a server offers (``[{"id": ..., "display_name": ...}]``)."""
    config = _config_json(
        {
            "style": style,
            "base_url": base_url,
            "api_key": api_key,
            "model": model,
            "headers": dict(headers) if headers is not None else None,
            **options,
        }
    )
    return await _native.list_models(config)
