/**
 * contenox for Node.js: an embeddable agent SDK. One Rust engine runs the agent loop (model
 * request, tool calls through a gate, results, next request); this package gives it a
 * JavaScript shape and decides nothing itself.
 *
 * ```ts
 * import { createClient, tool, deny } from 'contenox'
 *
 * const client = createClient({
 *   style: 'openai', baseUrl: 'http://127.0.0.1:8080/v1', model: 'local', apiKey: 'none',
 *   tools: [tool({
 *     name: 'weather', description: 'Weather of a city.',
 *     inputSchema: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
 *     hints: { readOnly: true },
 *     execute: async ({ city }) => `sunny in ${city}`,
 *   })],
 *   hooks: { beforeTool: (e) => (e.hints.readOnly ? undefined : deny('read-only session')) },
 * })
 * const result = await client.run('Weather in Oslo?', { signal: AbortSignal.timeout(30_000) })
 * console.log(result.outcome, result.finalText)
 * client.close()
 * ```
 *
 * Spelling: options, events and results use camelCase keys for what core spells in snake_case
 * (`base_url` -> `baseUrl`, `call_id` -> `callId`, `final_text` -> `finalText`, `is_error` ->
 * `isError`, `timeout_ms` -> `timeoutMs`, `input_tokens` -> `inputTokens`), and `args` for
 * core's `arguments`. Values the host or the model own (tool arguments, results, metadata,
 * headers) are passed through unchanged. Event `type`s, outcomes and gate decisions keep core's
 * snake_case values (`tool_call`, `max_turns`). A saved transcript is core's own JSON document,
 * the same in every language.
 *
 * @packageDocumentation
 */

import * as native from './native'

// ---------------------------------------------------------------------------------------------
// Types

/** Any JSON value. */
export type JsonValue = string | number | boolean | null | JsonValue[] | { [key: string]: JsonValue }
/** A JSON object (a tool's input schema, for example). */
export type JsonObject = { [key: string]: JsonValue }

/** The wire style of the model server. `scripted` replays a fixed list of responses in-process. */
export type Style = 'openai' | 'anthropic' | 'ollama' | 'scripted'

/** How a turn ended. */
export type Outcome = 'done' | 'cancelled' | 'max_turns' | 'error' | 'budget'

/** Where a tool comes from. */
export type Source = 'builtin' | 'host' | 'mcp' | 'remote' | 'subagent'

/** Whether a tool is sent to the model (`core`) or reached through `call_tool` (`deferred`). */
export type Tier = 'core' | 'deferred'

/**
 * Advisory hints about what a tool does, never sent to the model. A hint that is `undefined`
 * is unknown, which a gate should treat as mutating.
 */
export interface Hints {
  readOnly?: boolean
  destructive?: boolean
  openWorld?: boolean
}

/**
 * Token usage (core: `input_tokens`, ...). `inputTokens` counts the whole prompt, cached or not;
 * the cache fields are the parts of it read from and written to the server's prompt cache
 * (absent on events when zero, always present on a turn's result).
 */
export interface Usage {
  inputTokens: number
  outputTokens: number
  cacheReadInputTokens?: number
  cacheCreationInputTokens?: number
}

/** The `compaction` option (core: `threshold_tokens`, `keep_recent`, `instructions`). */
export interface CompactionOptions {
  /** Compact when the context (all input tokens of the next request) is over this. */
  thresholdTokens: number
  /** How many of the most recent messages stay as they are (default 4). */
  keepRecent?: number
  /** Extra instructions for the summary, appended to the engine's. */
  instructions?: string
}

/** What one compaction did: `onCompact`'s argument, `client.compact()`'s result, the `compact` event. */
export interface CompactNotice {
  trigger: 'auto' | 'manual'
  /** The context's size before, in tokens. */
  preTokens: number
  /** The context's size after, in tokens (estimated). */
  postTokens: number
  /** The summary that replaced the older messages; absent when a host compactor did it. */
  summary?: string
  /** What the summary request cost; counted in the turn's usage. */
  usage: Usage
}

/** The host's part in compaction; make one with `compactor({ onCompact, compact })`. */
export interface Compactor {
  /** Told after every compaction; a throw is ignored (the compaction stands). */
  onCompact?: (notice: CompactNotice) => void | Promise<void>
  /**
   * Compact in your own way: return a shorter transcript, or nothing to let the engine
   * summarise. An invalid or empty result, or a throw, leaves the conversation unchanged and
   * ends the turn with `error`.
   */
  compact?: (
    transcript: Transcript,
    options: { signal: AbortSignal },
  ) => Transcript | TranscriptData | null | undefined | void | Promise<Transcript | TranscriptData | null | undefined | void>
}

/** `asToolWith`'s options (core's `SubagentOptions`). */
export interface SubagentOptions {
  /** `fresh` (default: every call starts from an empty conversation) or `kept`. */
  conversation?: 'fresh' | 'kept'
  /** Model responses per call, instead of the subagent's `maxTurns`. */
  maxTurns?: number
  /** The tools the subagent may use in these calls; narrows its own allowlist. */
  allow?: string[]
  /** The tool's input instead of `{ prompt }`; the arguments, as JSON, are the prompt. */
  inputSchema?: JsonObject
  /** What the parent's gate sees for the call (absent: treated as mutating). */
  hints?: Hints
  /** How deep subagents may nest (default 3). */
  maxDepth?: number
}

