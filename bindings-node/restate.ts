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
 * @packageDocumentation
 */

import * as restate from '@restatedev/restate-sdk'
import type { Client, JsonValue, PendingRequest, TurnResult, WaitFor } from './index'

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
  /** The checkpoint (JSON text) when the outcome is `suspended`. */
  checkpoint?: string
  /** The pending requests (each with its `callId`) when the outcome is `suspended`. */
  pending: JsonValue[]
}

/** An open ask as the workflow's state keeps it: the awakeable that answers it. */
export interface OpenAsk {
  callId: string
  awakeable: string
  request: JsonValue
}

/** The adapters' `waitFor`: every ask suspends the turn; the workflow answers it later. */
export const suspend: WaitFor = async () => ({ suspend: true }) as never

function stateOf(result: TurnResult): TurnState {
  const r = result as TurnResult & { checkpoint?: string; pending?: PendingRequest[] }
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
 * suspends at its next ask. */
export async function runOnce(
  makeClient: ClientFactory,
  turn: { prompt: string } | { checkpoint: string; answers: Record<string, JsonValue> },
): Promise<TurnState> {
  const client = makeClient(suspend)
  try {
    if ('prompt' in turn) return stateOf(await client.run(turn.prompt))
    const resumable = client as Client & {
      resume(checkpoint: string, answers: Record<string, JsonValue>): Promise<TurnResult>
    }
    return stateOf(await resumable.resume(turn.checkpoint, turn.answers))
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
        while (state.outcome === 'suspended') {
          const checkpoint = state.checkpoint
          if (checkpoint === undefined) throw new restate.TerminalError('a suspended turn came back without its checkpoint')
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
