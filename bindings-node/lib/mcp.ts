// MCP servers as a tool source.

import * as native from '../native'
import type { Client } from './client'
import { SourceTool } from './source'

/** An MCP config: core's document, `{ "mcpServers": { name: { command, args, env } | { type: "http", url, headers } } }` (passed as it is). */
export type McpConfig = { mcpServers: Record<string, Record<string, unknown>> } & Record<string, unknown>

/** How a server came out of `loadMcp`. */
export type ServerState = { state: 'ready'; tools: number } | { state: 'failed'; error: string }

/** The servers of an MCP config, their tools and resource tools. */
export class McpSource {
  readonly #native: native.NativeMcpSource

  /** Use `loadMcp()`. */
  constructor(handle: native.NativeMcpSource) {
    this.#native = handle
  }

  /** Every tool of every ready server, as they are now. */
  tools(): SourceTool[] {
    return this.#native.tools().map((t) => new SourceTool(t))
  }

  /** The opt-in `list_mcp_resources` and `read_mcp_resource` tools (read-only). */
  resourceTools(): SourceTool[] {
    return this.#native.resourceTools().map((t) => new SourceTool(t))
  }

  /** Each server and how it came out of the load, in name order. */
  servers(): { name: string; state: ServerState }[] {
    return (JSON.parse(this.#native.servers()) as [string, ServerState][]).map(([name, state]) => ({ name, state }))
  }

  /** Register every tool into `client`, follow the servers' tool list changes, stop with the client. */
  registerInto(client: Client): void {
    this.#native.registerInto(client.handle)
  }

  /** Stop every server and remove its tools from the clients. Idempotent. */
  close(): Promise<void> {
    return this.#native.close()
  }
}

/**
 * Start every server of an MCP config at once and list their tools. `onServer(name, state)` is
 * called once per server as it settles; servers that fail are reported and left out.
 */
export async function loadMcp(
  config: McpConfig | string,
  options: { onServer?: (name: string, state: ServerState) => void } = {},
): Promise<McpSource> {
  const { onServer } = options
  const text = typeof config === 'string' ? config : JSON.stringify(config)
  const report =
    onServer &&
    ((name: string, stateJson: string) => {
      if (name === '') return // the native side's end-of-reports marker
      try {
        onServer(name, JSON.parse(stateJson) as ServerState)
      } catch {
        // A host callback's error must not reach the native caller.
      }
    })
  return new McpSource(await native.loadMcpSource(text, report))
}
