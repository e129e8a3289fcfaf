"""Durable turns across processes: process A suspends a turn at the ask before a ``write``,
saves the checkpoint and is killed (SIGKILL); process B, built with the same config, resumes it.
The fake model server (one for both processes) counts the requests, a host tool counts its
runs in a file."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path
from typing import Any

import contenox
import pytest
from conformance_runner import FakeServer

API_KEY = "sk-DURABLE-SECRET-KEY-0001"
HEADER = "DURABLE-SECRET-HEADER-0002"
ENV_NAME = "CONTENOX_DURABLE_TEST_SECRET"
ENV_VALUE = "DURABLE-SECRET-ENV-0003"
SECRETS = (API_KEY, HEADER, ENV_VALUE)

# The one host both processes run: the same config, a `write` tool that appends a line to
# runs.log (so a second run shows), a policy that asks before it.
HOST = textwrap.dedent(
    """
    import json, os, sys, time
    import contenox

    mode, base_url, root, policy_action, wait = sys.argv[1:6]

    def write(path: str, content: str) -> str:
        with open(os.path.join(root, "runs.log"), "a") as f:
            f.write(f"{path}:{content}\\n")
        return f"wrote {path}"

    def wait_for(request, cancel):
        return json.loads(wait)

    client = contenox.create_client(
        style="openai", base_url=base_url, model="fake", api_key=API_KEY_,
        headers={"X-Secret": HEADER_}, secret_env=[ENV_NAME_], root=root, builtins=[],
        tools=[contenox.tool(write)],
        policy={"default_action": "allow",
                "rules": [{"tool": "write", "action": policy_action, "timeout_s": 600}]},
        wait_for=wait_for,
    )
    if mode == "suspend":
        result = client.run_sync("Write out.txt.")
        tmp = os.path.join(root, "checkpoint.json.tmp")
        with open(tmp, "w") as f:
            f.write(result.checkpoint or "")
        os.replace(tmp, os.path.join(root, "checkpoint.json"))
        print(json.dumps({"outcome": result.outcome,
                          "pending": [p.to_dict() for p in result.pending]}), flush=True)
        time.sleep(600)  # killed here
    else:
        with open(os.path.join(root, "checkpoint.json")) as f:
            checkpoint = f.read()
        answers = json.loads(sys.stdin.read())
        try:
            result = client.resume_sync(checkpoint, answers)
        except contenox.CheckpointError as e:
            print(json.dumps({"refused": str(e)}), flush=True)
            sys.exit(0)
        tool_results = [m for m in result.transcript.messages if m["role"] == "tool"]
        print(json.dumps({"outcome": result.outcome, "final_text": result.final_text,
                          "results": tool_results}, default=str), flush=True)
    """.replace("API_KEY_", repr(API_KEY))
    .replace("HEADER_", repr(HEADER))
    .replace("ENV_NAME_", repr(ENV_NAME))
)

SCENARIO = {
    "name": "durable_two_processes",
    "style": "openai",
    "model": [
        {
            "tool_calls": [
                {"id": "call_w", "name": "write", "arguments": {"path": "out.txt", "content": "hi"}}
            ]
        },
        {"text": "written"},
    ],
    "prompt": "Write out.txt.",
    "expect": {},
}


@pytest.fixture
def setup() -> Any:
    with tempfile.TemporaryDirectory() as d:
        root = Path(d) / "root"
        root.mkdir()
        scenario = Path(d) / "scenario.json"
        scenario.write_text(json.dumps(SCENARIO))
        server = FakeServer(scenario)
        try:
            yield root, server
        finally:
            server.stop()


def _env() -> dict[str, str]:
    return {**os.environ, ENV_NAME: ENV_VALUE}


def suspend_in_a_process_then_kill_it(root: Path, server: FakeServer) -> dict[str, Any]:
    proc = subprocess.Popen(
        [
            sys.executable,
            "-c",
            HOST,
            "suspend",
            server.base_url("openai"),
            str(root),
            "approve",
            '{"suspend": true}',
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=_env(),
    )
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert line, proc.stderr.read() if proc.stderr else ""
        first: dict[str, Any] = json.loads(line)
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=10)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == -signal.SIGKILL
    return first


def resume_in_another(
    root: Path, server: FakeServer, policy_action: str, answers: dict[str, Any]
) -> dict[str, Any]:
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            HOST,
            "resume",
            server.base_url("openai"),
            str(root),
            policy_action,
            '{"approve": false, "message": "the host was asked again"}',
        ],
        input=json.dumps(answers),
        capture_output=True,
        text=True,
        env=_env(),
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    out: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return out


def runs(root: Path) -> list[str]:
    log = root / "runs.log"
    return log.read_text().splitlines() if log.exists() else []


def test_suspend_kill_resume_in_another_process_runs_the_tool_once(setup: Any) -> None:
    root, server = setup
    first = suspend_in_a_process_then_kill_it(root, server)
    assert first["outcome"] == "suspended"
    assert [p["call_id"] for p in first["pending"]] == ["call_w"]
    assert first["pending"][0]["deadline_ms"] > 0
    assert runs(root) == []
    checkpoint = (root / "checkpoint.json").read_text()
    for secret in SECRETS:
        assert secret not in checkpoint
    assert len(server.requests()) == 1

    out = resume_in_another(root, server, "approve", {"call_w": {"approve": True}})
    assert out["outcome"] == "done", out
    assert out["final_text"] == "written"
    assert runs(root) == ["out.txt:hi"], "the tool ran exactly once"
    # One request per step: the model was not asked the suspended step again.
    requests = server.requests()
    assert len(requests) == 2
    last = requests[-1]["messages"]
    assert last[-1]["role"] == "tool" and last[-1]["tool_call_id"] == "call_w"
    assert sum(1 for m in last if m.get("role") == "assistant") == 1

    # The same checkpoint again, in a third process: this client cannot know it was resumed
    # elsewhere (that is the engine adapters' job), but the answer for a wrong call is refused.
    wrong = resume_in_another(root, server, "approve", {"call_nope": {"approve": True}})
    assert "no call call_nope is waiting" in wrong["refused"]


def test_a_policy_turned_to_deny_wins_at_resume(setup: Any) -> None:
    root, server = setup
    suspend_in_a_process_then_kill_it(root, server)
    out = resume_in_another(root, server, "deny", {"call_w": {"approve": True}})
    assert out["outcome"] == "done", out
    assert runs(root) == [], "denied: the tool never ran"
    assert out["results"][0]["is_error"] is True


@pytest.mark.parametrize("edit", ["tampered", "newer"])
def test_a_tampered_or_newer_checkpoint_is_refused(setup: Any, edit: str) -> None:
    root, server = setup
    suspend_in_a_process_then_kill_it(root, server)
    path = root / "checkpoint.json"
    cp = json.loads(path.read_text())
    if edit == "tampered":
        cp["reply"]["calls"][0]["arguments"]["path"] = "../../etc/passwd"
    else:
        cp["version"] = cp["version"] + 1
    path.write_text(json.dumps(cp))
    out = resume_in_another(root, server, "approve", {"call_w": {"approve": True}})
    assert "refused" in out, out
    assert ("digest" if edit == "tampered" else "newer") in out["refused"]
    assert runs(root) == []
    assert len(server.requests()) == 1


async def test_resume_in_process_awaitable_and_stream() -> None:
    ran: list[str] = []
    keys: list[str] = []

    def write(path: str, content: str, ctx: contenox.ToolContext) -> str:
        ran.append(path)
        keys.append(ctx.idempotency_key)
        return "ok"

    def make(answer: dict[str, Any], script: list[dict[str, Any]]) -> contenox.Client:
        return contenox.create_client(
            style="scripted",
            script=script,
            builtins=[],
            tools=[contenox.tool(write)],
            policy={"default_action": "allow", "rules": [{"tool": "write", "action": "approve"}]},
            wait_for=lambda request, cancel: answer,
        )

    call = {
        "tool_calls": [{"id": "c1", "name": "write", "arguments": {"path": "a", "content": "b"}}]
    }
    a = make({"suspend": True}, [call])
    first = await a.run("go")
    assert first.outcome == "suspended"
    assert first.checkpoint and first.pending[0].call_id == "c1"
    b = make({"approve": False}, [{"text": "done"}])
    run = b.resume_stream(first.checkpoint, {"c1": {"approve": True}})
    kinds = [e.type async for e in run]
    result = await run.result()
    assert result.outcome == "done" and ran == ["a"]
    # The key names the call in the turn that began in the first client.
    assert keys == [json.loads(first.checkpoint)["turn_id"] + ":c1"]
    assert kinds[0] == "turn_start" and "answer" in kinds and kinds[-1] == "turn_end"
    with pytest.raises(contenox.CheckpointError):
        await b.resume(first.checkpoint, {"c1": {"approve": True}})
    with pytest.raises(contenox.ConfigurationError):
        await make({}, []).resume(first.checkpoint, {"c1": {"maybe": True}})


def _reseal(cp: dict[str, Any]) -> str:
    """Seal a checkpoint as the engine does (SHA-256 of the rest's compact JSON, sorted keys):
    what an attacker who edits one does too."""
    import hashlib

    body = {k: v for k, v in cp.items() if k != "digest"}
    text = json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return json.dumps(
        {**body, "digest": hashlib.sha256(text.encode()).hexdigest()},
        sort_keys=True,
        separators=(",", ":"),
        ensure_ascii=False,
    )


async def test_hostile_checkpoints_raise_checkpoint_error_and_lose_nothing() -> None:
    ran: list[str] = []

    def write(path: str, content: str) -> str:
        ran.append(path)
        return "ok"

    def make(answer: dict[str, Any], script: list[dict[str, Any]]) -> contenox.Client:
        return contenox.create_client(
            style="scripted",
            script=script,
            builtins=[],
            tools=[contenox.tool(write)],
            policy={"default_action": "allow", "rules": [{"tool": "write", "action": "approve"}]},
            wait_for=lambda request, cancel: answer,
        )

    call = {
        "tool_calls": [{"id": "c1", "name": "write", "arguments": {"path": "a", "content": "b"}}]
    }
    first = await make({"suspend": True}, [call]).run("go")
    assert first.checkpoint
    good = first.checkpoint
    cp = json.loads(good)
    assert _reseal(cp) == good, "the seal is what the engine computes"
    b = make({"approve": False}, [{"text": "done"}])
    answers = {"c1": {"approve": True}}
    unknown = dict(cp, from_the_future=True)
    wrong_type = dict(cp, seq="1")
    deep = "[" * 100_000 + "]" * 100_000
    huge = '{"version":1,"pad":"' + "a" * contenox_max_checkpoint_bytes() + '"}'
    for text, says in [
        (good[: len(good) // 2], "not JSON"),
        ("[]", "not a JSON object"),
        (deep, "recursion limit"),
        (huge, "more than the 256 MiB"),
        (_reseal(unknown), "unknown field `from_the_future`"),
        (_reseal(wrong_type), "not a checkpoint"),
        (_reseal(dict(cp, turn_id="turn_1:evil")), "not one this engine draws"),
    ]:
        with pytest.raises(contenox.CheckpointError) as e:
            await b.resume(text, answers)
        assert says in str(e.value), str(e.value)[:300]
    assert ran == [] and b.transcript.messages == []
    # Nothing lost: the good checkpoint still resumes on the same client.
    done = await b.resume(good, answers)
    assert done.outcome == "done" and ran == ["a"]


def contenox_max_checkpoint_bytes() -> int:
    """The engine's cap (core's MAX_CHECKPOINT_BYTES, 256 MiB; docs/durable.md)."""
    return 256 * 1024 * 1024
