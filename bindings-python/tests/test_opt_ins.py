"""The opt-in builtins that need the host: a web search provider (``websearch=``), sync or
async, as a function or an object, failing or cancelled; and the background shells of a client
(``background=True``, ``client.background_shells()``), killed by ``close()``."""

from __future__ import annotations

import asyncio
import random
import threading
from pathlib import Path
from typing import Any

import contenox
import pytest
from conftest import needs_proc, pids_running, wait_until, with_text

RUST = "1. Rust\n   https://www.rust-lang.org/\n   A language empowering everyone.\n"
TOKIO = "2. Tokio\n   https://tokio.rs/\n   An asynchronous runtime.\n"
RESULTS: list[Any] = [
    {
        "title": "Rust",
        "url": "https://www.rust-lang.org/",
        "snippet": "A language empowering everyone.",
    },
    contenox.SearchResult("Tokio", "https://tokio.rs/", "An asynchronous runtime."),
    {"title": "Blog", "url": "https://blog.example.com/rust"},
]


def call(name: str, args: dict[str, Any], cid: str = "call_1") -> dict[str, Any]:
    return {"tool_calls": [{"id": cid, "name": name, "arguments": args}]}


def scripted(*entries: dict[str, Any], **kw: Any) -> contenox.Client:
    kw.setdefault("builtins", [])
    return contenox.create_client(style="scripted", script=list(entries), **kw)


def results(r: contenox.TurnResult) -> list[dict[str, Any]]:
    return [with_text(m) for m in r.transcript.messages if m["role"] == "tool"]


# --- websearch -------------------------------------------------------------------------------


def providers(seen: list[contenox.SearchRequest]) -> dict[str, Any]:
    """The same provider in every shape ``websearch=`` takes."""

    def sync_fn(request: contenox.SearchRequest) -> list[Any]:
        seen.append(request)
        return RESULTS

    async def async_fn(request: contenox.SearchRequest) -> list[Any]:
        await asyncio.sleep(0)
        seen.append(request)
        return RESULTS

    def sync_with_cancel(
        request: contenox.SearchRequest, cancel: contenox.CancelSignal
    ) -> list[Any]:
        assert not cancel.is_cancelled()
        seen.append(request)
        return RESULTS

    class AsyncProvider:
        async def search(self, request: contenox.SearchRequest) -> list[Any]:
            seen.append(request)
            return RESULTS

    class SyncProvider:
        def search(self, request: contenox.SearchRequest) -> tuple[Any, ...]:
            seen.append(request)
            return tuple(RESULTS)

    return {
        "sync": sync_fn,
        "async": async_fn,
        "sync_with_cancel": sync_with_cancel,
        "async_object": AsyncProvider(),
        "sync_object": SyncProvider(),
    }


@pytest.mark.parametrize(
    "shape", ["sync", "async", "sync_with_cancel", "async_object", "sync_object"]
)
async def test_websearch_results_are_numbered(shape: str) -> None:
    seen: list[contenox.SearchRequest] = []
    client = scripted(
        call("websearch", {"query": "rust async"}),
        call(
            "websearch",
            {"query": "rust", "max_results": 1, "blocked_domains": ["rust-lang.org"]},
            "call_2",
        ),
        {"text": "ok"},
        websearch=providers(seen)[shape],
    )
    assert [t["name"] for t in client.tools] == ["websearch"]
    r = await client.run("search")
    assert r.outcome == "done" and r.final_text == "ok"
    first, second = results(r)
    assert not first["is_error"]
    assert first["content"] == RUST + "\n" + TOKIO + "\n3. Blog\n   https://blog.example.com/rust\n"
    assert not second["is_error"]
    assert second["content"].startswith("1. Tokio\n") and "2. " not in second["content"]
    assert seen == [
        contenox.SearchRequest("rust async", 10),
        contenox.SearchRequest("rust", 1, blocked_domains=("rust-lang.org",)),
    ]


@pytest.mark.parametrize("mode", ["sync", "async"])
async def test_websearch_provider_that_raises_is_an_error_result(mode: str) -> None:
    def search(request: contenox.SearchRequest) -> list[Any]:
        if request.query == "fail please":
            raise RuntimeError("quota exceeded")
        return RESULTS

    async def asearch(request: contenox.SearchRequest) -> list[Any]:
        return search(request)

    client = scripted(
        call("websearch", {"query": "fail please"}),
        call("websearch", {"query": "rust"}, "call_2"),
        {"text": "still alive"},
        websearch=search if mode == "sync" else asearch,
    )
    r = await client.run("x")
    assert r.outcome == "done" and r.final_text == "still alive"
    failed, ok = results(r)
    assert failed["is_error"] and failed["content"] == "web search failed: quota exceeded"
    assert not ok["is_error"] and ok["content"].startswith(RUST)


