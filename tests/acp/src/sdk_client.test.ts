// contenox acp driven by the official TypeScript SDK client (@agentclientprotocol/sdk, pinned
// in package.json and package-lock.json) on the scripted model: every case issue 30 lists.
// Each test checks, through the harness's tap, that every line on stdout is a protocol message
// valid for its method, and that the agent exits cleanly (code 0) when stdin closes.

import { strict as assert } from "node:assert";
import { spawn } from "node:child_process";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { connect, createServer } from "node:net";
import { join } from "node:path";
import { test } from "node:test";
import * as acp from "@agentclientprotocol/sdk";
import { Agent, goneWithin, repo, tempDir } from "./harness.js";

type Json = Record<string, unknown>;

function calls(id: string, name: string, args: Json): Json {
  return { tool_calls: [{ id, name, arguments: args }] };
}

/** Stop the agent and check what it wrote: only valid messages, exit 0. */
async function finish(a: Agent): Promise<void> {
  const code = await a.stop();
  assert.deepEqual(a.tap.problems, [], "stdout carried something that is no valid ACP message");
  assert.equal(code, 0, `exit code; stderr: ${a.stderr.join("")}`);
}

function updatesOf(a: Agent, sid: string, kind: string, callId?: string): Json[] {
  return a.tap
    .updates(sid)
    .filter((u) => u.sessionUpdate === kind && (callId === undefined || u.toolCallId === callId));
}

test("initialize advertises only what is implemented", async () => {
  const a = Agent.start({ script: [{ text: "hi" }] });
  const init = await a.client.request("initialize", { protocolVersion: 1, clientCapabilities: {} });
  assert.equal(init.protocolVersion, 1);
  assert.equal(init.agentCapabilities?.loadSession, true);
  assert.deepEqual(init.agentCapabilities?.promptCapabilities, { image: true, audio: false, embeddedContext: true });
  assert.deepEqual(init.agentCapabilities?.mcpCapabilities, { http: true, sse: false });
  assert.deepEqual(init.agentCapabilities?.sessionCapabilities, { resume: {}, close: {} });
  assert.equal(init.agentInfo?.name, "contenox");
  // A client that asks for a newer version gets the one the agent speaks.
  const newer = await a.client.request("initialize", { protocolVersion: 7, clientCapabilities: {} });
  assert.equal(newer.protocolVersion, 1);
  await finish(a);
});

/** The fake model server (tests/src/bin/fake-model-server.rs) serving `model` in `style`; its port. */
async function fakeModel(
  t: { after: (fn: () => unknown) => void },
  dir: string,
  style: string,
  model: unknown[],
): Promise<number> {
  const bin = process.env.FAKE_MODEL_SERVER;
  assert.ok(bin, "FAKE_MODEL_SERVER (the conformance harness's fake-model-server) must be set");
  const scenario = join(dir, `model-${style}.json`);
  writeFileSync(scenario, JSON.stringify({ name: "acp", style, prompt: "p", model }));
  const child = spawn(bin, ["--scenario", scenario, "--style", style], { stdio: ["pipe", "pipe", "inherit"] });
  t.after(async () => {
    child.stdin!.end(); // it exits on stdin EOF
    const exited = new Promise((r) => (child.exitCode !== null ? r(null) : child.once("exit", r)));
    const late = setTimeout(() => child.kill("SIGKILL"), 10_000);
    await exited;
    clearTimeout(late);
  });
  return await new Promise<number>((resolve, reject) => {
    let out = "";
    child.stdout!.on("data", (d: Buffer) => {
      out += d.toString();
      const m = /^(\d+)$/m.exec(out);
      if (m) resolve(Number(m[1]));
    });
    child.on("exit", (code) => reject(new Error(`fake-model-server exited ${code} before its port`)));
  });
}

