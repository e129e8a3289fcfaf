// The lifecycle hooks beside `beforeTool` / `afterTool` (docs/hooks.md): what each point gives
// the host's method and what it may answer. The engine decides what an answer does; a method
// that throws, rejects, answers what its point does not take, or gives no answer within
// `hookTimeoutMs` (default 60 s) never fails the turn: it is logged and the point's fallback
// applies (the prompt is sent as it is, the turn ends, the compaction proceeds).

import type { ToolCallEvent, ToolResult } from './gate'
import type { Outcome } from './types'

/**
 * What `onPrompt` may answer: nothing (send the prompt), `{ replace: text }` (send this text
 * instead; images stay), `{ addContext: text }` (add it after the prompt), `{ refuse: reason }`
 * (the turn ends with outcome `error`: `the prompt was refused by a hook: REASON`; no model
 * request, the conversation unchanged).
 */
export type PromptAction = void | undefined | null | { replace: string } | { addContext: string } | { refuse: string }

/** What `onStop` may answer: nothing (the turn ends), `{ continue: message }` (back to work, within `maxTurns`). */
export type StopAction = void | undefined | null | { continue: string }

/** What `beforeCompact` may answer: nothing (proceed), `{ instructions: text }`, `{ veto: reason }`. */
export type CompactAction = void | undefined | null | { instructions: string } | { veto: string }

/** The compaction `beforeCompact` is asked about. */
export interface CompactRequest {
  /** `auto` (the threshold, or the server's context limit) or `manual` (`client.compact()`). */
  trigger: 'auto' | 'manual'
  /** The context's size now, in tokens. */
  preTokens: number
  /** The configured summary instructions (`compaction.instructions`), if any. */
  instructions?: string
}

/** `onTurnEnd`'s argument: how the turn ended (the `turn_end` event's content). */
export interface TurnEnd {
  outcome: Outcome
  finalText: string
  /** What went wrong (outcome `error`), which ceiling (outcome `budget`). */
  error?: string
}

/** `onNotification`'s argument: something the host may want to show a person. */
export interface Notification {
  /** `ask`: a call waits for the host's answer; `budget_near`: the turn is near a ceiling. */
  kind: 'ask' | 'budget_near'
  message: string
}

type Maybe<T> = T | Promise<T>

/** The lifecycle methods of {@link Hooks}; each sync or async. */
export interface LifecycleHooks {
  /** Before the turn's first model request. */
  onPrompt?(prompt: string): Maybe<PromptAction>
  /** The model gave its final answer (not at the last response `maxTurns` allows). */
  onStop?(finalText: string): Maybe<StopAction>
  /** A compaction is about to run. */
  beforeCompact?(request: CompactRequest): Maybe<CompactAction>
  /** A call ran and its result is an error (after `afterTool`). Observes. */
  onToolError?(e: ToolCallEvent, result: ToolResult): Maybe<void>
  /** A turn starts (after its `turn_start` event). Observes. */
  onTurnStart?(prompt: string): Maybe<void>
  /** A turn ended (before its `turn_end` event). Observes. */
  onTurnEnd?(end: TurnEnd): Maybe<void>
  /** An ask was raised, or the turn is near a ceiling. Observes. */
  onNotification?(notification: Notification): Maybe<void>
}

/** The lifecycle methods' names, as the engine calls them. */
export const LIFECYCLE_POINTS = [
  'onPrompt',
  'onStop',
  'beforeCompact',
  'onToolError',
  'onTurnStart',
  'onTurnEnd',
  'onNotification',
] as const

/** The names of the lifecycle methods `hooks` has. */
export function lifecyclePoints(hooks: object | undefined): string[] {
  if (hooks == null) return []
  const h = hooks as Record<string, unknown>
  return LIFECYCLE_POINTS.filter((p) => typeof h[p] === 'function')
}
