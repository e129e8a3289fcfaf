// The options of `createClient` and of one run.

import type { CompactionOptions, Compactor } from './compaction'
import type { Hooks, WaitFor } from './gate'
import type { PolicySource } from './policy'

/** The `hooksFile` option: a hooks (or settings) object, its JSON text, or a file path. */
export type HooksFileSource = Record<string, unknown> | string
import type { ToolDefinition } from './tools'
import type { Hints, JsonObject, Style, Usage } from './types'
import type { OutputSchema } from './output'
import type { WebSearch } from './websearch'
import type { BackgroundShells } from './shells'

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

/**
 * The limits of `js_execution` (core: `code_execution`); giving the option (`{}` for the
 * defaults) turns the builtin on. An unknown key is a `ConfigurationError`.
 */
export interface CodeExecutionOptions {
  /** Wall time of one run, inner tool calls included (default 10000). */
  timeoutMs?: number
  /** Memory the JavaScript heap may take, in MiB (default 64). */
  memoryMb?: number
  /** Native stack the interpreter may use, in KiB (default 512). */
  maxStackKb?: number
  /** Bytes of output the model gets; the rest is cut and the cut said (default 32768). */
  maxOutputBytes?: number
  /** Inner tool calls one run may make (default 100). */
  maxToolCalls?: number
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
 * style has no such thing for is a `ConfigurationError` (docs/settings.md).
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

/**
 * An entry of `fallback`: a model tried when the one before it fails after its retries
 * (overload, rate limit, server error, failed connection, timeout). `model` is required; `style`
 * defaults to the client's. An entry of the client's style without `baseUrl` uses the client's
 * server, key and headers; any other entry only what it gives (`apiKey`, or `apiKeyEnv`: the
 * environment variable holding it).
 */
export interface FallbackModel {
  style?: 'openai' | 'openai-responses' | 'anthropic' | 'ollama'
  baseUrl?: string
  model: string
  apiKey?: string
  apiKeyEnv?: string
  /** Passed through as they are. */
  headers?: Record<string, string>
}

/**
 * OpenTelemetry traces of the turns (GenAI semantic conventions): `true`, or these settings. The
 * standard `OTEL_*` variables fill what is left out (`OTEL_EXPORTER_OTLP_ENDPOINT`,
 * `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`, `OTEL_EXPORTER_OTLP_HEADERS`, `OTEL_SERVICE_NAME`,
 * `OTEL_RESOURCE_ATTRIBUTES`). Spans are posted over OTLP/HTTP (JSON), batched, off the turn's
 * path; `close()` sends what is queued.
 */
export interface TelemetryOptions {
  /** The collector: a base (`http://127.0.0.1:4318`, `/v1/traces` added) or the traces URL. */
  endpoint?: string
  /** Headers of every export (a collector's key); never on a span. */
  headers?: Record<string, string>
  /** Put prompts, answers, tool arguments and results on the spans (off by default). */
  includeContents?: boolean
  /** The resource's `service.name` (default `OTEL_SERVICE_NAME`, then `contenox`). */
  serviceName?: string
}

/** Everything `createClient` takes. Every key but `compactor` and the last four maps to core's `Config`. */
export interface ClientOptions extends ModelSettings {
  /** Anthropic prompt caching: `cache_control` breakpoints, on by default; `false` turns it off. */
  promptCache?: boolean
  /**
   * Models tried in order when the model fails after its retries (see `FallbackModel`); a string
   * is a model name on the same server.
   */
  fallback?: (FallbackModel | string)[]
  /**
   * Whether the model takes images (on by default). `false` refuses a prompt with images
   * (ConfigurationError) and turns a tool result's images into an error result the model sees.
   */
  images?: boolean
  /**
   * A typed final answer for every turn: a JSON Schema object, or a Standard Schema (Zod v4,
   * Valibot, ArkType: its JSON Schema comes from `~standard.jsonSchema` or Zod's `toJSONSchema`,
   * and `~standard.validate` parses the answer). The model may call tools first. Each style asks
   * for it natively; an invalid answer is sent back with the errors (`outputRetries`, default 2),
   * then the outcome is `output_invalid`. `result.output` is the parsed answer.
   */
  outputSchema?: OutputSchema
  /** How many times an answer that does not match `outputSchema` is sent back (default 2). */
  outputRetries?: number
  /** OpenTelemetry spans of each turn (off by default); see `TelemetryOptions`. */
  telemetry?: boolean | TelemetryOptions
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
  /**
   * Opt-in background shells: `bash` gains `run_in_background`. `true` (the client's own; see
   * `client.backgroundShells()`) or a host-owned `new BackgroundShells()`, which several clients
   * may share and the host closes with `closeAll()`.
   */
  background?: boolean | BackgroundShells
  /** Opt-in `notebook_edit`. */
  notebookEdit?: boolean
  /**
   * Opt-in `js_execution` with these limits (`{}` = the defaults): model-written JavaScript whose
   * `await tools.NAME(args)` calls pass the same gate as direct calls.
   */
  codeExecution?: CodeExecutionOptions
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
  /**
   * A hooks file in the shape Claude Code, codex and goose share: a settings object holding
   * `hooks`, the `hooks` object itself (`{PreToolUse: [{matcher: 'Bash', hooks: [{type:
   * 'command', command: './guard.sh', timeout: 30}]}]}`), its JSON text, or a file path. Its
   * command hooks run in the root, in the bash sandbox, at the turn's points (a `PreToolUse`
   * hook exiting 2 blocks the call); the file's keys are its own and are never renamed. See
   * docs/hooks.md. Checked now (`ConfigurationError` with `option: 'hooksFile...'`).
   */
  hooksFile?: HooksFileSource
  /**
   * How long each lifecycle method of `hooks` (`onPrompt` ... `onNotification`) may take before
   * its point's fallback applies, in ms (default 60 s).
   */
  hookTimeoutMs?: number
  /** Tool calls per turn; one more ends the turn with outcome `budget`. */
  maxToolCalls?: number
  /** Input + output tokens per turn; reaching it ends the turn with outcome `budget`. */
  maxTurnTokens?: number
  /**
   * Which calls of one reply run side by side: `'read_only'` (default: read-only and subagent
   * calls; a write waits for the calls before it and the calls after it wait for it), `'all'`
   * or `'none'`. Gates, events and results keep the model's order either way.
   */
  toolConcurrency?: 'read_only' | 'all' | 'none'
  /** At most this many calls of one reply run at once (default 8). */
  maxConcurrentTools?: number
  /** Start a call while the model still streams, once its arguments are complete (default true). */
  streamTools?: boolean
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
  webSearch?: WebSearch
  /** The same as `webSearch` (one of the two). */
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
  /** This run's typed answer instead of the client's `outputSchema` (see `ClientOptions`). */
  outputSchema?: OutputSchema
  /** This run's `outputRetries`. */
  outputRetries?: number
}
