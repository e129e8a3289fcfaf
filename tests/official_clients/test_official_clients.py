"""The fake model server against the official Python SDKs (openai, anthropic, ollama).

Proves the fake speaks each style's real wire format: the SDKs parse its text, tool calls
(two in one response; ids where the style has ids) and usage, streaming and not, and see its
scripted errors as their own error types.

Run: FAKE_MODEL_SERVER=/path/to/fake-model-server python -m pytest tests/official_clients
(default binary: <repo>/target/debug/fake-model-server). Needs: pip install openai anthropic
ollama pytest.
"""

from __future__ import annotations

import json
import os
import subprocess
import threading
import urllib.request
from pathlib import Path

import anthropic
import ollama
import openai
import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]
STARTED: list[subprocess.Popen] = []


def server_binary() -> Path:
    path = Path(os.environ.get("FAKE_MODEL_SERVER") or REPO_ROOT / "target/debug/fake-model-server")
    if not path.is_file():
        pytest.fail(
            f"fake-model-server not found at {path}: build it with "
            "`cargo build -p contenox-conformance` or set FAKE_MODEL_SERVER"
        )
    return path


class Server:
    """One fake-model-server process serving one script."""

    def __init__(self, proc: subprocess.Popen, port: int, style: str):
        self.proc = proc
        self.style = style
        self.root = f"http://127.0.0.1:{port}"

    @property
    def base_url(self) -> str:
        return self.root + "/v1" if self.style.startswith("openai") else self.root

    def requests(self) -> list:
        with urllib.request.urlopen(self.root + "/_fake/requests", timeout=5) as r:
            return json.load(r)

    def stop(self) -> bool:
        """Closes stdin; returns whether the server exited by itself (else it is killed)."""
        if self.proc.stdin and not self.proc.stdin.closed:
            self.proc.stdin.close()
        try:
            self.proc.wait(timeout=5)
            exited = True
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(timeout=5)
            exited = False
        if self.proc.stdout:
            self.proc.stdout.close()
        return exited