/** How failed model requests are retried (core: `retry`, keys in snake_case there). */
export interface RetryPolicy {
  maxRetries?: number
  initialBackoffMs?: number
  maxBackoffMs?: number
  maxRetryAfterMs?: number
}

/** One response of the `scripted` style (core: `ScriptEntry`; `toolCalls` = `tool_calls`). */
export interface ScriptEntry {
  text?: string
  /** `args`: a JSON object, or a string sent as is (which may be invalid JSON). */
  toolCalls?: { id?: string; name: string; args?: unknown }[]
  error?: { status: number; retryAfterS?: number; body?: string }
  stall?: boolean
  usage?: Usage
  breakAfterBytes?: number
}

/** How bash and background shells are confined (core: `sandbox`). */
export interface SandboxOptions {
  /** Confine commands with Landlock and seccomp where the kernel offers them (default true). */
  enabled?: boolean
  /** Whether commands may open network sockets (default true). */
  network?: boolean
  /** More directories (absolute paths) commands may write beneath, besides the root and `$TMPDIR`. */
  writable?: string[]
}

/**
 * One rule of an approval policy. The document is a file format (hitl-policy-v1), not options:
 * its keys are written as the format spells them (`timeout_s`, `on_timeout`) and are never
 * renamed.
 */
export interface PolicyRule {
  /** A name for messages (an extension). */
  name?: string
  /** The group a tool comes from: `builtin`, `host`, an MCP server's name, ...; `*` or absent = any. */
  tools?: string
  /** A glob over tool names; absent = any. */
  tool?: string
  /** Conditions on the call's arguments; all must hold. */
  when?: { key: string; op: string; value: unknown }[]
  /** Matches on the tool's hints (an extension). */
  hints?: Hints
  action: 'allow' | 'approve' | 'deny'
  /** Seconds an `approve` waits; `-1` = no deadline. */
  timeout_s?: number
  on_timeout?: 'deny'
  [key: string]: unknown
}

/** An approval policy document (hitl-policy-v1; see `policies` for the engine's presets). */
export interface PolicyDocument {
  /** 0 or 1; a newer version is refused. */
  version?: number
  /** What no rule decides; absent = `approve` (fail closed). */
  default_action?: 'allow' | 'approve' | 'deny'
  /** First match wins. */
  rules?: PolicyRule[]
  /** Per-turn ceilings (`maxToolCalls`, `maxTokens`, ...), as the format spells them. */
  compute?: Record<string, unknown>
  [key: string]: unknown
}

/**
 * The option `policy`: the document, its JSON text, or the path of a file holding it (the
 * engine tells text from a path: JSON text starts with `{`).
 */
export type PolicySource = PolicyDocument | string

/** What a tool's `execute` gets besides its arguments. */
export interface ToolContext {
  /** The id of this call, as the model gave it (or the engine made it). */
  callId: string
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
   * other JSON value as JSON text). A throw or a rejection becomes an error result with the
   * error's message; the turn goes on.
   */
  execute(args: Args, ctx: ToolContext): unknown
}

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
}

/** The host's answer to a pending request (the same objects in every binding). */
export type Answer = { approve: true } | { approve: false; message?: string } | { result: unknown }

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
/** What `beforeTool` may return: nothing (allow), `deny()`, `pending()`, or `{ result: d }`. */
export type GateDecision = void | undefined | null | Allow | Deny | Pending
export type BeforeToolResult = GateDecision | { result: GateDecision }

