// A conversation: its messages and the saved document.

import * as native from '../native'

/** One message of a conversation (camelCase view of core's `Message`): its parts, in order. */
export type Message =
  | { role: 'user'; content: ContentPart[] }
  | { role: 'assistant'; content: ContentPart[] }
  | { role: 'tool'; callId: string; name: string; content: ContentPart[]; isError: boolean }

/**
 * One part of a message (camelCase view of core's `Part`): text, an image (base64 bytes with
 * their media type, or a path beneath the root), the model's reasoning (with the provider's
 * opaque fields), a tool call, a block of the provider's own kind.
 */
export type ContentPart =
  | { type: 'text'; text: string }
  | { type: 'image'; mediaType: string; data: string }
  | { type: 'image'; path: string }
  | { type: 'reasoning'; text: string; signature?: string; redacted?: string; field?: string }
  | ({ type: 'tool_call' } & TranscriptToolCall)
  /** A block of the provider's own kind (a server tool's use or result), sent back to it as it came. */
  | { type: 'provider'; style: string; block: unknown }

/** A tool call in a transcript. */
export interface TranscriptToolCall {
  id: string
  name: string
  /** Parsed JSON, or the raw text when `rawArguments` is true. */
  args: unknown
  rawArguments: boolean
  /** Set when the model reached the tool through `call_tool`. */
  via?: string
}

/** Core's transcript document, as saved (snake_case keys, the same in every binding). */
export interface TranscriptData {
  /** The format's version (2; a document without it is read as version 1, the string form). */
  version?: number
  messages: Record<string, unknown>[]
}

/** A conversation: read it, save it (`JSON.stringify(t)` or `t.toString()`), load it. */
export class Transcript {
  readonly #native: native.NativeTranscript

  /** Use `client.transcript`, `result.transcript` or `Transcript.fromJSON()`. */
  constructor(handle: native.NativeTranscript) {
    this.#native = handle
  }

  /** Load a saved transcript (text or parsed document); throws when it is not valid. */
  static fromJSON(json: string | TranscriptData): Transcript {
    const text = typeof json === 'string' ? json : JSON.stringify(json)
    return new Transcript(native.NativeTranscript.fromJson(text))
  }

  /** Core's document; `JSON.stringify(transcript)` saves it. */
  toJSON(): TranscriptData {
    return JSON.parse(this.#native.toJson()) as TranscriptData
  }

  /** Core's document as (pretty) JSON text. */
  toString(): string {
    return this.#native.toJson()
  }

  /** How many messages it holds. */
  get length(): number {
    return this.#native.length
  }

  /** The messages, oldest first (camelCase view). */
  get messages(): Message[] {
    return JSON.parse(this.#native.messagesJson()) as Message[]
  }

  /** @internal */
  get handle(): native.NativeTranscript {
    return this.#native
  }
}