for (const style of ["openai", "anthropic", "ollama"]) {
  test(`the model's reasoning streams as agent_thought_chunk (${style} style, a real stream)`, async (t) => {
    const data = tempDir("acp-data-");
    const port = await fakeModel(t, data, style, [
      { reasoning: [{ text: "The notes are short; I answer." }], text: "They say hello." },
    ]);
    const base = style === "openai" ? `http://127.0.0.1:${port}/v1` : `http://127.0.0.1:${port}`;
    const a = Agent.start({
      data,
      args: ["--style", style, "--base-url", base, "--model", "fake", "--builtins", "none"],
      env: { OPENAI_API_KEY: "k", ANTHROPIC_API_KEY: "k", OLLAMA_API_KEY: "k" },
    });
    const sid = await a.session();
    assert.equal(await a.prompt(sid, "What do the notes say?"), "end_turn");
    const kinds = a.tap.updates(sid).map((u) => u.sessionUpdate);
    const thoughts = updatesOf(a, sid, "agent_thought_chunk").map((u) => (u.content as Json).text).join("");
    const text = updatesOf(a, sid, "agent_message_chunk").map((u) => (u.content as Json).text).join("");
    assert.equal(thoughts, "The notes are short; I answer.");
    assert.equal(text, "They say hello.");
    assert.ok(kinds.indexOf("agent_thought_chunk") < kinds.indexOf("agent_message_chunk"), kinds.join(","));
    await finish(a);
  });
}

test("an image prompt is answered by the model, saved as parts in order, and replayed", async (t) => {
  const data = tempDir("acp-data-");
  const port = await fakeModel(t, data, "anthropic", [{ text: "A red square." }]);
  const png = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAIAAACQd1PeAAAADElEQVR4nGP4z8AAAAMBAQDJ/pLvAAAAAElFTkSuQmCC";
  const a = Agent.start({
    data,
    args: ["--style", "anthropic", "--base-url", `http://127.0.0.1:${port}`, "--model", "fake", "--builtins", "none"],
    env: { ANTHROPIC_API_KEY: "k" },
  });
  const sid = await a.session();
  const r = await a.client.request("session/prompt", {
    sessionId: sid,
    prompt: [
      { type: "text", text: "What is this?" },
      { type: "image", data: png, mimeType: "image/png" },
    ],
  });
  assert.equal(r.stopReason, "end_turn");
  const text = updatesOf(a, sid, "agent_message_chunk").map((u) => (u.content as Json).text).join("");
  assert.equal(text, "A red square.");
  await finish(a);
  // Saved as the user message's parts, in order, byte for byte.
  const saved = JSON.parse(readFileSync(join(data, "acp", "sessions", `${sid}.json`), "utf8"));
  assert.deepEqual(saved.transcript.messages[0].content, [
    { type: "text", text: "What is this?" },
    { type: "image", media_type: "image/png", data: png },
  ]);
  // And replayed to an editor that loads the session.
  const again = Agent.start({ work: a.work, data, script: [{ text: "unused" }] });
  await again.client.request("initialize", { protocolVersion: 1, clientCapabilities: {} });
  await again.client.request("session/load", { sessionId: sid, cwd: a.work, mcpServers: [] });
  const user = again.tap.updates(sid).filter((u) => u.sessionUpdate === "user_message_chunk");
  assert.deepEqual(
    user.map((u) => u.content),
    [
      { type: "text", text: "What is this?" },
      { type: "image", mimeType: "image/png", data: png },
    ],
  );
  await finish(again);
});

test("a read runs without asking; text streams; usage and the stop reason arrive", async () => {
  const a = Agent.start({
    script: [
      { ...calls("c1", "read", { path: "notes.txt" }), usage: { input_tokens: 120, output_tokens: 8 } },
      { text: "The notes say hello.", usage: { input_tokens: 150, output_tokens: 6 } },
    ],
    args: ["--context-window", "200000"],
  });
  writeFileSync(join(a.work, "notes.txt"), "hello\n");
  const sid = await a.session();
  assert.equal(await a.prompt(sid, "What do the notes say?"), "end_turn");
  assert.equal(a.permissions.length, 0, "a read is not asked");
  const [call] = updatesOf(a, sid, "tool_call", "c1");
  assert.equal(call.kind, "read");
  assert.equal(call.title, "Read notes.txt");
  assert.deepEqual(call.rawInput, { path: "notes.txt" });
  assert.deepEqual(call.locations, [{ path: join(a.work, "notes.txt") }]);
  const done = updatesOf(a, sid, "tool_call_update", "c1");
  assert.deepEqual(done.map((u) => u.status), ["in_progress", "completed"]);
  assert.match(JSON.stringify(done[1].content), /hello/);
  const text = updatesOf(a, sid, "agent_message_chunk").map((u) => (u.content as Json).text).join("");
  assert.equal(text, "The notes say hello.");
  const usage = updatesOf(a, sid, "usage_update");
  assert.deepEqual(usage.map((u) => [u.used, u.size]), [[128, 200000], [156, 200000]]);
  await finish(a);
});

