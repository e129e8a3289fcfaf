"""The opt-in builtins that need the host: a web search provider (``websearch=``), sync or
async, as a function or an object, failing or cancelled."""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import contenox
import pytest

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
    return [m for m in r.transcript.messages if m["role"] == "tool"]


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
        ("not a list", "websearch returned a str"),
        ({"title": "x", "url": "y"}, "websearch returned a dict"),
        (None, "websearch returned a NoneType"),
        ([{"title": "x"}], "websearch result 0: 'url' must be a str, it is missing"),
        ([{"title": "x", "url": 3}], "websearch result 0: 'url' must be a str, it is a int"),
        ([object()], "websearch result 0 is a object"),
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
