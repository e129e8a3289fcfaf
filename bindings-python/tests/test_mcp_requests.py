"""An MCP server's own requests through the Python API, against the real npm server-everything
(stdio): an elicitation reaches ``wait_for`` as a typed pending request and the answer reaches
the server; a sampling request is denied by a policy, then allowed and answered by the client's
model; ``roots/list`` gives the client's root. docs/mcp.md has the rules."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import contenox
import pytest
from contenox.events import Gate, Pending, ToolResult

MCP_DIR = Path(__file__).resolve().parents[2] / "tests" / "mcp"
ELICIT = "everything__trigger-elicitation-request"
SAMPLE = "everything__trigger-sampling-request"


def everything(**switches: Any) -> dict[str, Any]:
    modules = Path(os.environ.get("CONTENOX_MCP_NODE_MODULES") or MCP_DIR / "node_modules")
    js = modules / "@modelcontextprotocol" / "server-everything" / "dist" / "index.js"
    if not js.exists():
        pytest.fail(f"server-everything not found at {js}: run tests/mcp/install.sh")
    return {
        "mcpServers": {"everything": {"command": "node", "args": [str(js), "stdio"], **switches}}
    }


def call(name: str, args: dict[str, Any] | None = None) -> dict[str, Any]:
    return {"tool_calls": [{"id": "c1", "name": name, "arguments": args or {}}]}


async def run_one(client: Any) -> tuple[ToolResult, list[Any]]:
    run = client.stream("go")
    result = await run.result()
    assert result.outcome == "done", result
    results = [e for e in run.events if isinstance(e, ToolResult)]
    assert len(results) == 1, run.events
    return results[0], run.events


async def test_an_elicitation_reaches_wait_for_with_its_schema_and_the_answer_reaches_the_server() -> (
    None
):
    seen: list[contenox.PendingRequest] = []

    async def wait_for(request: contenox.PendingRequest, cancel: Any) -> dict[str, Any]:
        seen.append(request)
        return {"result": {"name": "Grace Hopper", "check": True, "integer": 9}}

    source = await contenox.load_mcp(everything())
    try:
        client = contenox.create_client(
            style="scripted",
            script=[call(ELICIT), {"text": "done"}],
            builtins=[],
            wait_for=wait_for,
        )
        source.register_into(client)
        result, events = await run_one(client)
    finally:
        await source.close()
    assert not result.is_error, result.content
    assert "Name: Grace Hopper" in result.content and "Favorite Integer: 9" in result.content
    assert len(seen) == 1
    request = seen[0]
    assert request.kind == "elicitation" and request.name == ELICIT and request.call_id == "c1"
    elicitation = request.elicitation
    assert isinstance(elicitation, contenox.Elicitation)
    assert elicitation.server == "everything"
    assert elicitation.requested_schema["required"] == ["name"]
    assert elicitation.requested_schema["properties"]["name"]["type"] == "string"
    assert any(isinstance(e, Pending) for e in events)


async def test_an_answer_outside_the_schema_is_declined_and_never_reaches_the_server() -> None:
    async def wait_for(request: contenox.PendingRequest, cancel: Any) -> dict[str, Any]:
        return {"result": {"name": 31337}}

    source = await contenox.load_mcp(everything())
    try:
        client = contenox.create_client(
            style="scripted",
            script=[call(ELICIT), {"text": "done"}],
            builtins=[],
            wait_for=wait_for,
        )
        source.register_into(client)
        result, _ = await run_one(client)
    finally:
        await source.close()
    assert "declined" in result.content and "31337" not in result.content


async def test_sampling_is_denied_by_a_policy_then_allowed() -> None:
    policy = {
        "default_action": "allow",
        "rules": [{"tools": "mcp", "tool": "sampling", "action": "deny"}],
    }
    script = [call(SAMPLE, {"prompt": "a haiku", "maxTokens": 30}), {"text": "done"}]
    source = await contenox.load_mcp(everything(sampling=True))
    try:
        client = contenox.create_client(style="scripted", script=script, builtins=[], policy=policy)
        source.register_into(client)
        denied, events = await run_one(client)
    finally:
        await source.close()
    assert "policy denied sampling" in denied.content, denied.content
    gates = [e for e in events if isinstance(e, Gate) and e.name == "sampling"]
    assert [g.decision for g in gates] == ["deny"] and gates[0].source == "mcp"

    answer = {"text": "Quiet disk at dusk", "usage": {"input_tokens": 500, "output_tokens": 5}}
    source = await contenox.load_mcp(everything(sampling=True))
    try:
        client = contenox.create_client(
            style="scripted", script=[script[0], answer, {"text": "done"}], builtins=[]
        )
        source.register_into(client)
        run = client.stream("go")
        result = await run.result()
    finally:
        await source.close()
    allowed = [e for e in run.events if isinstance(e, ToolResult)]
    assert "Quiet disk at dusk" in allowed[0].content, allowed
    assert result.usage.input_tokens >= 500


async def test_sampling_is_off_by_default_and_roots_are_the_clients_root(tmp_path: Path) -> None:
    source = await contenox.load_mcp(everything())
    try:
        assert not any("sampling" in t.name for t in source.tools())
        client = contenox.create_client(
            style="scripted",
            script=[call("everything__get-roots-list"), {"text": "done"}],
            builtins=[],
            root=str(tmp_path),
        )
        source.register_into(client)
        result, _ = await run_one(client)
    finally:
        await source.close()
    assert f"file://{tmp_path.resolve()}" in result.content, result.content


class Vault:
    """tests/mcp/oauth_server.py (the Python SDK's own authorization server and a protected
    MCP server) on a free loopback port, stopped on exit."""

    def __init__(self) -> None:
        import socket
        import subprocess
        import time

        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            self.port = s.getsockname()[1]
        python = os.environ.get("CONTENOX_MCP_PYTHON") or str(MCP_DIR / ".venv" / "bin" / "python")
        self.proc = subprocess.Popen(
            [python, str(MCP_DIR / "oauth_server.py"), str(self.port)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + 20
        while True:
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=1).close()
                break
            except OSError:
                assert time.monotonic() < deadline, "oauth_server.py did not listen"
                time.sleep(0.05)

    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/mcp"

    def post(self, path: str) -> None:
        import urllib.request

        urllib.request.urlopen(urllib.request.Request(self.url()[:-4] + path, method="POST")).read()

    def close(self) -> None:
        self.proc.kill()
        self.proc.wait()


class Auth:
    """The host's OAuth part: tokens in a dict, a "browser" that follows the authorization URL."""

    redirect_uri = "http://127.0.0.1:9/callback"

    def __init__(self) -> None:
        self.store: dict[str, str] = {}
        self.saved: list[str] = []
        self.urls: list[str] = []

    async def authorize(self, server: str, url: str) -> str:
        import http.client
        from urllib.parse import urlsplit

        self.urls.append(url)
        u = urlsplit(url)
        conn = http.client.HTTPConnection(u.hostname or "", u.port)
        conn.request("GET", f"{u.path}?{u.query}")
        location = conn.getresponse().getheader("Location")
        conn.close()
        assert location is not None
        return location

    def load(self, key: str) -> str | None:
        return self.store.get(key)

    def save(self, key: str, value: str) -> None:
        self.store[key] = value
        self.saved.append(value)

    def tokens(self) -> list[str]:
        import json

        out = []
        for v in self.saved:
            d = json.loads(v)
            out += [d[k] for k in ("access_token", "refresh_token") if d.get(k)]
        return out


async def test_oauth_tools_load_after_the_authorization_callback_and_no_token_shows() -> None:
    vault = Vault()
    auth = Auth()
    try:
        source = await contenox.load_mcp(
            {"mcpServers": {"vault": {"type": "http", "url": vault.url()}}}, auth=auth
        )
        try:
            assert [t.name for t in source.tools()] == ["vault__vault_sum"]
            assert len(auth.urls) == 1 and "code_challenge_method=S256" in auth.urls[0]
            shown = [repr(source), repr(source.servers)]
            for step in ("first", "expire", "revoke"):
                if step != "first":
                    vault.post(f"/_test/{step}")
                client = contenox.create_client(
                    style="scripted",
                    script=[call("vault__vault_sum", {"a": 40, "b": 2}), {"text": "done"}],
                    builtins=[],
                )
                source.register_into(client)
                result, events = await run_one(client)
                assert "vault says 42" in result.content, (step, result.content)
                shown += [repr(e) for e in events] + [client.transcript.to_json()]
            assert len(auth.urls) == 2, "the revoked token needed a new authorization"
        finally:
            await source.close()
    finally:
        vault.close()
    tokens = auth.tokens()
    assert tokens
    for text in shown:
        for token in tokens:
            assert token not in text
