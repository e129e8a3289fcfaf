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
 * The layer is split by concept in `lib/` (the same names as the Python layer's modules and the
 * native side's `src/` files where they exist): `client`, `run`, `transcript`, `events`,
 * `gate`, `tools`, `options`, `errors`, `step`, `source` (what MCP and remote share), `mcp`, `remote`,
 * `policy`, `compaction`, `websearch`, `output`, and the translation helpers `convert` and `host`. This
 * file only re-exports the public names.
 *
 * @packageDocumentation
 */

export type {
  ClientOptions,
  Effort,
  FallbackModel,
  HooksFileSource,
  ModelSettings,
  Reasoning,
  RetryPolicy,
  RunOptions,
  CodeExecutionOptions,
  SandboxOptions,
  ScriptEntry,
  SubagentOptions,
  TelemetryOptions,
  ToolChoice,
} from './lib/options'
export type { Hints, JsonObject, JsonValue, ModelInfo, Outcome, Source, Style, Tier, Usage } from './lib/types'
export { Client, createClient, listModels } from './lib/client'
export type { ChainRunOptions, RunOutput } from './lib/client'
export type { InferOutput, OutputSchema, StandardResult, StandardSchemaV1 } from './lib/output'
export { BackgroundShells } from './lib/shells'
export { Run } from './lib/run'
export { Stepper } from './lib/step'
export type {
  Action,
  ActionResult,
  AskAction,
  DoneAction,
  ModelFailure,
  ModelReply,
  ModelRequestAction,
  StepOptions,
  SummaryRequestAction,
  ToolCallAction,
} from './lib/step'
export type { ImageDataPart, ImagePathPart, Prompt, PromptPart, TextPart } from './lib/prompt'
export type { TurnResult } from './lib/run'
export { Transcript } from './lib/transcript'
export type { ContentPart, Message, TranscriptData, TranscriptToolCall } from './lib/transcript'
export type { Event } from './lib/events'
export { allow, deny, pending } from './lib/gate'
export type {
  Allow,
  Answer,
  BeforeToolResult,
  Deny,
  ErrorResult,
  GateDecision,
  Hooks,
  Pending,
  PendingRequest,
  PendingRequestInit,
  ToolCallEvent,
  ToolResult,
  WaitFor,
} from './lib/gate'
export { tool, ToolOutput } from './lib/tools'
export type { ToolContext, ToolDefinition, ToolImage, ToolOutputInit } from './lib/tools'
export { compactor } from './lib/compaction'
export type {
  CompactAction,
  CompactRequest,
  LifecycleHooks,
  Notification,
  PromptAction,
  StopAction,
  TurnEnd,
} from './lib/lifecycle'
export type { CompactNotice, CompactionOptions, Compactor } from './lib/compaction'
export { policies } from './lib/policy'
export type { PolicyDocument, PolicyRule, PolicySource } from './lib/policy'
export type { SearchRequest, SearchResult, WebSearch, WebSearchFunction } from './lib/websearch'
export { SourceTool } from './lib/source'
export { McpSource, elicitationOf, loadMcp } from './lib/mcp'
export type { Elicitation, McpAuth, McpConfig, ServerState } from './lib/mcp'
export { RemoteHook, RemoteSource, loadRemote } from './lib/remote'
export type { HookState, RemoteHookOptions, RemoteHookTool, RemoteProtocol } from './lib/remote'
export {
  BusyError,
  CheckpointError,
  ClosedError,
  CompactionError,
  ConfigurationError,
  ContenoxCause,
  ContenoxError,
  ContenoxIOError,
  HttpError,
  InternalError,
  ModelError,
  SerializationError,
  StepError,
  ToolDefinitionError,
  TranscriptError,
  TransportError,
} from './lib/errors'
