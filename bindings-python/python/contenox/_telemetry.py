"""The host's own OpenTelemetry tracer provider, when it has one.

With ``telemetry`` on and the ``opentelemetry`` SDK's provider set globally
(``trace.set_tracer_provider``), a client hands each turn's spans to that provider instead of
starting an exporter of its own: the engine builds the spans (the same tree and attributes in
every binding) and this module re-creates each one in the host's tracer, with the same name,
kind, attributes, events, start and end times and status, parents before children, the turn's
span a child of the host's span that was current when ``run()`` / ``resume()`` was called.
Each span keeps the engine's ids (the SDK tracer's id generator hands them out during the
replay), so the ``traceparent`` a model, MCP or remote request carried names a span the host's
trace holds; a tracer that is not the SDK's gives its own ids.
``opentelemetry-api`` is optional: without it, or with no provider set (the API's default proxy
or no-op provider), the engine's own OTLP exporter is used.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterator
from typing import Any

#: What the native client takes: ``(current_traceparent, replay)``.
HostTracer = tuple[Callable[[], "str | None"], Callable[[list[dict[str, Any]]], None]]


def host_tracer() -> HostTracer | None:
    """The host's global tracer provider as the native client takes it, or None when the host
    has none (``opentelemetry`` not installed, or no provider set)."""
    try:
        from opentelemetry import trace
    except ImportError:
        return None
    provider = trace.get_tracer_provider()
    if isinstance(provider, (trace.ProxyTracerProvider, trace.NoOpTracerProvider)):
        return None
    from . import __version__

    # The SDK makes a new Tracer per call: this one is the client's alone, so its id generator
    # may be the engine's (see _EngineIds).
    tracer = provider.get_tracer("contenox", __version__)
    ids = _EngineIds.install(tracer)
    return (_current_traceparent, lambda spans: _replay(tracer, ids, spans))


class _EngineIds:
    """An id generator that gives the tracer the engine's ids for the span being re-created.

    Set on the client's own SDK ``Tracer`` (its ``id_generator`` attribute); a replay holds the
    lock from setting the ids to starting the span, so turns replayed by two threads at once
    cannot swap them."""

    def __init__(self, fallback: Any) -> None:
        self._fallback = fallback
        self.lock = threading.Lock()
        self.trace_id: int | None = None
        self.span_id: int | None = None

    @classmethod
    def install(cls, tracer: Any) -> _EngineIds | None:
        fallback = getattr(tracer, "id_generator", None)
        if fallback is None or not hasattr(fallback, "generate_span_id"):
            return None
        ids = cls(fallback)
        tracer.id_generator = ids
        return ids

    @contextlib.contextmanager
    def starting(self, trace_id: int, span_id: int) -> Iterator[None]:
        """While a span starts: these are the ids the tracer draws."""
        with self.lock:
            self.trace_id, self.span_id = trace_id, span_id
            try:
                yield
            finally:
                self.trace_id = self.span_id = None

    def generate_span_id(self) -> int:
        if self.span_id is not None:
            return self.span_id
        return int(self._fallback.generate_span_id())

    def generate_trace_id(self) -> int:
        if self.trace_id is not None:
            return self.trace_id
        return int(self._fallback.generate_trace_id())


def _current_traceparent() -> str | None:
    """The current span (of the caller's context) as a W3C ``traceparent``."""
    from opentelemetry import trace

    ctx = trace.get_current_span().get_span_context()
    if not ctx.is_valid:
        return None
    return f"00-{ctx.trace_id:032x}-{ctx.span_id:016x}-{int(ctx.trace_flags) & 1:02x}"


def _replay(tracer: Any, ids: _EngineIds | None, spans: list[dict[str, Any]]) -> None:
    """Re-create one host turn's spans (parents first) in ``tracer``."""
    from opentelemetry import context as otel_context
    from opentelemetry import trace
    from opentelemetry.trace import (
        NonRecordingSpan,
        SpanContext,
        SpanKind,
        Status,
        StatusCode,
        TraceFlags,
    )

    made: dict[str, Any] = {}
    for s in spans:
        parent_id = s["parent_span_id"]
        if parent_id is None:
            # A turn with no host span: a trace of its own.
            parent = otel_context.Context()
        elif parent_id in made:
            parent = trace.set_span_in_context(made[parent_id])
        else:
            # The host's span current at run(): only its ids came through the engine.
            host = SpanContext(
                trace_id=int(s["trace_id"], 16),
                span_id=int(parent_id, 16),
                is_remote=False,
                trace_flags=TraceFlags(TraceFlags.SAMPLED),
            )
            parent = trace.set_span_in_context(NonRecordingSpan(host))
        starting = (
            ids.starting(int(s["trace_id"], 16), int(s["span_id"], 16))
            if ids is not None
            else contextlib.nullcontext()
        )
        with starting:
            span = tracer.start_span(
                s["name"],
                context=parent,
                kind=SpanKind.CLIENT if s["kind"] == "client" else SpanKind.INTERNAL,
                attributes=s["attributes"],
                start_time=s["start_time_unix_nano"],
            )
        for event in s["events"]:
            span.add_event(event["name"], event["attributes"], event["time_unix_nano"])
        if s["status"] == "error":
            span.set_status(Status(StatusCode.ERROR, s["status_message"]))
        span.end(end_time=s["end_time_unix_nano"])
        made[s["span_id"]] = span
