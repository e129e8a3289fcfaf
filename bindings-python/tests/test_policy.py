"""Approval policies through the Python API (``policy=``, ``client.set_policy()``,
``contenox.policies``) and the options main added beside them: the compute ceilings, timeouts,
``shell_env``, ``sandbox`` and ``web_fetch_allow_private``, each checked by the engine and named
in Python's spelling when wrong."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import contenox
import pytest
from conftest import with_text


def call(name: str, args: dict[str, Any], cid: str = "call_1") -> dict[str, Any]:
    return {"tool_calls": [{"id": cid, "name": name, "arguments": args}]}


def echo_client(*entries: dict[str, Any], **kw: Any) -> contenox.Client:
    client = contenox.create_client(style="scripted", script=list(entries), builtins=[], **kw)

    @client.tool(hints={"read_only": True})
    def echo(text: str) -> str:
        """Echo the text."""
        return text

    return client


def deny_echo(rule_name: str = "no echo") -> dict[str, Any]:
    return {
        "version": 1,
        "default_action": "allow",
        "rules": [{"tool": "echo", "action": "deny", "name": rule_name}],
    }


def tool_results(r: contenox.TurnResult) -> list[dict[str, Any]]:
    return [with_text(m) for m in r.transcript.messages if m["role"] == "tool"]


def turn(client: contenox.Client, cid: str) -> dict[str, Any]:
    """One turn whose model calls echo once; the call's result message."""
    r = client.run_sync("go")
    assert r.outcome == "done", r
    (result,) = [m for m in tool_results(r) if m["call_id"] == cid]
    return result


@pytest.mark.parametrize("form", ["dict", "json", "path", "str_path"])
def test_policy_takes_a_document_its_json_text_or_a_file(form: str, tmp_path: Path) -> None:
    doc = deny_echo()
    file = tmp_path / "policy.json"
    file.write_text(json.dumps(doc))
    policy: contenox.PolicySource = {
        "dict": doc,
        "json": json.dumps(doc),
        "path": file,
        "str_path": str(file),
    }[form]
    client = echo_client(call("echo", {"text": "hi"}), {"text": "ok"}, policy=policy)
    result = turn(client, "call_1")
    assert result["is_error"], result
    assert 'rules[0] ("no echo")' in result["content"], result
    assert result["content"].endswith(
        "please ask for clarification or try a different, less destructive approach."
    )
    assert client.policy == doc


def test_set_policy_replaces_it_for_the_next_call_and_none_removes_it() -> None:
    client = echo_client(
        call("echo", {"text": "one"}, "c1"),
        {"text": "ok"},
        call("echo", {"text": "two"}, "c2"),
        {"text": "ok"},
        call("echo", {"text": "three"}, "c3"),
        {"text": "ok"},
        policy=deny_echo(),
    )
    assert turn(client, "c1")["is_error"]
    allow = {"default_action": "allow", "rules": [{"tool": "echo", "action": "allow"}]}
    client.set_policy(json.dumps(allow))
    assert client.policy == allow
    second = turn(client, "c2")
    assert (second["content"], second["is_error"]) == ("two", False)
    client.set_policy(deny_echo())
    client.set_policy(None)
    assert client.policy is None
    assert turn(client, "c3")["is_error"] is False
    # The creation-time option is what the config shows.
    assert client.config["policy"] == deny_echo()


@pytest.mark.parametrize(
    ("bad", "says"),
    [
        ({"rules": [{"tool": "echo", "action": "maybe"}]}, "rules[0].action"),
        ({"rules": [{"action": "approve", "on_timeout": "allow"}]}, "rules[0].on_timeout"),
        ({"version": 2}, "newer"),
        ('{"rules": [', "not valid JSON"),
        ("/nonexistent/policy.json", "/nonexistent/policy.json"),
        (42, "got 42"),
    ],
)
def test_a_bad_policy_is_refused_and_the_old_one_stays(bad: Any, says: str) -> None:
    client = echo_client(call("echo", {"text": "hi"}), {"text": "ok"}, policy=deny_echo("old"))
    with pytest.raises(contenox.ConfigurationError) as e:
        client.set_policy(bad)
    assert e.value.option == "policy", e.value
    assert says in str(e.value), str(e.value)
    assert client.policy == deny_echo("old")
    assert 'rules[0] ("old")' in turn(client, "call_1")["content"]
    # The same document at creation fails creation, naming the same field.
    with pytest.raises(contenox.ConfigurationError) as created:
        echo_client({"text": "x"}, policy=bad)
    assert created.value.option == "policy" and says in str(created.value)