test("a write is asked (tool_call first, same id, the diff shown) and allowed: the file changes", async () => {
  const a = Agent.start({
    script: [calls("w1", "write", { path: "a.txt", content: "new\n" }), { text: "Written." }],
  });
  writeFileSync(join(a.work, "a.txt"), "old\n");
  const sid = await a.session();
  assert.equal(await a.prompt(sid, "write it"), "end_turn");
  assert.equal(readFileSync(join(a.work, "a.txt"), "utf8"), "new\n");
  assert.equal(a.permissions.length, 1);
  const req = a.permissions[0];
  assert.equal(req.sessionId, sid);
  assert.equal(req.toolCall.toolCallId, "w1");
  assert.deepEqual(
    req.options.map((o) => o.kind),
    ["allow_once", "allow_always", "reject_once", "reject_always"],
  );
  // The tool_call update went out before the permission request.
  const order = a.tap.messages.map((m) =>
    m.method === "session/request_permission"
      ? "ask"
      : m.method === "session/update" && ((m.params as Json).update as Json).sessionUpdate === "tool_call"
        ? "tool_call"
        : "",
  );
  assert.ok(order.indexOf("tool_call") >= 0 && order.indexOf("tool_call") < order.indexOf("ask"), order.join(","));
  const [call] = updatesOf(a, sid, "tool_call", "w1");
  assert.equal(call.kind, "edit");
  const diff = (call.content as Json[])[0];
  assert.deepEqual(diff, { type: "diff", path: join(a.work, "a.txt"), oldText: "old\n", newText: "new\n" });
  const last = updatesOf(a, sid, "tool_call_update", "w1").at(-1)!;
  assert.equal(last.status, "completed");
  assert.deepEqual((last.content as Json[])[0], diff);
  await finish(a);
});

test("a rejected write fails, leaves the file, and the turn goes on", async () => {
  const a = Agent.start({
    script: [calls("w1", "write", { path: "a.txt", content: "new\n" }), { text: "I will not write it." }],
  });
  writeFileSync(join(a.work, "a.txt"), "old\n");
  a.onPermission = () => ({ outcome: { outcome: "selected", optionId: "reject_once" } });
  const sid = await a.session();
  assert.equal(await a.prompt(sid, "write it"), "end_turn");
  assert.equal(readFileSync(join(a.work, "a.txt"), "utf8"), "old\n");
  const updates = updatesOf(a, sid, "tool_call_update", "w1");
  assert.deepEqual(updates.map((u) => u.status), ["failed"]);
  assert.match(JSON.stringify(updates[0].content), /rejected/);
  const text = updatesOf(a, sid, "agent_message_chunk").map((u) => (u.content as Json).text).join("");
  assert.equal(text, "I will not write it.");
  await finish(a);
});

test("allow_always is not asked again in the session; reject_always refuses at once", async () => {
  const a = Agent.start({
    script: [
      calls("w1", "write", { path: "a.txt", content: "1" }),
      calls("w2", "write", { path: "b.txt", content: "2" }),
      calls("b1", "bash", { command: "touch x && touch y" }),
      calls("b2", "bash", { command: "touch z" }),
      { text: "ok" },
      calls("b3", "bash", { command: "rm -f x" }),
      calls("b4", "bash", { command: "touch q; rm -f y" }),
      { text: "done" },
    ],
  });
  const answers = ["allow_always", "allow_always", "reject_always"];
  a.onPermission = () => ({ outcome: { outcome: "selected", optionId: answers.shift()! } });
  const sid = await a.session();
  assert.equal(await a.prompt(sid, "write twice"), "end_turn");
  assert.deepEqual(a.permissions.map((p) => p.toolCall.toolCallId), ["w1", "b1"]);
  assert.ok(existsSync(join(a.work, "b.txt")) && existsSync(join(a.work, "z")), "the remembered calls ran");
  assert.equal(await a.prompt(sid, "remove"), "end_turn");
  assert.deepEqual(a.permissions.map((p) => p.toolCall.toolCallId), ["w1", "b1", "b3"]);
  const b4 = updatesOf(a, sid, "tool_call_update", "b4");
  assert.deepEqual(b4.map((u) => u.status), ["failed"], "a line running a rejected command is refused");
  assert.ok(existsSync(join(a.work, "y")) && !existsSync(join(a.work, "q")));
  await finish(a);
});

