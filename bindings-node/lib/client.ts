// The client: one conversation, its tools, its gate and its model.

import * as native from '../native'
import type { CompactNotice } from './compaction'
import { chainText, coreConfig, gateDecision, toolSpec } from './convert'
import type { Answer, PendingRequest, ToolCallEvent, ToolResult } from './gate'
import { envelope, toolEnvelope, withSignal } from './host'
import { lifecyclePoints } from './lifecycle'
import { ConfigurationError } from './errors'
import type { ClientOptions, ModelSettings, RunOptions, SubagentOptions } from './options'
import type { PolicyDocument, PolicySource } from './policy'
import { promptValue } from './prompt'
import type { Prompt } from './prompt'
import { Run, linkSignal, turnResult, typedResult } from './run'
import type { TurnResult } from './run'
import { outputSpec } from './output'
import type { InferOutput, OutputSchema, OutputSpec } from './output'
import { BackgroundShells } from './shells'
import { SourceTool } from './source'
import { Stepper } from './step'
import type { StepOptions } from './step'
import { hostTracer } from './telemetry'
import type { ToolDefinition } from './tools'
import { Transcript } from './transcript'
import type { TranscriptData } from './transcript'
import type { ModelInfo } from './types'
import { searchFunction } from './websearch'
import type { SearchRequest } from './websearch'

/** A run's settings as JSON for the engine (which renames the keys and checks them). */
function settingsJson(settings: ModelSettings | undefined): string | undefined {
  if (settings === undefined || settings === null) return undefined
  if (typeof settings !== 'object' || Array.isArray(settings)) {
    throw new ConfigurationError(`settings must be an object of model settings, got ${JSON.stringify(settings)}`, {
      option: 'settings',
    })
  }
  return JSON.stringify(settings)
}

/** A run's output options as JSON for the engine (`undefined`: the client's). */
function outputJson(own: OutputSpec | undefined, retries: number | undefined): string | undefined {
  if (own === undefined && retries === undefined) return undefined
  return `{"schema":${own?.schemaJson ?? 'null'},"retries":${retries === undefined ? 'null' : JSON.stringify(retries)}}`
}

/** A chain run's options: a chain's answer is its last task's text, so no output schema. */
export type ChainRunOptions = Omit<RunOptions, 'outputSchema' | 'outputRetries'>

/** The type of a run's `output`: its own schema's, else the client's (`O`). */
export type RunOutput<S, O> = [S] extends [undefined] ? O : InferOutput<S>

/** An agent client: one conversation, its tools, its gate and its model; `O` is its output type. */
export class Client<O = unknown> {
  readonly #native: native.NativeClient
  /** The client's `outputSchema`, read (its parser gives `result.output` its type). */
  readonly #output: OutputSpec | undefined
  /** AbortControllers of the calls JavaScript is working on, by the key the engine gave. */
  readonly #aborts: Map<number, AbortController>