@pytest.mark.parametrize(
    ("returned", "message"),
    [
        (
            "not a list",
            "websearch must return a list of {title, url, snippet} results, not a string",
        ),
        (
            {"title": "x", "url": "y"},
            "websearch must return a list of {title, url, snippet} results, not an object",
        ),
        (None, "websearch must return a list of {title, url, snippet} results, not null"),
        ([{"title": "x"}], "websearch result 0: missing field `url`"),
        (
            [{"title": "x", "url": 3}],
            "websearch result 0: invalid type: integer `3`, expected a string",
        ),
        ([object()], "a value of type object is not JSON"),
    ],
)
async def test_websearch_bad_return_is_a_clear_error_result(returned: Any, message: str) -> None:
    client = scripted(
        call("websearch", {"query": "rust"}), {"text": "ok"}, websearch=lambda r: returned
    )
    r = await client.run("x")
    assert r.outcome == "done"
    [tr] = results(r)
    assert tr["is_error"] and message in tr["content"], tr["content"]


async def test_async_websearch_task_is_cancelled_with_the_turn() -> None:
    started = asyncio.Event()
    cancelled = asyncio.Event()

    async def search(request: contenox.SearchRequest) -> list[Any]:
        started.set()
        try:
            await asyncio.sleep(60)
        except asyncio.CancelledError:
            cancelled.set()
            raise
        return []

    client = scripted(
        call("websearch", {"query": "slow"}), {"text": "unreachable"}, websearch=search
    )
    run = client.stream("x")
    await asyncio.wait_for(started.wait(), 10)
    run.cancel()
    r = await asyncio.wait_for(run.result(), 10)
    assert r.outcome == "cancelled"
    await asyncio.wait_for(cancelled.wait(), 10)  # the provider's task itself was cancelled
    assert results(r)[0]["content"] == "cancelled"


async def test_sync_websearch_sees_cancel() -> None:
    noticed = threading.Event()

    def search(request: contenox.SearchRequest, cancel: contenox.CancelSignal) -> list[Any]:
        if cancel.wait(timeout=20):
            noticed.set()
        return []

    client = scripted(call("websearch", {"query": "slow"}), {"text": "x"}, websearch=search)
    run = client.stream("x")
    async for e in run:
        if e.type == "tool_start":
            run.cancel()
    r = await run.result()
    assert r.outcome == "cancelled"
    await asyncio.to_thread(noticed.wait, 10)
    assert noticed.is_set()


def test_websearch_misconfigured() -> None:
    with pytest.raises(contenox.ConfigurationError, match="search method"):
        scripted({"text": "x"}, websearch=42)
    with pytest.raises(contenox.ConfigurationError, match="web search provider"):
        scripted({"text": "x"}, builtins=["websearch"])
    client = scripted({"text": "x"})
    assert "websearch" not in [t["name"] for t in client.tools]


def test_websearch_in_a_sync_script() -> None:
    client = scripted(
        call("websearch", {"query": "rust"}), {"text": "ok"}, websearch=lambda r: RESULTS
    )
    r = client.run_sync("x")
    assert results(r)[0]["content"].startswith(RUST)


# --- background shells ----------------------------------------------------------------------


def background_client(tmp_path: Path, *commands: str) -> contenox.Client:
    entries = [
        call("bash", {"command": c, "run_in_background": True}, f"call_{i}")
        for i, c in enumerate(commands)
    ]
    return scripted(
        *entries, {"text": "started"}, builtins=["bash"], background=True, root=tmp_path
    )


def sleeper() -> tuple[str, str]:
    """A command that runs until killed, and a marker unique to its processes."""
    marker = f"{300 + random.random():.9f}"
    return f"sleep {marker}; echo never", marker


def test_background_shells_off_is_none() -> None:
    client = scripted({"text": "x"}, builtins=["bash"])
    assert client.background_shells() is None


@needs_proc
async def test_background_shell_ids_status_and_close(tmp_path: Path) -> None:
    command, marker = sleeper()
    client = background_client(tmp_path, "echo quick", command)
    shells = client.background_shells()
    assert shells is not None and shells.ids() == []
    r = await client.run("start them")
    assert r.outcome == "done"
    assert [m["content"].split(".")[0] for m in results(r)] == [
        "Started in the background as shell shell_1",
        "Started in the background as shell shell_2",
    ]
    assert shells.ids() == ["shell_1", "shell_2"]
    await wait_until("shell_1 exits", lambda: shells.status("shell_1") == "exited 0")
    assert shells.status("shell_2") == "running"
    assert shells.status("shell_3") is None and shells.status("nonsense") is None
    await wait_until("the sleeper runs", lambda: pids_running(marker))

    client.close()
    await wait_until("the sleeper is gone", lambda: not pids_running(marker))
    await wait_until("shell_2 reads killed", lambda: shells.status("shell_2") == "killed")
    assert shells.status("shell_1") == "exited 0"
    assert client.background_shells() is not None  # still readable after close


@needs_proc
async def test_background_close_all_keeps_the_client(tmp_path: Path) -> None:
    command, marker = sleeper()
    client = background_client(tmp_path, command)
    await client.run("start")
    shells = client.background_shells()
    assert shells is not None
    await wait_until("the sleeper runs", lambda: pids_running(marker))
    shells.close_all()
    await wait_until("the sleeper is gone", lambda: not pids_running(marker))
    await wait_until("shell_1 reads killed", lambda: shells.status("shell_1") == "killed")
    assert not client.closed
    assert "shell_1" in repr(shells)
