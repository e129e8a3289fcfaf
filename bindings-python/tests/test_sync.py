"""``client.run_sync`` without asyncio (issue 27): ``import contenox`` and a synchronous turn with
sync tools, hooks and ``wait_for`` never import asyncio; Ctrl-C cancels the turn, reaches the
script as KeyboardInterrupt and leaves no process running; a client with async callbacks still
runs through asyncio. The checks that need a clean interpreter run in a subprocess (pytest
itself imports asyncio)."""

from __future__ import annotations

import json
import random
import signal
import subprocess
import sys
import textwrap
import time
from typing import Any

import contenox
import pytest
from conftest import needs_proc, pids_running, with_text


def call(name: str, args: dict[str, Any], cid: str = "call_1") -> dict[str, Any]:
    return {"tool_calls": [{"id": cid, "name": name, "arguments": args}]}


def scripted(*entries: dict[str, Any], **kw: Any) -> contenox.Client:
    kw.setdefault("builtins", [])
    return contenox.create_client(style="scripted", script=list(entries), **kw)


def results(r: contenox.TurnResult) -> list[dict[str, Any]]:
    return [with_text(m) for m in r.transcript.messages if m["role"] == "tool"]


def run_python(code: str, *args: str, timeout: float = 60) -> list[str]:
    """Run ``code`` in a fresh interpreter and return the lines it printed (it must exit 0)."""
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code), *args],
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.splitlines()


# --- no asyncio --------------------------------------------------------------------------------


def test_import_does_not_import_asyncio() -> None:
    out = run_python(
        """
        import sys, contenox
        print('asyncio' in sys.modules, 'concurrent.futures' in sys.modules)
        """
    )
    assert out == ["False False"]


def test_a_sync_turn_with_hooks_tools_and_wait_for_imports_no_asyncio() -> None:
    # Every sync callback kind on the path a script takes: before_tool (allow, deny, ask),
    # after_tool, wait_for answering the ask, a host tool with ctx; then a second turn.
    out = run_python(
        """
        import json, sys, threading, contenox
        seen = []
        def before(ev):
            seen.append(('before', ev.name))
            if ev.name == 'rm':
                return contenox.deny('no deleting')
            if ev.name == 'ask_me':
                return contenox.pending({'prompt': 'ok?'})
            return None
        def after(ev, out):
            seen.append(('after', ev.name))
            return 'after:' + out.content if ev.name == 'echo' else None
        def wait_for(req, cancel):
            seen.append(('wait_for', req.call_id, cancel.cancelled))
            return {'approve': True}
        c = contenox.create_client(style='scripted', builtins=[], hooks={
            'before_tool': before, 'after_tool': after}, wait_for=wait_for, script=[
            {'tool_calls': [{'id': '1', 'name': 'echo', 'arguments': {'text': 'hi'}},
                            {'id': '2', 'name': 'rm', 'arguments': {}},
                            {'id': '3', 'name': 'ask_me', 'arguments': {}}]},
            {'text': 'done'}, {'text': 'second'}])
        main = threading.get_ident()
        @c.tool
        def echo(text: str, ctx: contenox.ToolContext) -> str:
            '''Echo.'''
            seen.append(('echo', ctx.call_id, threading.get_ident() != main))
            return text
        c.register(contenox.Tool('rm', lambda a: 'removed'))
        c.register(contenox.Tool('ask_me', lambda a: 'asked and ran'))
        r = c.run_sync('go')
        tool = [m for m in r.transcript.messages if m['role'] == 'tool']
        print(r.outcome, r.final_text)
        print(json.dumps([[m['content'][0]['text'], m.get('is_error', False)] for m in tool]))
        print(json.dumps(seen))
        print(c.run_sync('again').final_text, len(c.transcript))
        print('asyncio' in sys.modules)
        """
    )
    assert out[0] == "done done"
    assert json.loads(out[1]) == [
        ["after:hi", False],
        ["no deleting", True],
        ["asked and ran", False],
    ]
    assert json.loads(out[2]) == [
        ["before", "echo"],
        ["echo", "1", True],  # the tool ran on an engine thread, not the waiting one
        ["after", "echo"],
        ["before", "rm"],
        ["before", "ask_me"],
        ["wait_for", "3", False],
        ["after", "ask_me"],
    ]
    assert out[3] == "second 8"
    assert out[4] == "False"


