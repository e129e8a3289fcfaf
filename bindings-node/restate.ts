/**
 * `contenox/restate`: contenox turns as a Restate workflow (optional peer dependency
 * `@restatedev/restate-sdk`; the main `contenox` entry never loads it).
 *
 * A turn is the workflow's `run` handler, keyed by the turn id. It is journaled with `ctx.run`:
 * `run` (the model requests and tool calls up to the turn's end or its first ask, in a fresh
 * client) and `resume` (the gate runs again, the answered tool runs, the turn goes on). An ask is
 * an awakeable: its id and request are in the workflow's state (the shared handler `pending`
 * lists them), and it is answered by resolving the awakeable, by its id (Restate's
 * `/restate/awakeables/ID/resolve`) or through the shared handler `answer` keyed by call id. The
 * first answer wins. An ask waits until its absolute deadline (`ctx.date.now()` is journaled,
 * so a replay keeps the clock); unanswered by then, the resume denies the call with the timeout
 * sentence.
 *
 * ```ts
 * import * as restate from '@restatedev/restate-sdk'
 * import { createClient } from 'contenox'
 * import { turnWorkflow } from 'contenox/restate'
 *
 * const turns = turnWorkflow((waitFor) => createClient({ ...config, waitFor }))
 * restate.serve({ services: [turns], port: 9080 })
 * // POST {ingress}/contenox-turn/t-1/run/send {"prompt": "Write the report."}
 * // POST {ingress}/contenox-turn/t-1/answer {"callId": "call_1", "answer": {"approve": true}}
 * ```
 *
 * What is exactly-once: docs/durable.md. In short: what runs between two asks is journaled when
 * it has finished; a crash inside it runs it again, so a tool with side effects should use the
 * idempotency key its context gives it.
 *
 * {@link steppedTurnWorkflow} (`contenox-stepped-turn`, the same handlers) journals each model
 * request and tool call as its own `ctx.run` instead (the stepped turn, `client.step`), so a
 * crash between two of them repeats neither; its limit (a gate that changes while an ask waits)
 * is on it.
 *
 * @packageDocumentation
 */

import * as restate from '@restatedev/restate-sdk'
import { StepError } from './index'
import type { ActionResult, Answer, Client, JsonValue, PendingRequest, TurnResult, WaitFor } from './index'

/**
 * `makeClient(waitFor)`: builds the client a turn runs on, with the same config in every process
 * (the checkpoint holds no secret: keys, headers and injected values come from here at every
 * resume). The client must be created with `waitFor`: the adapter's answer to an ask is to
 * suspend the turn.
 */
export type ClientFactory = (waitFor: WaitFor) => Client

/** What the journal keeps about a run or resume: how the turn stands, plain JSON. */
export interface TurnState {
  outcome: string
  finalText: string
  error?: string
  stopReason?: string
  usage: Record<string, number>
  /** The checkpoint (JSON text) when the outcome is `suspended` (absent when a resume recorded
   * it as `checkpointDelta`). */
  checkpoint?: string
  /** A resume's checkpoint as what it adds to the checkpoint it resumed ({@link deltaOf}), so
   * the journal holds each message once. */
  checkpointDelta?: CheckpointDelta
  /** The pending requests (each with its `callId`) when the outcome is `suspended`. */
  pending: JsonValue[]
}

/** A checkpoint as what it adds to another: see {@link deltaOf}. */
export interface CheckpointDelta {
  keys: string[]
  transcriptKeys: string[]
  keep: number
  tail: JsonValue[]
  transcript: Record<string, JsonValue>
  rest: Record<string, JsonValue>
}

type JsonRecord = Record<string, JsonValue>

function messagesOf(checkpoint: JsonRecord): JsonValue[] | undefined {
  const transcript = checkpoint.transcript as JsonRecord | undefined
  const messages = transcript?.messages
  return Array.isArray(messages) ? messages : undefined
}

/**
 * `checkpoint` as what it adds to `base`: the messages of its transcript past the ones it
 * shares with `base`'s, and its other fields; `undefined` when the transcripts share no prefix
 * (e.g. the turn compacted its conversation). A turn that asks k times records k checkpoints,
 * each with the conversation so far; whole, they add up to the square of the conversation, as
 * deltas to it once. The same shape as the Python adapters' `delta_of`.
 */
