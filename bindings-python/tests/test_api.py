"""The Python API beyond the conformance scenarios: sync and async tools, hooks and wait_for,
failures in host code, cancellation through asyncio, running inside a running loop, the fork
guard, the exception hierarchy, schemas from type hints, typed events."""

from __future__ import annotations

import asyncio
import contextvars
import enum
import http.server
import json
import os
import socket
import sys
import threading
import time
from pathlib import Path
from typing import Annotated, Any, Literal, TypedDict

import contenox
import pytest
from conftest import text_of, with_text
from contenox import _native
from contenox.events import Gate, ToolCall, ToolResult, TurnEnd, TurnStart


def call(name: str, args: dict[str, Any], cid: str = "call_1") -> dict[str, Any]:
    return {"tool_calls": [{"id": cid, "name": name, "arguments": args}]}


def scripted(*entries: dict[str, Any], **kw: Any) -> contenox.Client:
    kw.setdefault("builtins", [])
    return contenox.create_client(style="scripted", script=list(entries), **kw)


def results(r: contenox.TurnResult) -> list[dict[str, Any]]:
    """The tool results, each with its text as `content`."""
    return [with_text(m) for m in r.transcript.messages if m["role"] == "tool"]


# --- tools -----------------------------------------------------------------------------------


async def test_sync_and_async_tools_with_ctx() -> None:
    client = scripted(
        {
            "tool_calls": [
                {"id": "a", "name": "add", "arguments": {"a": 2, "b": 3}},
                {"id": "b", "name": "shout", "arguments": {"text": "hi"}},
            ]
        },
        {"text": "done"},
    )
    seen: dict[str, Any] = {}
    loop_thread = threading.get_ident()

    @client.tool(hints={"read_only": True})
    def add(a: int, b: int) -> int:
        """Add two numbers."""
        seen["add_thread"] = threading.get_ident()
        return a + b

    @client.tool
    async def shout(text: str, ctx: contenox.ToolContext) -> dict[str, str]:
        seen["ctx"] = (ctx.call_id, ctx.name)
        seen["shout_thread"] = threading.get_ident()
        return {"loud": text.upper()}

    r = await client.run("go")
    assert r.outcome == "done"
    assert [m["content"] for m in results(r)] == ["5", '{"loud":"HI"}']
    assert seen["ctx"] == ("b", "shout")
    # async callbacks run on the caller's loop; sync ones in a worker thread
    assert seen["shout_thread"] == loop_thread
    assert seen["add_thread"] != loop_thread
    assert add(1, 1) == 2  # the decorator returns the function unchanged


async def test_tool_exception_becomes_error_result() -> None:
    client = scripted(call("boom", {}), call("aboom", {}, "call_2"), {"text": "ok"})

    @client.tool
    def boom() -> str:
        raise ValueError("disk on fire")

    @client.tool
    async def aboom() -> str:
        raise KeyError("missing")

    r = await client.run("x")
    assert r.outcome == "done"
    tr = results(r)
    assert tr[0]["is_error"] and tr[0]["content"] == "disk on fire"
    assert tr[1]["is_error"] and "missing" in tr[1]["content"]


async def test_tool_output_and_non_json_return() -> None:
    client = scripted(call("meta", {}), call("bad", {}, "call_2"), {"text": "ok"})

    @client.tool
    def meta() -> contenox.ToolOutput:
        return contenox.ToolOutput("partial", is_error=True, metadata={"truncated": True})

    @client.tool
    def bad() -> object:
        return object()

    run = client.stream("x")
    r = await run.result()
    tool_results = [e for e in run.events if isinstance(e, ToolResult)]
    assert tool_results[0].is_error and tool_results[0].content.startswith("partial")
    assert tool_results[0].metadata == {"truncated": True}
    assert tool_results[1].is_error and "not JSON" in tool_results[1].content
    assert r.outcome == "done"


async def test_register_and_unregister_at_any_time() -> None:
    client = scripted(
        call("late", {"x": 1}), {"text": "done"}, call("late", {}, "c2"), {"text": "d"}
    )
    assert client.unregister("late") is False
    client.register(
        contenox.Tool("late", lambda args: args["x"] * 2, input_schema={"type": "object"})
    )
    assert [t["name"] for t in client.tools] == ["late"]
    r = await client.run("x")
    assert results(r)[0]["content"] == "2"
    assert client.unregister("late") is True
    r = await client.run("again")
    assert results(r)[-1]["is_error"] and "unknown tool" in results(r)[-1]["content"]


def test_bad_tool_is_tool_definition_error() -> None:
    client = scripted({"text": "x"})
    with pytest.raises(contenox.ToolDefinitionError) as e:
        client.register(contenox.Tool("has space", lambda a: a))
    assert isinstance(e.value, contenox.ContenoxError)
    assert "has space" in str(e.value)


# --- schemas from type hints -----------------------------------------------------------------


class Color(enum.Enum):
    RED = "red"
    BLUE = "blue"


class Point(TypedDict):
    x: float
    y: float


