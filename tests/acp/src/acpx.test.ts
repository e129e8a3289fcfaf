// contenox acp under acpx (the headless ACP client, pinned in package.json): `acpx --agent
// "contenox acp ..." exec PROMPT` with --approve-all and with --deny-all, as a person runs it in
// a terminal. acpx reads the agent's stdout with its own SDK (v1 of @agentclientprotocol/sdk).

import { strict as assert } from "node:assert";
import { execFile } from "node:child_process";
import { readFileSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { test } from "node:test";
import { BIN, tempDir } from "./harness.js";

const require = createRequire(import.meta.url);
const acpxCli = join(dirname(require.resolve("acpx/package.json")), "dist", "cli.js");

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

/** `acpx --agent "contenox acp --script ..." --cwd WORK <policy> exec PROMPT` in a fresh home. */
function acpx(policyFlag: string, work: string): Promise<Run> {
  const home = tempDir("acpx-home-");
  const script = join(home, "script.json");
  writeFileSync(
    script,
    JSON.stringify([
      { tool_calls: [{ id: "w1", name: "write", arguments: { path: "a.txt", content: "new\n" } }] },
      { text: "Finished the task." },
    ]),
  );
  const agent = `${BIN} acp --script ${script} --data-dir ${join(home, "data")}`;
  const env: NodeJS.ProcessEnv = { PATH: process.env.PATH, HOME: home };
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [acpxCli, "--agent", agent, "--cwd", work, policyFlag, "--timeout", "60", "exec", "write the file"],
      { env, timeout: 90_000 },
      (err, stdout, stderr) => {
        const code = err ? (typeof err.code === "number" ? err.code : -1) : 0;
        resolve({ code, stdout, stderr });
      },
    );
  });
}

function workspace(): string {
  const work = tempDir("acpx-work-");
  writeFileSync(join(work, "a.txt"), "old\n");
  return work;
}

test("acpx exec --approve-all: the write is approved and made; the answer is printed", async () => {
  const work = workspace();
  const run = await acpx("--approve-all", work);
  assert.equal(run.code, 0, `acpx failed: ${run.stdout}\n${run.stderr}`);
  assert.equal(readFileSync(join(work, "a.txt"), "utf8"), "new\n");
  assert.match(run.stdout, /Finished the task\./);
  assert.match(run.stdout, /Write a\.txt/);
});

test("acpx exec --deny-all: the write is rejected, the file stays, the turn ends normally", async () => {
  const work = workspace();
  const run = await acpx("--deny-all", work);
  // acpx exits 5 (its PERMISSION_DENIED) when it denied a permission request.
  assert.equal(run.code, 5, `acpx: ${run.stdout}\n${run.stderr}`);
  assert.equal(readFileSync(join(work, "a.txt"), "utf8"), "old\n");
  assert.match(run.stdout, /Write a\.txt \(failed\)/);
  assert.match(run.stdout, /rejected this call/);
  assert.match(run.stdout, /\[done\] end_turn/);
});
