// The editor's side of fs/* and terminal/*, as a real editor serves them: buffers (which may
// differ from the files on disk: unsaved changes) and terminals that run commands with bash.
// It records every call so the tests can check what reached the editor and that every terminal
// was released.

import { spawn, type ChildProcess } from "node:child_process";
import type * as acp from "@agentclientprotocol/sdk";

interface Terminal {
  child: ChildProcess;
  output: string;
  exit: Promise<acp.TerminalExitStatus>;
  status?: acp.TerminalExitStatus;
  limit: number;
}

export class EditorSide {
  /** Open buffers by absolute path. */
  readonly buffers = new Map<string, string>();
  /** Every method called, with its params, in order. */
  readonly calls: { method: string; params: unknown }[] = [];
  readonly terminals = new Map<string, Terminal>();
  private next = 0;

  read(params: acp.ReadTextFileRequest): acp.ReadTextFileResponse {
    this.calls.push({ method: "fs/read_text_file", params });
    const text = this.buffers.get(params.path);
    if (text === undefined) throw new Error(`no buffer for ${params.path}`);
    const lines = text.split("\n");
    const from = (params.line ?? 1) - 1;
    const to = params.limit ? from + params.limit : lines.length;
    return { content: lines.slice(from, to).join("\n") };
  }

  write(params: acp.WriteTextFileRequest): acp.WriteTextFileResponse {
    this.calls.push({ method: "fs/write_text_file", params });
    this.buffers.set(params.path, params.content);
    return {};
  }

  create(params: acp.CreateTerminalRequest): acp.CreateTerminalResponse {
    this.calls.push({ method: "terminal/create", params });
    const child = spawn(params.command, params.args ?? [], {
      cwd: params.cwd ?? undefined,
      stdio: ["ignore", "pipe", "pipe"],
      detached: true,
    });
    const id = `term_${this.next++}`;
    const t: Terminal = {
      child,
      output: "",
      limit: params.outputByteLimit ?? 1 << 20,
      exit: new Promise((res) =>
        child.on("exit", (code, signal) => {
          t.status = { exitCode: code, signal };
          res(t.status);
        }),
      ),
    };
    const take = (d: Buffer) => {
      t.output = (t.output + d.toString()).slice(-t.limit);
    };
    child.stdout!.on("data", take);
    child.stderr!.on("data", take);
    this.terminals.set(id, t);
    return { terminalId: id };
  }

  private terminal(id: string): Terminal {
    const t = this.terminals.get(id);
    if (!t) throw new Error(`no terminal ${id}`);
    return t;
  }

  output(params: acp.TerminalOutputRequest): acp.TerminalOutputResponse {
    this.calls.push({ method: "terminal/output", params });
    const t = this.terminal(params.terminalId);
    return { output: t.output, truncated: false, exitStatus: t.status ?? null };
  }

  async waitForExit(params: acp.WaitForTerminalExitRequest): Promise<acp.WaitForTerminalExitResponse> {
    this.calls.push({ method: "terminal/wait_for_exit", params });
    return await this.terminal(params.terminalId).exit;
  }

  kill(params: acp.KillTerminalRequest): acp.KillTerminalResponse {
    this.calls.push({ method: "terminal/kill", params });
    const t = this.terminal(params.terminalId);
    if (t.status === undefined && t.child.pid) process.kill(-t.child.pid, "SIGKILL");
    return {};
  }

  release(params: acp.ReleaseTerminalRequest): acp.ReleaseTerminalResponse {
    this.calls.push({ method: "terminal/release", params });
    const t = this.terminal(params.terminalId);
    if (t.status === undefined && t.child.pid) process.kill(-t.child.pid, "SIGKILL");
    this.terminals.delete(params.terminalId);
    return {};
  }

  /** The methods called, in order. */
  methods(): string[] {
    return this.calls.map((c) => c.method);
  }
}