/** The gate every call passes, from every source. Sync or async; a throw denies that call. */
export interface Hooks {
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

/** What the model asked the `websearch` builtin for (core: `SearchRequest`). */
export interface SearchRequest {
  query: string
  /** How many results the tool shows (core: `max_results`); extra ones are dropped. */
  maxResults: number
  /** Only results from these domains and their subdomains; empty = any (core: `allowed_domains`). */
  allowedDomains: string[]
  /** No results from these domains and their subdomains (core: `blocked_domains`). */
  blockedDomains: string[]
}

/** One search result (core: `SearchResult`). */
export interface SearchResult {
  title: string
  url: string
  /** A short extract of the page; default empty. */
  snippet?: string
}

/**
 * A web search provider: a function, or an object with a `search` method, sync or async. The
 * engine filters the results by the requested domains again, caps them and numbers them for the
 * model, so a provider may ignore the filters it cannot apply. `signal` aborts when the engine
 * stops waiting (the turn was cancelled or ended). A throw or a rejection becomes the call's
 * error result (`web search failed: ...`); the turn goes on.
 */
export type WebSearchFunction = (
  request: SearchRequest,
  options: { signal: AbortSignal },
) => SearchResult[] | Promise<SearchResult[]>
/** See {@link WebSearchFunction}. */
export type WebSearch = WebSearchFunction | { search: WebSearchFunction }

/** A reasoning effort. */
export type Effort = 'minimal' | 'low' | 'medium' | 'high'

/**
 * Whether and which tool the model must call. A choice that forces a call (`required`, or a tool
 * by name) holds for the turn's first request only.
 */
export type ToolChoice = 'auto' | 'required' | 'none' | { name: string }

/**
 * How much the model reasons: an `effort` (openai `reasoning_effort`, anthropic `thinking` with a
 * budget of 1024/2048/4096/8192 tokens, ollama `think`) or, on the anthropic style,
 * `budgetTokens` directly; exactly one.
 */
export type Reasoning = { effort: Effort; budgetTokens?: never } | { budgetTokens: number; effort?: never }

/**
 * Model settings: client options, and per run `run(prompt, { settings })` (each key given
 * replaces the client's for that run). Each reaches the request in its style's spelling; one a
 * style has no such thing for is a `ConfigurationError`.
 */
export interface ModelSettings {
  /** 0 and up (at most 2 on openai, 1 on anthropic). */
  temperature?: number
  /** From 0 to 1. */
  topP?: number
  /** Anthropic and ollama; at least 1. */
  topK?: number
  /** Sequences that end the answer. */
  stop?: string[]
  /** OpenAI and ollama. */
  seed?: number
  toolChoice?: ToolChoice
  /** Whether the model may call several tools in one answer (openai and anthropic). */
  parallelToolCalls?: boolean
  reasoning?: Reasoning
  /**
   * Merged into the request body last (JSON merge patch; keys as the provider spells them, never
   * renamed); may not set `model`, `messages`, `tools` or `stream`.
   */
  extraBody?: Record<string, unknown>
}

/** Everything `createClient` takes. Every key but `compactor` and the last four maps to core's `Config`. */
export interface ClientOptions extends ModelSettings {
  /** Anthropic prompt caching: `cache_control` breakpoints, on by default; `false` turns it off. */
  promptCache?: boolean
  /** Default `openai`. */
  style?: Style
  /** As that style's official SDK takes it: openai `…/v1`, anthropic and ollama the host root. */
  baseUrl?: string
  model?: string
  /** Default: the style's usual environment variable. */
  apiKey?: string
  /** Extra HTTP headers for every model request (passed through as they are). */
  headers?: Record<string, string>
  system?: string
  /** The directory file tools are confined to. Default: the current directory. */
  root?: string
  /** Which builtins to offer; default the ten builtins. */
  builtins?: string[]
  /** The allowlist: `*`, exact names, `!name` excludes. */
  allow?: string[]
  /** Model responses per turn (default 50). */
  maxTurns?: number
  maxTokens?: number
  retry?: RetryPolicy
  /** The `scripted` style's responses. */
  script?: ScriptEntry[]
  /** Opt-in background shells: `bash` gains `run_in_background`; see `client.backgroundShells()`. */
  background?: boolean
  /** Opt-in `notebook_edit`. */
  notebookEdit?: boolean
  /** Environment variables never passed to processes that tools start. */
  secretEnv?: string[]
  connectTimeoutMs?: number
  /** How long a model request may wait for the server to start its answer (default 10 minutes). */
  requestTimeoutMs?: number
  /** The longest silence inside a model answer (default 10 minutes). */
  idleTimeoutMs?: number
  /**
   * The approval policy, deciding first on every call (`beforeTool` may only narrow it): a
   * document such as `policies.default()`, its JSON text, or a file path. Checked now; a
   * policy that does not validate throws a `ConfigurationError` with `option: 'policy'`.
   */
  policy?: PolicySource
  /** Tool calls per turn; one more ends the turn with outcome `budget`. */
  maxToolCalls?: number
  /** Input + output tokens per turn; reaching it ends the turn with outcome `budget`. */
  maxTurnTokens?: number
  /** What bash gets besides its allowlisted environment: `NAME`, `PREFIX*`, `NAME=value`. */
  shellEnv?: string[]
  /** How bash and background shells are confined. */
  sandbox?: SandboxOptions
  /** Let `web_fetch` reach loopback, private and link-local addresses (refused by default). */
  webFetchAllowPrivate?: boolean
  /** Summarise the older part of a long conversation (see `CompactionOptions`). */
  compaction?: CompactionOptions
  /** The host's part in compaction: `compactor({ onCompact })`. */
  compactor?: Compactor
  /** The gate. */
  hooks?: Hooks
  /** What answers `pending(...)` asks. */
  waitFor?: WaitFor
  /** Host tools. */
  tools?: ToolDefinition[]
  /** A web search provider: turns on the opt-in `websearch` builtin. */
  websearch?: WebSearch
}

/** Options of one run. */
export interface RunOptions {
  /** Aborting it cancels the turn, which then ends with outcome `cancelled` (no rejection). */
  signal?: AbortSignal
  /** Narrow this run to these tools (allowlist grammar); it can only narrow the client's. */
  allow?: string[]
  /** Model settings for this run: each key given replaces the client's (checked as theirs are). */
  settings?: ModelSettings
}

/** A model a server offers. */
export interface ModelInfo {
  id: string
  displayName?: string
}

/** One message of a conversation (camelCase view of core's `Message`). */
export type Message =
  | { role: 'user'; content: string }
  | { role: 'assistant'; content: string; toolCalls: TranscriptToolCall[] }
  | { role: 'tool'; callId: string; name: string; content: string; isError: boolean }

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

/**
 * Events of a turn, in order. Keys as in core with camelCase spelling; `type` values as in core.
 * Every stream ends with exactly one `turn_end`.
 */
export type Event =
  | { type: 'turn_start'; prompt: string }
  /** Before each HTTP attempt: `index` = model response of the turn, `attempt` 0 = first. */
  | { type: 'request'; index: number; attempt: number; agent?: string[] }
  | { type: 'text_delta'; text: string; agent?: string[] }
  /** The whole text of one model response. */
  | { type: 'text'; text: string; agent?: string[] }
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
  | { type: 'usage'; usage: Usage; agent?: string[] }
  /** The older part of the conversation was replaced by one summary (see `CompactNotice`). */
  | { type: 'compact'; trigger: 'auto' | 'manual'; preTokens: number; postTokens: number; summary?: string; usage?: Usage; agent?: string[] }
  /** A failed request that will be retried (core: `wait_ms`). */
  | { type: 'retry'; attempt: number; status?: number; error: string; waitMs: number; agent?: string[] }
  /** A task of a chain starts (`client.runChain`). */
  | { type: 'chain_task_start'; taskId: string; handler: string }
  /**
   * A task of a chain ended: `value` its branches were matched against (absent when it failed),
   * `next` the task that runs next (absent when the chain ends), `error` why it failed.
   */
  | { type: 'chain_task_end'; taskId: string; handler: string; value?: string; next?: string; error?: string }
  /** Core: `final_text`. */
  | { type: 'turn_end'; outcome: Outcome; finalText: string; usage: Usage; error?: string }

function chainText(chain: object | string): string {
  return typeof chain === 'string' ? chain : JSON.stringify(chain)
}

/** What a finished turn returns. */
export interface TurnResult {
  outcome: Outcome
  /** The text of the turn's last model response (core: `final_text`). */
  finalText: string
  /** Usage summed over the turn. */
  usage: Usage
  /** What went wrong, for outcome `error`; which ceiling, for outcome `budget`. */
  error?: string
  /** The whole conversation after the turn. */
  transcript: Transcript
}

/** Core's transcript document, as saved (snake_case keys, the same in every binding). */
export interface TranscriptData {
  messages: Record<string, unknown>[]
}

// ---------------------------------------------------------------------------------------------
// Helpers a host calls

/** Make a host tool. `execute` may be sync or async; `ctx.callId` is the call's id. */
export function tool<Args = any>(definition: ToolDefinition<Args>): ToolDefinition<Args> {
  return definition
}

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

/** The engine's preset documents, a fresh copy on each call (edit it freely). */
function preset(name: string): PolicyDocument {
  return JSON.parse(native.policyPreset(name)) as PolicyDocument
}

/**
 * The approval policies that ship with the engine, written for its builtins, with the Go
 * runtime's secret quarantine (ssh keys, cloud credentials, shell history, browser profiles)
 * and its command tiers for bash: `createClient({ policy: policies.default(), waitFor })`.
 */
export const policies = {
  /** Secrets denied, reads allowed, writes and unknown shell commands asked, the rest asked. */
  default: (): PolicyDocument => preset('default'),
  /** As `default`, but every shell line asks and anything not named is denied. */
  strict: (): PolicyDocument => preset('strict'),
  /** Secrets still denied and destructive shell lines asked; the rest runs. */
  dev: (): PolicyDocument => preset('dev'),
}

// ---------------------------------------------------------------------------------------------
// Errors

/**
 * Base class of every error contenox throws. They are thrown for misuse and invalid options
 * only: everything that happens inside a turn (a model that fails, a tool that throws, a cancel)
 * is the turn's outcome and events. `cause` is the engine's cause chain (`ContenoxCause`s).
 */
export class ContenoxError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options)
    this.name = new.target.name
  }
}