def test_run_chain_sync_imports_no_asyncio() -> None:
    chain = {
        "id": "c",
        "tasks": [
            {
                "id": "chat",
                "handler": "chat_completion",
                "execute_config": {"tools": ["echo"]},
                "transition": {
                    "branches": [
                        {"operator": "equals", "when": "tool-call", "goto": "run"},
                        {"operator": "default", "when": "", "goto": "end"},
                    ]
                },
            },
            {
                "id": "run",
                "handler": "execute_tool_calls",
                "transition": {"branches": [{"operator": "default", "when": "", "goto": "chat"}]},
            },
        ],
    }
    out = run_python(
        """
        import json, sys, contenox
        calls = []
        c = contenox.create_client(style='scripted', builtins=[], script=[
            {'tool_calls': [{'id': '1', 'name': 'echo', 'arguments': {'text': 'x'}}]},
            {'text': 'chained'}], hooks={'before_tool': lambda ev: calls.append(ev.name)})
        c.register(contenox.Tool('echo', lambda a: a['text'] + '!'))
        r = c.run_chain_sync(json.loads(sys.argv[1]), 'go')
        print(r.outcome, r.final_text, calls, 'asyncio' in sys.modules)
        """,
        json.dumps(chain),
    )
    assert out == ["done chained ['echo'] False"]


# --- the sync path in this process ---------------------------------------------------------------


def test_run_sync_narrows_with_allow_and_checks_settings() -> None:
    client = scripted(call("t", {}), {"text": "ok"})
    client.register(contenox.Tool("t", lambda a: "ran"))
    r = client.run_sync("x", allow=["!t"])
    assert r.outcome == "done" and results(r)[0]["is_error"]
    with pytest.raises(contenox.ConfigurationError, match="tool_choice"):
        client.run_sync("x", settings={"tool_choice": "always"})  # type: ignore[typeddict-item]


def test_run_sync_on_a_closed_client_raises() -> None:
    client = scripted({"text": "x"})
    client.close()
    with pytest.raises(contenox.ClosedError):
        client.run_sync("x")


def test_a_hook_that_raises_in_the_sync_path_is_an_error_result() -> None:
    def bad(ev: contenox.ToolCallEvent) -> None:
        raise RuntimeError("hook exploded")

    client = scripted(call("t", {}), {"text": "still alive"}, hooks={"before_tool": bad})
    client.register(contenox.Tool("t", lambda a: "ran"))
    r = client.run_sync("x")
    assert r.final_text == "still alive"
    assert results(r)[0]["is_error"] and "hook exploded" in results(r)[0]["content"]


def test_sync_wait_for_denies_in_the_sync_path() -> None:
    client = scripted(
        call("t", {}),
        {"text": "ok"},
        hooks={"before_tool": lambda ev: contenox.pending({"kind": "approval"})},
        wait_for=lambda req, cancel: {"approve": False, "message": "nope"},
    )
    client.register(contenox.Tool("t", lambda a: "ran"))
    r = client.run_sync("x")
    assert results(r)[0]["content"] == "nope"


@pytest.mark.parametrize("where", ["tool", "hook", "subagent"])
def test_async_callbacks_still_run_through_asyncio(where: str) -> None:
    # An async callable needs a loop: run_sync then takes the asyncio path (and imports it),
    # also when the async callable belongs to a subagent registered into the client.
    out = run_python(
        """
        import sys, contenox
        where = sys.argv[1]
        async def atool(a):
            return 'async ran'
        async def ahook(ev):
            return contenox.deny('async says no')
        script = [{'tool_calls': [{'id': '1', 'name': 't', 'arguments': {}}]}, {'text': 'done'}]
        if where == 'subagent':
            child = contenox.create_client(style='scripted', builtins=[], script=script)
            child.register(contenox.Tool('t', atool))
            c = contenox.create_client(style='scripted', builtins=[], script=[
                {'tool_calls': [{'id': 's', 'name': 'sub', 'arguments': {'prompt': 'p'}}]},
                {'text': 'parent done'}])
            c.register(child.as_tool_with('sub', 'a subagent'))
        else:
            c = contenox.create_client(style='scripted', builtins=[], script=script,
                                       hooks={'before_tool': ahook} if where == 'hook' else None)
            c.register(contenox.Tool('t', atool if where == 'tool' else (lambda a: 'sync ran')))
        print('asyncio' in sys.modules)
        r = c.run_sync('go')
        tool = [m for m in r.transcript.messages if m['role'] == 'tool']
        print(r.final_text, tool[0]['content'][0]['text'], 'asyncio' in sys.modules)
        """,
        where,
    )
    expected = {
        "tool": "done async ran True",
        "hook": "done async says no True",
        "subagent": "parent done done True",
    }
    assert out == ["False", expected[where]]


# --- Ctrl-C --------------------------------------------------------------------------------------