def test_schema_from_hints_and_docstring() -> None:
    def draw(
        shape: Literal["circle", "square"],
        points: list[Point],
        color: Color = Color.RED,
        label: str | None = None,
        size: Annotated[int, "pixels"] = 3,
        tags: dict[str, bool] | None = None,
        ctx: contenox.ToolContext | None = None,
    ) -> str:
        """Draw a shape.

        Args:
            shape: which shape
            points: where, in order
        """
        return ""

    t = contenox.Tool.from_function(draw, tier="deferred", hints={"destructive": True})
    s = t.input_schema
    assert t.description == "Draw a shape."
    assert s["required"] == ["shape", "points"]
    assert s["additionalProperties"] is False
    p = s["properties"]
    assert p["shape"] == {
        "enum": ["circle", "square"],
        "type": "string",
        "description": "which shape",
    }
    assert p["points"]["items"]["properties"]["x"] == {"type": "number"}
    assert p["points"]["description"] == "where, in order"
    assert p["color"] == {"enum": ["red", "blue"], "type": "string", "default": "red"}
    assert p["label"] == {"anyOf": [{"type": "string"}, {"type": "null"}], "default": None}
    assert p["size"] == {"type": "integer", "description": "pixels", "default": 3}
    assert "ctx" not in p
    assert t.spec()["tier"] == "deferred" and t.spec()["hints"] == {"destructive": True}


def test_unsupported_annotation_is_clear() -> None:
    def f(x: set[bytes]) -> None: ...

    with pytest.raises(TypeError, match="bytes"):
        contenox.Tool.from_function(f)


def test_docstring_styles_rest_numpy_google() -> None:
    from contenox._schema import parse_docstring

    rest = """Move a file.

    :param src: where it is
       now
    :param str dst: where it goes
    :returns: nothing
    """
    assert parse_docstring(rest) == (
        "Move a file.",
        {"src": "where it is now", "dst": "where it goes"},
    )
    numpy = """Move a file.

    Parameters
    ----------
    src : str
        where it is
    dst : str
        where it goes
    """
    assert parse_docstring(numpy) == (
        "Move a file.",
        {"src": "where it is", "dst": "where it goes"},
    )
    google = """Move a file.

    Args:
        src (str): where it is
        dst: where it goes
            (created)
    """
    assert parse_docstring(google) == (
        "Move a file.",
        {"src": "where it is", "dst": "where it goes (created)"},
    )
    # A line merely mentioning :param is not a field.
    assert parse_docstring("Use it.\n\nSee the :param x: notes.") == (
        "Use it.\n\nSee the :param x: notes.",
        {},
    )


# --- the gate --------------------------------------------------------------------------------


@pytest.mark.parametrize("mode", ["sync", "async"])
async def test_hooks_sync_and_async(mode: str) -> None:
    seen: list[contenox.ToolCallEvent] = []

    def decide(ev: contenox.ToolCallEvent) -> contenox.Deny | contenox.Ask | None:
        seen.append(ev)
        if ev.name == "rm":
            return contenox.deny("no deleting")
        if ev.name == "ask_me":
            return contenox.pending(kind="approval", prompt="ok?")
        return None

    def after(ev: contenox.ToolCallEvent, out: contenox.ToolOutput) -> Any:
        return None if ev.name != "echo" else f"after:{out.content}"

    if mode == "async":
        sync_decide, sync_after = decide, after

        async def decide_a(ev: contenox.ToolCallEvent) -> contenox.Deny | contenox.Ask | None:
            await asyncio.sleep(0)
            return sync_decide(ev)

        async def after_a(ev: contenox.ToolCallEvent, out: contenox.ToolOutput) -> Any:
            return sync_after(ev, out)

        hooks: dict[str, Any] = {"before_tool": decide_a, "after_tool": after_a}
    else:
        hooks = {"before_tool": decide, "after_tool": after}

    answers: list[contenox.PendingRequest] = []

    def wait_for(req: contenox.PendingRequest, cancel: contenox.CancelSignal) -> Any:
        answers.append(req)
        return {"result": {"answered": True}}

    client = scripted(
        {
            "tool_calls": [
                {"id": "1", "name": "echo", "arguments": {"v": 1}},
                {"id": "2", "name": "rm", "arguments": {}},
                {"id": "3", "name": "ask_me", "arguments": {}},
            ]
        },
        {"text": "done"},
        hooks=hooks,
        wait_for=wait_for,
    )
    client.register(contenox.Tool("echo", lambda a: json.dumps(a), hints={"read_only": True}))
    client.register(contenox.Tool("rm", lambda a: "removed"))
    client.register(contenox.Tool("ask_me", lambda a: "ran"))
    run = client.stream("go")
    r = await run.result()
    tr = results(r)
    assert tr[0]["content"] == 'after:{"v": 1}'
    assert tr[1] == {
        "role": "tool",
        "call_id": "2",
        "name": "rm",
        "content": "no deleting",
        "is_error": True,
    }
    assert tr[2]["content"] == '{"answered":true}'
    assert answers[0].prompt == "ok?" and answers[0].call_id == "3"
    ev = seen[0]
    assert (ev.name, ev.arguments, ev.call_id, ev.source) == ("echo", {"v": 1}, "1", "host")
    assert ev.hints == contenox.Hints(read_only=True)
    assert seen[1].hints.read_only is None and seen[1].hints.destructive is None
    gates = [e for e in run.events if isinstance(e, Gate)]
    assert [g.decision for g in gates] == ["allow", "deny", "ask"]


@pytest.mark.parametrize("mode", ["sync", "async"])
async def test_hook_that_raises_is_an_error_result(mode: str) -> None:
    def bad(ev: contenox.ToolCallEvent) -> None:
        raise RuntimeError("hook exploded")

    async def abad(ev: contenox.ToolCallEvent) -> None:
        raise RuntimeError("hook exploded")

    client = scripted(
        call("t", {}),
        {"text": "still alive"},
        hooks={"before_tool": bad if mode == "sync" else abad},
    )
    client.register(contenox.Tool("t", lambda a: "ran"))
    r = await client.run("x")
    assert r.outcome == "done" and r.final_text == "still alive"
    assert results(r)[0]["is_error"]
    assert "hook exploded" in results(r)[0]["content"]


