"""contenox.load_remote through the Python API: a loopback service with an OpenAPI document,
a hook with a secret header and an injected value, a scripted model calling its tool."""

from __future__ import annotations

import json
import socket
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

import contenox
import pytest

SECRET = "Bearer tok-9f8e7d6c5b4a"
TENANT = "tenant-3a2b1c0d"

DOC = {
    "openapi": "3.0.0",
    "info": {"title": "greeter", "version": "1"},
    "paths": {
        "/greet/{who}": {
            "get": {
                "operationId": "greet",
                "parameters": [
                    {"name": "who", "in": "path", "required": True, "schema": {"type": "string"}},
                    {"name": "tenant", "in": "query", "schema": {"type": "string"}},
                ],
            }
        }
    },
}


class Service:
    """One loopback HTTP service: serves DOC and answers /greet/<who>; records each call."""

    def __init__(self, port: int = 0) -> None:
        self.calls: list[dict[str, Any]] = []
        service = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_GET(self) -> None:
                url = urlsplit(self.path)
                if url.path == "/openapi.json":
                    body = json.dumps(DOC).encode()
                elif url.path.startswith("/greet/"):
                    service.calls.append(
                        {
                            "path": url.path,
                            "query": parse_qs(url.query),
                            "authorization": self.headers.get("Authorization"),
                        }
                    )
                    # A service that echoes the secret: the model must not see it.
                    who = url.path.removeprefix("/greet/")
                    body = json.dumps({"hello": who, "echo": self.headers.get("Authorization")})
                    body = body.encode()
                else:
                    self.send_error(404)
                    return
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        self.server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(timeout=5)


@pytest.fixture
def service() -> Iterator[Service]:
    s = Service()
    try:
        yield s
    finally:
        s.stop()


def _hook(url: str) -> contenox.RemoteHook:
    return contenox.RemoteHook(
        name="greeter", url=url, headers={"Authorization": SECRET}, inject={"tenant": TENANT}
    )


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def _never_shows_secrets(*texts: str) -> None:
    for text in texts:
        assert SECRET not in text and "tok-9f8e7d6c5b4a" not in text, text
        assert TENANT not in text, text


async def test_a_hook_is_loaded_called_and_its_secrets_never_print(service: Service) -> None:
    hook = _hook(service.url)
    _never_shows_secrets(repr(hook), str(hook))
    assert "Authorization" in repr(hook) and "<redacted>" in repr(hook)

    states: list[tuple[str, contenox.HookState]] = []
    source = await contenox.load_remote([hook], on_hook=lambda n, s: states.append((n, s)))
    assert states == [("greeter", contenox.HookState(state="ready", tools=1))]
    assert source.hooks == states
    assert [t.name for t in source.tools()] == ["greet"]
    assert [(t.source, t.server) for t in source.tools()] == [("remote", "greeter")]
    # The injected parameter is hidden from the model.
    spec = source.tools()[0].spec()
    assert "tenant" not in spec["input_schema"].get("properties", {})
    _never_shows_secrets(repr(source), json.dumps(spec))

    client = contenox.create_client(
        style="scripted",
        script=[
            {"tool_calls": [{"id": "c1", "name": "greet", "arguments": {"who": "bob"}}]},
            {"text": "done"},
        ],
        remote=source,
    )
    run = client.stream("greet bob")
    events = [e async for e in run]
    result = await run.result()
    assert result.outcome == "done"
    tool_results = [e for e in events if isinstance(e, contenox.events.ToolResult)]
    assert len(tool_results) == 1 and not tool_results[0].is_error
    assert '"hello":"bob"' in tool_results[0].content.replace(" ", "")
    # The service got the header and the injected value; what it echoed was scrubbed.
    assert service.calls == [
        {"path": "/greet/bob", "query": {"tenant": [TENANT]}, "authorization": SECRET}
    ]
    _never_shows_secrets(
        *(repr(e) for e in events), json.dumps([e.to_dict() for e in events]), repr(result)
    )

    await source.close()
    assert source.closed
    assert "greet" not in [t["name"] for t in client.tools]
    client.close()


async def test_an_unreachable_hook_is_unavailable_and_comes_up_on_refresh() -> None:
    port = _free_port()
    source = await contenox.load_remote([_hook(f"http://127.0.0.1:{port}")])
    [(name, state)] = source.hooks
    assert name == "greeter" and state.state == "unavailable" and state.error
    _never_shows_secrets(state.error or "", repr(source))
    assert source.tools() == []
    # The service comes up on that port: refresh() reads it and its tool appears.
    service = Service(port)
    try:
        states = await source.refresh()
        assert states == [("greeter", contenox.HookState(state="ready", tools=1))]
        assert source.hooks == states
        assert [t.name for t in source.tools()] == ["greet"]
        client = contenox.create_client(
            style="scripted",
            script=[
                {"tool_calls": [{"id": "c1", "name": "greet", "arguments": {"who": "ann"}}]},
                {"text": "done"},
            ],
            remote=source,
        )
        result = await client.run("greet ann")
        assert result.outcome == "done"
        assert [c["path"] for c in service.calls] == ["/greet/ann"]
        client.close()
    finally:
        await source.close()
        service.stop()


async def test_invalid_hooks_are_configuration_errors_that_do_not_print_values() -> None:
    with pytest.raises(contenox.ConfigurationError) as bad_url:
        await contenox.load_remote([{"name": "x", "url": "ftp://nowhere", "headers": {}}])
    assert "url" in str(bad_url.value)
    with pytest.raises(contenox.ConfigurationError) as typo:
        await contenox.load_remote([{"name": "x", "url": "http://127.0.0.1:1", "header": {}}])
    assert "header" in str(typo.value)
    with pytest.raises(contenox.ConfigurationError) as bad_header:
        await contenox.load_remote(
            [
                {
                    "name": "x",
                    "url": "http://127.0.0.1:1",
                    "headers": {"Authorization": SECRET + "\n"},
                }
            ]
        )
    _never_shows_secrets(str(bad_header.value), repr(bad_header.value))
    with pytest.raises(contenox.ConfigurationError):
        await contenox.load_remote(
            [{"name": "x", "url": "http://127.0.0.1:1"}, {"name": "x", "url": "http://127.0.0.1:2"}]
        )
    with pytest.raises(contenox.ConfigurationError):
        await contenox.load_remote({"name": "x"})  # type: ignore[arg-type]
