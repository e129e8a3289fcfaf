"""The Python half of the native bridge: called from Rust, not part of the public API.

- :func:`completer` gives each event loop the native completer that hands it finished engine
  futures (:func:`set_future` completes each).

- :class:`Call` runs one async host callback as an asyncio task on the caller's loop and
  reports its outcome to Rust; Rust cancels it (``cancel_threadsafe``) when the engine stops
  waiting.
- The ``*_wire`` functions turn what host code returned into the engine's wire shapes; the
  other functions turn the engine's dicts into the typed objects host code receives.
"""

from __future__ import annotations

import functools
import inspect
import json
import os
import sys
import weakref
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from . import _native
from ._types import Transcript

if TYPE_CHECKING:
    # Only async callers use the loop machinery below, and they have asyncio already: a script
    # that calls client.run_sync does not import it (issue 27).
    import asyncio

    from ._callbacks import CompactNotice, PendingRequest, ToolCallEvent, ToolOutput
    from ._websearch import SearchRequest


class Call:
    """One async callback call, living on its event loop."""

    __slots__ = ("_cancelled", "_done", "_loop", "_task")

    def __init__(self, loop: asyncio.AbstractEventLoop, done: Callable[[Any, Any], None]) -> None:
        self._loop = loop
        self._done = done
        self._task: asyncio.Future[Any] | None = None
        self._cancelled = False

    def start(self, func: Callable[..., Any], args: tuple[Any, ...]) -> None:
        """On the loop: call ``func(*args)`` and run the awaitable it returns as a task."""
        import asyncio

        if self._cancelled:
            self._done(None, asyncio.CancelledError())
            return
        try:
            self._task = asyncio.ensure_future(func(*args))
        except BaseException as e:
            self._done(None, e)
            return
        self._task.add_done_callback(self._finished)

    def _finished(self, task: asyncio.Future[Any]) -> None:
        import asyncio

        if task.cancelled():
            self._done(None, asyncio.CancelledError("cancelled"))
            return
        exc = task.exception()
        if exc is not None:
            self._done(None, exc)
        else:
            self._done(task.result(), None)

    def cancel(self) -> None:
        """On the loop: cancel the task (or keep it from starting)."""
        self._cancelled = True
        if self._task is not None and not self._task.done():
            self._task.cancel()

    def cancel_threadsafe(self) -> None:
        """From any thread: schedule :meth:`cancel` on the loop."""
        try:
            self._loop.call_soon_threadsafe(self.cancel)
        except RuntimeError:
            pass  # the loop is closed: nothing runs there any more


# loop -> (pid, its completer or None). The pid: a forked child shares the parent's sockets, so a
# loop carried into a child gets a completer of its own.
_completers: weakref.WeakKeyDictionary[
    asyncio.AbstractEventLoop, tuple[int, _native.Completer | None]
] = weakref.WeakKeyDictionary()


def completer(loop: asyncio.AbstractEventLoop) -> _native.Completer | None:
    """On the loop: the completer through which the engine hands this loop its finished
    futures (one per loop, watched with ``add_reader``); None for a loop that cannot watch a
    file descriptor (the engine then uses ``call_soon_threadsafe``)."""
    pid = os.getpid()
    try:
        cached_pid, cached = _completers[loop]
        if cached_pid == pid:
            return cached
    except KeyError:
        pass
    except TypeError:
        return None  # a loop that takes no weak reference: not cached, so not watched either
    c = _native.Completer()
    try:
        loop.add_reader(c.fileno(), c.drain)
    # asyncio's own loops that cannot watch a descriptor say so with NotImplementedError (the
    # Proactor loop on Windows); third-party loops may lack the method or refuse the socket.
    except (NotImplementedError, AttributeError, OSError, RuntimeError):
        _completers[loop] = (pid, None)
        return None
    _completers[loop] = (pid, c)
    return c


def set_future(fut: asyncio.Future[Any], value: Any, error: BaseException | None) -> None:
    """On the loop: complete a future the engine finished (unless it was cancelled)."""
    if fut.done():
        return
    if error is not None:
        fut.set_exception(error)
    else:
        fut.set_result(value)


def is_async(fn: Callable[..., Any]) -> bool:
    """Whether calling ``fn`` gives an awaitable to run on the loop (``async def``, also
    through ``functools.partial`` and callable objects with an ``async def __call__``)."""
    while isinstance(fn, functools.partial):
        fn = fn.func
    if inspect.iscoroutinefunction(fn):
        return True
    call = getattr(fn, "__call__", None)  # noqa: B004
    return call is not None and not inspect.isfunction(fn) and inspect.iscoroutinefunction(call)


def decision_wire(value: Any) -> tuple[str, Any]:
    """``before_tool``'s return value (not None) as ``("deny", message)`` / ``("ask", request)``.

    Besides ``deny(...)`` and ``pending(...)``, the host-hooks design's shapes: an error result
    (``ToolOutput.error(...)`` or ``{"is_error": True, "content": ...}``) denies with its
    content as the message, and either may come wrapped as ``{"result": ...}``."""
    from ._callbacks import Ask, Deny, ToolOutput

    if isinstance(value, dict) and set(value) == {"result"}:
        value = value["result"]
    if isinstance(value, Deny):
        return ("deny", value.message)
    if isinstance(value, Ask):
        return ("ask", value.request)
    if isinstance(value, ToolOutput) and value.is_error:
        return ("deny", _message_of(value.content))
    if isinstance(value, dict) and value.get("is_error") is True and set(value) <= _RESULT_KEYS:
        return ("deny", _message_of(value.get("content")))
    raise TypeError(
        f"before_tool returned {value!r}; return None (allow), contenox.deny(message) or an "
        "error result (deny), or contenox.pending(request) (ask)"
    )


_RESULT_KEYS = {"content", "is_error", "metadata"}


def _message_of(content: Any) -> str | None:
    """An error result's content as a denial message (None: the engine's default text)."""
    if content is None:
        return None
    return content if isinstance(content, str) else json.dumps(content)


def output_wire(value: Any) -> dict[str, Any]:
    """A tool's (or after_tool's) return value as the engine's ToolOutput."""
    # A ToolOutput exists only once its module is imported: until then, a plain tool's return
    # value is not one, and the first turn does not pay for defining the callbacks' classes.
    callbacks = sys.modules.get("contenox._callbacks")
    if callbacks is not None and isinstance(value, callbacks.ToolOutput):
        output: ToolOutput = value
        return output.to_dict()
    return {"content": value, "is_error": False}


def tool_call_event(d: dict[str, Any]) -> ToolCallEvent:
    from ._callbacks import ToolCallEvent

    return ToolCallEvent.from_dict(d)


def tool_output(d: dict[str, Any]) -> ToolOutput:
    from ._callbacks import ToolOutput

    return ToolOutput.from_dict(d)


def pending_request(d: dict[str, Any]) -> PendingRequest:
    from ._callbacks import PendingRequest

    return PendingRequest.from_dict(d)


def compact_notice(d: dict[str, Any]) -> CompactNotice:
    from ._callbacks import CompactNotice

    return CompactNotice.from_dict(d)


def transcript(d: dict[str, Any]) -> Transcript:
    return Transcript(d.get("messages") or [])


def search_request(d: dict[str, Any]) -> SearchRequest:
    from ._websearch import SearchRequest

    return SearchRequest.from_dict(d)


def search_results_wire(value: Any) -> Any:
    """A web search provider's return value as the engine's results."""
    from ._websearch import results_wire

    return results_wire(value)
