// What every test of `contenox acp` shares: the debug binary started as an editor starts it
// (stdio, a scripted model, a temporary workspace and data directory), the official TypeScript
// SDK's client connected to it, and a tap on stdout that checks every line the agent writes
// against the protocol's own JSON schema (the SDK's schema/v1/schema.json): one JSON-RPC 2.0
// message per line, its params or result valid for its method. Nothing else may appear there.

import { spawn, type ChildProcess } from "node:child_process";
import { EditorSide } from "./editor.js";
import { mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync, realpathSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import * as acp from "@agentclientprotocol/sdk";

const here = dirname(fileURLToPath(import.meta.url));
/** The repository's root (tests/acp/dist -> ../../..). */
export const repo = resolve(here, "../../..");
/** The `contenox` binary under test. */
export const BIN: string =
  process.env.CONTENOX_BIN ??
  join(process.env.CARGO_TARGET_DIR ?? join(repo, "target"), "debug", "contenox");

const require = createRequire(import.meta.url);
const schema = JSON.parse(
  readFileSync(require.resolve("@agentclientprotocol/sdk/schema/v1/schema.json"), "utf8"),
) as { $defs: Record<string, unknown> };

type Validate = ((v: unknown) => boolean) & { errors?: unknown };
interface AjvLike {
  addSchema(s: object, key: string): void;
  getSchema(ref: string): Validate | undefined;
}
const Ajv2020 = require("ajv/dist/2020") as new (opts: object) => AjvLike;
const ajv = new Ajv2020({ strict: false, validateFormats: false, allErrors: true });
ajv.addSchema(schema, "acp");
function validator(def: string): Validate {
  const v = ajv.getSchema(`acp#/$defs/${def}`);
  if (!v) throw new Error(`no schema for ${def}`);
  return v;
}
/** The schema of each request's result, by method (what the agent answers). */
const RESULTS: Record<string, string> = {
  initialize: "InitializeResponse",
  "session/new": "NewSessionResponse",
  "session/load": "LoadSessionResponse",
  "session/resume": "ResumeSessionResponse",
  "session/close": "CloseSessionResponse",
  "session/prompt": "PromptResponse",
};
/** The schema of the params of what the agent sends on its own. */
const OUTGOING: Record<string, string> = {
  "session/update": "SessionNotification",
  "session/request_permission": "RequestPermissionRequest",
  "fs/read_text_file": "ReadTextFileRequest",
  "fs/write_text_file": "WriteTextFileRequest",
  "terminal/create": "CreateTerminalRequest",
  "terminal/output": "TerminalOutputRequest",
  "terminal/wait_for_exit": "WaitForTerminalExitRequest",
  "terminal/kill": "KillTerminalRequest",
  "terminal/release": "ReleaseTerminalRequest",
};

type Json = Record<string, unknown>;

/** Checks what the agent writes and records it. */
export class Tap {
  /** Every line the agent wrote, parsed. */
  readonly messages: Json[] = [];
  /** Whatever on stdout was not a valid message for its method. */
  readonly problems: string[] = [];
  private pending = "";
  /** The method of each request the client sent, by id (to check each answer's result). */
  private readonly sent = new Map<string, string>();

  /** Note a message the client wrote. */
  clientWrote(line: string): void {
    try {
      const m = JSON.parse(line) as Json;
      if (m.method !== undefined && m.id !== undefined) this.sent.set(JSON.stringify(m.id), String(m.method));
    } catch {
      // The hostile tests write broken lines on purpose.
    }
  }

  /** Bytes from the agent's stdout. */
  agentWrote(chunk: Buffer): void {
    this.pending += chunk.toString("utf8");
    let i: number;
    while ((i = this.pending.indexOf("\n")) >= 0) {
      const line = this.pending.slice(0, i);
      this.pending = this.pending.slice(i + 1);
      this.check(line);
    }
  }

  private check(line: string): void {
    let m: Json;
    try {
      m = JSON.parse(line) as Json;
    } catch {
      this.problems.push(`not JSON: ${line.slice(0, 200)}`);
      return;
    }
    this.messages.push(m);
    const bad = (why: string): void => {
      this.problems.push(`${why}: ${line.slice(0, 300)}`);
    };
    if (typeof m !== "object" || m === null || Array.isArray(m)) return bad("not an object");
    if (m.jsonrpc !== "2.0") return bad("jsonrpc is not 2.0");
    if (typeof m.method === "string") {
      const def = OUTGOING[m.method];
      if (!def) return bad(`the agent sent a method a v1 agent never sends (${m.method})`);
      if (m.id !== undefined && typeof m.id !== "number" && typeof m.id !== "string") return bad("bad id");
      const v = validator(def);
      if (!v(m.params)) bad(`params of ${m.method} invalid: ${JSON.stringify(v.errors).slice(0, 400)}`);
      return;
    }
    if (!("id" in m)) return bad("neither a request, a notification nor a response");
    if (("result" in m) === ("error" in m)) return bad("a response needs exactly one of result and error");
    if ("error" in m) {
      const v = validator("Error");
      if (!v(m.error)) bad(`error invalid: ${JSON.stringify(v.errors).slice(0, 300)}`);
      return;
    }
    const method = this.sent.get(JSON.stringify(m.id));
    if (method === undefined) return bad("a result for a request the client never sent");
    const def = RESULTS[method];
    if (!def) return bad(`a result for ${method}, which only has errors`);
    const v = validator(def);
    if (!v(m.result)) bad(`result of ${method} invalid: ${JSON.stringify(v.errors).slice(0, 400)}`);
  }

  /** The updates of one session, in order. */
  updates(sessionId?: string): Json[] {
    return this.messages
      .filter((m) => m.method === "session/update")
      .map((m) => m.params as Json)
      .filter((p) => sessionId === undefined || p.sessionId === sessionId)
      .map((p) => p.update as Json);
  }
}

/** Options of one agent process. */
export interface AgentOptions {
  /** The scripted model's responses. */
  script?: unknown[];
  /** More arguments after `acp`. */
  args?: string[];
  /** The workspace (a new temporary directory when absent). */
  work?: string;
  /** The data directory (a new temporary directory when absent). */
  data?: string;
  /** More environment variables for the agent. */
  env?: Record<string, string>;
}

/** A permission request as the client saw it, and how the test answers it. */
export type PermissionHandler = (
  req: acp.RequestPermissionRequest,
) => Promise<acp.RequestPermissionResponse> | acp.RequestPermissionResponse;

/** A running `contenox acp` and the SDK client connected to it. */
export class Agent {
  readonly tap = new Tap();
  readonly stderr: string[] = [];
  readonly permissions: acp.RequestPermissionRequest[] = [];
  /** The editor's buffers and terminals (served only to an agent started with --editor-tools). */
  readonly editor = new EditorSide();
  onPermission: PermissionHandler = () => ({ outcome: { outcome: "selected", optionId: "allow_once" } });
  readonly connection: acp.ClientConnection;
  readonly exited: Promise<number | null>;

  private constructor(
    readonly child: ChildProcess,
    readonly work: string,
    readonly data: string,
  ) {
    this.exited = new Promise((res) => child.on("exit", (code) => res(code)));
    child.stderr!.on("data", (d: Buffer) => this.stderr.push(d.toString()));
    const tap = this.tap;
    const stdout = child.stdout!;
    const input = new ReadableStream<Uint8Array>({
      start(controller) {
        stdout.on("data", (d: Buffer) => {
          tap.agentWrote(d);
          controller.enqueue(new Uint8Array(d));
        });
        stdout.on("end", () => controller.close());
      },
    });
    const stdin = child.stdin!;
    const output = new WritableStream<Uint8Array>({
      write(chunk) {
        for (const line of Buffer.from(chunk).toString("utf8").split("\n")) {
          if (line.trim()) tap.clientWrote(line);
        }
        return new Promise((res, rej) => stdin.write(chunk, (e) => (e ? rej(e) : res())));
      },
      close() {
        stdin.end();
      },
    });
    const app = acp
      .client({ name: "contenox-acp-tests" })
      .onRequest("session/request_permission", async ({ params }) => {
        this.permissions.push(params);
        return await this.onPermission(params);
      })
      .onNotification("session/update", () => {})
      .onRequest("fs/read_text_file", ({ params }) => this.editor.read(params))
      .onRequest("fs/write_text_file", ({ params }) => this.editor.write(params))
      .onRequest("terminal/create", ({ params }) => this.editor.create(params))
      .onRequest("terminal/output", ({ params }) => this.editor.output(params))
      .onRequest("terminal/wait_for_exit", ({ params }) => this.editor.waitForExit(params))
      .onRequest("terminal/kill", ({ params }) => this.editor.kill(params))
      .onRequest("terminal/release", ({ params }) => this.editor.release(params));
    this.connection = app.connect(acp.ndJsonStream(output, input));
  }

  /** Start `contenox acp --script ... --data-dir ...`. */
  static start(opts: AgentOptions = {}): Agent {
    const work = opts.work ?? tempDir("acp-work-");
    const data = opts.data ?? tempDir("acp-data-");
    const args = ["acp", "--data-dir", data];
    if (opts.script) {
      const script = join(data, `script-${Date.now()}-${Math.random()}.json`);
      writeFileSync(script, JSON.stringify(opts.script));
      args.push("--script", script);
    }
    args.push(...(opts.args ?? []));
    const env: NodeJS.ProcessEnv = {};
    for (const [k, v] of Object.entries(process.env)) if (!k.startsWith("CONTENOX_")) env[k] = v;
    Object.assign(env, opts.env ?? {});
    const child = spawn(BIN, args, { cwd: work, env, stdio: ["pipe", "pipe", "pipe"] });
    return new Agent(child, work, data);
  }

  /** The client's side of the connection. */
  get client(): acp.ClientContext {
    return this.connection.agent;
  }

  /** initialize + session/new in the workspace; the session's id. */
  async session(
    request: Partial<acp.NewSessionRequest> = {},
    clientCapabilities: acp.ClientCapabilities = {},
  ): Promise<string> {
    await this.client.request("initialize", {
      protocolVersion: acp.PROTOCOL_VERSION,
      clientCapabilities,
      clientInfo: { name: "contenox-acp-tests", version: "0" },
    });
    const s = await this.client.request("session/new", { cwd: this.work, mcpServers: [], ...request });
    return s.sessionId;
  }

  /** One prompt; its stop reason. */
  async prompt(sessionId: string, text: string): Promise<string> {
    const r = await this.client.request("session/prompt", {
      sessionId,
      prompt: [{ type: "text", text }],
    });
    return r.stopReason;
  }

  /** Write a raw line to the agent's stdin (the hostile tests). */
  raw(line: string): void {
    this.tap.clientWrote(line);
    this.child.stdin!.write(line.endsWith("\n") ? line : line + "\n");
  }

  /** Wait until `pred` holds for a message on stdout (bounded). */
  async waitFor(pred: (m: Json) => boolean, what: string, ms = 20_000): Promise<Json> {
    const end = Date.now() + ms;
    for (;;) {
      const found = this.tap.messages.find(pred);
      if (found) return found;
      if (Date.now() > end) throw new Error(`timed out waiting for ${what}; stderr: ${this.stderr.join("")}`);
      await new Promise((r) => setTimeout(r, 20));
    }
  }

  /** Close stdin and wait for a clean exit (bounded); the exit code. */
  async stop(ms = 20_000): Promise<number | null> {
    this.child.stdin!.end();
    const timer = new Promise<"timeout">((r) => setTimeout(() => r("timeout"), ms).unref());
    const code = await Promise.race([this.exited, timer]);
    if (code === "timeout") {
      this.child.kill("SIGKILL");
      throw new Error(`contenox acp did not exit ${ms} ms after stdin closed`);
    }
    return code;
  }
}

/** Every directory `tempDir` made in this test process, removed when the process exits. */
const madeDirs: string[] = [];
process.on("exit", () => {
  for (const d of madeDirs) rmSync(d, { recursive: true, force: true });
});

/** A fresh directory under the system's temp dir (its real path: macOS links /tmp), removed
 * when this test process exits, so no run leaves workspaces or data dirs behind. */
export function tempDir(prefix: string): string {
  const d = realpathSync(mkdtempSync(join(tmpdir(), prefix)));
  madeDirs.push(d);
  return d;
}

/** The pids of processes whose command line contains `marker` (on Linux's /proc). */
export function processesWith(marker: string): number[] {
  const out: number[] = [];
  for (const p of readdirSync("/proc")) {
    if (!/^\d+$/.test(p)) continue;
    try {
      const cmd = readFileSync(`/proc/${p}/cmdline`, "utf8");
      if (cmd.includes(marker)) out.push(Number(p));
    } catch {
      // The process ended while being looked at.
    }
  }
  return out;
}

/** Wait (bounded) until no process carries `marker`; the ones left otherwise. */
export async function goneWithin(marker: string, ms: number): Promise<number[]> {
  const end = Date.now() + ms;
  for (;;) {
    const left = processesWith(marker);
    if (left.length === 0 || Date.now() > end) return left;
    await new Promise((r) => setTimeout(r, 50));
  }
}

