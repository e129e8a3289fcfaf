// Translation of options, tool definitions and decisions into the JSON the native side reads (the
// casing rule is the native side's: src/convert.rs).

import { errorMessage } from './host'
import { BackgroundShells } from './shells'
import type { ClientOptions } from './options'
import type { ToolDefinition } from './tools'

export function chainText(chain: object | string): string {
  return typeof chain === 'string' ? chain : JSON.stringify(chain)
}

const HOST_ONLY = new Set(['hooks', 'waitFor', 'tools', 'websearch', 'webSearch', 'compactor'])

/** The options without the host callbacks, as JSON text (the native side renames and checks them). */
export function coreConfig(options: ClientOptions): string {
  const out: Record<string, unknown> = {}
  for (const [k, v] of Object.entries(options)) {
    if (HOST_ONLY.has(k) || v === undefined) continue
    // Host-made shells go to the engine as a handle; the config only says they are on.
    out[k] = k === 'background' && v instanceof BackgroundShells ? undefined : v
  }
  return JSON.stringify(out)
}

const RESULT_KEYS = new Set(['isError', 'content', 'metadata'])

/** An error result's content as a denial message (`null`: core's default text). */
function denialText(content: unknown): string | null {
  if (content === undefined || content === null) return null
  return typeof content === 'string' ? content : JSON.stringify(content)
}

/** The JavaScript spellings of a decision, in the one shape the native side reads. */
export function gateDecision(d: unknown, wrapped = false): unknown {
  if (d === undefined || d === null) return { decision: 'allow' }
  if (typeof d === 'object') {
    const o = d as Record<string, unknown>
    if (o.decision === 'allow') return { decision: 'allow' }
    if (o.decision === 'deny') return { decision: 'deny', message: o.message ?? null }
    if (o.decision === 'ask') return { decision: 'ask', request: o.request }
    if (o.isError === true && Object.keys(o).every((k) => RESULT_KEYS.has(k))) {
      return { decision: 'deny', message: denialText(o.content) }
    }
    if (!wrapped && Object.keys(o).length === 1 && 'result' in o) return gateDecision(o.result, true)
  }
  throw new TypeError(
    `beforeTool must return nothing, deny(message) or an error result ({ isError: true, content }), pending(request), or one of them as { result: ... }; got ${errorMessage(d)}`,
  )
}

export function toolSpec(t: ToolDefinition): string {
  return JSON.stringify({ name: t.name, description: t.description, inputSchema: t.inputSchema, hints: t.hints, tier: t.tier })
}