async def test_hook_bad_return_value_is_clear() -> None:
    client = scripted(call("t", {}), {"text": "ok"}, hooks={"before_tool": lambda ev: "yes please"})
    client.register(contenox.Tool("t", lambda a: "ran"))
    r = await client.run("x")
    content = results(r)[0]["content"]
    assert "contenox.deny" in content and "'yes please'" in content


def test_unknown_hook_name() -> None:
    with pytest.raises(contenox.ConfigurationError, match="before_tools"):
        scripted({"text": "x"}, hooks={"before_tools": lambda e: None})


# --- wait_for and cancellation ---------------------------------------------------------------


def ask_all(ev: contenox.ToolCallEvent) -> contenox.Ask:
    return contenox.pending({"kind": "approval"})


@pytest.mark.parametrize("answer", [{"approve": True}, {"approve": False, "message": "nope"}])
async def test_sync_wait_for_answers(answer: dict[str, Any]) -> None:
    client = scripted(
        call("t", {}),
        {"text": "ok"},
        hooks={"before_tool": ask_all},
        wait_for=lambda req, cancel: answer,
    )
    client.register(contenox.Tool("t", lambda a: "ran"))
    r = await client.run("x")
    tr = results(r)[0]
    assert tr["content"] == ("ran" if answer["approve"] else "nope")


async def test_async_wait_for_task_is_cancelled_with_the_turn() -> None:
    started = asyncio.Event()
    cancelled = asyncio.Event()

    async def wait_for(req: contenox.PendingRequest, cancel: contenox.CancelSignal) -> Any:
        started.set()
        try:
            await asyncio.sleep(60)
        except asyncio.CancelledError:
            cancelled.set()
            raise
        return {"approve": True}

    client = scripted(
        call("t", {}), {"text": "unreachable"}, hooks={"before_tool": ask_all}, wait_for=wait_for
    )
    client.register(contenox.Tool("t", lambda a: "ran"))
    run = client.stream("x")
    await asyncio.wait_for(started.wait(), 10)
    run.cancel()
    r = await asyncio.wait_for(run.result(), 10)
    assert r.outcome == "cancelled"
    await asyncio.wait_for(cancelled.wait(), 10)  # the Python task itself was cancelled
    assert results(r)[0]["content"] == "cancelled"


async def test_sync_wait_for_notices_cancel() -> None:
    noticed = threading.Event()

    def wait_for(req: contenox.PendingRequest, cancel: contenox.CancelSignal) -> Any:
        if cancel.wait(timeout=20):
            noticed.set()
            return {"approve": False}
        return {"approve": True}

    client = scripted(
        call("t", {}), {"text": "x"}, hooks={"before_tool": ask_all}, wait_for=wait_for
    )
    client.register(contenox.Tool("t", lambda a: "ran"))
    run = client.stream("x")
    async for e in run:
        if e.type == "pending":
            run.cancel()
    r = await run.result()
    assert r.outcome == "cancelled"
    await asyncio.to_thread(noticed.wait, 10)
    assert noticed.is_set()


async def test_cancelling_the_awaiting_task_cancels_the_turn() -> None:
    tool_cancelled = asyncio.Event()
    client = scripted(call("nap", {}), {"text": "second turn"})

    @client.tool
    async def nap(ctx: contenox.ToolContext) -> str:
        try:
            await asyncio.sleep(60)
        except asyncio.CancelledError:
            tool_cancelled.set()
            raise
        return "slept"

    task = asyncio.ensure_future(client.run("sleep"))
    await asyncio.sleep(0.2)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    await asyncio.wait_for(tool_cancelled.wait(), 10)
    # The engine ended that turn (cancelled, transcript valid); the next turn runs.
    r = await asyncio.wait_for(client.run("again"), 10)
    assert r.outcome == "done" and r.final_text == "second turn"
    msgs = r.transcript.messages
    assert msgs[2] == {
        "role": "tool",
        "call_id": "call_1",
        "name": "nap",
        "content": [{"type": "text", "text": "cancelled"}],
        "is_error": True,
    }


async def test_cancel_while_iterating_events() -> None:
    client = scripted({"stall": True})
    run = client.stream("x")

    async def consume() -> None:
        async for _ in run:
            pass

    task = asyncio.ensure_future(consume())
    await asyncio.sleep(0.1)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    r = await asyncio.wait_for(run.result(), 10)
    assert r.outcome == "cancelled"
    assert isinstance(run.events[-1], TurnEnd)


async def test_run_cancel_handle() -> None:
    client = scripted({"stall": True})
    run = client.stream("x")
    first = await run.__anext__()
    assert isinstance(first, TurnStart) and first.prompt == "x"
    run.cancel()
    r = await run
    assert r.outcome == "cancelled"
    assert run.done


# --- loops and threads -----------------------------------------------------------------------


async def test_sync_callback_does_not_block_the_loop() -> None:
    client = scripted(call("slow", {}), {"text": "ok"})

    @client.tool
    def slow() -> str:
        time.sleep(0.5)
        return "done"

    ticks = 0

    async def ticker() -> None:
        nonlocal ticks
        while True:
            await asyncio.sleep(0.02)
            ticks += 1

    t = asyncio.ensure_future(ticker())
    await client.run("x")
    t.cancel()
    assert ticks >= 10


