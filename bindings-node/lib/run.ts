// A running turn (its events, its cancel, its result) and a finished turn's result.

import * as native from '../native'
import type { Event } from './events'
import { Transcript } from './transcript'
import type { Outcome, StopReason, Usage } from './types'
import type { OutputSpec } from './output'
import type { PendingRequest } from './gate'

/** What a finished turn returns; `O` is the type of `output` (an output schema's). */
export interface TurnResult<O = unknown> {
  outcome: Outcome
  /** The text of the turn's last model response (core: `final_text`). */
  finalText: string
  /** Usage summed over the turn. */
  usage: Usage
  /** What went wrong, for outcome `error`; which ceiling, for outcome `budget`. */
  error?: string
  /** Why the last reply stopped short of a full answer, when it did (core: `stop_reason`). */
  stopReason?: StopReason
  /**
   * The final answer of a turn with an `outputSchema`, validated (and parsed by a Standard
   * Schema): present exactly when the outcome is `done`. Outcome `output_invalid`: the answer
   * did not match (`finalText` has it raw, `error` says why).
   */
  output?: O
  /** The whole conversation after the turn. */
  transcript: Transcript
  /**
   * For outcome `suspended` (a `waitFor` answered `{ suspend: true }`): the JSON text
   * `client.resume` continues the turn from, in this process or another with the same options.
   * It holds no secret of the options (keys, headers, `secretEnv`, MCP auth).
   */
  checkpoint?: string
  /** For outcome `suspended`: the requests waiting; answers to `client.resume` are keyed by their `callId`. */
  pending?: PendingRequest[]
}

export function turnResult(r: native.NativeTurnResult): TurnResult {
  const out: TurnResult = {
    outcome: r.outcome as Outcome,
    finalText: r.finalText,
    usage: {
      inputTokens: r.usage.inputTokens,
      outputTokens: r.usage.outputTokens,
      cacheReadInputTokens: r.usage.cacheReadInputTokens,
      cacheCreationInputTokens: r.usage.cacheCreationInputTokens,
      reasoningTokens: r.usage.reasoningTokens,
    },
    transcript: new Transcript(r.transcript),
  }
  if (r.error != null) out.error = r.error
  if (r.stopReason != null) out.stopReason = r.stopReason as StopReason
  if (r.outputJson != null) out.output = JSON.parse(r.outputJson)
  if (r.checkpoint != null) out.checkpoint = r.checkpoint
  if (r.pendingJson != null) out.pending = JSON.parse(r.pendingJson) as PendingRequest[]
  return out
}

/**
 * The result with its `output` parsed by the output schema's own validator (a Standard
 * Schema's); a value it refuses makes the outcome `output_invalid` with its message, never a
 * rejection.
 */
export async function typedResult<O>(r: native.NativeTurnResult, output: OutputSpec | undefined): Promise<TurnResult<O>> {
  const out = turnResult(r)
  if (output?.parse && out.output !== undefined) {
    const parsed = await output.parse(out.output)
    if ('value' in parsed) {
      out.output = parsed.value
    } else {
      delete out.output
      out.outcome = 'output_invalid'
      out.error = parsed.error
    }
  }
  return out as TurnResult<O>
}

/** Tie an AbortSignal to a native cancel token; `unlink` drops the listener. */
export function linkSignal(signal: AbortSignal | undefined): { token?: native.NativeCancel; unlink: () => void } {
  if (!signal) return { unlink: () => {} }
  const token = new native.NativeCancel()
  if (signal.aborted) {
    token.cancel()
    return { token, unlink: () => {} }
  }
  const onAbort = () => token.cancel()
  signal.addEventListener('abort', onAbort, { once: true })
  return { token, unlink: () => signal.removeEventListener('abort', onAbort) }
}

/** A running turn: `for await (const e of run)`, `run.cancel()`, `await run.result`. */
export class Run<O = unknown> implements AsyncIterable<Event> {
  readonly #native: native.NativeRun
  /** The turn's result once it ended (outcome `cancelled` after a cancel; never rejects for that). */
  readonly result: Promise<TurnResult<O>>

  /** Use `client.stream()`. */
  constructor(handle: native.NativeRun, unlink: () => void, output?: OutputSpec) {
    this.#native = handle
    this.result = handle.result().then((r) => typedResult<O>(r, output))
    this.result.then(unlink, unlink)
  }

  /** Cancel the turn: it ends with outcome `cancelled` and a valid transcript. */
  cancel(): void {
    this.#native.cancel()
  }

  /** The events, in order, ending with `turn_end`. One reader: the events are consumed. */
  async *[Symbol.asyncIterator](): AsyncIterator<Event> {
    for (;;) {
      const batch = await this.#native.next()
      if (batch === null) return
      yield* JSON.parse(batch) as Event[]
    }
  }
}
