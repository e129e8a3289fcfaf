// Compaction: its options, the notice, the host's compactor.

import type { Transcript, TranscriptData } from './transcript'
import type { Usage } from './types'

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

/** The host's part in compaction, for the `compactor` option: `compactor({ onCompact })`. */
export function compactor(c: Compactor): Compactor {
  return c
}
