// Host callbacks: running a host function for the engine, with the AbortSignal of its call.

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

/** Run `f` with the AbortSignal of the call `key`, answering the engine with JSON text. */
export function withSignal(aborts: Map<number, AbortController>, key: number, f: (signal: AbortSignal) => unknown): Promise<string> {
  const controller = new AbortController()
  aborts.set(key, controller)
  return envelope(() => f(controller.signal)).finally(() => aborts.delete(key))
}
