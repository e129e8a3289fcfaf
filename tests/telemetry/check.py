"""The same turn from Python and from Node against a real OpenTelemetry Collector.

Starts the collector (built from its Go modules by scripts/otel-collector.sh: the OTLP receiver
on a loopback port, the file exporter writing what it receives as OTLP/JSON lines), runs
turn.py and turn.mjs (a turn with a subagent and a denied call, a planted secret in the API
key, the model headers, the exporter's headers, the prompt and a tool argument), stops the
collector, and checks what it stored: in each language one trace with the expected tree and
the GenAI conventions' attributes, the same tree and attribute names in both, and the secret
nowhere in any span or resource.

Usage: python3 tests/telemetry/check.py COLLECTOR_BINARY (scripts/test.sh telemetry)."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
SECRET = "sk-PLANTED-SECRET-4242"

EXPECTED_TREE = [
    ("invoke_agent", None),
    ("chat big-model", "invoke_agent"),
    ("chat big-model", "invoke_agent"),
    ("chat big-model", "invoke_agent"),
    ("execute_tool researcher", "invoke_agent"),
    ("invoke_agent researcher", "execute_tool researcher"),
    ("chat small-model", "invoke_agent researcher"),
    ("execute_tool bash", "invoke_agent"),
]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_listening(port: int, proc: subprocess.Popen[bytes], log: Path) -> None:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            sys.exit(f"the collector exited ({proc.returncode}):\n{log.read_text()}")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
            return
        except OSError:
            time.sleep(0.1)
    sys.exit(f"the collector did not listen on {port}:\n{log.read_text()}")


def attributes(items: list[dict[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for kv in items:
        ((kind, value),) = kv["value"].items() if kv["value"] else (("empty", None),)
        out[kv["key"]] = (kind, value)
    return out


def traces(stored: Path) -> dict[str, list[dict[str, Any]]]:
    """service.name -> its spans (each with its resource's service name)."""
    by_service: dict[str, list[dict[str, Any]]] = {}
    for line in stored.read_text().splitlines():
        if not line.strip():
            continue
        for rs in json.loads(line)["resourceSpans"]:
            service = attributes(rs["resource"]["attributes"])["service.name"][1]
            for ss in rs["scopeSpans"]:
                assert ss["scope"]["name"] == "contenox", ss["scope"]
                by_service.setdefault(service, []).extend(ss["spans"])
    return by_service


def tree(spans: list[dict[str, Any]]) -> list[tuple[str, str | None]]:
    by_id = {s["spanId"]: s for s in spans}
    return sorted(
        (s["name"], by_id[s["parentSpanId"]]["name"] if s.get("parentSpanId") else None)
        for s in spans
    )


def shape(spans: list[dict[str, Any]]) -> list[tuple[str, list[str]]]:
    """Each span's name with its attribute names: what must be the same in every language."""
    return sorted(
        (s["name"], sorted(attributes(s.get("attributes", [])))) for s in spans
    )


def check_one(language: str, spans: list[dict[str, Any]]) -> None:
    assert tree(spans) == sorted(EXPECTED_TREE, key=lambda t: (t[0], t[1] or "")), (
        language,
        tree(spans),
    )
    assert len({s["traceId"] for s in spans}) == 1, f"{language}: more than one trace"
    named = {s["name"]: s for s in spans}
    root = attributes(named["invoke_agent"]["attributes"])
    assert root["gen_ai.operation.name"] == ("stringValue", "invoke_agent"), root
    chat = attributes(named["chat big-model"]["attributes"])
    for key in (
        "gen_ai.operation.name",
        "gen_ai.provider.name",
        "gen_ai.request.model",
        "gen_ai.response.model",
        "gen_ai.usage.input_tokens",
        "gen_ai.usage.output_tokens",
        "gen_ai.response.finish_reasons",
        "gen_ai.request.temperature",
    ):
        assert key in chat, (language, key, chat)
    assert named["chat big-model"]["kind"] == 3, "chat spans are CLIENT spans"
    call = attributes(named["execute_tool researcher"]["attributes"])
    assert call["gen_ai.tool.name"] == ("stringValue", "researcher"), call
    assert call["gen_ai.tool.call.id"] == ("stringValue", "c1"), call
    assert call["contenox.tool.source"] == ("stringValue", "subagent"), call
    sub = attributes(named["invoke_agent researcher"]["attributes"])
    assert sub["gen_ai.agent.name"] == ("stringValue", "researcher"), sub
    denied = named["execute_tool bash"]
    bash = attributes(denied["attributes"])
    assert bash["contenox.gate.decision"] == ("stringValue", "deny"), bash
    assert bash["contenox.policy.rule"] == ("stringValue", 'rules[0] ("no shell")'), (
        bash
    )
    assert bash["error.type"] == ("stringValue", "denied"), bash
    assert denied["status"].get("code") == 2, denied["status"]
    for s in spans:
        assert int(s["startTimeUnixNano"]) <= int(s["endTimeUnixNano"]), s


def main() -> None:
    collector = sys.argv[1]
    port = free_port()
    with tempfile.TemporaryDirectory() as tmp:
        stored = Path(tmp) / "spans.jsonl"
        config = Path(tmp) / "collector.yaml"
        config.write_text(
            "receivers:\n  otlp:\n    protocols:\n      http:\n"
            f"        endpoint: 127.0.0.1:{port}\n"
            f"exporters:\n  file:\n    path: {stored}\n"
            "service:\n  telemetry:\n    metrics:\n      level: none\n"
            "  pipelines:\n    traces:\n      receivers: [otlp]\n      exporters: [file]\n"
        )
        log = Path(tmp) / "collector.log"
        with log.open("wb") as out:
            proc = subprocess.Popen(
                [collector, "--config", str(config)],
                stdout=out,
                stderr=subprocess.STDOUT,
            )
        try:
            wait_listening(port, proc, log)
            endpoint = f"http://127.0.0.1:{port}"
            env = dict(os.environ)
            for k in list(env):
                if k.startswith("OTEL_"):
                    del env[k]
            subprocess.run(
                [sys.executable, str(HERE / "turn.py"), endpoint],
                check=True,
                env=env,
                timeout=120,
            )
            subprocess.run(
                ["node", str(HERE / "turn.mjs"), endpoint],
                check=True,
                env=env,
                timeout=120,
            )
        finally:
            # The collector writes what it got before it exits on SIGTERM.
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        text = stored.read_text() if stored.exists() else ""
        assert SECRET not in text, "the planted secret reached the collector"
        by_service = traces(stored)
        assert set(by_service) == {"contenox-python", "contenox-node"}, sorted(
            by_service
        )
        for language, spans in by_service.items():
            check_one(language, spans)
        python, node = by_service["contenox-python"], by_service["contenox-node"]
        assert shape(python) == shape(node), (shape(python), shape(node))
        print(
            f"telemetry: the collector stored {len(python)} spans from Python and {len(node)} "
            "from Node: the same tree and attribute names, no planted secret"
        )


if __name__ == "__main__":
    main()