export function deltaOf(checkpoint: string, base: string): CheckpointDelta | undefined {
  const next = JSON.parse(checkpoint) as JsonRecord
  const messages = messagesOf(next)
  const before = messagesOf(JSON.parse(base) as JsonRecord)
  if (messages === undefined || before === undefined || messages.length < before.length) return undefined
  for (let i = 0; i < before.length; i++) {
    if (JSON.stringify(messages[i]) !== JSON.stringify(before[i])) return undefined
  }
  const transcript = { ...(next.transcript as JsonRecord) }
  delete transcript.messages
  const rest = { ...next }
  delete rest.transcript
  return {
    keys: Object.keys(next),
    transcriptKeys: Object.keys(next.transcript as JsonRecord),
    keep: before.length,
    tail: messages.slice(before.length),
    transcript,
    rest,
  }
}

/** The checkpoint {@link deltaOf} made `delta` of, rebuilt from `base` (the same JSON values:
 * the engine checks its digest over them, so a wrong rebuild is refused). */
export function applyDelta(base: string, delta: CheckpointDelta): string {
  const messages = [...(messagesOf(JSON.parse(base) as JsonRecord) ?? []).slice(0, delta.keep), ...delta.tail]
  const transcript: JsonRecord = {}
  for (const k of delta.transcriptKeys) transcript[k] = k === 'messages' ? messages : delta.transcript[k]
  const whole: JsonRecord = {}
  for (const k of delta.keys) whole[k] = k === 'transcript' ? transcript : delta.rest[k]
  return JSON.stringify(whole)
}

/** An open ask as the workflow's state keeps it: the awakeable that answers it. */
export interface OpenAsk {
  callId: string
  awakeable: string
  request: JsonValue
}

/** The adapters' `waitFor`: every ask suspends the turn; the workflow answers it later. */
export const suspend: WaitFor = async () => ({ suspend: true })

function stateOf(r: TurnResult): TurnState {
  const state: TurnState = {
    outcome: r.outcome,
    finalText: r.finalText,
    usage: { ...r.usage } as Record<string, number>,
    pending: JSON.parse(JSON.stringify(r.pending ?? [])) as JsonValue[],
  }
  if (r.error !== undefined) state.error = r.error
  if (r.stopReason !== undefined) state.stopReason = r.stopReason
  if (r.checkpoint !== undefined) state.checkpoint = r.checkpoint
  return state
}

/** Run `prompt` (or resume `checkpoint` with `answers`) in a fresh client until the turn ends or
 * suspends at its next ask. A resume's checkpoint comes back as a delta of the one resumed. */
export async function runOnce(
  makeClient: ClientFactory,
  turn: { prompt: string } | { checkpoint: string; answers: Record<string, JsonValue> },
): Promise<TurnState> {
  const client = makeClient(suspend)
  try {
    if ('prompt' in turn) return stateOf(await client.run(turn.prompt))
    const state = stateOf(await client.resume(turn.checkpoint, turn.answers as Record<string, Answer>))
    const delta = state.checkpoint === undefined ? undefined : deltaOf(state.checkpoint, turn.checkpoint)
    if (delta !== undefined) {
      delete state.checkpoint
      state.checkpointDelta = delta
    }
    return state
  } finally {
    client.close()
  }
}

function callIdOf(request: JsonValue): string {
  const r = request as { callId?: unknown }
  if (typeof r.callId !== 'string') throw new restate.TerminalError('a pending request has no callId')
  return r.callId
}

function deadlineOf(request: JsonValue): number | undefined {
  const d = (request as { deadlineMs?: unknown }).deadlineMs
  return typeof d === 'number' ? d : undefined
}

