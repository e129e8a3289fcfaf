// HTTP services as a tool source (remote hooks), their secrets kept out of every print.

import { ConfigurationError } from './errors'
import { loadSource, ToolSourceBase } from './source'

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

/** The hooks of one `loadRemote`, their states and tools. */
export class RemoteSource extends ToolSourceBase<HookState> {
  /** Each hook and its state now, in the order given. */
  hooks(): { name: string; state: HookState }[] {
    return this.members()
  }

  /** Read every hook again (an unavailable one may come up, a ready one picks up a changed document). */
  async refresh(): Promise<{ name: string; state: HookState }[]> {
    return this.refreshMembers()
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
  if (!Array.isArray(hooks)) throw new ConfigurationError('remote hooks are an array of RemoteHook (or hook objects)')
  const text = JSON.stringify(hooks.map((h) => RemoteHook.wire(h)))
  return new RemoteSource(await loadSource('remote', text, options.onHook))
}