test("a policy deny fails the call with the rule's sentence; the turn goes on", async () => {
  const a = Agent.start({
    script: [calls("r1", "read", { path: ".ssh/id_ed25519" }), { text: "Could not read it." }],
  });
  const sid = await a.session();
  assert.equal(await a.prompt(sid, "read my key"), "end_turn");
  assert.equal(a.permissions.length, 0);
  const [failed] = updatesOf(a, sid, "tool_call_update", "r1");
  assert.equal(failed.status, "failed");
  assert.match(JSON.stringify(failed.content), /approval policy denied read.*secret quarantine/);
  await finish(a);
});

test("--policy takes a file; --auto approves what it asks, not what it denies", async () => {
  const work = (Agent.start({}).work);
  const policy = join(work, "policy.json");
  writeFileSync(policy, JSON.stringify({
    version: 1,
    default_action: "approve",
    rules: [{ tool: "bash", action: "deny", when: [{ key: "command", op: "command_blacklist", value: "rm" }] }],
  }));
  const a = Agent.start({
    work,
    script: [calls("w1", "write", { path: "a.txt", content: "x" }), calls("b1", "bash", { command: "rm -f a.txt" }), { text: "ok" }],
    args: ["--policy", policy, "--auto"],
  });
  const sid = await a.session();
  assert.equal(await a.prompt(sid, "go"), "end_turn");
  assert.equal(a.permissions.length, 0);
  assert.equal(readFileSync(join(work, "a.txt"), "utf8"), "x");
  assert.equal(updatesOf(a, sid, "tool_call_update", "b1")[0].status, "failed");
  await finish(a);
  const bad = Agent.start({ script: [{ text: "x" }], args: ["--policy", join(work, "missing.json")] });
  assert.equal(await bad.exited, 2, "a policy that cannot be read is a usage error");
  assert.match(bad.stderr.join(""), /--policy/);
});

test("todo_write becomes a plan", async () => {
  const a = Agent.start({
    script: [
      calls("t1", "todo_write", { todos: [
        { content: "Read the code", status: "completed" },
        { content: "Fix the bug", status: "in_progress" },
      ] }),
      { text: "ok" },
    ],
  });
  const sid = await a.session();
  assert.equal(await a.prompt(sid, "plan"), "end_turn");
  const [plan] = updatesOf(a, sid, "plan");
  assert.deepEqual(plan.entries, [
    { content: "Read the code", priority: "medium", status: "completed" },
    { content: "Fix the bug", priority: "medium", status: "in_progress" },
  ]);
  await finish(a);
});

test("cancel during a pending permission: the client answers cancelled, the prompt stops cancelled", async () => {
  const a = Agent.start({ script: [calls("w1", "write", { path: "a.txt", content: "x" }), { text: "never" }] });
  let release!: () => void;
  const asked = new Promise<void>((r) => (release = r));
  let answer!: (r: acp.RequestPermissionResponse) => void;
  a.onPermission = () => {
    release();
    return new Promise((r) => (answer = r));
  };
  const sid = await a.session();
  const stop = a.prompt(sid, "write");
  await asked;
  await a.client.notify("session/cancel", { sessionId: sid });
  // As the protocol requires, the client answers the pending request with "cancelled".
  answer({ outcome: { outcome: "cancelled" } });
  assert.equal(await stop, "cancelled");
  assert.ok(!existsSync(join(a.work, "a.txt")));
  // The session goes on.
  await finish(a);
});

