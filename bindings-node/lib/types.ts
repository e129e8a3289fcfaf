// The small shared types: JSON values, styles, outcomes, sources, tiers, hints, usage.


// ---------------------------------------------------------------------------------------------
// Types

/** Any JSON value. */
export type JsonValue = string | number | boolean | null | JsonValue[] | { [key: string]: JsonValue }

/** A JSON object (a tool's input schema, for example). */
export type JsonObject = { [key: string]: JsonValue }

/** The wire style of the model server. `scripted` replays a fixed list of responses in-process. */
export type Style = 'openai' | 'openai-responses' | 'anthropic' | 'ollama' | 'scripted'

/** How a turn ended. */
export type Outcome = 'done' | 'cancelled' | 'max_turns' | 'error' | 'budget' | 'output_invalid' | 'suspended'
/** Why a model reply stopped short of a full answer; the turn ended there. */
export type StopReason = 'refusal' | 'content_filter' | 'max_tokens'

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
 * (absent on events when zero, always present on a turn's result); `reasoningTokens` is the part
 * of `outputTokens` the model spent reasoning, where the server says (absent on events when zero).
 */
export interface Usage {
  inputTokens: number
  outputTokens: number
  cacheReadInputTokens?: number
  cacheCreationInputTokens?: number
  reasoningTokens?: number
}

/** A model a server offers. */
export interface ModelInfo {
  id: string
  displayName?: string
}