@pytest.fixture
def fake(tmp_path):
    """fake(model_entries, style) starts a server; every one is stopped at teardown."""
    servers: list[Server] = []

    def start(model: list, style: str) -> Server:
        scenario = {"name": "official_clients", "style": style, "prompt": "p", "model": model}
        path = tmp_path / f"scenario_{len(servers)}.json"
        path.write_text(json.dumps(scenario))
        proc = subprocess.Popen(
            [str(server_binary()), "--scenario", str(path)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        STARTED.append(proc)
        line: list[str] = []
        reader = threading.Thread(target=lambda: line.append(proc.stdout.readline()), daemon=True)
        reader.start()
        reader.join(timeout=10)
        if not line or not line[0].strip().isdigit():
            proc.kill()
            proc.wait()
            pytest.fail(f"fake-model-server printed no port (got {line!r}, rc={proc.poll()})")
        server = Server(proc, int(line[0]), style)
        servers.append(server)
        return server

    yield start
    not_by_itself = [s.proc.pid for s in servers if not s.stop()]
    assert not not_by_itself, f"fake-model-server did not exit on stdin EOF: {not_by_itself}"


TWO_CALLS = {
    "text": "Let me check.",
    "tool_calls": [
        {"id": "call_1", "name": "echo", "arguments": {"text": "hi from model"}},
        {"id": "call_2", "name": "read", "arguments": {"path": "a.txt", "limit": 2}},
    ],
    "usage": {"input_tokens": 11, "output_tokens": 7},
}
TEXT = {"text": "Hello there, my friend.", "usage": {"input_tokens": 5, "output_tokens": 4}}
MESSAGES = [{"role": "user", "content": "hi"}]


# ---------------------------------------------------------------------------------------------
# openai


def oai(server: Server, **kw) -> openai.OpenAI:
    return openai.OpenAI(base_url=server.base_url, api_key="test", max_retries=0, **kw)


def test_openai_text_stream(fake):
    server = fake([TEXT], "openai")
    stream = oai(server).chat.completions.create(
        model="fake", messages=MESSAGES, stream=True, stream_options={"include_usage": True}
    )
    pieces, finish, usage = [], None, None
    for chunk in stream:
        if chunk.usage is not None:
            usage = chunk.usage
        for choice in chunk.choices:
            if choice.delta.content:
                pieces.append(choice.delta.content)
            if choice.finish_reason:
                finish = choice.finish_reason
    assert "".join(pieces) == "Hello there, my friend."
    assert len(pieces) >= 3
    assert finish == "stop"
    assert (usage.prompt_tokens, usage.completion_tokens, usage.total_tokens) == (5, 4, 9)
    [body] = server.requests()
    assert body["stream"] is True and body["messages"] == MESSAGES


def test_openai_tool_calls_stream(fake):
    server = fake([TWO_CALLS], "openai")
    stream = oai(server).chat.completions.create(
        model="fake", messages=MESSAGES, stream=True, stream_options={"include_usage": True}
    )
    text, calls, fragments, finish, usage = "", {}, {}, None, None
    for chunk in stream:
        usage = chunk.usage or usage
        for choice in chunk.choices:
            text += choice.delta.content or ""
            finish = choice.finish_reason or finish
            for tc in choice.delta.tool_calls or []:
                call = calls.setdefault(tc.index, {"id": None, "name": None, "arguments": ""})
                if tc.id:
                    call["id"] = tc.id
                if tc.function and tc.function.name:
                    call["name"] = tc.function.name
                if tc.function and tc.function.arguments:
                    call["arguments"] += tc.function.arguments
                    fragments[tc.index] = fragments.get(tc.index, 0) + 1
    assert text == "Let me check."
    assert finish == "tool_calls"
    assert [(c["id"], c["name"], json.loads(c["arguments"])) for c in calls.values()] == [
        ("call_1", "echo", {"text": "hi from model"}),
        ("call_2", "read", {"path": "a.txt", "limit": 2}),
    ]
    assert all(n > 1 for n in fragments.values()), fragments
    assert (usage.prompt_tokens, usage.completion_tokens) == (11, 7)


def test_openai_stream_helper_accumulates(fake):
    """The SDK's own accumulator builds the same completion from the chunks."""
    server = fake([TWO_CALLS], "openai")
    with oai(server).chat.completions.stream(
        model="fake", messages=MESSAGES, stream_options={"include_usage": True}
    ) as stream:
        final = stream.get_final_completion()
    msg = final.choices[0].message
    assert msg.content == "Let me check."
    assert [(c.id, c.function.name, json.loads(c.function.arguments)) for c in msg.tool_calls] == [
        ("call_1", "echo", {"text": "hi from model"}),
        ("call_2", "read", {"path": "a.txt", "limit": 2}),
    ]
    assert final.choices[0].finish_reason == "tool_calls"
    assert (final.usage.prompt_tokens, final.usage.completion_tokens) == (11, 7)


def test_openai_non_stream(fake):
    server = fake([TWO_CALLS, TEXT], "openai")
    client = oai(server)
    first = client.chat.completions.create(model="fake", messages=MESSAGES)
    msg = first.choices[0].message
    assert first.object == "chat.completion"
    assert msg.content == "Let me check."
    assert [(c.id, c.type, c.function.name, json.loads(c.function.arguments)) for c in msg.tool_calls] == [
        ("call_1", "function", "echo", {"text": "hi from model"}),
        ("call_2", "function", "read", {"path": "a.txt", "limit": 2}),
    ]
    assert first.choices[0].finish_reason == "tool_calls"
    assert (first.usage.prompt_tokens, first.usage.completion_tokens, first.usage.total_tokens) == (11, 7, 18)
    second = client.chat.completions.create(model="fake", messages=MESSAGES)
    assert second.choices[0].message.content == "Hello there, my friend."
    assert second.choices[0].message.tool_calls is None
    assert second.choices[0].finish_reason == "stop"
    assert len(server.requests()) == 2


def test_openai_raw_string_arguments_pass_as_is(fake):
    entry = {"tool_calls": [{"id": "call_x", "name": "echo", "arguments": "{not json"}]}
    server = fake([entry, entry], "openai")
    client = oai(server)
    msg = client.chat.completions.create(model="fake", messages=MESSAGES).choices[0].message
    assert msg.tool_calls[0].function.arguments == "{not json"
    args = ""
    for chunk in client.chat.completions.create(model="fake", messages=MESSAGES, stream=True):
        for choice in chunk.choices:
            for tc in choice.delta.tool_calls or []:
                args += tc.function.arguments or ""
    assert args == "{not json"


def test_openai_rate_limit_error(fake):
    body = {"error": {"message": "slow down", "type": "requests", "code": "rate_limit_exceeded"}}
    server = fake([{"error": {"status": 429, "retry_after_s": 7, "body": body}}, {"error": {"status": 429}}], "openai")
    client = oai(server)
    with pytest.raises(openai.RateLimitError) as e:
        client.chat.completions.create(model="fake", messages=MESSAGES, stream=True)
    assert e.value.status_code == 429
    assert e.value.body == body["error"]
    assert e.value.code == "rate_limit_exceeded"
    assert e.value.response.headers["retry-after"] == "7"
    # The default body is an OpenAI error object too.
    with pytest.raises(openai.RateLimitError) as e:
        client.chat.completions.create(model="fake", messages=MESSAGES)
    assert e.value.code == "rate_limit_exceeded"
    assert "scripted error 429" in str(e.value)
    # max_retries=0: one request per call.
    assert len(server.requests()) == 2


def test_openai_script_exhausted_and_models(fake):
    server = fake([], "openai")
    client = oai(server)
    with pytest.raises(openai.InternalServerError) as e:
        client.chat.completions.create(model="fake", messages=MESSAGES)
    assert e.value.response.text == "script exhausted"
    assert [m.id for m in client.models.list()] == ["fake"]


def test_openai_stall_times_out(fake):
    server = fake([{"stall": True}, TEXT], "openai")
    with pytest.raises(openai.APITimeoutError):
        oai(server, timeout=0.5).chat.completions.create(model="fake", messages=MESSAGES)
    # The stall consumed its entry; the next request gets the next one.
    reply = oai(server).chat.completions.create(model="fake", messages=MESSAGES)
    assert reply.choices[0].message.content == "Hello there, my friend."


# ---------------------------------------------------------------------------------------------
# anthropic


def anth(server: Server) -> anthropic.Anthropic:
    return anthropic.Anthropic(base_url=server.base_url, api_key="test", max_retries=0)


def test_anthropic_text_stream_raw_events(fake):
    server = fake([TEXT], "anthropic")
    events = list(
        anth(server).messages.create(model="fake", max_tokens=100, messages=MESSAGES, stream=True)
    )
    types = [e.type for e in events]
    assert types[0] == "message_start" and types[-2:] == ["message_delta", "message_stop"]
    deltas = [e.delta.text for e in events if e.type == "content_block_delta"]
    assert "".join(deltas) == "Hello there, my friend." and len(deltas) >= 3
    assert events[0].message.usage.input_tokens == 5
    assert events[-2].delta.stop_reason == "end_turn"
    assert events[-2].usage.output_tokens == 4
    [body] = server.requests()
    assert body["stream"] is True and body["messages"] == MESSAGES and body["max_tokens"] == 100


def test_anthropic_tool_calls_stream_helper(fake):
    server = fake([TWO_CALLS], "anthropic")
    with anth(server).messages.stream(model="fake", max_tokens=100, messages=MESSAGES) as stream:
        pieces = list(stream.text_stream)
        final = stream.get_final_message()
    assert "".join(pieces) == "Let me check."
    assert final.stop_reason == "tool_use"
    assert final.content[0].type == "text" and final.content[0].text == "Let me check."
    assert [(b.type, b.id, b.name, b.input) for b in final.content[1:]] == [
        ("tool_use", "call_1", "echo", {"text": "hi from model"}),
        ("tool_use", "call_2", "read", {"path": "a.txt", "limit": 2}),
    ]
    assert (final.usage.input_tokens, final.usage.output_tokens) == (11, 7)


def test_anthropic_partial_json_comes_in_pieces(fake):
    server = fake([TWO_CALLS], "anthropic")
    events = list(
        anth(server).messages.create(model="fake", max_tokens=100, messages=MESSAGES, stream=True)
    )
    per_block: dict[int, list[str]] = {}
    for e in events:
        if e.type == "content_block_delta" and e.delta.type == "input_json_delta":
            per_block.setdefault(e.index, []).append(e.delta.partial_json)
    assert sorted(per_block) == [1, 2]
    assert all(len(p) > 1 for p in per_block.values())
    assert json.loads("".join(per_block[1])) == {"text": "hi from model"}


def test_anthropic_non_stream(fake):
    server = fake([TWO_CALLS, TEXT], "anthropic")
    client = anth(server)
    msg = client.messages.create(model="fake", max_tokens=100, messages=MESSAGES)
    assert msg.type == "message" and msg.role == "assistant"
    assert msg.stop_reason == "tool_use"
    assert [(b.id, b.name, b.input) for b in msg.content if b.type == "tool_use"] == [
        ("call_1", "echo", {"text": "hi from model"}),
        ("call_2", "read", {"path": "a.txt", "limit": 2}),
    ]
    assert (msg.usage.input_tokens, msg.usage.output_tokens) == (11, 7)
    msg = client.messages.create(model="fake", max_tokens=100, messages=MESSAGES)
    assert [b.text for b in msg.content] == ["Hello there, my friend."]
    assert msg.stop_reason == "end_turn"


def test_anthropic_rate_limit_error(fake):
    body = {"type": "error", "error": {"type": "rate_limit_error", "message": "slow down"}}
    server = fake([{"error": {"status": 429, "retry_after_s": 3, "body": body}}], "anthropic")
    with pytest.raises(anthropic.RateLimitError) as e:
        anth(server).messages.create(model="fake", max_tokens=100, messages=MESSAGES, stream=True)
    assert e.value.status_code == 429
    assert e.value.body == body
    assert e.value.response.headers["retry-after"] == "3"
    assert len(server.requests()) == 1


def test_anthropic_empty_text_block_is_refused_as_the_api_does(fake):
    # The SDK sends what it is given; the API (and so the fake) refuses an empty text block
    # with 400 invalid_request_error, which the SDK raises as BadRequestError.
    server = fake([TEXT], "anthropic")
    client = anth(server)
    empty_reply = [
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": [{"type": "text", "text": ""}]},
        {"role": "user", "content": "again"},
    ]
    with pytest.raises(anthropic.BadRequestError) as e:
        client.messages.create(model="fake", max_tokens=100, messages=empty_reply)
    assert e.value.status_code == 400
    assert e.value.body["error"]["type"] == "invalid_request_error"
    assert "non-whitespace text" in e.value.body["error"]["message"]
    # The refusal used no script entry: the next valid request gets it.
    msg = client.messages.create(model="fake", max_tokens=100, messages=MESSAGES)
    assert [b.text for b in msg.content] == ["Hello there, my friend."]


def test_anthropic_models(fake):
    server = fake([], "anthropic")
    assert [m.id for m in anth(server).models.list()] == ["fake"]


# ---------------------------------------------------------------------------------------------
# ollama


def oll(server: Server) -> ollama.Client:
    return ollama.Client(host=server.base_url)


def test_ollama_text_stream(fake):
    server = fake([TEXT], "ollama")
    parts = list(oll(server).chat(model="fake", messages=MESSAGES, stream=True))
    pieces = [p.message.content for p in parts if p.message.content]
    assert "".join(pieces) == "Hello there, my friend." and len(pieces) >= 3
    assert [p.done for p in parts] == [False] * (len(parts) - 1) + [True]
    last = parts[-1]
    assert last.done_reason == "stop"
    assert (last.prompt_eval_count, last.eval_count) == (5, 4)
    [body] = server.requests()
    assert body["stream"] is True and body["messages"] == MESSAGES


def test_ollama_tool_calls_stream(fake):
    server = fake([TWO_CALLS], "ollama")
    parts = list(oll(server).chat(model="fake", messages=MESSAGES, stream=True))
    calls = [c for p in parts for c in (p.message.tool_calls or [])]
    assert [(c.function.name, dict(c.function.arguments)) for c in calls] == [
        ("echo", {"text": "hi from model"}),
        ("read", {"path": "a.txt", "limit": 2}),
    ]
    assert "".join(p.message.content or "" for p in parts) == "Let me check."
    assert (parts[-1].prompt_eval_count, parts[-1].eval_count) == (11, 7)


def test_ollama_non_stream_has_no_call_ids(fake):
    server = fake([TWO_CALLS, TWO_CALLS], "ollama")
    reply = oll(server).chat(model="fake", messages=MESSAGES, stream=False)
    assert reply.done and reply.done_reason == "stop"
    assert reply.message.content == "Let me check."
    assert [(c.function.name, dict(c.function.arguments)) for c in reply.message.tool_calls] == [
        ("echo", {"text": "hi from model"}),
        ("read", {"path": "a.txt", "limit": 2}),
    ]
    assert (reply.prompt_eval_count, reply.eval_count) == (11, 7)
    # The wire carries no ids, as the real server.
    raw = urllib.request.Request(
        server.root + "/api/chat",
        data=json.dumps({"model": "fake", "stream": False, "messages": MESSAGES}).encode(),
    )
    with urllib.request.urlopen(raw, timeout=5) as r:
        wire = json.load(r)
    assert all(set(c) == {"function"} for c in wire["message"]["tool_calls"])
    assert "call_1" not in json.dumps(wire)


def test_ollama_error_and_list(fake):
    server = fake([{"error": {"status": 429}}], "ollama")
    client = oll(server)
    with pytest.raises(ollama.ResponseError) as e:
        client.chat(model="fake", messages=MESSAGES)
    assert e.value.status_code == 429
    assert "scripted error 429" in e.value.error
    assert [m.model for m in client.list().models] == ["fake"]


# ---------------------------------------------------------------------------------------------
# all styles


def _broken_connection(exc: BaseException | None) -> bool:
    """Whether the exception (or one it was raised from) is the transport's broken-body error."""
    while exc is not None:
        if type(exc).__name__ == "RemoteProtocolError":
            return True
        exc = exc.__cause__ or exc.__context__
    return False


LONG = "one two three four five six seven eight nine ten"


@pytest.mark.parametrize("style", ["openai", "anthropic", "ollama"])
def test_break_after_bytes_is_a_broken_stream(fake, style):
    server = fake([{"text": LONG, "break_after_bytes": 700}], style)
    pieces: list[str] = []
    with pytest.raises(Exception) as e:
        if style == "openai":
            for chunk in oai(server).chat.completions.create(model="fake", messages=MESSAGES, stream=True):
                pieces.extend(c.delta.content or "" for c in chunk.choices)
        elif style == "anthropic":
            for ev in anth(server).messages.create(model="fake", max_tokens=9, messages=MESSAGES, stream=True):
                if ev.type == "content_block_delta":
                    pieces.append(ev.delta.text)
        else:
            for part in oll(server).chat(model="fake", messages=MESSAGES, stream=True):
                pieces.append(part.message.content or "")
    assert _broken_connection(e.value), repr(e.value)
    text = "".join(pieces)
    assert text and LONG.startswith(text) and text != LONG, text


# ---------------------------------------------------------------------------------------------
# prompt-cache usage: scenario `usage` keys in each style's own fields

CACHED = {
    "text": "From the cache.",
    "usage": {"input_tokens": 30, "output_tokens": 4, "cache_read_input_tokens": 24},
}
CACHE_WRITE = {
    "text": "Written to the cache.",
    "usage": {"input_tokens": 40, "output_tokens": 3, "cache_read_input_tokens": 10,
              "cache_creation_input_tokens": 25},
}


def test_openai_cached_tokens(fake):
    server = fake([CACHED, CACHED], "openai")
    client = oai(server)
    usage = None
    for chunk in client.chat.completions.create(
        model="fake", messages=MESSAGES, stream=True, stream_options={"include_usage": True}
    ):
        if chunk.usage is not None:
            usage = chunk.usage
    # prompt_tokens is the whole prompt; cached_tokens the part of it served from the cache.
    assert (usage.prompt_tokens, usage.completion_tokens) == (30, 4)
    assert usage.prompt_tokens_details.cached_tokens == 24
    whole = client.chat.completions.create(model="fake", messages=MESSAGES)
    assert whole.usage.prompt_tokens == 30
    assert whole.usage.prompt_tokens_details.cached_tokens == 24


def test_anthropic_cache_fields(fake):
    server = fake([CACHE_WRITE, CACHE_WRITE], "anthropic")
    client = anth(server)
    with client.messages.stream(model="fake", max_tokens=100, messages=MESSAGES) as stream:
        final = stream.get_final_message()
    # input_tokens counts only what was neither read from nor written to the cache.
    u = final.usage
    assert (u.input_tokens, u.cache_read_input_tokens, u.cache_creation_input_tokens) == (5, 10, 25)
    assert u.output_tokens == 3
    msg = client.messages.create(model="fake", max_tokens=100, messages=MESSAGES)
    u = msg.usage
    assert (u.input_tokens, u.cache_read_input_tokens, u.cache_creation_input_tokens) == (5, 10, 25)


# ---------------------------------------------------------------------------------------------


# ---------------------------------------------------------------------------------------------
# reasoning (the scenario key `reasoning`)

REASONED = {
    "reasoning": [{"text": "First I think it over."}],
    "tool_calls": [{"id": "call_1", "name": "echo", "arguments": {"text": "hi"}}],
}


@pytest.mark.parametrize("field", ["reasoning_content", "reasoning"])
def test_openai_reasoning_deltas_under_their_field(fake, field):
    entry = {**REASONED, "reasoning": [{"text": "First I think it over.", "field": field}]}
    server = fake([entry, entry], "openai")
    client = oai(server)
    stream = client.chat.completions.create(model="fake", messages=MESSAGES, stream=True)
    pieces = []
    for chunk in stream:
        for choice in chunk.choices:
            extra = choice.delta.model_extra or {}
            if extra.get(field):
                pieces.append(extra[field])
            other = "reasoning" if field == "reasoning_content" else "reasoning_content"
            assert other not in extra
    assert "".join(pieces) == "First I think it over." and len(pieces) >= 2
    whole = client.chat.completions.create(model="fake", messages=MESSAGES)
    assert (whole.choices[0].message.model_extra or {})[field] == "First I think it over."


def test_openai_mistral_thinking_parts(fake):
    entry = {"reasoning": [{"text": "Two and two.", "field": "thinking"}], "text": "2 + 2 = 4"}
    server = fake([entry], "openai")
    stream = oai(server).chat.completions.create(model="fake", messages=MESSAGES, stream=True)
    thinking, text = [], []
    for chunk in stream:
        for choice in chunk.choices:
            for part in choice.delta.content or []:
                if part["type"] == "thinking":
                    thinking += [t["text"] for t in part["thinking"]]
                elif part["type"] == "text":
                    text.append(part["text"])
    assert "".join(thinking) == "Two and two." and "".join(text) == "2 + 2 = 4"


def test_anthropic_thinking_blocks_and_their_signatures(fake):
    entry = {**REASONED, "reasoning": [{"text": "First I think it over."}, {"redacted": "RU5D"}]}
    server = fake([entry, TEXT, TEXT], "anthropic")
    client = anth(server)
    with client.messages.stream(model="fake", max_tokens=4096, messages=MESSAGES) as stream:
        kinds = [e.delta.type for e in stream if e.type == "content_block_delta"]
        final = stream.get_final_message()
    assert "thinking_delta" in kinds and kinds.count("signature_delta") == 1
    thinking, redacted, call = final.content
    assert (thinking.type, thinking.thinking) == ("thinking", "First I think it over.")
    assert thinking.signature.startswith("sigfake")
    assert (redacted.type, redacted.data) == ("redacted_thinking", "RU5D")
    assert call.type == "tool_use"
    # Sent back unchanged before the tool_use, with thinking on: accepted.
    back = MESSAGES + [
        {"role": "assistant", "content": [b.model_dump() for b in final.content]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "call_1",
                                      "content": "hi"}]},
    ]
    thinking_on = {"type": "enabled", "budget_tokens": 2048}
    msg = client.messages.create(model="fake", max_tokens=4096, messages=back, thinking=thinking_on)
    assert msg.content[0].text == "Hello there, my friend."
    # Its text changed: the signature no longer fits, as the real API refuses it.
    back[1]["content"][0]["thinking"] = "Something else."
    with pytest.raises(anthropic.BadRequestError, match="signature"):
        client.messages.create(model="fake", max_tokens=4096, messages=back, thinking=thinking_on)
    # Left out, with thinking on: the assistant turn must start with its thinking.
    back[1]["content"] = back[1]["content"][2:]
    with pytest.raises(anthropic.BadRequestError, match="must start with a thinking block"):
        client.messages.create(model="fake", max_tokens=4096, messages=back, thinking=thinking_on)