test("cancel during a running bash: the prompt stops cancelled and no process is left", async () => {
  const marker = `${Date.now() % 100000}.${process.pid}`;
  const a = Agent.start({
    script: [calls("b1", "bash", { command: `echo started > started.txt; sleep ${marker}` }), { text: "never" }],
  });
  const sid = await a.session();
  const stop = a.prompt(sid, "sleep");
  await a.waitFor(
    (m) => m.method === "session/update" && JSON.stringify(m).includes('"in_progress"'),
    "the bash call to start",
  );
  const end = Date.now() + 10_000;
  while (!existsSync(join(a.work, "started.txt")) && Date.now() < end) await new Promise((r) => setTimeout(r, 20));
  assert.ok((await goneWithin(marker, 0)).length > 0, "the command runs");
  await a.client.notify("session/cancel", { sessionId: sid });
  assert.equal(await stop, "cancelled");
  assert.deepEqual(await goneWithin(marker, 5_000), [], "a process of the cancelled bash is left");
  await finish(a);
});

test("the editor going away ends a running bash and the agent", async () => {
  const marker = `${Date.now() % 100000}.${process.pid + 1}`;
  const a = Agent.start({
    script: [calls("b1", "bash", { command: `echo started > started.txt; sleep ${marker}` }), { text: "never" }],
    args: ["--auto"],
  });
  const sid = await a.session();
  void a.prompt(sid, "sleep").catch(() => {});
  const end = Date.now() + 10_000;
  while (!existsSync(join(a.work, "started.txt")) && Date.now() < end) await new Promise((r) => setTimeout(r, 20));
  assert.ok((await goneWithin(marker, 0)).length > 0, "the command runs");
  const code = await a.stop();
  assert.equal(code, 0);
  assert.deepEqual(await goneWithin(marker, 5_000), []);
  assert.deepEqual(a.tap.problems, []);
});

test("an unknown method is answered -32601; a malformed line gets a parse error; the session lives on", async () => {
  const a = Agent.start({ script: [{ text: "first" }, { text: "second" }] });
  const sid = await a.session();
  assert.equal(await a.prompt(sid, "one"), "end_turn");
  await assert.rejects(a.client.request("session/set_mode", { sessionId: sid, modeId: "x" }), (e: Error & { code?: number }) => e.code === -32601);
  await assert.rejects(a.client.request("_contenox/nope", {}), (e: Error & { code?: number }) => e.code === -32601);
  a.raw('{"jsonrpc":"2.0","id":99,"method":"session/prompt","params":');
  const parse = await a.waitFor((m) => (m.error as Json | undefined)?.code === -32700, "the parse error");
  assert.equal(parse.id, null);
  assert.equal(await a.prompt(sid, "two"), "end_turn");
  const text = updatesOf(a, sid, "agent_message_chunk").map((u) => (u.content as Json).text).join("|");
  assert.equal(text, "first|second");
  await finish(a);
});

test("session/load replays what was said; session/resume continues without replay; close", async () => {
  const first = Agent.start({
    script: [calls("r1", "read", { path: "n.txt" }), { text: "It says hi." }],
  });
  writeFileSync(join(first.work, "n.txt"), "hi\n");
  const sid = await first.session();
  assert.equal(await first.prompt(sid, "What does n.txt say?"), "end_turn");
  await finish(first);

  const again = Agent.start({ work: first.work, data: first.data, script: [{ text: "Still hi." }] });
  const init = await again.client.request("initialize", { protocolVersion: 1, clientCapabilities: {} });
  assert.equal(init.agentCapabilities?.loadSession, true);
  await again.client.request("session/load", { sessionId: sid, cwd: first.work, mcpServers: [] });
  const replayed = again.tap.updates(sid);
  const kinds = replayed.map((u) => u.sessionUpdate);
  assert.deepEqual(kinds, ["user_message_chunk", "tool_call", "tool_call_update", "agent_message_chunk"]);
  assert.equal((replayed[0].content as Json).text, "What does n.txt say?");
  assert.equal((replayed[3].content as Json).text, "It says hi.");
  assert.equal(replayed[2].status, "completed");
  assert.equal(await again.prompt(sid, "And now?"), "end_turn");
  await again.client.request("session/close", { sessionId: sid });
  await assert.rejects(again.prompt(sid, "closed?"), (e: Error & { code?: number }) => e.code === -32002);
  await finish(again);

  const third = Agent.start({ work: first.work, data: first.data, script: [{ text: "third" }] });
  await third.client.request("initialize", { protocolVersion: 1, clientCapabilities: {} });
  await third.client.request("session/resume", { sessionId: sid, cwd: first.work, mcpServers: [] });
  assert.equal(third.tap.updates(sid).length, 0, "resume does not replay");
  assert.equal(await third.prompt(sid, "third?"), "end_turn");
  await assert.rejects(
    third.client.request("session/load", { sessionId: "sess_00000000000000000000000000000000", cwd: first.work, mcpServers: [] }),
    (e: Error & { code?: number }) => e.code === -32002,
  );
  await finish(third);
  // Two prompts saved, then a third: the transcript has all three.
  const saved = JSON.parse(readFileSync(join(first.data, "acp", "sessions", `${sid}.json`), "utf8"));
  // A message's content is a list of parts (transcript version 2).
  const textOf = (m: Json) => (m.content as Json[]).filter((p) => p.type === "text").map((p) => p.text).join("");
  const users = saved.transcript.messages.filter((m: Json) => m.role === "user").map(textOf);
  assert.deepEqual(users, ["What does n.txt say?", "And now?", "third?"]);
});

