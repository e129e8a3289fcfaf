// MCP servers as a tool source.

import type { PendingRequest } from './gate'
import { envelope } from './host'
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
 * The host's part of OAuth for MCP servers (docs/mcp.md "OAuth"): where the browser comes back,
 * the browser step, and where tokens are kept. The engine does the protocol (discovery,
 * registration, PKCE, refresh); tokens never appear in its events or errors.
 */
export interface McpAuth {
  /** The loopback URL the authorization server sends the browser back to, e.g. `http://127.0.0.1:33418/callback`. */
  redirectUri: string
  /** Open `url` for the person and return the full URL the browser was redirected to (with `code` and `state`). */
  authorize(server: string, url: string): string | Promise<string>
  /** The text saved under `key`, or `null` / `undefined`. */
  load(key: string): string | null | undefined | Promise<string | null | undefined>
  /** Keep `value` (it holds tokens: owner-only) under `key`. */
  save(key: string, value: string): void | Promise<void>
}

/** One function for the native side: `op` with its arguments as a JSON array, answered in the envelope. */
function authDispatcher(auth: McpAuth): (op: string, argsJson: string) => Promise<string> {
  return (op, argsJson) =>
    envelope(() => {
      const args = JSON.parse(argsJson) as [string, string]
      switch (op) {
        case 'authorize':
          return auth.authorize(args[0], args[1])
        case 'load':
          return auth.load(args[0])
        case 'save':
          return auth.save(args[0], args[1])
        default:
          throw new Error(`unknown auth operation ${op}`)
      }
    })
}

/**
 * Start every server of an MCP config at once and list their tools. `onServer(name, state)` is
 * called once per server as it settles; servers that fail are reported and left out. `auth`
 * authorizes HTTP servers that answer 401 with OAuth.
 */
export async function loadMcp(
  config: McpConfig | string,
  options: { onServer?: (name: string, state: ServerState) => void; auth?: McpAuth } = {},
): Promise<McpSource> {
  const text = typeof config === 'string' ? config : JSON.stringify(config)
  const auth = options.auth
  if (auth !== undefined && typeof auth.redirectUri !== 'string') {
    throw new TypeError('auth.redirectUri must be a string')
  }
  return new McpSource(
    await loadSource('mcp', text, options.onServer, auth?.redirectUri, auth && authDispatcher(auth)),
  )
}