/**
 * An option is invalid (unknown option or key, wrong value, missing `model`, a `baseUrl` that is
 * not a URL...). Thrown by `createClient` and `listModels`. `option` names it as you wrote it
 * (`baseUrl`, `script[0]`; empty when no single option is at fault), `value` is the bad value
 * as JSON text, `reason` what is wrong and what is allowed.
 */
export class ConfigurationError extends ContenoxError {
  readonly option: string
  readonly value?: string
  readonly reason: string
  constructor(message: string, options: { option?: string; value?: string | null; reason?: string; cause?: unknown } = {}) {
    super(message, options)
    this.option = options.option ?? ''
    if (options.value != null) this.value = options.value
    this.reason = options.reason ?? message
  }
}

/** A tool could not be registered (bad name, input schema that is not an object schema...). */
export class ToolDefinitionError extends ContenoxError {}
/** The client was closed (`client.close()`): it runs no more turns. */
export class ClosedError extends ContenoxError {}
/** A turn is running and the operation needs the client idle (`setTranscript`). */
export class BusyError extends ContenoxError {}
/** A transcript is not valid (a tool result without its call, a call without a result). */
export class TranscriptError extends ContenoxError {}
/** The model server failed outside a turn (`listModels`). */
export class ModelError extends ContenoxError {}
/** The model server answered with an HTTP error. */
export class HttpError extends ModelError {
  readonly status: number
  readonly body: string
  /** The server's Retry-After, in seconds, when it sent one. */
  readonly retryAfter?: number
  constructor(message: string, options: { status?: number; body?: string; retryAfter?: number | null; cause?: unknown } = {}) {
    super(message, options)
    this.status = options.status ?? 0
    this.body = options.body ?? ''
    if (options.retryAfter != null) this.retryAfter = options.retryAfter
  }
}
/** The model server could not be reached, or its answer broke off; `cause` says why. */
export class TransportError extends ModelError {}
/** The engine failed where it should not (a turn's task panicked): a bug. */
export class InternalError extends ContenoxError {}

