// What every tool source (MCP servers, remote services) gives a client: its tools, its members'
// states, closing; and the one loader both kinds start through.

import * as native from '../native'
import type { Client } from './client'

/** A tool of another source (an MCP server's tool, a resource tool): `client.register()` takes it. */
export class SourceTool {
  readonly #native: native.NativeTool

  /** Use `source.tools()`, `source.resourceTools()` or `client.asToolWith()`. */
  constructor(handle: native.NativeTool) {
    this.#native = handle
  }

  /** The tool's name as the model sees it (`<server>__<tool>`). */
  get name(): string {
    return this.#native.name
  }

  /** @internal */
  get handle(): native.NativeTool {
    return this.#native
  }
}

/** One member of a source (a server, a hook) and its state. */
type Member<State> = { name: string; state: State }

/** The members as the native side writes them: `[[name, state], ...]` as JSON. */
function members<State>(json: string): Member<State>[] {
  return (JSON.parse(json) as [string, State][]).map(([name, state]) => ({ name, state }))
}

/**
 * What `McpSource` and `RemoteSource` share: the engine's source (`NativeSource`), its tools,
 * adding it to a client, closing it. `State` is how a member is now.
 */
export abstract class ToolSourceBase<State> {
  readonly #native: native.NativeSource

  /** Use `loadMcp()` or `loadRemote()`. */
  constructor(handle: native.NativeSource) {
    this.#native = handle
  }

  /** Every tool of every ready member, as they are now. */
  tools(): SourceTool[] {
    return this.#native.tools().map((t) => new SourceTool(t))
  }

  /**
   * Register every tool into `client` and keep them in step with the source (MCP: the servers'
   * tool list changes, and the servers stop with the client; remote: unavailable hooks probed
   * before each turn, refreshes followed). Throws (registering nothing) when a name is taken
   * there by a tool of another source.
   */
  registerInto(client: Client): void {
    client.handle.addSource(this.#native)
  }

  /** Stop the source and remove its tools from the clients they were registered into. Idempotent. */
  close(): Promise<void> {
    return this.#native.close()
  }

  /** Whether `close()` was called. */
  get closed(): boolean {
    return this.#native.closed
  }

  /** @internal */
  protected get native(): native.NativeSource {
    return this.#native
  }

  /** @internal Each member and its state now, in the source's order. */
  protected members(): Member<State>[] {
    return members<State>(this.#native.states())
  }

  /** @internal Read the members again; their states after. */
  protected async refreshMembers(): Promise<Member<State>[]> {
    return members<State>(await this.#native.refresh())
  }
}

/**
 * Start a source of `kind` from its config (JSON text); `onMember(name, state)` is called once
 * per member as it settles (a callback that throws is ignored: the load goes on).
 * @internal
 */
export async function loadSource<State>(
  kind: 'mcp' | 'remote',
  json: string,
  onMember: ((name: string, state: State) => void) | undefined,
  redirectUri?: string,
  auth?: (op: string, argsJson: string) => Promise<string>,
): Promise<native.NativeSource> {
  const report =
    onMember &&
    ((name: string, stateJson: string) => {
      if (name === '') return // the native side's end-of-reports marker
      try {
        onMember(name, JSON.parse(stateJson) as State)
      } catch {
        // A host callback's error must not reach the native caller.
      }
    })
  return native.loadSource(kind, json, report, redirectUri, auth)
}
