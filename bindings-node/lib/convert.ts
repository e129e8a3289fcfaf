// Translation of options, tool definitions and decisions into the JSON the native side reads (the
// casing rule is the native side's: src/convert.rs).

import { errorMessage } from './host'
import type { ClientOptions } from './options'
import type { ToolDefinition } from './tools'

export function chainText(chain: object | string): string {
  return typeof chain === 'string' ? chain : JSON.stringify(chain)
}

const HOST_ONLY = new Set(['hooks', 'waitFor', 'tools', 'websearch', 'compactor'])

/** The options without the host callbacks, as JSON text (the native side renames and checks them). */
export function coreConfig(options: ClientOptions): string {
  const out: Record<string, unknown> = {}
  for (const [k, v] of Object.entries(options)) {
    if (!HOST_ONLY.has(k) && v !== undefined) out[k] = v
  }
  return JSON.stringify(out)
}

/** The JavaScript spellings of a decision, in the one shape the native side reads. */
export function gateDecision(d: unknown, wrapped = false): unknown {
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

export function toolSpec(t: ToolDefinition): string {
  return JSON.stringify({ name: t.name, description: t.description, inputSchema: t.inputSchema, hints: t.hints, tier: t.tier })
}