INTERRUPTED = """
import sys, threading, time, contenox
mode, marker = sys.argv[1], sys.argv[2]
returned = threading.Event()
def slow(args, ctx):
    print('tool started', flush=True)
    cancelled = ctx.cancel.wait(60)
    returned.set()
    return 'cancelled' if cancelled else 'timed out'
if mode.startswith('bash'):
    first = {'tool_calls': [{'id': '1', 'name': 'bash', 'arguments': {
        'command': 'echo started; sleep ' + marker}}]}
else:
    first = {'tool_calls': [{'id': '1', 'name': 'slow', 'arguments': {}}]}
# stream_tools off: the call starts once the reply has ended, so the Ctrl-C (sent once the
# call runs) always finds the reply in the transcript. With it on, a call may start while the
# scripted reply is still being read; a cancel then drops the unfinished reply (as designed),
# and the transcript's last message would depend on the machine's load.
c = contenox.create_client(style='scripted', builtins=['bash'], stream_tools=False,
                           script=[first, {'text': 'unreachable'}])
c.register(contenox.Tool('slow', slow))
if mode == 'bash-asyncio':
    async def idle(args):
        return 'never called'
    c.register(contenox.Tool('idle', idle))  # an async callable: run_sync goes through asyncio
print('ready', flush=True)
try:
    c.run_sync('go')
    print('not interrupted', flush=True)
except KeyboardInterrupt:
    # the turn ended (cancelled) before the exception got here: its transcript is whole
    messages = c.transcript.messages
    print('interrupted', messages[-1]['role'], messages[-1]['content'][0]['text'], flush=True)
    if mode == 'tool':
        print('tool returned', returned.wait(10), flush=True)
    print('asyncio' in sys.modules, flush=True)
    raise
"""


@needs_proc
@pytest.mark.parametrize("mode", ["bash", "tool", "bash-asyncio"])
def test_ctrl_c_cancels_the_turn_and_raises_keyboard_interrupt(mode: str) -> None:
    # bash-asyncio: the same through the asyncio path a client with an async callable takes.
    marker = f"{400 + random.random():.9f}"
    proc = subprocess.Popen(
        [sys.executable, "-c", INTERRUPTED, mode, marker],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        assert proc.stdout.readline().strip() == "ready"
        if mode == "tool":
            assert proc.stdout.readline().strip() == "tool started"
        else:
            deadline = time.monotonic() + 20
            # the script's own command line holds the marker too: wait for the command's
            while not set(pids_running(marker)) - {proc.pid}:
                assert time.monotonic() < deadline, "the command never started"
                time.sleep(0.02)
        sent = time.monotonic()
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=20)
        took = time.monotonic() - sent
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    lines = out.splitlines()
    assert lines and lines[0] == "interrupted tool cancelled", (out, err)
    if mode == "tool":
        assert lines[1] == "tool returned True"
    assert lines[-1] == str(mode == "bash-asyncio")  # asyncio only when a callable needs it
    assert err.rstrip().splitlines()[-1] == "KeyboardInterrupt"
    assert proc.returncode != 0
    assert took < 10, f"Ctrl-C took {took:.1f} s to end the script"
    assert not set(pids_running(marker)) - {proc.pid}, "the command outlived the turn"


def test_ctrl_c_before_the_wait_starts_is_not_lost() -> None:
    # A SIGINT already pending when run_sync starts waiting is seen at its first poll.
    out = run_python(
        """
        import os, signal, contenox
        c = contenox.create_client(style='scripted', builtins=[], script=[
            {'tool_calls': [{'id': '1', 'name': 'slow', 'arguments': {}}]}, {'text': 'x'}])
        def slow(args, ctx):
            os.kill(os.getpid(), signal.SIGINT)
            return 'cancelled' if ctx.cancel.wait(30) else 'not cancelled'
        c.register(contenox.Tool('slow', slow))
        try:
            c.run_sync('go')
        except KeyboardInterrupt:
            print('interrupted', c.transcript.messages[-1]['content'][0]['text'])
        """
    )
    assert out == ["interrupted cancelled"]


def test_signal_handler_exception_also_cancels() -> None:
    # Not only KeyboardInterrupt: whatever a signal handler raises ends the wait the same way.
    out = run_python(
        """
        import os, signal, contenox
        class Stop(Exception):
            pass
        def handler(signum, frame):
            raise Stop('alarm')
        signal.signal(signal.SIGALRM, handler)
        c = contenox.create_client(style='scripted', builtins=[], script=[
            {'tool_calls': [{'id': '1', 'name': 'slow', 'arguments': {}}]}, {'text': 'x'}])
        c.register(contenox.Tool('slow', lambda a, ctx: str(ctx.cancel.wait(30))))
        signal.setitimer(signal.ITIMER_REAL, 0.3)
        try:
            c.run_sync('go')
        except Stop as e:
            print('stopped', e, c.transcript.messages[-1]['content'][0]['text'])
        print(c.run_sync('again').outcome)
        """
    )
    assert out == ["stopped alarm cancelled", "done"]