def test_ollama_thinking(fake):
    entry = {"reasoning": [{"text": "Two and two make four."}], "text": "4"}
    server = fake([entry, entry], "ollama")
    parts = list(oll(server).chat(model="fake", messages=MESSAGES, stream=True))
    assert "".join(p.message.thinking or "" for p in parts) == "Two and two make four."
    assert len([p for p in parts if p.message.thinking]) >= 2
    reply = oll(server).chat(model="fake", messages=MESSAGES, stream=False)
    assert (reply.message.thinking, reply.message.content) == ("Two and two make four.", "4")


# ---------------------------------------------------------------------------------------------
# stop reasons (the scenario key `stop_reason`)


def test_openai_refusal_and_length(fake):
    refusal = {"text": "I'm sorry, I cannot help.", "stop_reason": "refusal"}
    cut = {"text": "one two", "stop_reason": "length"}
    server = fake([refusal, refusal, cut], "openai")
    client = oai(server)
    pieces, finish = [], None
    for chunk in client.chat.completions.create(model="fake", messages=MESSAGES, stream=True):
        for choice in chunk.choices:
            assert not choice.delta.content
            pieces.append(choice.delta.refusal or "")
            finish = choice.finish_reason or finish
    assert "".join(pieces) == "I'm sorry, I cannot help." and finish == "stop"
    whole = client.chat.completions.create(model="fake", messages=MESSAGES)
    assert whole.choices[0].message.refusal == "I'm sorry, I cannot help."
    assert whole.choices[0].message.content is None
    whole = client.chat.completions.create(model="fake", messages=MESSAGES)
    assert whole.choices[0].finish_reason == "length"


