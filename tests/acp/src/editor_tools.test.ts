// --editor-tools: read and write through the editor's buffers (fs/*), bash in the editor's
// terminals (terminal/*), with the root confinement and the policy applied before the editor is
// asked, and every terminal released (also when the turn is cancelled). Without the flag, or
// when the editor does not offer them, the local builtins run.

import { strict as assert } from "node:assert";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { test } from "node:test";
import { Agent, goneWithin } from "./harness.js";

type Json = Record<string, unknown>;
const ALL = { fs: { readTextFile: true, writeTextFile: true }, terminal: true };

function calls(id: string, name: string, args: Json): Json {
  return { tool_calls: [{ id, name, arguments: args }] };
}

function result(a: Agent, sid: string, id: string): Json {
  return a.tap.updates(sid).filter((u) => u.toolCallId === id).at(-1)!;
}

test("read and write go through the editor's buffers, confined to the root, under the policy", async () => {
  const a = Agent.start({
    script: [
      calls("r1", "read", { path: "main.rs" }),
      calls("w1", "write", { path: "main.rs", content: "fn main() { saved() }\n" }),
      calls("r2", "read", { path: "../outside.txt" }),
      calls("r3", "read", { path: ".ssh/id_ed25519" }),
      { text: "done" },
    ],
    args: ["--editor-tools"],
  });
  writeFileSync(join(a.work, "main.rs"), "on disk\n");
  a.editor.buffers.set(join(a.work, "main.rs"), "fn main() { unsaved() }\n");
  const sid = await a.session({}, ALL);
  assert.equal(await a.prompt(sid, "edit main.rs"), "end_turn");
  // The read saw the unsaved buffer, not the disk.
  assert.match(JSON.stringify(result(a, sid, "r1").content), /unsaved\(\)/);
  // The write was asked (the policy judges it as the builtin), then went to the editor only.
  assert.deepEqual(a.permissions.map((p) => p.toolCall.toolCallId), ["w1"]);
  assert.equal(a.editor.buffers.get(join(a.work, "main.rs")), "fn main() { saved() }\n");
  assert.equal(readFileSync(join(a.work, "main.rs"), "utf8"), "on disk\n");
  // Outside the root and the quarantine: refused before the editor is asked.
  assert.equal(result(a, sid, "r2").status, "failed");
  assert.equal(result(a, sid, "r3").status, "failed");
  const paths = a.editor.calls.map((c) => (c.params as Json).path);
  assert.deepEqual(a.editor.methods(), ["fs/read_text_file", "fs/write_text_file"]);
  assert.deepEqual(paths, [join(a.work, "main.rs"), join(a.work, "main.rs")]);
  assert.equal(await a.stop(), 0);
  assert.deepEqual(a.tap.problems, []);
});

test("bash runs in an editor terminal, shown in the tool call, and is always released", async () => {
  const a = Agent.start({
    script: [calls("b1", "bash", { command: "echo from-the-terminal; exit 3" }), { text: "ran" }],
    args: ["--editor-tools", "--auto"],
  });
  const sid = await a.session({}, ALL);
  assert.equal(await a.prompt(sid, "run"), "end_turn");
  assert.deepEqual(a.editor.methods(), [
    "terminal/create",
    "terminal/wait_for_exit",
    "terminal/output",
    "terminal/release",
  ]);
  const create = a.editor.calls[0].params as Json;
  assert.equal(create.command, "bash");
  assert.deepEqual(create.args, ["-c", "echo from-the-terminal; exit 3"]);
  assert.equal(create.cwd, a.work);
  const shown = a.tap.updates(sid).find((u) => JSON.stringify(u.content ?? "").includes('"terminal"'));
  assert.ok(shown, "the terminal is embedded in the tool call");
  assert.match(JSON.stringify(result(a, sid, "b1").content), /from-the-terminal/);
  assert.equal(a.editor.terminals.size, 0, "every terminal was released");
  assert.equal(await a.stop(), 0);
  assert.deepEqual(a.tap.problems, []);
});

test("a cancelled turn kills and releases the editor's terminal", async () => {
  const marker = `${(Date.now() % 100000) + 7}.${process.pid}`;
  const a = Agent.start({
    script: [calls("b1", "bash", { command: `sleep ${marker}` }), { text: "never" }],
    args: ["--editor-tools", "--auto"],
  });
  const sid = await a.session({}, ALL);
  const stop = a.prompt(sid, "sleep");
  const end = Date.now() + 10_000;
  while (!a.editor.methods().includes("terminal/wait_for_exit") && Date.now() < end) {
    await new Promise((r) => setTimeout(r, 20));
  }
  assert.ok((await goneWithin(marker, 0)).length > 0, "the command runs in the editor's terminal");
  await a.client.notify("session/cancel", { sessionId: sid });
  assert.equal(await stop, "cancelled");
  const deadline = Date.now() + 5_000;
  while (a.editor.terminals.size > 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
  assert.deepEqual(a.editor.methods().slice(-2), ["terminal/kill", "terminal/release"]);
  assert.equal(a.editor.terminals.size, 0);
  assert.deepEqual(await goneWithin(marker, 5_000), []);
  assert.equal(await a.stop(), 0);
  assert.deepEqual(a.tap.problems, []);
});

test("without --editor-tools (or without the editor's offer) the local builtins run", async () => {
  for (const [args, caps] of [
    [[], ALL],
    [["--editor-tools"], {}],
  ] as [string[], Json][]) {
    const a = Agent.start({ script: [calls("w1", "write", { path: "x.txt", content: "local" }), { text: "ok" }], args: [...args, "--auto"] });
    const sid = await a.session({}, caps);
    assert.equal(await a.prompt(sid, "write"), "end_turn");
    assert.equal(readFileSync(join(a.work, "x.txt"), "utf8"), "local");
    assert.deepEqual(a.editor.calls, []);
    assert.equal(await a.stop(), 0);
    assert.ok(existsSync(join(a.work, "x.txt")));
  }
});
