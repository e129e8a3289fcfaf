// A hostile client: requests out of order, answers to requests never made, a line far over the
// cap, broken JSON, batches, wrong types, unknown methods, a second prompt while one runs.
// Every line the agent writes must stay a valid protocol message (the harness's tap), every
// request must get an answer, and the agent must stay up and keep serving.

import { strict as assert } from "node:assert";
import { readFileSync } from "node:fs";
import { test } from "node:test";
import { Agent } from "./harness.js";

type Json = Record<string, unknown>;

/** Send a raw request (string ids, apart from the SDK's numbers) and wait for its answer. */
async function ask(a: Agent, id: string, method: string, params?: unknown): Promise<Json> {
  const m: Json = { jsonrpc: "2.0", id, method };
  if (params !== undefined) m.params = params;
  a.raw(JSON.stringify(m));
  return a.waitFor((r) => r.id === id && !("method" in r), `the answer to ${id}`);
}

function code(answer: Json): number | undefined {
  return (answer.error as Json | undefined)?.code as number | undefined;
}

/** The highest resident set of the agent so far, in KiB. */
function peakKib(a: Agent): number {
  const status = readFileSync(`/proc/${a.child.pid}/status`, "utf8");
  return Number(/VmHWM:\s+(\d+)/.exec(status)?.[1] ?? 0);
}

test("requests before initialize are refused, not crashed on", async () => {
  const a = Agent.start({ script: [{ text: "hello" }] });
  assert.equal(code(await ask(a, "n1", "session/new", { cwd: a.work, mcpServers: [] })), -32600);
  assert.equal(code(await ask(a, "p1", "session/prompt", { sessionId: "x", prompt: [] })), -32600);
  const sid = await a.session();
  assert.equal(await a.prompt(sid, "hi"), "end_turn");
  await a.stop();
  assert.deepEqual(a.tap.problems, []);
});

test("bad params, unknown sessions and unknown methods get the right errors", async () => {
  const a = Agent.start({ script: [{ text: "hello" }] });
  const sid = await a.session();
  const cases: [string, unknown, number][] = [
    ["session/new", { cwd: "relative/dir", mcpServers: [] }, -32602],
    ["session/new", { mcpServers: [] }, -32602],
    ["session/new", { cwd: "/no/such/dir/anywhere", mcpServers: [] }, -32602],
    ["session/new", { cwd: a.work, mcpServers: [{ type: "sse", name: "s", url: "http://127.0.0.1:1", headers: [] }] }, -32602],
    ["session/new", { cwd: a.work, mcpServers: "nope" }, -32602],
    ["session/prompt", { sessionId: "sess_nope", prompt: [{ type: "text", text: "x" }] }, -32002],
    ["session/prompt", { sessionId: sid, prompt: "not a list" }, -32602],
    ["session/prompt", { sessionId: sid, prompt: [{ type: "image", data: "not base64!", mimeType: "image/png" }] }, -32602],
    ["session/prompt", { sessionId: sid, prompt: [{ type: "image", data: "PHN2Zy8+", mimeType: "image/svg+xml" }] }, -32602],
    ["session/prompt", { sessionId: sid, prompt: [{ type: "image", mimeType: "image/png" }] }, -32602],
    ["session/prompt", { sessionId: sid, prompt: [{ type: "audio", data: "AA==", mimeType: "audio/wav" }] }, -32602],
    ["session/load", { sessionId: "../../../etc/passwd", cwd: a.work, mcpServers: [] }, -32002],
    ["session/close", { sessionId: "sess_nope" }, -32002],
    ["initialize", { protocolVersion: "one" }, -32602],
    ["authenticate", { methodId: "x" }, -32601],
    ["session/list", {}, -32601],
    ["_vendor/extension", {}, -32601],
  ];
  for (const [i, [method, params, want]] of cases.entries()) {
    const answer = await ask(a, `b${i}`, method, params);
    assert.equal(code(answer), want, `${method} ${JSON.stringify(params)}: ${JSON.stringify(answer)}`);
  }
  assert.equal(await a.prompt(sid, "still there?"), "end_turn");
  await a.stop();
  assert.deepEqual(a.tap.problems, []);
});