@pytest.mark.parametrize("reason", ["refusal", "max_tokens", "pause_turn"])
def test_anthropic_stop_reasons(fake, reason):
    server = fake([{"text": "Partial.", "stop_reason": reason}], "anthropic")
    with anth(server).messages.stream(model="fake", max_tokens=100, messages=MESSAGES) as stream:
        final = stream.get_final_message()
    assert final.stop_reason == reason and final.content[0].text == "Partial."


def test_ollama_length(fake):
    server = fake([{"text": "one two", "stop_reason": "length"}], "ollama")
    parts = list(oll(server).chat(model="fake", messages=MESSAGES, stream=True))
    assert parts[-1].done_reason == "length"


def test_no_fake_server_left():
    """Runs last (file order): every server this module started has exited and been reaped."""
    assert STARTED, "no server was started"
    assert [p.pid for p in STARTED if p.poll() is None] == []
    me = os.getpid()
    left = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            cmdline = (entry / "cmdline").read_bytes()
        except OSError:
            continue
        ppid = int(stat.rsplit(")", 1)[1].split()[1])
        if ppid == me and b"fake-model-server" in cmdline:
            left.append(int(entry.name))
    assert left == []


# ---------------------------------------------------------------------------------------------
# openai-responses (the Responses API)


def responses_server(fake, model: list) -> Server:
    return fake(model, "openai-responses")