test("the editor's MCP servers are tools beside the builtins, under the same gate", { skip: !existsSync(everything()) && "tests/mcp/install.sh has not run" }, async () => {
  const a = Agent.start({
    script: [calls("m1", "everything__echo", { message: "from the editor's server" }), { text: "echoed" }],
  });
  const sid = await a.session({
    mcpServers: [{ name: "everything", command: "node", args: [everything(), "stdio"], env: [] }],
  });
  assert.equal(await a.prompt(sid, "echo"), "end_turn");
  assert.deepEqual(a.permissions.map((p) => p.toolCall.toolCallId), ["m1"], "the default preset asks MCP tools");
  const done = updatesOf(a, sid, "tool_call_update", "m1").at(-1)!;
  assert.equal(done.status, "completed");
  assert.match(JSON.stringify(done.content), /from the editor's server/);
  await finish(a);
});

function everything(): string {
  const modules = process.env.CONTENOX_MCP_NODE_MODULES ?? join(repo, "tests/mcp/node_modules");
  return join(modules, "@modelcontextprotocol/server-everything/dist/index.js");
}

/** A free port on 127.0.0.1. */
function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.listen(0, "127.0.0.1", () => {
      const addr = srv.address();
      srv.close(() => (typeof addr === "object" && addr ? resolve(addr.port) : reject(new Error("no port"))));
    });
  });
}

async function listening(port: number, ms: number): Promise<void> {
  const end = Date.now() + ms;
  for (;;) {
    const ok = await new Promise<boolean>((res) => {
      const s = connect(port, "127.0.0.1", () => {
        s.destroy();
        res(true);
      });
      s.on("error", () => res(false));
    });
    if (ok) return;
    if (Date.now() > end) throw new Error(`nothing listens on ${port}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

test("an HTTP MCP server from session/new (mcpCapabilities.http): its tools run, its headers stay hidden", { skip: !existsSync(everything()) && "tests/mcp/install.sh has not run" }, async () => {
  const port = await freePort();
  const server = spawn("node", [everything(), "streamableHttp"], {
    env: { ...process.env, PORT: String(port) },
    stdio: "ignore",
    detached: true,
  });
  try {
    await listening(port, 20_000);
    const a = Agent.start({
      script: [calls("h1", "remote__get-sum", { a: 2, b: 40 }), { text: "added" }],
      args: ["--auto"],
    });
    const sid = await a.session({
      mcpServers: [{
        type: "http",
        name: "remote",
        url: `http://127.0.0.1:${port}/mcp`,
        headers: [{ name: "X-Contenox-Test", value: "header-value-5e1d" }],
      }],
    });
    assert.equal(await a.prompt(sid, "add"), "end_turn");
    const done = updatesOf(a, sid, "tool_call_update", "h1").at(-1)!;
    assert.equal(done.status, "completed");
    assert.match(JSON.stringify(done.content), /42/);
    assert.ok(!JSON.stringify(a.tap.messages).includes("header-value-5e1d"), "a header value reached stdout");
    await finish(a);
  } finally {
    if (server.pid) process.kill(-server.pid, "SIGKILL");
  }
});
