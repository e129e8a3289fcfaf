"""The host-hooks design's spellings, as a newcomer writes them from its table: ``wait_for_ctx``
for the cancellable ask, a deny returned as an error result (bare or as ``{"result": ...}``), an
ask as ``{"result": pending(...)}``, and host-owned ``BackgroundShells`` given to clients."""

from __future__ import annotations

import asyncio
import random
from pathlib import Path
from typing import Any

import contenox
import pytest
from conftest import needs_proc, pids_running, wait_until, with_text


def call(name: str, args: dict[str, Any], cid: str = "call_1") -> dict[str, Any]:
    return {"tool_calls": [{"id": cid, "name": name, "arguments": args}]}


def scripted(*entries: dict[str, Any], **kw: Any) -> contenox.Client:
    kw.setdefault("builtins", [])
    return contenox.create_client(style="scripted", script=list(entries), **kw)


def tool_results(r: contenox.TurnResult) -> list[dict[str, Any]]:
    return [with_text(m) for m in r.transcript.messages if m["role"] == "tool"]


# --- wait_for_ctx ----------------------------------------------------------------------------


async def test_wait_for_ctx_answers_asks_and_sees_the_cancel_signal() -> None:
    seen: list[Any] = []

    def wait_for_ctx(req: contenox.PendingRequest, cancel: contenox.CancelSignal) -> Any:
        seen.append((req.kind, req.prompt, cancel.is_cancelled()))
        return {"approve": False, "message": "not today"}

    client = scripted(
        call("t", {}),
        {"text": "ok"},
        hooks={"before_tool": lambda e: contenox.pending(kind="approval", prompt="Run t?")},
        wait_for_ctx=wait_for_ctx,
    )
    client.register(contenox.Tool("t", lambda a: "ran"))
    r = await client.run("go")
    assert seen == [("approval", "Run t?", False)]
    assert tool_results(r)[0]["content"] == "not today" and tool_results(r)[0]["is_error"]


async def test_wait_for_ctx_is_cancelled_with_the_turn() -> None:
    started, cancelled = asyncio.Event(), asyncio.Event()

    async def wait_for_ctx(req: contenox.PendingRequest, cancel: contenox.CancelSignal) -> Any:
        started.set()
        try:
            await asyncio.sleep(60)
        except asyncio.CancelledError:
            cancelled.set()
            raise
        return {"approve": True}

    client = scripted(
        call("t", {}),
        {"text": "unreachable"},
        hooks={"before_tool": lambda e: contenox.pending(kind="approval")},
        wait_for_ctx=wait_for_ctx,
    )
    client.register(contenox.Tool("t", lambda a: "ran"))
    run = client.stream("go")
    await asyncio.wait_for(started.wait(), 10)
    run.cancel()
    r = await asyncio.wait_for(run.result(), 10)
    assert r.outcome == "cancelled"
    await asyncio.wait_for(cancelled.wait(), 10)


def test_wait_for_and_wait_for_ctx_together_are_refused() -> None:
    with pytest.raises(contenox.ConfigurationError, match="wait_for or wait_for_ctx"):
        scripted({"text": "x"}, wait_for=lambda r, c: None, wait_for_ctx=lambda r, c: None)


def test_a_wait_for_ctx_that_is_not_callable_is_named() -> None:
    with pytest.raises(Exception, match="wait_for_ctx"):
        scripted({"text": "x"}, wait_for_ctx="nope")


# --- deny as an error result, ask as {"result": pending(...)} ------------------------------------


DENIALS: dict[str, Any] = {
    "ToolOutput.error": lambda: contenox.ToolOutput.error("no writes today"),
    "error dict": lambda: {"is_error": True, "content": "no writes today"},
    "wrapped ToolOutput.error": lambda: {"result": contenox.ToolOutput.error("no writes today")},
    "wrapped error dict": lambda: {"result": {"is_error": True, "content": "no writes today"}},
    "deny()": lambda: contenox.deny("no writes today"),
    "wrapped deny()": lambda: {"result": contenox.deny("no writes today")},
}


@pytest.mark.parametrize("shape", sorted(DENIALS))
async def test_an_error_result_from_before_tool_denies(shape: str) -> None:
    ran: list[str] = []
    client = scripted(
        call("t", {}),
        {"text": "went on"},
        hooks={"before_tool": lambda e: DENIALS[shape]()},
    )
    client.register(contenox.Tool("t", lambda a: ran.append("t") or "ran"))
    r = await client.run("go")
    assert r.outcome == "done" and r.final_text == "went on"
    assert ran == []
    result = tool_results(r)[0]
    assert result["is_error"] and result["content"] == "no writes today"