def oai_responses(server: Server, **kw) -> openai.OpenAI:
    return oai(server, **kw)


REASONED_CALLS = {
    "reasoning": [{"text": "Think first."}],
    "text": "Let me check.",
    "tool_calls": TWO_CALLS["tool_calls"],
    "usage": {"input_tokens": 11, "output_tokens": 7, "cache_read_input_tokens": 3, "reasoning_tokens": 2},
}


def test_responses_stream_events_are_the_sdks_types(fake):
    server = responses_server(fake, [REASONED_CALLS])
    stream = oai_responses(server).responses.create(
        model="fake",
        input="hi",
        stream=True,
        store=False,
        include=["reasoning.encrypted_content"],
    )
    events = list(stream)
    kinds = [e.type for e in events]
    assert kinds[0] == "response.created" and kinds[-1] == "response.completed"
    assert [e.sequence_number for e in events] == list(range(len(events)))
    # Typed by the SDK, one class per event type.
    deltas = [e for e in events if isinstance(e, openai.types.responses.ResponseTextDeltaEvent)]
    assert "".join(d.delta for d in deltas) == "Let me check."
    summary = [e for e in events if isinstance(e, openai.types.responses.ResponseReasoningSummaryTextDeltaEvent)]
    assert "".join(s.delta for s in summary) == "Think first."
    args = [e for e in events if isinstance(e, openai.types.responses.ResponseFunctionCallArgumentsDeltaEvent)]
    assert len(args) > 2  # streamed in pieces
    done = events[-1].response
    reasoning, message, *calls = done.output
    assert reasoning.type == "reasoning"
    assert reasoning.summary[0].text == "Think first."
    assert reasoning.encrypted_content and reasoning.encrypted_content.startswith("encfake")
    assert message.type == "message" and done.output_text == "Let me check."
    assert [(c.call_id, c.name, json.loads(c.arguments)) for c in calls] == [
        (c["id"], c["name"], c["arguments"]) for c in TWO_CALLS["tool_calls"]
    ]
    assert done.usage.input_tokens == 11 and done.usage.output_tokens == 7
    assert done.usage.input_tokens_details.cached_tokens == 3
    assert done.usage.output_tokens_details.reasoning_tokens == 2
    assert server.requests()[0]["store"] is False


