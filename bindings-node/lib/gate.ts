// The gate: the call `beforeTool` and `afterTool` see, decisions, asks and answers.

import type { LifecycleHooks } from './lifecycle'
import type { Hints, Source } from './types'

/** A call as the gate sees it (core: `ToolCallEvent`). */
export interface ToolCallEvent {
  /** The tool's name (unwrapped from `call_tool`). */
  name: string
  /** The arguments, checked against the tool's schema (core: `arguments`). */
  args: any
  /** The call id (core: `call_id`). */
  callId: string
  /** The tool's hints; each one `undefined` when unknown. */
  hints: Hints
  source: Source
  /** The MCP server or remote service the tool belongs to. */
  server?: string
}

/** A tool's result as `afterTool` sees it and may replace it (core: `ToolOutput`). */
export interface ToolResult {
  /** A string is sent as is; any other JSON value as JSON text. */
  content: unknown
  /** Core: `is_error`. */
  isError?: boolean
  /** Facts about the result that are not the result (`truncated`, `nextOffset`, `total`). */
  metadata?: unknown
  /**
   * The images the model sees after the content (`read` of an image file), in the engine's
   * form (`media_type`, base64 `data`, as a transcript holds them); kept when `afterTool`
   * returns `{ ...result }`.
   */
  images?: Array<{ media_type: string; data: string }>
}

/** What `pending(request)` takes: the hook's part of a request. */
export interface PendingRequestInit {
  /** Free text: `approval`, `input`, ... */
  kind: string
  /** What to show the person. */
  prompt?: string
  /** Deny automatically after this many milliseconds without an answer (core: `timeout_ms`). */
  timeoutMs?: number
  /** Anything else the host should have. */
  data?: unknown
}

/** A request as `waitFor` sees it: the hook's part plus the call it is about. */
export interface PendingRequest extends PendingRequestInit {
  callId: string
  name: string
  args: any
  /**
   * In a suspended turn's `pending`: when the ask times out, Unix milliseconds (a resumed ask
   * keeps it; `timeoutMs` there is what was left of it when the turn suspended).
   */
  deadlineMs?: number
}

/** The host's answer to a pending request (the same objects in every binding). */
export type Answer =
  | { approve: true }
  | { approve: false; message?: string }
  | { result: unknown }
  /**
   * Answer later, maybe in another process: the turn ends with outcome `suspended`, its result
   * carries `checkpoint` and `pending`, and `client.resume(checkpoint, answers)` continues it.
   */
  | { suspend: true }

/** Let the call run. Returning nothing from `beforeTool` means the same. */
export interface Allow {
  readonly decision: 'allow'
}

/** Refuse the call: the model gets an error result with the message (or core's default text). */
export interface Deny {
  readonly decision: 'deny'
  readonly message?: string
}

/** Ask the host's `waitFor`. */
export interface Pending {
  readonly decision: 'ask'
  readonly request: PendingRequestInit
}

/**
 * An error result returned from `beforeTool` (the host-hooks design's deny): the call is refused
 * and the model gets `content` (a string as is, any other JSON value as JSON text).
 */
export interface ErrorResult {
  readonly isError: true
  readonly content?: unknown
  readonly metadata?: unknown
}

/**
 * What `beforeTool` may return: nothing (allow), `deny()` or an error result (deny),
 * `pending()` (ask), or any of them as `{ result: d }`.
 */
export type GateDecision = void | undefined | null | Allow | Deny | Pending | ErrorResult

export type BeforeToolResult = GateDecision | { result: GateDecision }

/**
 * The gate every call passes, from every source (sync or async; a throw denies that call), and
 * the turn's lifecycle points ({@link LifecycleHooks}: `onPrompt`, `onStop`, `beforeCompact`,
 * `onToolError`, `onTurnStart`, `onTurnEnd`, `onNotification`).
 */
export interface Hooks extends LifecycleHooks {
  beforeTool?(e: ToolCallEvent): BeforeToolResult | Promise<BeforeToolResult>
  /**
   * After a call ran (also after an approved ask; not for denied calls): return nothing to keep
   * the result, or a replacement.
   */
  afterTool?(e: ToolCallEvent, result: ToolResult): ToolResult | void | undefined | Promise<ToolResult | void | undefined>
}

/**
 * Answers asks. `signal` aborts when the engine stops waiting: the turn was cancelled or ended,
 * or the ask timed out. Sync or async; a throw denies the call.
 */
export type WaitFor = (request: PendingRequest, options: { signal: AbortSignal }) => Answer | Promise<Answer>

/** `beforeTool`: let the call run (the same as returning nothing). */
export function allow(): Allow {
  return { decision: 'allow' }
}

/** `beforeTool`: refuse the call; without a message the model gets core's default denial. */
export function deny(message?: string): Deny {
  return message === undefined ? { decision: 'deny' } : { decision: 'deny', message }
}

/** `beforeTool`: ask the host's `waitFor` (`{ kind: 'approval', prompt: 'Run x?' }`). */
export function pending(request: PendingRequestInit): Pending {
  return { decision: 'ask', request }
}