VAR: contextvars.ContextVar[str] = contextvars.ContextVar("VAR", default="unset")


async def test_async_callbacks_see_the_callers_contextvars() -> None:
    client = scripted(call("peek", {}), {"text": "ok"})

    @client.tool
    async def peek() -> str:
        return VAR.get()

    VAR.set("from caller")
    r = await client.run("x")
    assert results(r)[0]["content"] == "from caller"


async def test_run_sync_inside_a_running_loop() -> None:
    # As in Jupyter: a loop is running, and a cell calls the sync API with async callbacks.
    client = scripted(call("t", {}), {"text": "ok"})

    @client.tool
    async def t() -> str:
        await asyncio.sleep(0)
        return "async ok"

    r = client.run_sync("x")
    assert r.outcome == "done" and results(r)[0]["content"] == "async ok"
    # and the async API keeps working on this loop afterwards
    client2 = scripted({"text": "again"})
    assert (await client2.run("y")).final_text == "again"


def test_run_sync_without_a_loop() -> None:
    client = scripted(call("t", {}), {"text": "ok"})
    client.register(contenox.Tool("t", lambda a: "sync ok"))
    r = client.run_sync("x")
    assert r.final_text == "ok"


def test_run_needs_a_loop_message() -> None:
    client = scripted({"text": "x"})
    with pytest.raises(RuntimeError, match="run_sync"):
        client._native.run("x")


@pytest.mark.skipif(not hasattr(os, "fork"), reason="no fork on this platform")
@pytest.mark.filterwarnings("ignore:This process .* is multi-threaded")
def test_fork_guard() -> None:
    client = scripted({"text": "parent"}, {"text": "child"})
    assert client.run_sync("p").final_text == "parent"
    parent_pid = _native.runtime_pid()
    assert parent_pid == os.getpid()
    pid = os.fork()
    if pid == 0:  # the child: the parent's runtime has no threads here
        code = 1
        try:
            r = client.run_sync("c")
            fresh = scripted({"text": "fresh"}).run_sync("f")
            ok = (
                r.final_text == "child"
                and fresh.final_text == "fresh"
                and _native.runtime_pid() == os.getpid()
                and len(client.transcript) == 4
            )
            code = 0 if ok else 2
        except BaseException as e:
            print("child failed:", repr(e), file=sys.stderr)
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    assert _native.runtime_pid() == parent_pid  # the parent keeps its own runtime
    assert client.run_sync("again").final_text == "child"  # the parent's script goes on


@pytest.mark.skipif(not hasattr(os, "fork"), reason="no fork on this platform")
@pytest.mark.filterwarnings("ignore:This process .* is multi-threaded")
def test_fork_guard_http_client(tmp_path: Path) -> None:
    from conformance_runner import FakeServer

    scenario = tmp_path / "s.json"
    scenario.write_text(
        json.dumps(
            {
                "name": "fork",
                "style": "openai",
                "prompt": "p",
                "expect": {},
                "model": [{"text": "parent"}, {"text": "child"}],
            }
        )
    )
    server = FakeServer(scenario)
    try:
        client = contenox.create_client(
            style="openai",
            base_url=server.base_url("openai"),
            model="fake",
            api_key="test",
            builtins=[],
        )
        assert client.run_sync("p").final_text == "parent"  # a pooled connection now exists
        # Replaced after creation: the child's rebuilt engine client keeps it, not the config's.
        policy = {"default_action": "deny"}
        client.set_policy(policy)
        pid = os.fork()
        if pid == 0:
            code = 1
            try:
                r = client.run_sync("c")
                ok = r.final_text == "child" and len(client.transcript) == 4
                code = 0 if (ok and client.policy == policy) else 2
                if code:
                    print("child got", r, file=sys.stderr)
            except BaseException as e:
                print("child failed:", repr(e), file=sys.stderr)
            finally:
                os._exit(code)
        _, status = os.waitpid(pid, 0)
        assert os.waitstatus_to_exitcode(status) == 0
        assert len(server.requests()) == 2
    finally:
        server.stop()


# --- errors ----------------------------------------------------------------------------------


def test_exception_hierarchy() -> None:
    for cls in (
        contenox.ConfigurationError,
        contenox.ToolDefinitionError,
        contenox.ClosedError,
        contenox.BusyError,
        contenox.TranscriptError,
        contenox.ModelError,
        contenox.InternalError,
        contenox.SerializationError,
        contenox.ContenoxIOError,
    ):
        assert issubclass(cls, contenox.ContenoxError)
    assert issubclass(contenox.HttpError, contenox.ModelError)
    assert issubclass(contenox.TransportError, contenox.ModelError)
    assert not hasattr(contenox, "CancelledError"), "never raised, so gone"
    with pytest.raises(contenox.ConfigurationError) as e:
        contenox.create_client(style="scripted", script=[], max_turnz=3)
    assert "max_turnz" in str(e.value) and e.value.causes
    with pytest.raises(contenox.ConfigurationError, match="model"):
        contenox.create_client(style="openai")
    with pytest.raises(contenox.ConfigurationError):
        contenox.create_client(style="nonsense", model="m")
    with pytest.raises(contenox.ConfigurationError, match="not JSON"):
        contenox.create_client(style="scripted", script=[{"text": object()}])


