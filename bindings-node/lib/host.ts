// Host callbacks: running a host function for the engine, with the AbortSignal of its call.

import { ToolOutput } from './tools'

export function errorMessage(e: unknown): string {
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
export async function envelope(f: () => unknown): Promise<string> {
  try {
    const value = await f()
    return JSON.stringify({ value: value === undefined ? null : value })
  } catch (e) {
    return JSON.stringify({ error: errorMessage(e) })
  }
}

/**
 * `envelope` for a tool's `execute`: a returned {@link ToolOutput} is answered as
 * `{"output": <the engine's ToolOutput>}`, any other value as the result's content.
 */
export async function toolEnvelope(f: () => unknown): Promise<string> {
  try {
    const value = await f()
    if (value instanceof ToolOutput) return JSON.stringify({ output: value.toEngine() })
    return JSON.stringify({ value: value === undefined ? null : value })
  } catch (e) {
    return JSON.stringify({ error: errorMessage(e) })
  }
}

/** Run `f` with the AbortSignal of the call `key`, answering the engine with JSON text. */
export function withSignal(
  aborts: Map<number, AbortController>,
  key: number,
  f: (signal: AbortSignal) => unknown,
  answer: (f: () => unknown) => Promise<string> = envelope,
): Promise<string> {
  const controller = new AbortController()
  aborts.set(key, controller)
  return answer(() => f(controller.signal)).finally(() => aborts.delete(key))
}
