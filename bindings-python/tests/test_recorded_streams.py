"""Recorded provider streams replayed through the Python binding.

``fake-model-server --replay FILE`` serves a recording (one JSON chunk per line, as the Vercel AI
SDK's ``*.chunks.txt`` fixtures) in its style's framing; ``--expect`` prints what a reader must
get out of it, read independently of the engine. Each reply's text, reasoning, tool calls (with
their arguments) and the turn's outcome are compared with that.

The committed recordings (``tests/recorded/``) are small ones written for the tests in the
providers' documented shapes. ``CONTENOX_RECORDED_STREAMS=DIR`` replays every ``*.chunks.txt``
under DIR too (real streams, kept outside this repository).
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import contenox
import pytest
from conformance_runner import FAKE_MODEL_SERVER

REPO = Path(__file__).resolve().parents[2]
AFTER_REPLAY = "replay over"
SHORT_STOPS = {"refusal", "max_tokens", "length", "content_filter"}


def recordings(directory: Path) -> list[Path]:
    return sorted(directory.rglob("*.chunks.txt"))


def expectation(path: Path) -> dict[str, Any] | None:
    """What the recording holds, or None for a format contenox does not speak."""
    done = subprocess.run(
        [FAKE_MODEL_SERVER, "--replay", str(path), "--expect"],
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    if done.returncode == 2 and "not a stream of a style" in done.stderr:
        return None
    assert done.returncode == 0, done.stderr
    result: dict[str, Any] = json.loads(done.stdout)
    return result


async def replay(path: Path, style: str, replies: int) -> dict[str, Any]:
    """Serve the recording and run one turn against it; what the engine showed."""
    server = subprocess.Popen(
        [FAKE_MODEL_SERVER, "--replay", str(path)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert server.stdout is not None
        port = int(server.stdout.readline().strip())
        base = f"http://127.0.0.1:{port}" + ("/v1" if style.startswith("openai") else "")
        client = contenox.create_client(
            style=style,
            base_url=base,
            model="fake",
            api_key="test",
            builtins=[],
            max_turns=replies + 2,
            retry={"max_retries": 0},
        )
        seen: list[dict[str, Any]] = []
        run = client.stream("Replay.")
        async for event in run:
            d = event.to_dict()
            kind = d["type"]
            if kind == "request":
                seen.append({"text": "", "reasoning": "", "calls": []})
            elif kind == "text":
                seen[-1]["text"] += d["text"]
            elif kind == "reasoning":
                seen[-1]["reasoning"] += d["text"]
            elif kind == "tool_call":
                seen[-1]["calls"].append([d["name"], d["arguments"]])
        result = await run.result()
        client.close()
        return {"replies": seen, "outcome": result.outcome, "final_text": result.final_text}
    finally:
        assert server.stdin is not None
        server.stdin.close()  # the server exits on stdin EOF
        server.wait(timeout=10)


async def problems(path: Path) -> list[str] | None:
    """What the binding got wrong about one recording (None: not a style contenox speaks)."""
    want = expectation(path)
    if want is None:
        return None
    replies = want["replies"]
    # The turn goes on while a reply calls tools and ends on one that does not, fails or stops
    # short.
    reached = next(
        (
            i + 1
            for i, w in enumerate(replies)
            if not w["calls"] or w["error"] or w["stop"] in SHORT_STOPS
        ),
        len(replies),
    )
    seen = await replay(path, want["style"], len(replies))
    wrong: list[str] = []
    if any(w["error"] for w in replies[:reached]):
        if seen["outcome"] != "error":
            wrong.append(f"an error stream ended {seen['outcome']}, not error")
        return wrong
    if seen["outcome"] == "error":
        wrong.append("outcome error")
    for i, w in enumerate(replies[:reached]):
        got = seen["replies"][i] if i < len(seen["replies"]) else {}
        for key in ("text", "reasoning", "calls"):
            if got.get(key) != w[key]:
                wrong.append(f"reply {i}: {key} {got.get(key)!r}, want {w[key]!r}")
    last = replies[reached - 1]
    if reached == len(replies) and last["calls"] and last["stop"] not in SHORT_STOPS:
        if seen["outcome"] == "done" and seen["final_text"] != AFTER_REPLAY:
            wrong.append(f"final text {seen['final_text']!r} after the calls")
    return wrong


COMMITTED = recordings(REPO / "tests" / "recorded")


def test_the_committed_recordings_are_there() -> None:
    assert len(COMMITTED) >= 6, COMMITTED


@pytest.mark.parametrize("path", COMMITTED, ids=[p.name for p in COMMITTED])
async def test_a_committed_recording_parses_right(path: Path) -> None:
    wrong = await problems(path)
    assert wrong == [], wrong


async def test_the_recordings_of_contenox_recorded_streams_parse_right() -> None:
    directory = os.environ.get("CONTENOX_RECORDED_STREAMS")
    if not directory:
        pytest.skip("CONTENOX_RECORDED_STREAMS is not set (real recordings are not committed)")
    replayed, failures = 0, []
    for path in recordings(Path(directory)):
        wrong = await problems(path)
        if wrong is None:
            continue
        replayed += 1
        if wrong:
            failures.append(f"{path.name}: {'; '.join(wrong)}")
    print(f"recorded streams through Python: {replayed - len(failures)} of {replayed} parsed right")
    assert replayed > 0
    assert failures == [], "\n".join(failures)