async def test_a_wrapped_pending_asks() -> None:
    asked: list[str] = []

    def wait_for(req: contenox.PendingRequest, cancel: contenox.CancelSignal) -> Any:
        asked.append(req.prompt or "")
        return {"approve": True}

    client = scripted(
        call("t", {}),
        {"text": "ok"},
        hooks={"before_tool": lambda e: {"result": contenox.pending(prompt=f"Run {e.name}?")}},
        wait_for=wait_for,
    )
    client.register(contenox.Tool("t", lambda a: "ran"))
    r = await client.run("go")
    assert asked == ["Run t?"]
    assert tool_results(r)[0]["content"] == "ran"


@pytest.mark.parametrize(
    "returned",
    [
        {"result": "a plain result is not a decision"},
        contenox.ToolOutput("fine", is_error=False),
        {"is_error": True, "content": "x", "surprise": 1},
        {"result": 1, "other": 2},
    ],
    ids=["wrapped text", "non-error ToolOutput", "error dict with other keys", "two keys"],
)
async def test_what_is_neither_a_denial_nor_an_ask_is_an_error_result(returned: Any) -> None:
    ran: list[str] = []
    client = scripted(call("t", {}), {"text": "ok"}, hooks={"before_tool": lambda e: returned})
    client.register(contenox.Tool("t", lambda a: ran.append("t") or "ran"))
    r = await client.run("go")
    result = tool_results(r)[0]
    assert ran == [] and result["is_error"]
    assert "before_tool returned" in result["content"], result


# --- host-owned background shells ------------------------------------------------------------


def sharing(tmp_path: Path, shells: contenox.BackgroundShells, marker: str) -> contenox.Client:
    return scripted(
        call("bash", {"command": f"sleep {marker}", "run_in_background": True}),
        {"text": "started"},
        builtins=["bash"],
        background=shells,
        root=tmp_path,
    )


@needs_proc
async def test_host_made_background_shells_are_shared_and_closed_by_the_host(
    tmp_path: Path,
) -> None:
    shells = contenox.BackgroundShells()
    assert shells.ids() == [] and shells.status("shell_1") is None
    ma, mb = (f"{300 + random.random():.9f}" for _ in range(2))
    a, b = sharing(tmp_path, shells, ma), sharing(tmp_path, shells, mb)
    ra, rb = await a.run("start"), await b.run("start")
    assert ra.outcome == rb.outcome == "done"
    assert shells.ids() == ["shell_1", "shell_2"]
    own = a.background_shells()
    assert own is not None and own.ids() == shells.ids()  # the same shells, not a copy
    await wait_until("both sleepers run", lambda: pids_running(ma) and pids_running(mb))

    a.close()  # ends what a's turns started, and only that
    await wait_until("a's sleeper is gone", lambda: not pids_running(ma))
    assert pids_running(mb) and shells.status("shell_2") == "running"

    shells.close_all()  # the host's shutdown
    await wait_until("b's sleeper is gone", lambda: not pids_running(mb))
    await wait_until("shell_2 reads killed", lambda: shells.status("shell_2") == "killed")
    assert not b.closed
    b.close()


def test_background_true_still_makes_the_clients_own() -> None:
    client = scripted({"text": "x"}, builtins=["bash"], background=True)
    shells = client.background_shells()
    assert isinstance(shells, contenox.BackgroundShells) and shells.ids() == []
    assert scripted({"text": "x"}, builtins=["bash"]).background_shells() is None


# --- the example a newcomer reads ------------------------------------------------------------


def test_the_host_hooks_example_runs_to_its_end() -> None:
    import subprocess
    import sys

    example = Path(__file__).resolve().parents[2] / "examples" / "python" / "host_hooks.py"
    r = subprocess.run(
        [sys.executable, str(example)], capture_output=True, text=True, timeout=60, check=False
    )
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stdout.splitlines() == [
        "asked: Run bash?",
        "write: no writes in this session",
        "bash: Started in the background as shell shell_1. Read its output with bash_output "
        '(shell_id "shell_1"); stop it with kill_shell.',
        "shells: ['shell_1']",
        "done: The write was refused; the build runs in the background.",
    ], r.stdout


# --- one name per concept --------------------------------------------------------------------


def test_source_tools_are_source_tool_and_native_tool_is_its_old_name() -> None:
    lead = scripted({"text": "x"})
    sub = scripted({"text": "y"})
    tool = sub.as_tool_with("helper", "Helps.")
    assert isinstance(tool, contenox.SourceTool)
    assert type(tool).__name__ == "SourceTool"
    lead.register(tool)
    with pytest.warns(DeprecationWarning, match="SourceTool"):
        old = contenox.NativeTool
    assert old is contenox.SourceTool