def test_configuration_is_checked_whole_in_pythons_names() -> None:
    def refused(**options: Any) -> contenox.ConfigurationError:
        with pytest.raises(contenox.ConfigurationError) as e:
            contenox.create_client(**options)
        assert "line " not in str(e.value) and "column" not in str(e.value), str(e.value)
        return e.value

    e = refused(style="nope")
    assert (
        str(e)
        == 'invalid configuration: style: "nope" is not one of openai, openai-responses, anthropic, ollama, scripted'
    )
    assert (e.option, e.value) == ("style", '"nope"')
    # A misspelled key of a scripted entry is refused (it used to run as an empty answer).
    e = refused(style="scripted", script=[{"txt": "x"}])
    assert e.option == "script[0]"
    assert e.reason.startswith('unknown key "txt"; the keys are text, tool_calls,'), e.reason
    e = refused(style="scripted", script=[{"text": "a"}, {}])
    assert e.option == "script[1]" and "is empty" in e.reason
    # A base_url that is not a URL is refused now, not tried (and retried) at the first turn.
    e = refused(style="openai", model="m", base_url="not a url")
    assert (e.option, e.value) == ("base_url", '"not a url"')
    assert "is not a URL" in e.reason
    e = refused(style="scripted", script=[{"text": "a"}], bse_url="x")
    assert e.option == "" and e.reason.startswith(
        'unknown option "bse_url"; the options are style, base_url'
    )
    e = refused(style="scripted", script=[{"text": "a"}], max_turns=0)
    assert (e.option, e.value) == ("max_turns", "0")
    e = refused(style="scripted", script=[{"text": "a"}], retry={"max_retries": "3"})
    assert e.option == "retry.max_retries" and e.value == '"3"'


async def test_model_settings_are_options_and_a_runs_are_checked_in_pythons_names() -> None:
    with pytest.raises(contenox.ConfigurationError) as e:
        contenox.create_client(style="openai", model="m", base_url="http://127.0.0.1:9/v1", top_k=3)
    assert e.value.option == "top_k" and "has no top_k" in e.value.reason
    # Port 9 has no server: a refused run sends nothing there.
    client = contenox.create_client(
        style="anthropic",
        model="m",
        base_url="http://127.0.0.1:9",
        api_key="k",
        builtins=[],
        temperature=0.2,
        stop=["END"],
        reasoning=None,
        prompt_cache=False,
    )
    assert client.config["temperature"] == 0.2 and client.config["prompt_cache"] is False
    with pytest.raises(contenox.ConfigurationError) as e:
        await client.run("x", settings={"seed": 1})
    assert e.value.option == "settings.seed" and "has no seed" in e.value.reason
    with pytest.raises(contenox.ConfigurationError) as e:
        client.stream("x", settings={"reasoning": {"budget_tokens": 2048}})
    # The client's temperature beside the run's thinking budget.
    assert e.value.option == "settings.temperature", e.value
    with pytest.raises(contenox.ConfigurationError, match="must be a mapping"):
        client.stream("x", settings=["temperature"])  # type: ignore[arg-type]
    with pytest.raises(contenox.ConfigurationError, match=r"settings\.tool_choice"):
        client.run_sync("x", settings={"tool_choice": "always"})  # type: ignore[typeddict-item]
    client.close()
    # The scripted style takes every setting and ignores it.
    r = await scripted({"text": "a"}, top_k=1, seed=2).run(
        "x", settings={"tool_choice": {"name": "t"}, "reasoning": {"effort": "high"}}
    )
    assert r.final_text == "a"


async def test_misuse_has_its_own_kind() -> None:
    client = scripted({"stall": True})
    run = client.stream("wait")
    async for event in run:
        if event.type == "request":
            break
    with pytest.raises(contenox.BusyError, match="while a turn runs"):
        client.transcript = contenox.Transcript()
    run.cancel()
    assert (await run.result()).outcome == "cancelled"
    client.close()
    with pytest.raises(contenox.ClosedError):
        await client.run("after close")


def test_transcript_errors() -> None:
    client = scripted({"text": "x"})
    with pytest.raises(contenox.ContenoxError):
        client.transcript = contenox.Transcript.from_json("{not json")
    bad = contenox.Transcript([{"role": "tool", "call_id": "nope", "name": "t", "content": ""}])
    with pytest.raises(contenox.TranscriptError, match="unknown call"):
        client.transcript = bad


class _Handler(http.server.BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        body = b'{"error": {"message": "bad key"}}'
        self.send_response(401)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: Any) -> None:
        pass


async def test_http_error_carries_status_and_body() -> None:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}/v1"
        with pytest.raises(contenox.HttpError) as e:
            await contenox.list_models(style="openai", base_url=url, api_key="k", model="m")
        assert e.value.status == 401
        assert "bad key" in e.value.body
        assert isinstance(e.value, contenox.ModelError)
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


async def test_transport_error_keeps_its_cause_chain() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # nobody listens there once it is closed
    with pytest.raises(contenox.TransportError) as e:
        await contenox.list_models(
            style="openai", base_url=f"http://127.0.0.1:{port}/v1", api_key="k", model="m"
        )
    assert e.value.message == "could not reach the model server"
    chain = []
    cause = e.value.__cause__
    while cause is not None:
        chain.append(cause)
        cause = cause.__cause__
    assert len(chain) >= 2, chain
    assert any(isinstance(c, ConnectionRefusedError) for c in chain), chain
    assert all(isinstance(c, (contenox.ContenoxCause, OSError)) for c in chain), chain
    assert len(chain) == len(e.value.causes) - 1


