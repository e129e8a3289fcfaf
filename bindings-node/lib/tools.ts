// Host tools: what `tool()` takes and what `execute` gets.

import type { Hints, JsonObject, Tier } from './types'

/** What a tool's `execute` gets besides its arguments. */
export interface ToolContext {
  /** The id of this call, as the model gave it (or the engine made it). */
  callId: string
  /** Aborts when the engine stops waiting for this call (the turn was cancelled or ended). */
  signal: AbortSignal
}

/** A host tool: what `tool()` takes and `client.register()` accepts. */
export interface ToolDefinition<Args = any> {
  /** Matches `^[A-Za-z0-9_-]{1,64}$`. */
  name: string
  /** Written for the model. */
  description: string
  /** A JSON Schema (an object schema) the arguments are checked against before `execute`. */
  inputSchema: JsonObject
  hints?: Hints
  tier?: Tier
  /**
   * Run the call, sync or async. The value is the result the model sees (a string as is, any
   * other JSON value as JSON text). A throw or a rejection becomes an error result with the
   * error's message; the turn goes on.
   */
  execute(args: Args, ctx: ToolContext): unknown
}

/** Make a host tool. `execute` may be sync or async; `ctx.callId` is the call's id. */
export function tool<Args = any>(definition: ToolDefinition<Args>): ToolDefinition<Args> {
  return definition
}