def test_responses_stream_helper_accumulates(fake):
    # The SDK's helper rebuilds the response from the events (by output and content index) and
    # checks them as it goes: the fake's events must fit together.
    server = responses_server(fake, [REASONED_CALLS])
    with oai_responses(server).responses.stream(model="fake", input="hi") as stream:
        text = "".join(e.delta for e in stream if e.type == "response.output_text.delta")
        final = stream.get_final_response()
    assert text == "Let me check."
    assert final.output_text == "Let me check."
    assert [o.type for o in final.output] == ["reasoning", "message", "function_call", "function_call"]
    # Without `include`, no encrypted content.
    assert final.output[0].encrypted_content is None


def test_responses_non_stream(fake):
    server = responses_server(fake, [REASONED_CALLS, TEXT])
    client = oai_responses(server)
    first = client.responses.create(model="fake", input="hi")
    assert first.status == "completed"
    assert first.output_text == "Let me check."
    assert [o.type for o in first.output] == ["reasoning", "message", "function_call", "function_call"]
    second = client.responses.create(model="fake", input="hi")
    assert second.output_text == TEXT["text"]
    assert second.usage.input_tokens == 5


def test_responses_incomplete_and_errors(fake):
    server = responses_server(
        fake,
        [
            {"text": "cut", "stop_reason": "max_output_tokens"},
            {"error": {"status": 429, "retry_after_s": 3}},
        ],
    )
    client = oai_responses(server)
    events = list(client.responses.create(model="fake", input="hi", stream=True))
    assert events[-1].type == "response.incomplete"
    assert events[-1].response.incomplete_details.reason == "max_output_tokens"
    with pytest.raises(openai.RateLimitError) as e:
        client.responses.create(model="fake", input="hi", stream=True)
    assert e.value.code == "rate_limit_exceeded"
    assert e.value.response.headers["retry-after"] == "3"


