"""The ``telemetry`` option from Python: spans posted over OTLP/HTTP JSON to a receiver the test
starts (the real-collector check is tests/telemetry/check.py), a collector that is down failing
no turn, a bad option refused, and the example."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path
from typing import Any, ClassVar

import contenox
import pytest


class _Receiver(BaseHTTPRequestHandler):
    got: ClassVar[list[tuple[str, dict[str, str], Any]]] = []

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers["content-length"]))
        type(self).got.append((self.path, dict(self.headers), json.loads(body)))
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", "2")
        self.end_headers()
        self.wfile.write(b"{}")

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def receiver() -> Iterator[tuple[str, list[tuple[str, dict[str, str], Any]]]]:
    got: ClassVar[list[tuple[str, dict[str, str], Any]]] = []
    handler = type("Receiver", (_Receiver,), {"got": got})
    server = HTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", got
    finally:
        server.shutdown()
        server.server_close()


def _clients(telemetry: Any) -> tuple[contenox.Client, contenox.Client]:
    researcher = contenox.create_client(
        style="scripted", model="small", builtins=[], script=[{"text": "42."}]
    )
    lead = contenox.create_client(
        style="scripted",
        model="big",
        builtins=["bash"],
        policy={"rules": [{"tool": "bash", "action": "deny"}], "default_action": "allow"},
        script=[
            {"tool_calls": [{"id": "c1", "name": "researcher", "arguments": {"prompt": "?"}}]},
            {"tool_calls": [{"id": "c2", "name": "bash", "arguments": {"command": "ls"}}]},
            {"text": "Done."},
        ],
        telemetry=telemetry,
    )
    lead.register(researcher.as_tool_with("researcher", "Looks things up."))
    return lead, researcher


def _spans(got: list[tuple[str, dict[str, str], Any]]) -> list[dict[str, Any]]:
    return [
        span
        for _, _, body in got
        for rs in body["resourceSpans"]
        for ss in rs["scopeSpans"]
        for span in ss["spans"]
    ]


def test_spans_reach_the_endpoint_and_close_flushes_them(
    receiver: tuple[str, list[tuple[str, dict[str, str], Any]]],
) -> None:
    url, got = receiver
    lead, researcher = _clients(
        {"endpoint": url, "service_name": "py-test", "headers": {"x-key": "k"}}
    )
    result = lead.run_sync("Go.")
    assert result.outcome == "done"
    lead.close()
    researcher.close()
    assert got, "nothing was exported"
    assert all(path == "/v1/traces" for path, _, _ in got)
    assert all(headers.get("x-key") == "k" for _, headers, _ in got)
    service = got[0][2]["resourceSpans"][0]["resource"]["attributes"][0]
    assert service == {"key": "service.name", "value": {"stringValue": "py-test"}}
    spans = _spans(got)
    by_id = {s["spanId"]: s for s in spans}
    tree = sorted(
        (s["name"], by_id[s["parentSpanId"]]["name"] if "parentSpanId" in s else None)
        for s in spans
    )
    assert tree == [
        ("chat big", "invoke_agent"),
        ("chat big", "invoke_agent"),
        ("chat big", "invoke_agent"),
        ("chat small", "invoke_agent researcher"),
        ("execute_tool bash", "invoke_agent"),
        ("execute_tool researcher", "invoke_agent"),
        ("invoke_agent", None),
        ("invoke_agent researcher", "execute_tool researcher"),
    ]
    bash = next(s for s in spans if s["name"] == "execute_tool bash")
    decision = next(a for a in bash["attributes"] if a["key"] == "contenox.gate.decision")
    assert decision["value"] == {"stringValue": "deny"}
    assert bash["status"]["code"] == 2


def test_a_collector_that_is_down_fails_no_turn() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    lead, researcher = _clients({"endpoint": f"http://127.0.0.1:{port}"})
    result = lead.run_sync("Go.")
    assert result.outcome == "done"
    assert result.final_text == "Done."
    lead.close()
    researcher.close()


def test_a_bad_telemetry_option_is_a_configuration_error() -> None:
    with pytest.raises(contenox.ConfigurationError) as e:
        contenox.create_client(
            style="scripted", script=[], telemetry={"endpoint": "ftp://127.0.0.1"}
        )
    assert e.value.option == "telemetry"
    with pytest.raises(contenox.ConfigurationError):
        contenox.create_client(
            style="scripted",
            script=[],
            telemetry={"endpont": "http://127.0.0.1"},  # type: ignore[typeddict-unknown-key]
        )


def test_the_telemetry_example_runs_without_a_collector() -> None:
    example = Path(__file__).resolve().parents[2] / "examples" / "python" / "telemetry.py"
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    out = subprocess.run(
        [sys.executable, str(example)],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
        env={"OTEL_EXPORTER_OTLP_ENDPOINT": f"http://127.0.0.1:{port}", "PATH": "/usr/bin:/bin"},
    ).stdout
    assert out == "done: Researcher says 42.\n"