/** The turn workflow (name `contenox-turn` unless `options.name` says otherwise). */
export function turnWorkflow(makeClient: ClientFactory, options: { name?: string } = {}) {
  return restate.workflow({
    name: options.name ?? 'contenox-turn',
    handlers: {
      run: async (ctx: restate.WorkflowContext, input: { prompt: string }): Promise<TurnState> => {
        let state = await ctx.run('run', () => runOnce(makeClient, { prompt: input.prompt }))
        let base: string | undefined
        while (state.outcome === 'suspended') {
          const checkpoint: string | undefined =
            state.checkpoint ??
            (state.checkpointDelta !== undefined && base !== undefined ? applyDelta(base, state.checkpointDelta) : undefined)
          if (checkpoint === undefined) throw new restate.TerminalError('a suspended turn came back without its checkpoint')
          base = checkpoint
          const asks = state.pending.map((request) => {
            const { id, promise } = ctx.awakeable<JsonValue>()
            return { open: { callId: callIdOf(request), awakeable: id, request } as OpenAsk, promise }
          })
          ctx.set('pending', asks.map((a) => a.open))
          const answers: Record<string, JsonValue> = {}
          for (const { open, promise } of asks) {
            const deadline = deadlineOf(open.request)
            if (deadline === undefined) {
              answers[open.callId] = await promise
              continue
            }
            const left = Math.max(0, deadline - (await ctx.date.now()))
            try {
              answers[open.callId] = await promise.orTimeout(left)
            } catch (e) {
              // Unanswered by the deadline: the resume denies it with the timeout sentence.
              if (!(e instanceof restate.TimeoutError)) throw e
            }
          }
          ctx.set('pending', [])
          state = await ctx.run('resume', () => runOnce(makeClient, { checkpoint, answers }))
        }
        return state
      },

      /** The open asks (each with its call id, awakeable id and request). */
      pending: restate.handlers.workflow.shared(
        async (ctx: restate.WorkflowSharedContext): Promise<OpenAsk[]> => (await ctx.get<OpenAsk[]>('pending')) ?? [],
      ),

      /** Answer the ask of `callId` (today's answer shape); an error when no such ask is open. */
      answer: restate.handlers.workflow.shared(
        async (ctx: restate.WorkflowSharedContext, input: { callId: string; answer: JsonValue }): Promise<void> => {
          const open = ((await ctx.get<OpenAsk[]>('pending')) ?? []).find((a) => a.callId === input.callId)
          if (open === undefined) throw new restate.TerminalError(`no open ask for call ${input.callId}`)
          ctx.resolveAwakeable(open.awakeable, input.answer)
        },
      ),
    },
  })
}

// --- The stepped turn ---------------------------------------------------------------------------

// What the engine says when an ask's time ran out (its ASK_TIMEOUT_DENIAL): the stepped workflow
// answers an ask unanswered by its deadline with it, as the engine's own wait does.
const TIMEOUT_DENIAL = 'Approval timed out. The operation was automatically denied.'

/** A stepped turn's asks are actions the workflow answers; its client's `waitFor` is not called. */
const neverAsked: WaitFor = async () => ({ approve: false, message: 'no host answers asks here' })

/**
 * The turn workflow on the stepped turn (`client.step`; name `contenox-stepped-turn` unless
 * `options.name` says otherwise), with the handlers of {@link turnWorkflow} (`run`, `pending`,
 * `answer`) and `refused` (the last answer the turn did not take: not an answer, and why; the ask
 * stays open under a new awakeable, its deadline unchanged). Each model request, compaction
 * summary request and tool call is its own `ctx.run` journal entry (`model:STEP`,
 * `summary:STEP`, `tool:CALL_ID`) that performs it and records its result; an ask is an
 * awakeable, as in {@link turnWorkflow}. After a crash Restate runs the handler again from its
 * start: the turn is stepped again (turn id = the workflow key, clock = a journaled
 * `ctx.date.now()`) and each action with a journal entry is fed its recorded result (no request
 * sent again, no tool run again), so the turn goes on from the first action without one.
 *
 * What is not exactly-once: a process that dies while a tool runs has not journaled its result,
 * so the tool runs again, with the same idempotency key (`workflowKey:callId`). The gate's hooks
 * run again on replay; one that decides otherwise than before the crash (a policy changed to
 * deny while an ask waited) makes the replay ask for other actions than the journal holds, which
 * Restate refuses (a journal mismatch: the invocation retries and does not finish). Use
 * {@link turnWorkflow} when the gate may change while an ask waits: its resume runs the gate
 * afresh.
 */
