// The events of a turn.

import type { Answer, PendingRequest } from './gate'
import type { Hints, Outcome, Source, StopReason, Usage } from './types'

/**
 * Events of a turn, in order. Keys as in core with camelCase spelling; `type` values as in core.
 * Every stream ends with exactly one `turn_end`.
 */
export type Event =
  | { type: 'turn_start'; prompt: string }
  /** Before each HTTP attempt: `index` = model response of the turn, `attempt` 0 = first. */
  | { type: 'request'; index: number; attempt: number; agent?: string[] }
  | { type: 'text_delta'; text: string; agent?: string[] }
  /**
   * The answer so far, read as JSON (a turn with an `outputSchema`): the best-effort value of the
   * streamed text's prefix, open strings, arrays and objects closed. Sent when it changes; not
   * validated (`result.output` is).
   */
  | { type: 'output_delta'; output: unknown; agent?: string[] }
  /** The whole text of one model response. */
  | { type: 'text'; text: string; agent?: string[] }
  /** A piece of the model's streamed reasoning (its thinking, where the server shows it). */
  | { type: 'reasoning_delta'; text: string; agent?: string[] }
  /** The whole text of one reasoning part of a model response (before its `text`). */
  | { type: 'reasoning'; text: string; agent?: string[] }
  /** The model's call is complete (core: `call_id`, `arguments`). */
  | { type: 'tool_call'; callId: string; name: string; args: unknown; agent?: string[] }
  /** The gate's decision, for every call that reaches it. */
  | { type: 'gate'; callId: string; name: string; decision: 'allow' | 'deny' | 'ask'; message?: string; hints: Hints; source: Source; rule?: string; agent?: string[] }
  | { type: 'pending'; callId: string; name: string; request: PendingRequest; agent?: string[] }
  | { type: 'answer'; callId: string; name: string; answer: Answer; agent?: string[] }
  | { type: 'tool_start'; callId: string; name: string; agent?: string[] }
  /** The result as the model will see it (core: `is_error`); `usage`: what a subagent's turn spent. */
  | { type: 'tool_result'; callId: string; name: string; content: string; isError: boolean; metadata?: unknown; usage?: Usage; agent?: string[] }
  | { type: 'progress'; callId: string; name: string; data: unknown; agent?: string[] }
  | { type: 'todos'; todos: unknown; agent?: string[] }
  /** `model`: the model that answered (the config's, a chain task's, or the fallback the turn moved to). */
  | { type: 'usage'; usage: Usage; model?: string; agent?: string[] }
  /** The older part of the conversation was replaced by one summary (see `CompactNotice`). */
  | { type: 'compact'; trigger: 'auto' | 'manual'; preTokens: number; postTokens: number; summary?: string; usage?: Usage; agent?: string[] }
  /** A model reply stopped short of a full answer (refused, filtered, cut at max tokens); the turn ends after it. */
  | { type: 'stop'; reason: StopReason; agent?: string[] }
  /** A failed request that will be retried (core: `wait_ms`). */
  | { type: 'retry'; attempt: number; status?: number; error: string; waitMs: number; agent?: string[] }
  /**
   * The model failed after its retries (overload, rate limit, server error, failed connection,
   * timeout, before any byte of an answer): the request goes to the next `fallback` model, which
   * answers the rest of the turn.
   */
  | { type: 'fallback'; fromModel: string; toModel: string; status?: number; error: string; agent?: string[] }
  /** A task of a chain starts (`client.runChain`). */
  | { type: 'chain_task_start'; taskId: string; handler: string }
  /**
   * A task of a chain ended: `value` its branches were matched against (absent when it failed),
   * `next` the task that runs next (absent when the chain ends), `error` why it failed.
   */
  | { type: 'chain_task_end'; taskId: string; handler: string; value?: string; next?: string; error?: string }
  /** Core: `final_text`. */
  | { type: 'turn_end'; outcome: Outcome; finalText: string; usage: Usage; error?: string }
