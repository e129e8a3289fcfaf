"""A host with its own OpenTelemetry tracer provider (the ``opentelemetry`` SDK's, set
globally): with ``telemetry`` on, a turn's spans are re-created in it (no second exporter), the
turn's span a child of the host's current span, with the same tree and attribute names as the
engine's own OTLP export of the same turn; no planted secret on any span; with telemetry off,
nothing; with no provider set, the engine's exporter as before."""

from __future__ import annotations

import asyncio
import json
import sys
import tempfile
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path
from typing import Any

import contenox
import pytest
from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, StatusCode
from opentelemetry.util._once import Once

SECRET_PROMPT = "PROMPT-SECRET-5521"
SECRET_ARG = "ARG-SECRET-5522"
SECRET_KEY = "sk-KEY-SECRET-5523"


def _unset_global_provider() -> None:
    # What opentelemetry's own tests do: the global provider can otherwise be set only once.
    trace._TRACER_PROVIDER_SET_ONCE = Once()
    trace._TRACER_PROVIDER = None


@pytest.fixture
def host() -> Iterator[InMemorySpanExporter]:
    """The host's tracer provider, set globally, keeping its finished spans in memory."""
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    _unset_global_provider()
    trace.set_tracer_provider(provider)
    try:
        yield exporter
    finally:
        provider.shutdown()
        _unset_global_provider()


class _Receiver(BaseHTTPRequestHandler):
    got: list[Any]

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers["content-length"]))
        type(self).got.append(json.loads(body))
        self.send_response(200)
        self.send_header("content-length", "2")
        self.end_headers()
        self.wfile.write(b"{}")

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def receiver() -> Iterator[tuple[str, list[Any]]]:
    got: list[Any] = []
    server = HTTPServer(("127.0.0.1", 0), type("R", (_Receiver,), {"got": got}))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", got
    finally:
        server.shutdown()
        server.server_close()


def _clients(telemetry: Any) -> tuple[contenox.Client, contenox.Client]:
    """A lead that asks a researcher subagent, then runs bash (denied by its policy)."""
    researcher = contenox.create_client(
        style="scripted", model="small", builtins=[], script=[{"text": "42."}]
    )
    lead = contenox.create_client(
        style="scripted",
        model="big",
        api_key=SECRET_KEY,
        builtins=["bash"],
        policy={"rules": [{"tool": "bash", "action": "deny"}], "default_action": "allow"},
        script=[
            {"tool_calls": [{"id": "c1", "name": "researcher", "arguments": {"prompt": "?"}}]},
            {
                "tool_calls": [
                    {"id": "c2", "name": "bash", "arguments": {"command": f"echo {SECRET_ARG}"}}
                ]
            },
            {"text": "Done."},
        ],
        telemetry=telemetry,
    )
    lead.register(researcher.as_tool_with("researcher", "Looks things up."))
    return lead, researcher


def _tree(spans: list[ReadableSpan]) -> list[tuple[str, str | None]]:
    by_id = {s.context.span_id: s.name for s in spans}
    return sorted(
        (s.name, by_id.get(s.parent.span_id, "HOST") if s.parent else None) for s in spans
    )


def _otlp_turn(url: str, got: list[Any]) -> list[dict[str, Any]]:
    """The same turn through the engine's own exporter (no host provider): OTLP/JSON spans."""
    lead, researcher = _clients({"endpoint": url})
    assert lead.run_sync(f"Go {SECRET_PROMPT}.").outcome == "done"
    lead.close()
    researcher.close()
    return [
        s
        for body in got
        for rs in body["resourceSpans"]
        for ss in rs["scopeSpans"]
        for s in ss["spans"]
    ]