export function steppedTurnWorkflow(makeClient: ClientFactory, options: { name?: string } = {}) {
  return restate.workflow({
    name: options.name ?? 'contenox-stepped-turn',
    handlers: {
      run: async (ctx: restate.WorkflowContext, input: { prompt: string }): Promise<TurnState> => {
        const clockMs = await ctx.date.now()
        const client = makeClient(neverAsked)
        const stepper = client.step(input.prompt, { turnId: ctx.key, clockMs })
        try {
          for (;;) {
            const action = await stepper.next()
            if (action.kind === 'done') {
              ctx.set('pending', [])
              return stateOf(action.result)
            }
            if (action.kind === 'ask') {
              const { request } = action
              const deadline = request.timeoutMs === undefined ? undefined : (await ctx.date.now()) + request.timeoutMs
              for (;;) {
                const answer = await askOnce(ctx, request, deadline)
                try {
                  stepper.feed({ kind: 'answer', callId: request.callId, answer })
                  break
                } catch (e) {
                  if (!(e instanceof StepError)) throw e
                  // Not an answer ({"maybe": true}): the ask stays open under a new awakeable,
                  // its deadline unchanged; `refused` says why the last answer was not taken.
                  ctx.set('refused', { callId: request.callId, reason: e.message })
                }
              }
              continue
            }
            const name =
              action.kind === 'model_request'
                ? `model:${action.step}`
                : action.kind === 'summary_request'
                  ? `summary:${action.step}`
                  : `tool:${action.call.id}`
            let performed = false
            const result = await ctx.run(name, async () => {
              performed = true
              try {
                return (await stepper.perform()) as unknown as JsonValue
              } catch (e) {
                // The turn ended under the action (closed client): retrying cannot perform it.
                if (e instanceof StepError) throw new restate.TerminalError(e.message)
                throw e
              }
            })
            // Restate gave the journaled result without running the closure: replay it.
            if (!performed) stepper.feed(result as unknown as ActionResult)
          }
        } finally {
          stepper.cancel()
          client.close()
        }
      },

      /** The open asks (each with its call id, awakeable id and request). */
      pending: restate.handlers.workflow.shared(
        async (ctx: restate.WorkflowSharedContext): Promise<OpenAsk[]> => (await ctx.get<OpenAsk[]>('pending')) ?? [],
      ),

      /** The last answer the turn did not take (not an answer), and why; `null` when none. */
      refused: restate.handlers.workflow.shared(
        async (ctx: restate.WorkflowSharedContext): Promise<{ callId: string; reason: string } | null> =>
          (await ctx.get<{ callId: string; reason: string }>('refused')) ?? null,
      ),

      /** Answer the ask of `callId` (today's answer shape); an error when no such ask is open. */
      answer: restate.handlers.workflow.shared(
        async (ctx: restate.WorkflowSharedContext, input: { callId: string; answer: JsonValue }): Promise<void> => {
          const open = ((await ctx.get<OpenAsk[]>('pending')) ?? []).find((a) => a.callId === input.callId)
          if (open === undefined) throw new restate.TerminalError(`no open ask for call ${input.callId}`)
          ctx.resolveAwakeable(open.awakeable, input.answer)
        },
      ),
    },
  })
}

/**
 * One wait of a stepped turn's ask: an awakeable in the workflow's state until it is resolved or
 * the ask's `deadline` (its `timeoutMs` after a journaled now) passes, then the timeout denial.
 */
async function askOnce(ctx: restate.WorkflowContext, request: PendingRequest, deadline: number | undefined): Promise<Answer> {
  const { id, promise } = ctx.awakeable<JsonValue>()
  const held = JSON.parse(JSON.stringify(deadline === undefined ? request : { ...request, deadlineMs: deadline })) as JsonValue
  ctx.set('pending', [{ callId: request.callId, awakeable: id, request: held } as OpenAsk])
  let answer: JsonValue
  if (deadline === undefined) {
    answer = await promise
  } else {
    try {
      answer = await promise.orTimeout(Math.max(0, deadline - (await ctx.date.now())))
    } catch (e) {
      if (!(e instanceof restate.TimeoutError)) throw e
      answer = { approve: false, message: TIMEOUT_DENIAL }
    }
  }
  ctx.set('pending', [])
  return answer as unknown as Answer
}
