// MCP servers as a tool source.

import type { PendingRequest } from './gate'
import { loadSource, SourceTool, ToolSourceBase } from './source'

/** What an MCP server's `elicitation/create` asks: the `data` of a pending request of kind `elicitation`. */
export interface Elicitation {
  /** The server's name in the config. */
  server: string
  /** What to show the person. */
  message: string
  /** The JSON Schema the answer's `result` must match (an object schema). */
  requestedSchema: Record<string, unknown>
}

/** The elicitation a pending request carries, or `undefined` when it is another kind of ask. */
export function elicitationOf(request: PendingRequest): Elicitation | undefined {
  if (request.kind !== 'elicitation' || typeof request.data !== 'object' || request.data === null) return undefined
  const data = request.data as Record<string, unknown>
  return {
    server: String(data.server ?? ''),
    message: String(data.message ?? ''),
    requestedSchema: (data.requestedSchema ?? {}) as Record<string, unknown>,
  }
}

/**
 * An MCP config: core's document, `{ "mcpServers": { name: { command, args, env } | { type: "http", url, headers } } }`
 * (passed as it is). Per server, `elicitation` (default true), `sampling` (default false) and
 * `roots` (default true) switch what contenox answers of the server's own requests
 * (docs/mcp.md).
 */
export type McpConfig = { mcpServers: Record<string, Record<string, unknown>> } & Record<string, unknown>

/** How a server came out of `loadMcp`. */
export type ServerState = { state: 'ready'; tools: number } | { state: 'failed'; error: string }

/** The servers of an MCP config, their tools and resource tools. */
export class McpSource extends ToolSourceBase<ServerState> {
  /** The opt-in `list_mcp_resources` and `read_mcp_resource` tools (read-only). */
  resourceTools(): SourceTool[] {
    return this.native.resourceTools().map((t) => new SourceTool(t))
  }

  /** Each server and how it came out of the load, in name order. */
  servers(): { name: string; state: ServerState }[] {
    return this.members()
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
  const text = typeof config === 'string' ? config : JSON.stringify(config)
  return new McpSource(await loadSource('mcp', text, options.onServer))
}
