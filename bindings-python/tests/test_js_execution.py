"""``code_execution=`` / ``js_execution`` from Python: hostile programs end as error results
within their limits, the process stays up with its memory back near where it started, and the
code's tool calls pass the same gate as the model's own (a policy that denies ``write`` denies
it from code too)."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import contenox
import pytest
from conftest import needs_proc, with_text

LIMITS: contenox.CodeExecutionOptions = {"timeout_ms": 1000, "memory_mb": 32, "max_tool_calls": 10}

# (code, what the error result says)
HOSTILE: list[tuple[str, str]] = [
    ("for (;;) {}", "time limit hit"),
    ("while (true) { try { for (;;) {} } catch (e) {} }", "time limit hit"),
    ("const a = []; for (;;) a.push(new Float64Array(1 << 16));", "memory limit hit"),
    (
        "const a = []; try { for (;;) a.push('y'.repeat(1 << 20) + a.length) } catch (e) { 'ok' }",
        "memory limit hit",
    ),
    ("function f() { return f() + 1 } f()", "Maximum call stack size exceeded"),
    ("let s = 'x'; for (;;) s += s + '.';", "string too long"),
    ("'x'.repeat(2 ** 31)", "RangeError"),
    ("await new Promise(() => {})", "never settles"),
    (
        "await Promise.all(Array.from({length: 500}, () => tools.read({path: 'a.txt'})))",
        "max_tool_calls reached",
    ),
    ("JSON.parse('['.repeat(1e6))", "Maximum call stack size exceeded"),
]


def js(code: str, cid: str = "call_1") -> dict[str, Any]:
    return {"tool_calls": [{"id": cid, "name": "js_execution", "arguments": {"code": code}}]}


def client(root: Path, *entries: dict[str, Any], **kw: Any) -> contenox.Client:
    kw.setdefault("builtins", ["read", "write"])
    kw.setdefault("code_execution", LIMITS)
    return contenox.create_client(style="scripted", script=list(entries), root=str(root), **kw)


def js_result(r: contenox.TurnResult) -> dict[str, Any]:
    found = [with_text(m) for m in r.transcript.messages if m.get("name") == "js_execution"]
    assert len(found) == 1, r.transcript.messages
    return found[0]


def rss_kib() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise AssertionError("no VmRSS")


async def run_hostile(root: Path) -> None:
    for code, want in HOSTILE:
        c = client(root, js(code), {"text": "over"})
        started = time.monotonic()
        r = await c.run("go")
        took = time.monotonic() - started
        got = js_result(r)
        assert r.outcome == "done", code
        assert got["is_error"], (code, got["content"])
        assert want in got["content"], (code, got["content"])
        assert took < 5, (code, took)


@needs_proc
async def test_hostile_programs_are_error_results_and_memory_comes_back(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("1\n")
    await run_hostile(tmp_path)  # warm-up: the allocator's arenas, the engine's statics
    before = rss_kib()
    for _ in range(3):
        await run_hostile(tmp_path)
    after = rss_kib()
    # Each round allocates up to 32 MiB in the JavaScript heaps; none of it may stay (measured:
    # about 1 MiB over three rounds, the warm-up taking the engine's one-time 25 MiB).
    assert after - before < 12 * 1024, f"RSS grew from {before} KiB to {after} KiB"


async def test_a_policy_denying_write_denies_it_from_code(tmp_path: Path) -> None:
    policy = {
        "version": 1,
        "default_action": "allow",
        "rules": [{"tool": "write", "action": "deny", "name": "no writes"}],
    }
    code = (
        "const out = [];\n"
        "for (const p of ['x.txt', '../y.txt', 'sub/z.txt']) {\n"
        "  try { await tools.write({path: p, content: 'pwned'}); out.push('wrote ' + p) }\n"
        "  catch (e) { out.push(e.message.split('.')[0]) }\n"
        "}\n"
        "out"
    )
    c = client(tmp_path, js(code), {"text": "over"}, policy=policy)
    events: list[Any] = []
    run = c.stream("go")
    async for e in run:
        events.append(e)
    r = await run.result()
    got = js_result(r)
    assert not got["is_error"], got["content"]
    assert "wrote" not in got["content"], got["content"]
    assert got["content"].count("The approval policy denied write") == 3, got["content"]
    assert list(tmp_path.iterdir()) == []
    gates = [e for e in events if e.type == "gate" and e.name == "write"]
    assert [g.call_id for g in gates] == ["call_1/js0", "call_1/js1", "call_1/js2"]
    assert all(g.decision == "deny" for g in gates)
    assert not [e for e in events if e.type == "tool_start" and e.name == "write"]


async def test_before_tool_sees_inner_calls(tmp_path: Path) -> None:
    (tmp_path / "n.txt").write_text("41\n")
    seen: list[str] = []

    def before_tool(call: contenox.ToolCallEvent) -> Any:
        seen.append(f"{call.name} {call.call_id}")
        return None

    code = "const t = await tools.read({path: 'n.txt'}); Number(t.split('\\t')[1]) + 1"
    c = client(tmp_path, js(code), {"text": "over"}, hooks={"before_tool": before_tool})
    r = await c.run("go")
    got = js_result(r)
    assert got["content"].startswith("42"), got["content"]
    assert seen == ["js_execution call_1", "read call_1/js0"]


async def test_unknown_limit_is_a_configuration_error(tmp_path: Path) -> None:
    with pytest.raises(contenox.ConfigurationError, match="code_execution"):
        client(tmp_path, {"text": "x"}, code_execution={"timeout": 5})