  /** Use `createClient()`. */
  constructor(options: ClientOptions = {}) {
    const aborts = new Map<number, AbortController>()
    this.#aborts = aborts
    const { hooks, waitFor } = options
    const before = hooks?.beforeTool?.bind(hooks)
    const after = hooks?.afterTool?.bind(hooks)
    const points = lifecyclePoints(hooks)
    if (options.webSearch !== undefined && options.websearch !== undefined) {
      throw new ConfigurationError('give webSearch or websearch, not both (two spellings of one option)', {
        option: 'webSearch',
      })
    }
    const search = searchFunction(options.webSearch ?? options.websearch)
    const shells = options.background instanceof BackgroundShells ? options.background : undefined
    const onCompact = options.compactor?.onCompact?.bind(options.compactor)
    const compact = options.compactor?.compact?.bind(options.compactor)
    const output = outputSpec(options.outputSchema)
    this.#output = output
    // Looked up only when telemetry is on (the engine ignores it otherwise).
    const tracer = options.telemetry === undefined || options.telemetry === false ? undefined : hostTracer()
    this.#native = new native.NativeClient(
      coreConfig({ ...options, outputSchema: output ? (JSON.parse(output.schemaJson) as OutputSchema) : undefined }),
      // The callbacks close over `aborts`, never over the client, so a client is collectable.
      (key: number) => {
        try {
          aborts.get(key)?.abort()
        } catch {
          // An abort listener's error is the host's; it must not reach the native caller.
        }
      },
      before &&
        ((callJson: string) =>
          envelope(async () => gateDecision(await before(JSON.parse(callJson) as ToolCallEvent)))),
      after &&
        ((callJson: string, resultJson: string) =>
          envelope(() => after(JSON.parse(callJson) as ToolCallEvent, JSON.parse(resultJson) as ToolResult))),
      waitFor &&
        ((requestJson: string, key: number) =>
          withSignal(aborts, key, (signal) => waitFor(JSON.parse(requestJson) as PendingRequest, { signal }))),
      search &&
        ((requestJson: string, key: number) =>
          withSignal(aborts, key, (signal) => search(JSON.parse(requestJson) as SearchRequest, { signal }))),
      onCompact && ((noticeJson: string) => envelope(() => onCompact(JSON.parse(noticeJson) as CompactNotice))),
      compact &&
        ((transcriptJson: string, key: number) =>
          withSignal(aborts, key, async (signal) => {
            const out = await compact(Transcript.fromJSON(transcriptJson), { signal })
            return out == null ? null : out instanceof Transcript ? out.toJSON() : out
          })),
      shells?.handle,
      points.length > 0
        ? (point: string, argsJson: string) =>
            envelope(() => {
              const table = hooks as unknown as Record<string, ((...args: unknown[]) => unknown) | undefined>
              const method = table[point]
              if (typeof method !== 'function') throw new TypeError(`hooks.${point} is not a function`)
              return Reflect.apply(method, hooks, JSON.parse(argsJson) as unknown[]) as unknown
            })
        : undefined,
      points,
      tracer?.current,
      tracer?.replay,
    )
    for (const t of options.tools ?? []) this.register(t)
  }

  /**
   * Run one turn to its end. Resolves with outcome `cancelled` when `signal` aborts.
   *
   * `prompt`: a string, or text and image parts in order:
   * `[{ type: 'text', text: 'What is this?' }, { type: 'image', data: pngBytes }]`, or
   * `{ type: 'image', path: 'shots/login.png' }` for a file beneath the root. The engine checks
   * every part before the turn starts; a bad one throws a ConfigurationError naming it.
   */
  async run<S extends OutputSchema | undefined = undefined>(
    prompt: Prompt,
    options: RunOptions & { outputSchema?: S } = {},
  ): Promise<TurnResult<RunOutput<S, O>>> {
    const own = outputSpec(options.outputSchema)
    const { token, unlink } = linkSignal(options.signal)
    try {
      const r = await this.#native.run(
        promptValue(prompt),
        options.allow,
        token,
        settingsJson(options.settings),
        outputJson(own, options.outputRetries),
      )
      return await typedResult<RunOutput<S, O>>(r, own ?? this.#output)
    } finally {
      unlink()
    }
  }

  /**
   * Start a turn; read its events as they happen. With an output schema, `output_delta` events
   * carry the answer's JSON so far as it streams.
   */
  stream<S extends OutputSchema | undefined = undefined>(
    prompt: Prompt,
    options: RunOptions & { outputSchema?: S } = {},
  ): Run<RunOutput<S, O>> {
    const own = outputSpec(options.outputSchema)
    const { token, unlink } = linkSignal(options.signal)
    try {
      const handle = this.#native.stream(
        promptValue(prompt),
        options.allow,
        token,
        settingsJson(options.settings),
        outputJson(own, options.outputRetries),
      )
      return new Run<RunOutput<S, O>>(handle, unlink, own ?? this.#output)
    } catch (e) {
      unlink()
      throw e
    }
  }

  /**
   * Start a turn stepped by the host: each model request, tool call (with its idempotency key
   * `turnId:callId`) and ask waits for its result, fed from a record (`stepper.feed`: no I/O)
   * or performed now (`stepper.perform`); see `Stepper`. `turnId` and `clockMs` are the start
   * state a replay gives again (`stepper.options()`). A stepped turn runs its calls one at a
   * time, an ask's `{ suspend: true }` is a denial (the host holds its state), and a
   * compaction's summary request is an action of its own (`summary_request`, answered by a
   * `model_response` with `summary: true`). Aborting `signal` cancels the turn.
   */
  step<S extends OutputSchema | undefined = undefined>(
    prompt: Prompt,
    options: RunOptions & StepOptions & { outputSchema?: S } = {},
  ): Stepper<RunOutput<S, O>> {
    const own = outputSpec(options.outputSchema)
    for (const [option, type] of [['turnId', 'string'], ['clockMs', 'number']] as const) {
      const value: unknown = options[option]
      if (value !== undefined && value !== null && typeof value !== type) {
        throw new ConfigurationError(`${option} must be a ${type} (a stepper's options().${option}), got ${JSON.stringify(value) ?? String(value)}`, {
          option,
          value: JSON.stringify(value) ?? null,
        })
      }
    }
    const { token, unlink } = linkSignal(options.signal)
    try {
      const handle = this.#native.step(
        promptValue(prompt),
        options.allow,
        token,
        settingsJson(options.settings),
        outputJson(own, options.outputRetries),
        options.turnId,
        options.clockMs,
      )
      return new Stepper<RunOutput<S, O>>(handle, unlink, own ?? this.#output)
    } catch (e) {
      unlink()
      throw e
    }
  }

  /**
   * Go on with a turn that ended `suspended` (its `waitFor` answered `{ suspend: true }`), from
   * `result.checkpoint`, in this process or another with the same options. `answers` are keyed
   * by the `callId` of `result.pending`, in `waitFor`'s answer shape; a request left out is
   * asked again through `waitFor` with what is left of its time. Resolves as `run` does.
   *
   * The gate runs again first: a policy or `beforeTool` that now denies wins, and an answer
   * counts only while the gate asks the same. An ask past its deadline is denied as timed out.
   * Results recorded before the turn suspended are replayed, not run again. Throws
   * `CheckpointError` before anything runs when the checkpoint is not one, was written by a
   * newer engine, was edited, was already resumed on this client, or an answer names a call
   * that is not waiting.
   */
  async resume(checkpoint: string, answers: Record<string, Answer> = {}, options: { signal?: AbortSignal } = {}): Promise<TurnResult<O>> {
    const { token, unlink } = linkSignal(options.signal)
    try {
      const r = await this.#native.resume(checkpoint, JSON.stringify(answers), token)
      return await typedResult<O>(r, this.#output)
    } finally {
      unlink()
    }
  }

  /** `resume`, reading the turn's events as they happen (results replayed from the checkpoint emit none again). */
  resumeStream(checkpoint: string, answers: Record<string, Answer> = {}, options: { signal?: AbortSignal } = {}): Run<O> {
    const { token, unlink } = linkSignal(options.signal)
    try {
      return new Run<O>(this.#native.resumeStream(checkpoint, JSON.stringify(answers), token), unlink, this.#output)
    } catch (e) {
      unlink()
      throw e
    }
  }

  /**
   * Run a task chain (the chain JSON: an object or its text) on `input`, as one turn of this
   * client: its model and tool calls go through this client's gate, allowlists and events
   * (plus `chain_task_start` / `chain_task_end`). A chain that does not read throws
   * `ConfigurationError` naming the field, before anything runs. `finalText` is the output of
   * the last task that ran.
   */
  async runChain(chain: object | string, input = '', options: ChainRunOptions = {}): Promise<TurnResult> {
    const { token, unlink } = linkSignal(options.signal)
    try {
      return turnResult(await this.#native.runChain(chainText(chain), input, options.allow, token, settingsJson(options.settings)))
    } finally {
      unlink()
    }
  }

  /** Start a task chain on `input`; read its events as they happen. */
  streamChain(chain: object | string, input = '', options: ChainRunOptions = {}): Run {
    const { token, unlink } = linkSignal(options.signal)
    try {
      return new Run(this.#native.streamChain(chainText(chain), input, options.allow, token, settingsJson(options.settings)), unlink)
    } catch (e) {
      unlink()
      throw e
    }
  }

  /**
   * Add a tool, or replace the one of the same name; also while a turn runs. A host tool
   * (`tool({...})`), or a tool of an MCP source (`source.tools()`, `source.resourceTools()`).
   */
  register(definition: ToolDefinition | SourceTool): void {
    if (definition instanceof SourceTool) {
      this.#native.registerNative(definition.handle)
      return
    }
    const aborts = this.#aborts
    this.#native.register(toolSpec(definition), (argsJson: string, callId: string, key: number, idempotencyKey: string) =>
      withSignal(aborts, key, (signal) => definition.execute(JSON.parse(argsJson), { callId, idempotencyKey, signal }), toolEnvelope),
    )
  }

  /**
   * This client as a tool of another (a subagent): `parent.register(child.asToolWith(...))`.
   * Each call runs one turn of this client on the call's `prompt` and returns its final text;
   * a turn ending in `error`, `max_turns`, `budget` or `cancelled` is an error result saying so.
   * Its calls pass its own gate and then the parent's; its asks go to the parent's `waitFor`
   * when it has none; its events reach the parent's stream tagged with `agent`.
   */
  asToolWith(name: string, description: string, options: SubagentOptions = {}): SourceTool {
    return new SourceTool(this.#native.asToolWith(name, description, JSON.stringify(options)))
  }

  /**
   * Compact the conversation now (waits for a running turn): the notice, or `null` when there
   * is nothing older to summarise. Throws `CompactionError` when the summary request or the
   * compactor failed (the conversation is then unchanged). `onCompact` is told too.
   */
  async compact(): Promise<CompactNotice | null> {
    const notice = await this.#native.compact()
    return notice == null ? null : (JSON.parse(notice) as CompactNotice)
  }

  /** Remove a tool; true when it was there. */
  unregister(name: string): boolean {
    return this.#native.unregister(name)
  }

  /** The names of the registered tools (builtins and host tools, before allowlists). */
  get tools(): string[] {
    return this.#native.toolNames()
  }

  /** The conversation so far. Assigning one replaces it, as `setTranscript` does. */
  get transcript(): Transcript {
    return new Transcript(this.#native.transcript())
  }

  set transcript(transcript: Transcript) {
    this.setTranscript(transcript)
  }

  /** Replace the conversation (a Transcript, or a saved document); throws `BusyError` while a turn runs. */
  setTranscript(transcript: Transcript | string | TranscriptData): void {
    const t = transcript instanceof Transcript ? transcript : Transcript.fromJSON(transcript)
    this.#native.setTranscript(t.handle)
  }

  /** The models the configured server offers. */
  async listModels(): Promise<ModelInfo[]> {
    return JSON.parse(await this.#native.listModels()) as ModelInfo[]
  }

  /** The approval policy in force (given at creation or by the last `setPolicy`), or `undefined`. */
  get policy(): PolicyDocument | undefined {
    const doc = this.#native.policyJson()
    return doc == null ? undefined : (JSON.parse(doc) as PolicyDocument)
  }

  /**
   * Replace the approval policy (a document, its JSON text or a file path, as the `policy`
   * option takes it; `null` removes it), from the next tool call on, also within a running turn.
   * A policy that does not validate throws a `ConfigurationError` and the old one stays.
   */
  setPolicy(policy: PolicySource | null): void {
    this.#native.setPolicy(JSON.stringify(policy ?? null))
  }

  /** @internal */
  get handle(): native.NativeClient {
    return this.#native
  }

  /**
   * The client's background shells (the ones given as `background`, or its own), or `undefined`
   * when option `background` is off.
   */
  backgroundShells(): BackgroundShells | undefined {
    const handle = this.#native.backgroundShells()
    return handle == null ? undefined : new BackgroundShells(handle)
  }

  /**
   * Cancel every running turn (they resolve with `cancelled`), kill every background shell, and
   * refuse new turns. Idempotent.
   */
  close(): void {
    this.#native.close()
  }

  /** Whether `close()` was called. */
  get closed(): boolean {
    return this.#native.closed
  }
}

/**
 * Create a client. Every option is checked now: a mistake throws a `ConfigurationError` naming
 * the option as you spelled it (`baseUrl: "not a url" is not a URL ...`).
 */
export function createClient<S extends OutputSchema | undefined = undefined>(
  options: ClientOptions & { outputSchema?: S } = {},
): Client<RunOutput<S, unknown>> {
  return new Client<RunOutput<S, unknown>>(options)
}

/** The models of the server the options point at (`style`, `baseUrl`, `apiKey`, ...). */
export async function listModels(options: ClientOptions = {}): Promise<ModelInfo[]> {
  return JSON.parse(await native.listModels(coreConfig(options))) as ModelInfo[]
}