def test_responses_refuses_what_the_api_refuses(fake):
    server = responses_server(fake, [REASONED_CALLS, TEXT, TEXT])
    client = oai_responses(server)
    first = client.responses.create(model="fake", input="hi", store=False, include=["reasoning.encrypted_content"])
    reasoning = first.output[0].model_dump(exclude_none=True)
    # Sent back whole, the item is taken; changed, or (not stored) without its encrypted
    # content, it is refused as the real API refuses it; so is an output without its call.
    ok = client.responses.create(model="fake", input=[reasoning, {"role": "user", "content": "go"}], store=False)
    assert ok.output_text == TEXT["text"]
    changed = dict(reasoning, encrypted_content=reasoning["encrypted_content"] + "x")
    with pytest.raises(openai.BadRequestError, match="could not be verified"):
        client.responses.create(model="fake", input=[changed], store=False)
    bare = {k: v for k, v in reasoning.items() if k != "encrypted_content"}
    with pytest.raises(openai.BadRequestError, match="not persisted when `store` is set to false"):
        client.responses.create(model="fake", input=[bare], store=False)
    with pytest.raises(openai.BadRequestError, match="No tool call found"):
        client.responses.create(
            model="fake", input=[{"type": "function_call_output", "call_id": "nope", "output": "x"}]
        )
    # Refused requests consume no script entry.
    assert client.responses.create(model="fake", input="hi").output_text == TEXT["text"]