/** `client.compact()` could not compact: the summary request or the compactor failed (the conversation is unchanged). */
export class CompactionError extends ContenoxError {}
/** A transcript or options document could not be read or written as JSON. */
export class SerializationError extends ContenoxError {}
/** A file system error outside any tool. */
export class ContenoxIOError extends ContenoxError {}
/** One link of an engine error's cause chain. */
export class ContenoxCause extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options)
    this.name = 'ContenoxCause'
  }
}

type ErrorClass = new (message: string, options?: { cause?: unknown }) => ContenoxError
const ERROR_CLASSES: Record<string, ErrorClass> = {
  configuration: ConfigurationError,
  tool: ToolDefinitionError,
  closed: ClosedError,
  busy: BusyError,
  transcript: TranscriptError,
  http: HttpError,
  transport: TransportError,
  internal: InternalError,
  compaction: CompactionError,
  serialization: SerializationError,
  io: ContenoxIOError,
}

// The native side makes every engine error through this, on the JavaScript thread (see
// src/error.rs): the kind picks the class, `causes` (outermost first) becomes the `cause` chain.
native.setErrorFactory((kind: string, message: string, detailsJson: string) => {
  const details = JSON.parse(detailsJson) as { causes?: string[] } & Record<string, unknown>
  const cause = (details.causes ?? []).reduceRight<Error | undefined>(
    (inner, text) => new ContenoxCause(text, inner === undefined ? undefined : { cause: inner }),
    undefined,
  )
  const Class = ERROR_CLASSES[kind] ?? ContenoxError
  const { causes: _, ...fields } = details
  return new Class(message, cause === undefined ? fields : { ...fields, cause })
})

// ---------------------------------------------------------------------------------------------
// Translation (the casing rule is the native side's: src/convert.rs)

const HOST_ONLY = new Set(['hooks', 'waitFor', 'tools', 'websearch', 'compactor'])

/** The options without the host callbacks, as JSON text (the native side renames and checks them). */
function coreConfig(options: ClientOptions): string {
  const out: Record<string, unknown> = {}
  for (const [k, v] of Object.entries(options)) {
    if (!HOST_ONLY.has(k) && v !== undefined) out[k] = v
  }
  return JSON.stringify(out)
}

function errorMessage(e: unknown): string {
  if (e instanceof Error) return e.message
  if (typeof e === 'string') return e
  try {
    return JSON.stringify(e) ?? String(e)
  } catch {
    return String(e)
  }
}

/**
 * Run a host function (sync or async) and answer the engine with JSON text: `{"value": v}`, or
 * `{"error": message}` when it threw or rejected. Never rejects.
 */
async function envelope(f: () => unknown): Promise<string> {
  try {
    const value = await f()
    return JSON.stringify({ value: value === undefined ? null : value })
  } catch (e) {
    return JSON.stringify({ error: errorMessage(e) })
  }
}

/** The JavaScript spellings of a decision, in the one shape the native side reads. */
function gateDecision(d: unknown, wrapped = false): unknown {
  if (d === undefined || d === null) return { decision: 'allow' }
  if (typeof d === 'object') {
    const o = d as Record<string, unknown>
    if (o.decision === 'allow') return { decision: 'allow' }
    if (o.decision === 'deny') return { decision: 'deny', message: o.message ?? null }
    if (o.decision === 'ask') return { decision: 'ask', request: o.request }
    if (!wrapped && 'result' in o) return gateDecision(o.result, true)
  }
  throw new TypeError(
    `beforeTool must return nothing, deny(message), pending(request) or { result: ... }; got ${errorMessage(d)}`,
  )
}

function toolSpec(t: ToolDefinition): string {
  return JSON.stringify({ name: t.name, description: t.description, inputSchema: t.inputSchema, hints: t.hints, tier: t.tier })
}

function turnResult(r: native.NativeTurnResult): TurnResult {
  const out: TurnResult = {
    outcome: r.outcome as Outcome,
    finalText: r.finalText,
    usage: {
      inputTokens: r.usage.inputTokens,
      outputTokens: r.usage.outputTokens,
      cacheReadInputTokens: r.usage.cacheReadInputTokens,
      cacheCreationInputTokens: r.usage.cacheCreationInputTokens,
    },
    transcript: new Transcript(r.transcript),
  }
  if (r.error != null) out.error = r.error
  return out
}

/** Tie an AbortSignal to a native cancel token; `unlink` drops the listener. */
/** A run's settings as JSON for the engine (which renames the keys and checks them). */
function settingsJson(settings: ModelSettings | undefined): string | undefined {
  if (settings === undefined || settings === null) return undefined
  if (typeof settings !== 'object' || Array.isArray(settings)) {
    throw new ConfigurationError(`settings must be an object of model settings, got ${JSON.stringify(settings)}`, { option: 'settings' })
  }
  return JSON.stringify(settings)
}