# --- events, results, transcript ------------------------------------------------------------


async def test_events_are_typed_and_render(tmp_path: Path) -> None:
    client = scripted(
        call("t", {"q": "<b>"}), {"text": "all done"}, hooks={"before_tool": lambda e: None}
    )
    client.register(contenox.Tool("t", lambda a: "result <i>"))
    run = client.stream("hello")
    kinds = [e.type async for e in run]
    assert kinds[0] == "turn_start" and kinds[-1] == "turn_end"
    calls = [e for e in run.events if isinstance(e, ToolCall)]
    assert repr(calls[0]) == "ToolCall(call_id='call_1', name='t', arguments={'q': '<b>'})"
    assert calls[0].to_dict() == {
        "type": "tool_call",
        "call_id": "call_1",
        "name": "t",
        "arguments": {"q": "<b>"},
    }
    page = run._repr_html_()
    assert "<table>" in page and "&lt;b&gt;" in page and "result &lt;i&gt;" in page
    assert "allow" in page and "all done" in page
    r = await run.result()
    assert "TurnResult(outcome='done'" in repr(r)
    assert r.to_dict()["usage"] == {"input_tokens": 0, "output_tokens": 0}

    path = tmp_path / "t.json"
    r.transcript.save(path)
    other = scripted({"text": "continued"})
    other.transcript = contenox.Transcript.load(path)
    assert other.transcript == r.transcript
    r2 = await other.run("more")
    assert len(r2.transcript) == len(r.transcript) + 2


def test_unknown_event_type_is_kept() -> None:
    from contenox.events import UnknownEvent, event_from_dict

    e = event_from_dict({"type": "future_thing", "x": 1})
    assert isinstance(e, UnknownEvent) and e.data == {"x": 1}
    assert e.to_dict() == {"type": "future_thing", "x": 1}


async def test_progress_events() -> None:
    client = scripted(call("work", {}), {"text": "ok"})

    @client.tool
    def work(ctx: contenox.ToolContext) -> str:
        ctx.progress({"pct": 50})
        return "done"

    run = client.stream("x")
    await run.result()
    progress = [e for e in run.events if e.type == "progress"]
    assert len(progress) == 1 and progress[0].to_dict()["data"] == {"pct": 50}


EXIT_SCRIPT = """
import asyncio, contenox

async def main():
    turn = [{"tool_calls": [{"id": "1", "name": "slow", "arguments": {}}]}, {"text": "ok"}]
    client = contenox.create_client(style="scripted", builtins=[],
                                    script=turn * 3 + [{"tool_calls": [
                                        {"id": "2", "name": "slow", "arguments": {}}]}] * 60)

    @client.tool
    async def slow() -> str:
        await asyncio.sleep(0.001)
        return "x"

    runs = [await client.run("turn") for _ in range(3)]
    global left_running
    left_running = client.stream("busy")  # never awaited: the interpreter exits while it runs
    await asyncio.sleep(0.05)
    print(runs[-1].outcome)

asyncio.run(main())
"""


