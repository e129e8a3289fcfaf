"""Prompts with images through the Python binding: bytes, bytearray, memoryview and base64 text
reach the request as the style takes images; a file beneath the root is read by its bytes; every
bad part is a ConfigurationError naming it (the engine's check, the same in every binding)."""

from __future__ import annotations

import base64
import dataclasses
import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import contenox
import pytest
from conformance_runner import FakeServer

PNG_B64 = (
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAIAAACQd1PeAAAADElEQVR4nGP4z8AAAAMBAQDJ/pLvAAAAAElFTkSuQmCC"
)
PNG = base64.b64decode(PNG_B64)
# A GIF with no colour table: its bytes decide its type, whatever its file's name.
GIF = b"GIF89a\x01\x00\x01\x00\x00\x00\x00,\x00\x00\x00\x00\x01\x00\x01\x00\x00\x02\x00;"


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[FakeServer, contenox.Client]]:
    scenario = tmp_path / "s.json"
    scenario.write_text(
        json.dumps(
            {
                "name": "images",
                "style": "anthropic",
                "prompt": "p",
                "expect": {},
                "model": [{"text": "A square."}],
            }
        )
    )
    root = tmp_path / "root"
    root.mkdir()
    (root / "shot.png").write_bytes(GIF)
    (root / "notes.png").write_text("not an image")
    (tmp_path / "secret.png").write_bytes(PNG)
    server = FakeServer(scenario)
    client = contenox.create_client(
        style="anthropic",
        base_url=server.base_url("anthropic"),
        model="fake",
        api_key="test",
        builtins=[],
        root=str(root),
    )
    try:
        yield server, client
    finally:
        client.close()
        server.stop()


def _sources(request: Any) -> list[Any]:
    return [b["source"] for b in request["messages"][0]["content"] if b["type"] == "image"]


@pytest.mark.parametrize(
    "data", [PNG, bytearray(PNG), memoryview(PNG), PNG_B64], ids=["bytes", "bytearray", "mv", "b64"]
)
def test_image_bytes_reach_the_request(
    served: tuple[FakeServer, contenox.Client], data: Any
) -> None:
    server, client = served
    r = client.run_sync(
        [
            {"type": "text", "text": "What is this?"},
            {"type": "image", "data": data},
            {"type": "image", "path": "shot.png"},
        ]
    )
    assert r.outcome == "done", r.error
    req = server.requests()[0]
    assert req["messages"][0]["content"][0]["text"] == "What is this?"
    assert _sources(req) == [
        {"type": "base64", "media_type": "image/png", "data": PNG_B64},
        {"type": "base64", "media_type": "image/gif", "data": base64.b64encode(GIF).decode()},
    ]


@pytest.mark.parametrize(
    ("prompt", "option", "says"),
    [
        ([{"type": "video", "path": "a.mp4"}], "prompt[0].type", "is not a prompt part's type"),
        ([{"type": "image", "data": "no base64!"}], "prompt[0].data", "not base64"),
        ([{"type": "image", "data": b""}], "prompt[0].data", "empty"),
        ([{"type": "image", "data": b"hello"}], "prompt[0].data", "not image/png"),
        (
            [{"type": "image", "data": PNG, "media_type": "image/gif"}],
            "prompt[0].media_type",
            "bytes are image/png",
        ),
        (
            [{"type": "text", "text": "a"}, {"type": "image", "path": "../secret.png"}],
            "prompt[1].path",
            "outside",
        ),
        ([{"type": "image", "path": "notes.png"}], "prompt[0].path", "not a PNG"),
        ([{"type": "image", "path": "missing.png"}], "prompt[0].path", "missing.png"),
    ],
)
def test_bad_parts_are_configuration_errors(
    served: tuple[FakeServer, contenox.Client], prompt: Any, option: str, says: str
) -> None:
    server, client = served
    with pytest.raises(contenox.ConfigurationError) as e:
        client.stream(prompt)
    assert e.value.option == option, e.value
    assert says in str(e.value)
    with pytest.raises(contenox.ConfigurationError):
        client.run_sync(prompt)
    assert server.requests() == []


def test_a_prompt_of_another_type_is_a_type_error(
    served: tuple[FakeServer, contenox.Client],
) -> None:
    _, client = served
    with pytest.raises(TypeError, match="a str or a list of parts"):
        client.stream(42)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="keys must be str"):
        client.stream([{1: "x"}])  # type: ignore[list-item]


def test_a_run_shows_its_prompt_text(served: tuple[FakeServer, contenox.Client]) -> None:
    _, client = served
    run = client.stream([{"type": "text", "text": "Look"}, {"type": "image", "data": PNG}])
    assert run.prompt == "Look [image]"


def test_the_images_example_runs() -> None:
    example = Path(__file__).resolve().parents[2] / "examples" / "python" / "images.py"
    out = subprocess.run(
        [sys.executable, str(example)], capture_output=True, text=True, timeout=60, check=True
    ).stdout
    assert (
        out == "done: Two red pixels.\nsent: ['text', 'image', 'image']\nrefused: prompt[0].data\n"
    )


def test_an_image_read_by_read_survives_an_after_tool_copy(tmp_path: Path) -> None:
    """``read`` of an image returns it; an ``after_tool`` that returns a ``replace`` of the
    result it was given keeps the image (never a silent drop)."""
    (tmp_path / "shot.png").write_bytes(GIF)
    seen: list[contenox.ToolOutput] = []

    def after(call: contenox.ToolCallEvent, result: contenox.ToolOutput) -> contenox.ToolOutput:
        seen.append(result)
        return dataclasses.replace(result, metadata={"seen": True})

    client = contenox.create_client(
        style="scripted",
        script=[
            {"tool_calls": [{"id": "c1", "name": "read", "arguments": {"path": "shot.png"}}]},
            {"text": "a pixel"},
        ],
        builtins=["read"],
        root=str(tmp_path),
        hooks={"after_tool": after},
    )
    r = client.run_sync("look")
    client.close()
    b64 = base64.b64encode(GIF).decode()
    assert seen[0].images == ({"media_type": "image/gif", "data": b64},)
    assert "image/gif, 26 bytes" in seen[0].content
    tool = next(m for m in r.transcript.messages if m["role"] == "tool")
    assert {"type": "image", "media_type": "image/gif", "data": b64} in tool["content"]
    assert "seen" in json.dumps(tool)


def test_a_host_tool_returns_images_checked_by_the_engine(tmp_path: Path) -> None:
    good_out = contenox.ToolOutput(
        "the screen", images=({"media_type": "image/png", "data": PNG_B64},)
    )
    bad_out = contenox.ToolOutput(
        "the screen", images=({"media_type": "image/gif", "data": PNG_B64},)
    )
    client = contenox.create_client(
        style="scripted",
        script=[
            {
                "tool_calls": [
                    {"id": "c1", "name": "good", "arguments": {}},
                    {"id": "c2", "name": "bad", "arguments": {}},
                ]
            },
            {"text": "seen"},
        ],
        builtins=[],
        root=str(tmp_path),
    )

    @client.tool
    def good() -> contenox.ToolOutput:
        """A screenshot."""
        return good_out

    @client.tool
    def bad() -> contenox.ToolOutput:
        """A mislabelled screenshot."""
        return bad_out

    r = client.run_sync("look")
    client.close()
    tools = [m for m in r.transcript.messages if m["role"] == "tool"]
    assert {"type": "image", "media_type": "image/png", "data": PNG_B64} in tools[0]["content"]
    assert tools[0]["is_error"] is False
    assert tools[1]["is_error"] is True
    assert "bytes are image/png, not image/gif" in json.dumps(tools[1])
