// A turn stepped by its host (`client.step`): each model request, tool call and ask is handed
// out as an action, and the turn goes on only with its result, either one recorded before
// (`feed`: no I/O) or the one the engine gets by doing it now (`perform`). A durable engine
// records each result as its own step and, after a crash, replays them: the same start
// (`options()`) and the same results give the same actions.

import type * as native from '../native'
import { StepError } from './errors'
import type { Event } from './events'
import type { Answer, PendingRequest, ToolResult } from './gate'
import type { OutputSpec } from './output'
import { typedResult } from './run'
import type { TurnResult } from './run'
import type { TranscriptToolCall } from './transcript'
import type { JsonValue, StopReason, Usage } from './types'

/** Send this request to the model; give back a `model_response` result. */
export interface ModelRequestAction {
  kind: 'model_request'
  /** The turn's id (core: `turn_id`). */
  turnId: string
  /** The turn's model request number, from 0. */
  step: number
  /** The request body as the model's wire style has it (never headers, so never a key). */
  request: JsonValue
}

/**
 * The compaction's summary request, before model request `step` (a client with `compaction`):
 * send it to the model; give back a `model_response` result with `summary: true`.
 */
export interface SummaryRequestAction {
  kind: 'summary_request'
  /** The turn's id (core: `turn_id`). */
  turnId: string
  /** The model request it comes before. */
  step: number
  /** The request body as the model's wire style has it (never headers, so never a key). */
  request: JsonValue
}

/** Run this call (it passed the gate); give back a `tool_result` result. */
export interface ToolCallAction {
  kind: 'tool_call'
  /** The call, its arguments parsed (`args`; `rawArguments` when they were not JSON). */
  call: Omit<TranscriptToolCall, 'rawArguments'> & { rawArguments?: boolean }
  /** `turnId:callId`: what the tool's `ctx.idempotencyKey` is too (core: `idempotency_key`). */
  idempotencyKey: string
}

/** The gate asks; give back an `answer` result. */
export interface AskAction {
  kind: 'ask'
  /** What `waitFor` would get. */
  request: PendingRequest
}

/** The turn ended; every later `next()` gives it again. */
export interface DoneAction<O = unknown> {
  kind: 'done'
  /** What `run` would have returned. */
  result: TurnResult<O>
}

/** What a stepped turn waits for next (`action.kind` tells which). */
export type Action<O = unknown> = ModelRequestAction | SummaryRequestAction | ToolCallAction | AskAction | DoneAction<O>

/** A model's whole reply to one request (what `perform` records; feed it back as it is). */
export interface ModelReply {
  text?: string
  /** The reply's tool calls, as the model sent them (`args`: the arguments' text). */
  calls?: Array<{ id?: string; name: string; args: string }>
  /** The parts beside text and calls (reasoning), each with the number of calls before it, in the engine's form. */
  extra?: Array<[number, JsonValue]>
  usage?: Partial<Usage>
  /** Why the reply stopped short of a full answer, when it did. */
  stop?: StopReason
  /** The server paused the turn (the turn asks again). */
  paused?: boolean
}

/** A model request that failed for good (after the engine's retries). */
export interface ModelFailure {
  message: string
  /** Refused as over the context length. */
  contextOverflow?: boolean
  /** Refused as a malformed tool call: what the model is told to try again. */
  malformedCall?: string
  /** The last attempt's HTTP status. */
  status?: number
}

/**
 * What the host gives back for an action; each names the action it answers. A
 * `summary_request`'s answer is a `model_response` with `summary: true`.
 */
export type ActionResult =
  | { kind: 'model_response'; step: number; summary?: boolean; reply: ModelReply; error?: undefined }
  | { kind: 'model_response'; step: number; summary?: boolean; error: ModelFailure; reply?: undefined }
  | { kind: 'tool_result'; callId: string; output: ToolResult }
  | { kind: 'answer'; callId: string; answer: Answer }

/** A stepped turn's start state: give a recorded stepper's `options()` again to replay it. */
export interface StepOptions {
  /** The turn's id (`turn_` + 32 hex); absent: one drawn now. */
  turnId?: string
  /** The turn's clock (Unix ms), which an ask's deadline counts from; absent: now. */
  clockMs?: number
}

/**
 * A stepped turn (`client.step(prompt)`): `await next()` gives the action waiting, `feed(result)`
 * or `await perform()` answers it, until the `done` action (its `result` is what `run` returns).
 * Collected before the turn ended, it cancels the turn.
 *
 * ```ts
 * const stepper = client.step('Tidy the notes.')
 * for (;;) {
 *   const action = await stepper.next()
 *   if (action.kind === 'done') { console.log(action.result.finalText); break }
 *   journal.push(await stepper.perform()) // or stepper.feed(recorded[i])
 * }
 * ```
 */
export class Stepper<O = unknown> {
  readonly #native: native.NativeStepper
  readonly #output: OutputSpec | undefined
  #unlink: (() => void) | undefined

  /** Use `client.step()`. */
  constructor(handle: native.NativeStepper, unlink: () => void, output?: OutputSpec) {
    this.#native = handle
    this.#output = output
    this.#unlink = unlink
  }

  /**
   * The next action: the one still waiting if there is one (asking twice gives the same
   * action), else the turn runs on to its next model request, tool call, ask or its end.
   */
  async next(): Promise<Action<O>> {
    const a = await this.#native.next()
    if (a.result == null) return JSON.parse(a.json) as Action<O>
    this.#unlink?.()
    this.#unlink = undefined
    return { kind: 'done', result: await typedResult<O>(a.result, this.#output) }
  }

  /**
   * Give the waiting action its result (one recorded before: `perform()`'s or `journal()`'s).
   * Throws `StepError`, changing nothing, when it is not a result, no action waits (call
   * `next()` first; the turn may be done) or it is for another action (kind, step or call id).
   */
  feed(result: ActionResult): void {
    let text: string | undefined
    try {
      text = JSON.stringify(result)
    } catch (e) {
      throw new StepError(`not an action result: ${e instanceof Error ? e.message : String(e)}`)
    }
    this.#native.feed(text ?? 'null')
  }

  /**
   * Do the waiting action's I/O now (the model request, the tool, `waitFor`) and resolve with
   * its result, which the turn goes on with: record it to replay.
   */
  async perform(): Promise<ActionResult> {
    return JSON.parse(await this.#native.perform()) as ActionResult
  }

  /** Every result given so far, in order (fed or performed). */
  journal(): ActionResult[] {
    return JSON.parse(this.#native.journal()) as ActionResult[]
  }

  /** The start state a replay gives again: `client.step(prompt, { ...stepper.options() })`. */
  options(): Required<StepOptions> {
    return JSON.parse(this.#native.options()) as Required<StepOptions>
  }

  /** The turn's id (the prefix of every idempotency key). */
  get turnId(): string {
    return this.#native.turnId
  }

  /** The events emitted so far and not yet taken (the same objects a `Run` yields). */
  events(): Event[] {
    return JSON.parse(this.#native.events()) as Event[]
  }

  /** Cancel the turn: `next()` then gives `done` with outcome `cancelled`. */
  cancel(): void {
    this.#native.cancel()
  }
}