def test_interpreter_exit_with_engine_threads_busy() -> None:
    import subprocess

    for _ in range(3):
        done = subprocess.run(
            [sys.executable, "-X", "faulthandler", "-c", EXIT_SCRIPT],
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert done.returncode == 0, done.stderr[-2000:]


async def test_run_allowlist_only_narrows() -> None:
    client = scripted(call("a", {}), {"text": "ok"}, call("a", {}, "c2"), {"text": "ok"})
    client.register(contenox.Tool("a", lambda args: "ran a"))
    r = await client.run("x", allow=["*", "!a"])
    assert "unknown tool" in results(r)[0]["content"]
    r = await client.run("y")
    assert results(r)[-1]["content"] == "ran a"
    narrow = scripted(call("a", {}), {"text": "ok"}, allow=["b"])
    narrow.register(contenox.Tool("a", lambda args: "ran a"))
    r = await narrow.run("x", allow=["*"])  # cannot widen the client's allowlist
    assert "unknown tool" in results(r)[0]["content"]


# --- the fast paths: lazy transcripts, imports on first use, the loop's completer ------------


async def test_a_results_transcript_is_read_only_when_asked_and_round_trips() -> None:
    import copy
    import pickle

    client = scripted(call("t", {"q": "x"}), {"text": "done"})
    client.register(contenox.Tool("t", lambda a: "r"))
    r = await client.run("go")
    t = r.transcript
    assert len(t) == 4  # counted by the engine, nothing parsed yet
    assert t._messages is None and t._json is None
    assert [m["role"] for m in t.messages] == ["user", "assistant", "tool", "assistant"]
    assert json.loads(t.to_json()) == {"version": 2, "messages": t.messages}
    assert t == client.transcript
    # Pickled and copied through its JSON text, equal afterwards.
    assert pickle.loads(pickle.dumps(r.transcript)) == t
    assert copy.deepcopy(client.transcript) == t
    # Handed back unchanged (no JSON round trip) and after an edit (through JSON).
    other = scripted({"text": "more"})
    other.transcript = client.transcript
    assert other.transcript == t
    edited = client.transcript
    edited.messages[0]["content"] = [{"type": "text", "text": "edited"}]
    other.transcript = edited
    assert text_of(other.transcript.messages[0]) == "edited"
    assert text_of(client.transcript.messages[0]) == "go"  # the engine's copy is untouched
    # A broken edit is refused as before.
    broken = client.transcript
    del broken.messages[1]  # the call goes, its result stays
    with pytest.raises(contenox.TranscriptError):
        other.transcript = broken


def test_usage_and_turn_result_are_immutable_values() -> None:
    import copy
    import pickle

    u = contenox.Usage(3, 4, cache_read_input_tokens=1)
    assert u == contenox.Usage(3, 4, 1, 0) and hash(u) == hash(contenox.Usage(3, 4, 1))
    assert u != contenox.Usage(3, 4) and u != (3, 4, 1, 0)
    assert repr(u) == (
        "Usage(input_tokens=3, output_tokens=4, cache_read_input_tokens=1, "
        "cache_creation_input_tokens=0, reasoning_tokens=0)"
    )
    # Reasoning tokens (openai-responses, openai): part of output_tokens, in the dict when set.
    reasoned = contenox.Usage(3, 4, reasoning_tokens=2)
    assert reasoned.to_dict() == {"input_tokens": 3, "output_tokens": 4, "reasoning_tokens": 2}
    assert contenox.Usage.from_dict(reasoned.to_dict()) == reasoned != contenox.Usage(3, 4)
    assert contenox.Usage() == contenox.Usage.from_dict(None) == contenox.Usage.from_dict({})
    assert contenox.Usage.from_dict(u.to_dict()) == u
    with pytest.raises(AttributeError, match="immutable"):
        u.input_tokens = 5  # type: ignore[misc]
    with pytest.raises(AttributeError, match="immutable"):
        del u.output_tokens  # type: ignore[misc]
    with pytest.raises(AttributeError):
        u.other = 1  # type: ignore[attr-defined]
    assert pickle.loads(pickle.dumps(u)) == u and copy.deepcopy(u) == u
    match u:
        case contenox.Usage(input_tokens, output_tokens):
            assert (input_tokens, output_tokens) == (3, 4)

    t = contenox.Transcript([{"role": "user", "content": "hi"}])
    r = contenox.TurnResult("done", "text", u, t)
    # Compared and hashed without the transcript, which repr leaves out too.
    assert r == contenox.TurnResult("done", "text", u, contenox.Transcript())
    assert r != contenox.TurnResult("done", "text", u, t, error="e")
    assert hash(r) == hash(contenox.TurnResult("done", "text", u, contenox.Transcript()))
    assert repr(r) == f"TurnResult(outcome='done', final_text='text', usage={u!r}, error=None)"
    with pytest.raises(AttributeError, match="immutable"):
        r.final_text = "other"  # type: ignore[misc]
    back = pickle.loads(pickle.dumps(r))
    assert back == r and back.transcript == t and back.transcript.messages[0]["content"] == "hi"
    assert r.to_dict() == {
        "outcome": "done",
        "final_text": "text",
        "usage": {"input_tokens": 3, "output_tokens": 4, "cache_read_input_tokens": 1},
        "transcript": {"version": 2, "messages": [{"role": "user", "content": "hi"}]},
    }


def _lines_printed_by(code: str) -> list[str]:
    """Run `code` in a fresh interpreter (a cold import) and return the lines it printed."""
    import subprocess

    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True
    )
    return done.stdout.splitlines()


def test_import_leaves_rare_modules_until_used() -> None:
    code = (
        "import sys, contenox\n"
        "lazy = ['contenox.events', 'contenox._remote', 'contenox._mcp', 'contenox._websearch',"
        " 'contenox.policies', 'contenox._callbacks', 'contenox._hints']\n"
        "print([m for m in lazy if m in sys.modules])\n"
        "from contenox import *\n"
        "assert contenox.Event is contenox.events.Event and contenox.load_mcp and WebSearch\n"
        "assert contenox.policies.default()['version']\n"
        "assert 'RemoteSource' in dir(contenox)\n"
        "assert contenox.ToolOutput is contenox._callbacks.ToolOutput and contenox.deny\n"
        "print(sorted(m for m in lazy if m not in sys.modules))\n"
        "try:\n"
        "    contenox.nope\n"
        "except AttributeError as e:\n"
        "    print(e)\n"
    )
    out = _lines_printed_by(code)
    assert out == ["[]", "[]", "module 'contenox' has no attribute 'nope'"]


def test_a_turn_with_a_plain_tool_leaves_the_callbacks_types_undefined() -> None:
    # The cold start (import, a client, a tool, a turn) does not define the dataclasses only
    # hooks, wait_for, compaction and ToolOutput need, nor imports `dataclasses` at all (Usage
    # and TurnResult are hand-written); a tool returning a ToolOutput loads them.
    code = (
        "import sys, contenox\n"
        "c = contenox.create_client(style='scripted', builtins=[], script=[\n"
        "    {'tool_calls': [{'name': 'echo', 'arguments': {'text': 'hi'}}]}, {'text': 'done'},\n"
        "    {'tool_calls': [{'name': 'out', 'arguments': {}}]}, {'text': 'done'}])\n"
        "@c.tool()\n"
        "def echo(text: str) -> str:\n"
        "    return text\n"
        "r = c.run_sync('go')\n"
        "lazy = ('contenox._callbacks', 'contenox._hints', 'dataclasses')\n"
        "print(r.final_text, r.transcript.messages[2]['content'][0]['text'], [m in sys.modules for m in lazy])\n"
        "@c.tool()\n"
        "def out() -> contenox.ToolOutput:\n"
        "    return contenox.ToolOutput('bad', is_error=True)\n"
        "r = c.run_sync('again')\n"
        "m = r.transcript.messages[-2]\n"
        "print(m['content'][0]['text'], m['is_error'], 'contenox._callbacks' in sys.modules)\n"
        "print(c.tools[0].get('hints'), contenox.Tool('t', len).hints, 'contenox._hints' in sys.modules)\n"
    )
    out = _lines_printed_by(code)
    assert out == [
        "done hi [False, False, False]",
        "bad True True",
        "{} Hints(read_only=None, destructive=None, open_world=None) True",
    ]


