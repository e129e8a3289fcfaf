// Approval policy documents (hitl-policy-v1) and the engine's presets.

import * as native from '../native'
import type { Hints } from './types'

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