test("answers to requests never made, broken lines, batches and a huge line leave it serving", async () => {
  const a = Agent.start({
    script: [
      { tool_calls: [{ id: "w1", name: "write", arguments: { path: "a.txt", content: "x" } }] },
      { text: "after the write" },
      { text: "after the flood" },
    ],
  });
  const sid = await a.session();
  // Answers for permission requests the agent never sent: ignored (responses get no answer).
  a.raw('{"jsonrpc":"2.0","id":4242,"result":{"outcome":{"outcome":"selected","optionId":"allow_once"}}}');
  a.raw('{"jsonrpc":"2.0","id":"perm-1","result":{"outcome":{"outcome":"selected","optionId":"allow_always"}}}');
  a.raw('{"jsonrpc":"2.0","id":7,"error":{"code":-32000,"message":"no"}}');
  // A permission request answered with an option it never offered: the call is refused.
  a.onPermission = () => ({ outcome: { outcome: "selected", optionId: "allow_everything_forever" } });
  assert.equal(await a.prompt(sid, "write"), "end_turn");
  const failed = a.tap.updates(sid).filter((u) => u.toolCallId === "w1" && u.status === "failed");
  assert.equal(failed.length, 1, "an answer naming no offered option refuses the call");
  const before = a.tap.messages.length;
  const broken = [
    "{not json",
    "\u0000\u0001garbage",
    "[]",
    '[{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1}}]',
    '"just a string"',
    "42",
    '{"jsonrpc":"1.0","id":"v1","method":"initialize","params":{}}',
    '{"jsonrpc":"2.0","id":{"nested":true},"method":"initialize"}',
    '{"jsonrpc":"2.0","id":"np","method":"session/new","params":7}',
    '{"jsonrpc":"2.0","id":"nm","method":42}',
    '{"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":"sess_unknown"}}',
    '{"jsonrpc":"2.0","method":"$/cancel_request","params":{"requestId":"never"}}',
    '{"jsonrpc":"2.0","method":"some/notification"}',
  ];
  for (const line of broken) a.raw(line);
  // Every broken request-like line got one error; notifications got none.
  await a.waitFor(() => a.tap.messages.length >= before + 10, "the errors of the broken lines");
  const errors = a.tap.messages.slice(before).map((m) => code(m));
  assert.deepEqual(errors, [-32700, -32700, -32600, -32600, -32600, -32600, -32600, -32600, -32600, -32600]);
  // A line of 96 MiB (three times the 32 MiB cap): one error, and the agent never holds more of
  // it than the cap.
  const peakBefore = peakKib(a);
  const huge = '{"jsonrpc":"2.0","id":"huge","method":"session/prompt","params":{"text":"' + "A".repeat(96 << 20) + '"}}';
  a.raw(huge);
  // Its id came before the flood: the error is answered under it, so a client waiting on the
  // request gets its answer.
  const tooLong = await a.waitFor(
    (m) => m.id === "huge" && String((m.error as Json | undefined)?.message).includes("longer than"),
    "the error of the huge line",
    60_000,
  );
  assert.equal(code(tooLong), -32600);
  const grew = peakKib(a) - peakBefore;
  assert.ok(grew < 40 * 1024, `the agent's peak memory grew by ${grew} KiB reading a 96 MiB line`);
  assert.equal(await a.prompt(sid, "still serving?"), "end_turn");
  const text = a.tap.updates(sid).filter((u) => u.sessionUpdate === "agent_message_chunk");
  assert.equal(((text.at(-1)!.content as Json).text), "after the flood");
  assert.equal(await a.stop(), 0);
  assert.deepEqual(a.tap.problems, []);
});

test("a second prompt while one runs is refused; the first still ends cancelled when asked", async () => {
  const a = Agent.start({ script: [{ stall: true }] });
  const sid = await a.session();
  const first = a.prompt(sid, "stall");
  // The stalled model shows nothing; give the first prompt time to take the session.
  await new Promise((r) => setTimeout(r, 300));
  const second = await ask(a, "p2", "session/prompt", { sessionId: sid, prompt: [{ type: "text", text: "again" }] });
  assert.equal(code(second), -32600);
  await a.client.notify("session/cancel", { sessionId: sid });
  assert.equal(await first, "cancelled");
  assert.equal(await a.stop(), 0);
  assert.deepEqual(a.tap.problems, []);
});

test("pipelined requests: session/new right behind initialize finds the connection initialized", async () => {
  const a = Agent.start({ script: [{ text: "hello" }] });
  a.raw(JSON.stringify({ jsonrpc: "2.0", id: "i1", method: "initialize", params: { protocolVersion: 1 } }));
  a.raw(JSON.stringify({ jsonrpc: "2.0", id: "n1", method: "session/new", params: { cwd: a.work, mcpServers: [] } }));
  const created = await a.waitFor((m) => m.id === "n1", "the session");
  assert.match(String((created.result as Json | undefined)?.sessionId), /^sess_[0-9a-f]{32}$/);
  assert.equal(await a.stop(), 0);
  assert.deepEqual(a.tap.problems, []);
});

test("live sessions are capped; a closed one makes room", async () => {
  const a = Agent.start({ script: [{ text: "hello" }] });
  const first = await a.session();
  const ids = [first];
  for (let i = 1; i < 64; i++) {
    const s = await a.client.request("session/new", { cwd: a.work, mcpServers: [] });
    ids.push(s.sessionId);
  }
  const refused = await ask(a, "over", "session/new", { cwd: a.work, mcpServers: [] });
  assert.equal(code(refused), -32600);
  await a.client.request("session/close", { sessionId: ids[5] });
  const again = await ask(a, "room", "session/new", { cwd: a.work, mcpServers: [] });
  assert.ok(again.result, JSON.stringify(again));
  assert.equal(await a.prompt(first, "still fine?"), "end_turn");
  assert.equal(await a.stop(), 0);
  assert.deepEqual(a.tap.problems, []);
});