def test_tool_hints_in_every_form() -> None:
    for given, wire in [
        (None, {}),
        ({}, {}),
        ({"read_only": True}, {"readOnly": True}),
        ({"readOnly": False, "open_world": True}, {"readOnly": False, "openWorld": True}),
        ({"readOnly": None, "read_only": True}, {}),  # the camelCase key wins, even as None
        ({"destructive": True, "unknown": True}, {"destructive": True}),
        (contenox.Hints(destructive=False), {"destructive": False}),
    ]:
        t = contenox.Tool("t", lambda a: a, hints=given)
        assert t.spec()["hints"] == wire, given
        assert t.hints == contenox.Hints.from_dict(wire)
        assert t.hints.to_dict() == wire
    t = contenox.Tool("t", lambda a: a)
    t.hints = {"read_only": True}
    assert t.hints == contenox.Hints(read_only=True) and t.spec()["hints"] == {"readOnly": True}
    t.hints = contenox.Hints(open_world=False)
    assert t.spec()["hints"] == {"openWorld": False}
    assert "hints(openWorld=False)" in repr(t)


async def test_many_turns_on_one_loop_complete_through_its_completer() -> None:
    from contenox import _bridge

    clients = [scripted(*[{"text": f"c{i} t{n}"} for n in range(5)]) for i in range(8)]
    for n in range(5):
        got = await asyncio.gather(*(c.run(f"t{n}") for c in clients))
        assert [r.final_text for r in got] == [f"c{i} t{n}" for i in range(8)]
    loop = asyncio.get_running_loop()
    pid, completer = _bridge._completers[loop]
    assert pid == os.getpid() and completer is not None
    # Streams and errors go the same way.
    run = clients[0].stream("after the script")
    assert [e.type async for e in run][-1] == "turn_end"
    assert (await run.result()).outcome == "error"
    clients[1].close()
    with pytest.raises(contenox.ClosedError):
        await clients[1].run("closed")


async def test_a_cancelled_run_through_the_completer_still_cancels_the_turn() -> None:
    client = scripted({"stall": True}, {"text": "next"})
    task = asyncio.ensure_future(client.run("stall"))
    await asyncio.sleep(0.05)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    # The engine ended that turn (cancelled, transcript valid): the next one runs.
    r = await asyncio.wait_for(client.run("again"), 10)
    assert r.final_text == "next"
    roles = [m["role"] for m in r.transcript.messages]
    assert roles[-2:] == ["user", "assistant"]


def test_a_loop_without_add_reader_falls_back_to_call_soon_threadsafe() -> None:
    class NoReader(asyncio.SelectorEventLoop):
        def add_reader(self, *args: Any) -> Any:
            raise NotImplementedError

    from contenox import _bridge

    loop = NoReader()
    try:
        r = loop.run_until_complete(scripted({"text": "plain"}).run("x"))
        assert r.final_text == "plain"
        assert _bridge._completers[loop][1] is None
    finally:
        loop.close()


# --- replies that stop short ----------------------------------------------------------------


async def test_a_reply_that_stops_short_says_why() -> None:
    client = scripted({"text": "I can't help with that.", "stop_reason": "refusal"})
    run = client.stream("x")
    stops = [e for e in [e async for e in run] if isinstance(e, contenox.events.Stop)]
    result = await run.result()
    assert [s.reason for s in stops] == ["refusal"]
    assert (result.outcome, result.stop_reason) == ("done", "refusal")
    assert result.final_text == "I can't help with that."
    assert result.to_dict()["stop_reason"] == "refusal"
    # A reply cut at max_tokens: its call is not executed, and a full reply has no stop_reason.
    client = scripted({**call("echo", {"text": "hi"}), "stop_reason": "max_tokens"}, {"text": "ok"})
    result = await client.run("x")
    assert result.stop_reason == "max_tokens"
    assert "not executed" in results(result)[0]["content"]
    assert (await client.run("again")).stop_reason is None


def test_fallback_entries_are_checked_at_creation_and_the_event_reads() -> None:
    with pytest.raises(contenox.ConfigurationError, match=r"fallback\[1\]\.model: is missing"):
        contenox.create_client(
            style="openai",
            model="m",
            base_url="http://127.0.0.1:9/v1",
            fallback=[{"model": "second"}, {"style": "anthropic"}],
        )
    contenox.create_client(
        style="openai",
        model="m",
        base_url="http://127.0.0.1:9/v1",
        fallback=[{"model": "two"}, "three"],
    ).close()
    from contenox import events

    e = events.event_from_dict(
        {"type": "fallback", "from_model": "a", "to_model": "b", "status": 529, "error": "x"}
    )
    assert isinstance(e, events.Fallback)
    assert (e.from_model, e.to_model, e.status, e.error) == ("a", "b", 529, "x")
    u = events.event_from_dict({"type": "usage", "usage": {"input_tokens": 1}, "model": "b"})
    assert isinstance(u, events.UsageEvent) and u.model == "b"