def test_the_spans_go_to_the_hosts_provider_under_its_current_span(
    receiver: tuple[str, list[Any]],
) -> None:
    url, got = receiver
    # First without a provider: the engine's exporter, as the collector test sees it.
    _unset_global_provider()
    otlp = _otlp_turn(url, got)
    assert len(otlp) == 8
    expected_attributes = {s["name"]: {a["key"] for a in s["attributes"]} for s in otlp}

    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    trace.set_tracer_provider(provider)
    try:
        got.clear()
        lead, researcher = _clients({"endpoint": url})
        tracer = trace.get_tracer("host-app")
        with tracer.start_as_current_span("host request") as host_span:
            result = lead.run_sync(f"Go {SECRET_PROMPT}.")
        assert result.outcome == "done"
        lead.close()
        researcher.close()
        assert got == [], "a second exporter posted spans"
        spans = [s for s in exporter.get_finished_spans() if s.name != "host request"]
        assert _tree(spans) == [
            ("chat big", "invoke_agent"),
            ("chat big", "invoke_agent"),
            ("chat big", "invoke_agent"),
            ("chat small", "invoke_agent researcher"),
            ("execute_tool bash", "invoke_agent"),
            ("execute_tool researcher", "invoke_agent"),
            ("invoke_agent", "HOST"),
            ("invoke_agent researcher", "execute_tool researcher"),
        ]
        turn = next(s for s in spans if s.name == "invoke_agent")
        assert turn.parent is not None
        assert turn.parent.span_id == host_span.get_span_context().span_id
        assert all(s.context.trace_id == host_span.get_span_context().trace_id for s in spans)
        # The same attribute names as the engine's own export, span by span.
        for s in spans:
            assert set((s.attributes or {}).keys()) == expected_attributes[s.name], s.name
        assert turn.instrumentation_scope is not None
        assert turn.instrumentation_scope.name == "contenox"
        # Kinds, times, status and events carried over.
        chats = [s for s in spans if s.name.startswith("chat ")]
        assert all(s.kind == SpanKind.CLIENT for s in chats)
        assert all(s.kind == SpanKind.INTERNAL for s in spans if s not in chats)
        for s in spans:
            assert s.start_time is not None and s.end_time is not None
            assert s.start_time <= s.end_time
            if s.parent is not None and s is not turn:
                parent = next(p for p in spans if p.context.span_id == s.parent.span_id)
                assert parent.start_time is not None and parent.start_time <= s.start_time
        bash = next(s for s in spans if s.name == "execute_tool bash")
        assert bash.status.status_code == StatusCode.ERROR
        assert (bash.attributes or {})["contenox.gate.decision"] == "deny"
        assert (bash.attributes or {})["error.type"] == "denied"
        assert isinstance((turn.attributes or {})["gen_ai.usage.input_tokens"], int)
        # No planted secret anywhere on a span.
        text = "\n".join(s.to_json() for s in spans)
        for secret in (SECRET_PROMPT, SECRET_ARG, SECRET_KEY):
            assert secret not in text
    finally:
        provider.shutdown()
        _unset_global_provider()


def test_async_run_nests_under_the_span_current_in_its_task(
    host: InMemorySpanExporter,
) -> None:
    client = contenox.create_client(
        style="scripted", builtins=[], script=[{"text": "a"}, {"text": "b"}], telemetry=True
    )
    tracer = trace.get_tracer("host-app")

    async def turn(name: str) -> int:
        with tracer.start_as_current_span(name) as span:
            await asyncio.sleep(0)
            await client.run("Go.")
            return span.get_span_context().span_id

    async def main() -> list[int]:
        # Two tasks at once, each with its own current span.
        return list(await asyncio.gather(turn("one"), turn("two")))

    try:
        ids = asyncio.run(main())
    finally:
        client.close()
    turns = [s for s in host.get_finished_spans() if s.name == "invoke_agent"]
    assert sorted(t.parent.span_id for t in turns if t.parent) == sorted(ids)


def test_the_traceparent_a_request_carried_names_a_span_of_the_hosts_trace(
    host: InMemorySpanExporter,
) -> None:
    # The model server saw the chat span's ids; re-created in the host's provider, the span
    # keeps them, so the server's own spans join the host's trace under that chat span.
    from conformance_runner import FakeServer

    scenario = {"name": "ids", "style": "openai", "model": [{"text": "Hi."}], "prompt": "go"}
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "scenario.json"
        path.write_text(json.dumps({**scenario, "expect": {}}))
        server = FakeServer(path)
        try:
            client = contenox.create_client(
                style="openai",
                base_url=server.base_url("openai"),
                model="fake",
                api_key="k",
                builtins=[],
                telemetry=True,
            )
            with trace.get_tracer("host-app").start_as_current_span("host request"):
                assert client.run_sync("go").final_text == "Hi."
            client.close()
            sent = [r["_traceparent"] for r in server.requests()]
        finally:
            server.stop()
    chat = next(s for s in host.get_finished_spans() if s.name == "chat fake")
    assert sent == [f"00-{chat.context.trace_id:032x}-{chat.context.span_id:016x}-01"]
    turn = next(s for s in host.get_finished_spans() if s.name == "invoke_agent")
    assert chat.parent is not None and chat.parent.span_id == turn.context.span_id


def test_with_telemetry_off_the_hosts_provider_gets_nothing(
    host: InMemorySpanExporter,
) -> None:
    for off in (None, False):
        lead, researcher = _clients(off)
        assert lead.run_sync("Go.").outcome == "done"
        lead.close()
        researcher.close()
    assert host.get_finished_spans() == ()


def test_a_replay_that_raises_loses_the_spans_not_the_turn(
    host: InMemorySpanExporter, monkeypatch: pytest.MonkeyPatch
) -> None:
    from contenox import _telemetry

    def broken(tracer: Any, ids: Any, spans: Any) -> None:
        raise RuntimeError("the host's tracer failed")

    monkeypatch.setattr(_telemetry, "_replay", broken)
    seen: list[BaseException | None] = []
    monkeypatch.setattr(sys, "unraisablehook", lambda u: seen.append(u.exc_value))
    lead, researcher = _clients(True)
    result = lead.run_sync("Go.")
    assert result.outcome == "done"
    assert result.final_text == "Done."
    lead.close()
    researcher.close()
    # Reported as Python reports an error nobody can catch, once for the turn.
    assert [str(e) for e in seen] == ["the host's tracer failed"]