def test_presets_are_the_engines_documents(tmp_path: Path) -> None:
    default = contenox.policies.default()
    assert default["default_action"] == "approve"
    assert contenox.policies.strict()["default_action"] == "deny"
    assert contenox.policies.dev()["default_action"] == "allow"
    # A fresh copy each time: editing one changes nothing else.
    default["rules"].clear()
    assert contenox.policies.default()["rules"]

    (tmp_path / "notes.txt").write_text("hello\n")
    (tmp_path / ".ssh").mkdir()
    (tmp_path / ".ssh" / "id_ed25519").write_text("PRIVATE KEY\n")
    client = contenox.create_client(
        style="scripted",
        script=[
            call("read", {"path": "notes.txt"}, "c1"),
            call("read", {"path": ".ssh/id_ed25519"}, "c2"),
            {"text": "done"},
        ],
        builtins=["read"],
        root=tmp_path,
        policy=contenox.policies.default(),
    )
    r = client.run_sync("read them")
    notes, key = tool_results(r)
    assert "hello" in notes["content"] and notes["is_error"] is False
    assert key["is_error"] and "The approval policy denied read" in key["content"]
    assert "PRIVATE KEY" not in key["content"]


async def test_gate_events_name_the_rule_and_ceilings_end_with_budget() -> None:
    client = echo_client(call("echo", {"text": "a"}, "c1"), {"text": "ok"}, policy=deny_echo())
    seen = [e async for e in client.stream("go")]
    (gate,) = [e for e in seen if isinstance(e, contenox.events.Gate)]
    assert (gate.decision, gate.rule) == ("deny", 'rules[0] ("no echo")')
    assert gate.to_dict()["rule"] == 'rules[0] ("no echo")'

    two_calls = {
        "tool_calls": [
            {"id": "c1", "name": "echo", "arguments": {"text": "a"}},
            {"id": "c2", "name": "echo", "arguments": {"text": "b"}},
        ]
    }
    client = echo_client(two_calls, {"text": "never"}, max_tool_calls=1)
    r = await client.run("go")
    assert r.outcome == "budget" and r.error and "max_tool_calls" in r.error, r
    first, second = tool_results(r)
    assert first["content"] == "a" and second["is_error"]
    assert second["content"].startswith("budget reached")

    client = echo_client(
        {**call("echo", {"text": "a"}), "usage": {"input_tokens": 50, "output_tokens": 50}},
        {"text": "never"},
        max_turn_tokens=10,
    )
    r = await client.run("go")
    assert r.outcome == "budget" and r.error and "max_turn_tokens" in r.error, r
    (unexecuted,) = tool_results(r)
    assert unexecuted["is_error"] and unexecuted["content"].startswith("budget reached")


def test_the_new_options_are_typed_and_checked_in_pythons_names(tmp_path: Path) -> None:
    client = contenox.create_client(
        style="scripted",
        script=[{"text": "x"}],
        request_timeout_ms=1_000,
        idle_timeout_ms=2_000,
        max_tool_calls=3,
        max_turn_tokens=4_000,
        shell_env=["LANG", "CI_*", "MODE=test"],
        sandbox={"enabled": True, "network": False, "writable": [tmp_path]},
        web_fetch_allow_private=True,
        tool_concurrency="all",
        max_concurrent_tools=2,
        stream_tools=False,
    )
    c = client.config
    assert (c["request_timeout_ms"], c["idle_timeout_ms"]) == (1_000, 2_000)
    assert (c["max_tool_calls"], c["max_turn_tokens"]) == (3, 4_000)
    assert c["shell_env"] == ["LANG", "CI_*", "MODE=test"]
    assert c["sandbox"] == {"enabled": True, "network": False, "writable": [str(tmp_path)]}
    assert c["web_fetch_allow_private"] is True
    assert (c["tool_concurrency"], c["max_concurrent_tools"], c["stream_tools"]) == (
        "all",
        2,
        False,
    )

    def refused(**options: Any) -> contenox.ConfigurationError:
        with pytest.raises(contenox.ConfigurationError) as e:
            contenox.create_client(style="scripted", script=[{"text": "x"}], **options)
        return e.value

    e = refused(tool_concurrency="sometimes")
    assert e.option == "tool_concurrency" and "read_only" in str(e), e
    for name in (
        "request_timeout_ms",
        "idle_timeout_ms",
        "max_tool_calls",
        "max_turn_tokens",
        "max_concurrent_tools",
    ):
        e = refused(**{name: 0})
        assert (e.option, e.value) == (name, "0"), e
    e = refused(shell_env=["LANG", "*"])
    assert (e.option, e.value) == ("shell_env[1]", '"*"')
    e = refused(shell_env=["A*=s3cret"])
    assert e.value == '"A*=<redacted>"' and "s3cret" not in str(e)
    e = refused(sandbox={"writable": ["relative/dir"]})
    assert e.option == "sandbox.writable[0]" and "absolute" in e.reason
    e = refused(sandbox={"netwrk": False})
    assert "netwrk" in str(e)
