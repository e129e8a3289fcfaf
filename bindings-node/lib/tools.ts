// Host tools: what `tool()` takes and what `execute` gets.

import type { Hints, JsonObject, Tier } from './types'

/** What a tool's `execute` gets besides its arguments. */
export interface ToolContext {
  /** The id of this call, as the model gave it (or the engine made it). */
  callId: string
  /**
   * `turnId:callId`: names this call once across its turn's suspensions and resumes, in any
   * process (the call id alone in a subagent's turn). A tool with side effects hands it to the
   * system it changes (a payment's idempotency key, a row's unique id), so a call run again
   * after a crash does its work once.
   */
  idempotencyKey: string
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
   * other JSON value as JSON text), or a {@link ToolOutput} for a result with images, metadata
   * or an error flag. A throw or a rejection becomes an error result with the error's message;
   * the turn goes on.
   */
  execute(args: Args, ctx: ToolContext): unknown
}

/** Make a host tool. `execute` may be sync or async; `ctx.callId` is the call's id. */
export function tool<Args = any>(definition: ToolDefinition<Args>): ToolDefinition<Args> {
  return definition
}

/** An image a tool returns: its bytes (a `Uint8Array`; a `Buffer` is one) or their base64 text. */
export interface ToolImage {
  /** `image/png`, `image/jpeg`, `image/gif` or `image/webp`; the engine checks the bytes are it. */
  mediaType: string
  data: Uint8Array | string
}

/** What `ToolOutput` takes. */
export interface ToolOutputInit {
  /** A string is sent as is; any other JSON value as JSON text. */
  content: unknown
  /** The model reads the result as a failure. */
  isError?: boolean
  /** Facts about the result that are not the result (`truncated`, `total`). */
  metadata?: unknown
  /** Images the model sees after the content, in order. */
  images?: ToolImage[]
}

/**
 * A tool's result with more than content (core: `ToolOutput`): images the model sees after the
 * text, metadata, an error flag. Return one from `execute`; any other value is the content. The
 * engine checks each image as it checks a prompt's (PNG, JPEG, GIF or WebP bytes of the media
 * type given, within the size cap); a bad one makes the call an error result saying why.
 */
export class ToolOutput {
  readonly content: unknown
  readonly isError: boolean
  readonly metadata: unknown
  readonly images: readonly ToolImage[]

  constructor(init: ToolOutputInit) {
    this.content = init.content
    this.isError = init.isError ?? false
    this.metadata = init.metadata
    this.images = init.images ?? []
  }

  /** The engine's form (snake_case keys; image bytes as base64). */
  toEngine(): Record<string, unknown> {
    const out: Record<string, unknown> = { content: this.content ?? null, is_error: this.isError }
    if (this.metadata !== undefined) out.metadata = this.metadata
    if (this.images.length > 0) {
      out.images = this.images.map((i) => ({
        media_type: i.mediaType,
        data: typeof i.data === 'string' ? i.data : Buffer.from(i.data.buffer, i.data.byteOffset, i.data.byteLength).toString('base64'),
      }))
    }
    return out
  }
}