function linkSignal(signal: AbortSignal | undefined): { token?: native.NativeCancel; unlink: () => void } {
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

// ---------------------------------------------------------------------------------------------
// Transcript, Run, Client

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

/** A running turn: `for await (const e of run)`, `run.cancel()`, `await run.result`. */
export class Run implements AsyncIterable<Event> {
  readonly #native: native.NativeRun
  /** The turn's result once it ended (outcome `cancelled` after a cancel; never rejects for that). */
  readonly result: Promise<TurnResult>

  /** Use `client.stream()`. */
  constructor(handle: native.NativeRun, unlink: () => void) {
    this.#native = handle
    this.result = handle.result().then(turnResult)
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

/** `websearch`: the provider's function (a method keeps its object), or nothing. */
function searchFunction(websearch: WebSearch | undefined | null | false): WebSearchFunction | undefined {
  if (websearch === undefined || websearch === null || websearch === false) return undefined
  if (typeof websearch === 'function') return websearch
  if (typeof websearch === 'object' && typeof websearch.search === 'function') return websearch.search.bind(websearch)
  throw new TypeError('websearch must be a function (request, { signal }) => results, or an object with a search method')
}

/**
 * The background shells of a client (option `background: true`): the processes `bash` started
 * with `run_in_background`. Every shell (its whole process group) is killed by `closeAll()`, by
 * `client.close()`, and when the turn that started it is cancelled.
 */
export class BackgroundShells {
  readonly #native: native.NativeClient

  /** Use `client.backgroundShells()`. */
  constructor(handle: native.NativeClient) {
    this.#native = handle
  }

  /** The ids of every shell started so far, finished ones included, oldest first (`shell_1`, ...). */
  ids(): string[] {
    return this.#native.backgroundShellIds() ?? []
  }

  /** A shell's status: `running`, `exited N` or `killed`; `undefined` for an unknown id. */
  status(id: string): string | undefined {
    return this.#native.backgroundShellStatus(id) ?? undefined
  }

  /** Kill every running shell's process group. The client stays open. */
  closeAll(): void {
    this.#native.closeBackgroundShells()
  }
}

/** An agent client: one conversation, its tools, its gate and its model. */
export class Client {
  readonly #native: native.NativeClient
  /** AbortControllers of the calls JavaScript is working on, by the key the engine gave. */
  readonly #aborts: Map<number, AbortController>

  /** Use `createClient()`. */
  constructor(options: ClientOptions = {}) {
    const aborts = new Map<number, AbortController>()
    this.#aborts = aborts
    const { hooks, waitFor } = options
    const before = hooks?.beforeTool?.bind(hooks)
    const after = hooks?.afterTool?.bind(hooks)
    const search = searchFunction(options.websearch)
    const onCompact = options.compactor?.onCompact?.bind(options.compactor)
    const compact = options.compactor?.compact?.bind(options.compactor)
    this.#native = new native.NativeClient(
      coreConfig(options),
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
    )
    for (const t of options.tools ?? []) this.register(t)
  }

  /** Run one turn to its end. Resolves with outcome `cancelled` when `signal` aborts. */
  async run(prompt: string, options: RunOptions = {}): Promise<TurnResult> {
    const { token, unlink } = linkSignal(options.signal)
    try {
      return turnResult(await this.#native.run(prompt, options.allow, token, settingsJson(options.settings)))
    } finally {
      unlink()
    }
  }

  /** Start a turn; read its events as they happen. */
  stream(prompt: string, options: RunOptions = {}): Run {
    const { token, unlink } = linkSignal(options.signal)
    try {
      return new Run(this.#native.stream(prompt, options.allow, token, settingsJson(options.settings)), unlink)
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
  async runChain(chain: object | string, input = '', options: RunOptions = {}): Promise<TurnResult> {
    const { token, unlink } = linkSignal(options.signal)
    try {
      return turnResult(await this.#native.runChain(chainText(chain), input, options.allow, token, settingsJson(options.settings)))
    } finally {
      unlink()
    }
  }

  /** Start a task chain on `input`; read its events as they happen. */
  streamChain(chain: object | string, input = '', options: RunOptions = {}): Run {
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
    this.#native.register(toolSpec(definition), (argsJson: string, callId: string, key: number) =>
      withSignal(aborts, key, (signal) => definition.execute(JSON.parse(argsJson), { callId, signal })),
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

  /** The client's background shells, or `undefined` when option `background` is off. */
  backgroundShells(): BackgroundShells | undefined {
    return this.#native.backgroundShellIds() == null ? undefined : new BackgroundShells(this.#native)
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

/** Run `f` with the AbortSignal of the call `key`, answering the engine with JSON text. */
function withSignal(aborts: Map<number, AbortController>, key: number, f: (signal: AbortSignal) => unknown): Promise<string> {
  const controller = new AbortController()
  aborts.set(key, controller)
  return envelope(() => f(controller.signal)).finally(() => aborts.delete(key))
}

/**
 * Create a client. Every option is checked now: a mistake throws a `ConfigurationError` naming
 * the option as you spelled it (`baseUrl: "not a url" is not a URL ...`).
 */
export function createClient(options: ClientOptions = {}): Client {
  return new Client(options)
}

/** The host's part in compaction, for the `compactor` option: `compactor({ onCompact })`. */
export function compactor(c: Compactor): Compactor {
  return c
}

/** The models of the server the options point at (`style`, `baseUrl`, `apiKey`, ...). */
export async function listModels(options: ClientOptions = {}): Promise<ModelInfo[]> {
  return JSON.parse(await native.listModels(coreConfig(options))) as ModelInfo[]
}

// ---------------------------------------------------------------------------------------------
// MCP

/** An MCP config: core's document, `{ "mcpServers": { name: { command, args, env } | { type: "http", url, headers } } }` (passed as it is). */
export type McpConfig = { mcpServers: Record<string, Record<string, unknown>> } & Record<string, unknown>

/** How a server came out of `loadMcp`. */
export type ServerState = { state: 'ready'; tools: number } | { state: 'failed'; error: string }

/** A tool of another source (an MCP server's tool, a resource tool): `client.register()` takes it. */
export class SourceTool {
  readonly #native: native.NativeTool

  /** Use `source.tools()`, `source.resourceTools()` or `client.asToolWith()`. */
  constructor(handle: native.NativeTool) {
    this.#native = handle
  }

  /** The tool's name as the model sees it (`<server>__<tool>`). */
  get name(): string {
    return this.#native.name
  }

  /** @internal */
  get handle(): native.NativeTool {
    return this.#native
  }
}

/** The servers of an MCP config, their tools and resource tools. */
export class McpSource {
  readonly #native: native.NativeMcpSource

  /** Use `loadMcp()`. */
  constructor(handle: native.NativeMcpSource) {
    this.#native = handle
  }

  /** Every tool of every ready server, as they are now. */
  tools(): SourceTool[] {
    return this.#native.tools().map((t) => new SourceTool(t))
  }

  /** The opt-in `list_mcp_resources` and `read_mcp_resource` tools (read-only). */
  resourceTools(): SourceTool[] {
    return this.#native.resourceTools().map((t) => new SourceTool(t))
  }

  /** Each server and how it came out of the load, in name order. */
  servers(): { name: string; state: ServerState }[] {
    return (JSON.parse(this.#native.servers()) as [string, ServerState][]).map(([name, state]) => ({ name, state }))
  }

  /** Register every tool into `client`, follow the servers' tool list changes, stop with the client. */
  registerInto(client: Client): void {
    this.#native.registerInto(client.handle)
  }

  /** Stop every server and remove its tools from the clients. Idempotent. */
  close(): Promise<void> {
    return this.#native.close()
  }
}

/**
 * Start every server of an MCP config at once and list their tools. `onServer(name, state)` is
 * called once per server as it settles; servers that fail are reported and left out.
 */
export async function loadMcp(
  config: McpConfig | string,
  options: { onServer?: (name: string, state: ServerState) => void } = {},
): Promise<McpSource> {
  const { onServer } = options
  const text = typeof config === 'string' ? config : JSON.stringify(config)
  const report =
    onServer &&
    ((name: string, stateJson: string) => {
      if (name === '') return // the native side's end-of-reports marker
      try {
        onServer(name, JSON.parse(stateJson) as ServerState)
      } catch {
        // A host callback's error must not reach the native caller.
      }
    })
  return new McpSource(await native.loadMcpSource(text, report))
}

// ---------------------------------------------------------------------------------------------
// Remote tools

/** How a hook's service is spoken to: `openapi` (the default: every operation of its OpenAPI document is a tool) or one of the five one-tool protocols. */
export type RemoteProtocol = 'openapi' | 'openai' | 'openai-object' | 'ollama' | 'langserve-openai' | 'langserve'

/** The one tool of a hook speaking one of the five protocols (else read from `GET {url}/schema`). */
export interface RemoteHookTool {
  description?: string
  inputSchema: Record<string, unknown>
}

/** One HTTP service as a tool source, as `loadRemote` takes it. */
export interface RemoteHookOptions {
  /** The hook's name: the `server` of its calls at the gate (and the tool's name for the five protocols). */
  name: string
  /** The service's base URL (http or https). */
  url: string
  protocol?: RemoteProtocol
  /** Sent with every request to the service; never shown to the model, an event or an error. */
  headers?: Record<string, string>
  /** Parameters hidden from the model and merged into every call (they win over the model's). */
  inject?: Record<string, unknown>
  /** The limit of each request (default 10 000). */
  timeoutMs?: number
  /** Where the OpenAPI document is, when not at `{url}/openapi.json`: a URL or a local file. */
  specUrl?: string
  tool?: RemoteHookTool
}

const REDACTED = '<redacted>'
/** What `console.log` and `util.inspect` print an object as (Node's well-known symbol). */
const inspectCustom = Symbol.for('nodejs.util.inspect.custom')
const hookSecrets = new WeakMap<RemoteHook, { headers: Record<string, string>; inject: Record<string, unknown> }>()

/** A URL without its userinfo and query (either may carry a secret). */
function redactUrl(url: string): string {
  try {
    const u = new URL(url)
    const auth = u.username || u.password ? `${REDACTED}@` : ''
    return `${u.protocol}//${auth}${u.host}${u.pathname}${u.search ? `?${REDACTED}` : ''}`
  } catch {
    return REDACTED
  }
}

/**
 * A remote hook whose header and injected values never print: `toString()`, `JSON.stringify`
 * and `console.log` show their names with `<redacted>` values.
 */
export class RemoteHook {
  readonly name: string
  readonly url: string
  readonly protocol: RemoteProtocol
  readonly timeoutMs?: number
  readonly specUrl?: string
  readonly tool?: RemoteHookTool

  constructor(options: RemoteHookOptions) {
    this.name = options.name
    this.url = options.url
    this.protocol = options.protocol ?? 'openapi'
    if (options.timeoutMs !== undefined) this.timeoutMs = options.timeoutMs
    if (options.specUrl !== undefined) this.specUrl = options.specUrl
    if (options.tool !== undefined) this.tool = options.tool
    hookSecrets.set(this, { headers: { ...(options.headers ?? {}) }, inject: { ...(options.inject ?? {}) } })
  }

  /** The header names (their values stay inside). */
  get headerNames(): string[] {
    return Object.keys(hookSecrets.get(this)?.headers ?? {})
  }

  /** The injected parameter names (their values stay inside). */
  get injectNames(): string[] {
    return Object.keys(hookSecrets.get(this)?.inject ?? {})
  }

  /** What prints: values of headers and injected parameters as `<redacted>`. */
  toJSON(): Record<string, unknown> {
    const hide = (names: string[]) => Object.fromEntries(names.map((n) => [n, REDACTED]))
    const out: Record<string, unknown> = {
      name: this.name,
      url: redactUrl(this.url),
      protocol: this.protocol,
      headers: hide(this.headerNames),
      inject: hide(this.injectNames),
    }
    if (this.timeoutMs !== undefined) out.timeoutMs = this.timeoutMs
    if (this.specUrl !== undefined) out.specUrl = redactUrl(this.specUrl)
    if (this.tool !== undefined) out.tool = this.tool
    return out
  }

  toString(): string {
    return `RemoteHook ${JSON.stringify(this.toJSON())}`
  }

  [inspectCustom](): string {
    return this.toString()
  }

  /** @internal The hook as the engine reads it, values included. */
  static wire(hook: RemoteHook | RemoteHookOptions): Record<string, unknown> {
    if (!(hook instanceof RemoteHook)) return { ...hook }
    const secrets = hookSecrets.get(hook) ?? { headers: {}, inject: {} }
    const out: Record<string, unknown> = { ...hook.toJSON(), url: hook.url, headers: secrets.headers, inject: secrets.inject }
    if (hook.specUrl !== undefined) out.specUrl = hook.specUrl
    return out
  }
}

/** How a hook is now. An unavailable one is probed again before each turn and on `refresh()`. */
export type HookState = { state: 'ready'; tools: number } | { state: 'unavailable'; error: string }

function hookStates(json: string): { name: string; state: HookState }[] {
  return (JSON.parse(json) as [string, HookState][]).map(([name, state]) => ({ name, state }))
}

/** The hooks of one `loadRemote`, their states and tools. */
export class RemoteSource {
  readonly #native: native.NativeRemoteSource

  /** Use `loadRemote()`. */
  constructor(handle: native.NativeRemoteSource) {
    this.#native = handle
  }

  /** Every tool of every ready hook, as they are now. */
  tools(): SourceTool[] {
    return this.#native.tools().map((t) => new SourceTool(t))
  }

  /** Each hook and its state now, in the order given. */
  hooks(): { name: string; state: HookState }[] {
    return hookStates(this.#native.hooks())
  }

  /** Read every hook again (an unavailable one may come up, a ready one picks up a changed document). */
  async refresh(): Promise<{ name: string; state: HookState }[]> {
    return hookStates(await this.#native.refresh())
  }

  /**
   * Register every tool into `client`, probe unavailable hooks before its turns, follow
   * refreshes. Throws (registering nothing) when a name is taken there by a tool of another source.
   */
  registerInto(client: Client): void {
    this.#native.registerInto(client.handle)
  }

  /** Remove the tools from every client they were registered into; later calls error. Idempotent. */
  close(): Promise<void> {
    return this.#native.close()
  }

  /** Whether `close()` was called. */
  get closed(): boolean {
    return this.#native.closed
  }

  toString(): string {
    return `RemoteSource ${this.hooks()
      .map((h) => `${h.name}: ${h.state.state}`)
      .join(', ')}`
  }

  [inspectCustom](): string {
    return this.toString()
  }
}

/**
 * Read every hook's tools at once. `onHook(name, state)` is called once per hook as it settles;
 * hooks that cannot be read are unavailable (probed again later), invalid hooks (a bad URL, an
 * unknown key, a name given twice) throw a `ConfigurationError` before anything is fetched.
 */
export async function loadRemote(
  hooks: (RemoteHook | RemoteHookOptions)[],
  options: { onHook?: (name: string, state: HookState) => void } = {},
): Promise<RemoteSource> {
  const { onHook } = options
  if (!Array.isArray(hooks)) throw new ConfigurationError('remote hooks are an array of RemoteHook (or hook objects)')
  const text = JSON.stringify(hooks.map((h) => RemoteHook.wire(h)))
  const report =
    onHook &&
    ((name: string, stateJson: string) => {
      if (name === '') return // the native side's end-of-reports marker
      try {
        onHook(name, JSON.parse(stateJson) as HookState)
      } catch {
        // A host callback's error must not reach the native caller.
      }
    })
  return new RemoteSource(await native.loadRemoteSource(text, report))
}
