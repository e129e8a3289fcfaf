// The gate: a beforeTool hook that lets read-only tools run, denies what it does not know, and
// asks a person (here: a scripted answer) before writing; events streamed as they happen; and an
// AbortSignal that cancels the turn (which then resolves with outcome `cancelled`).
import { mkdtempSync, readFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

import { createClient, deny, pending, type Answer, type PendingRequest, type ToolCallEvent } from 'contenox'

const root = mkdtempSync(join(tmpdir(), 'contenox-gate-'))

function beforeTool(e: ToolCallEvent) {
  if (e.hints.readOnly) return undefined // allow
  if (e.name === 'write') return pending({ kind: 'approval', prompt: `Write ${String(e.args.path)}?`, timeoutMs: 60_000 })
  return deny(`${e.name} is not allowed in this example`)
}

// A real host would show `request.prompt` to a person; `signal` aborts when the turn no longer
// waits (cancelled, ended, or the ask timed out).
async function waitFor(request: PendingRequest, { signal }: { signal: AbortSignal }): Promise<Answer> {
  console.log(`  ask: ${request.prompt} (${request.kind})`)
  if (signal.aborted) return { approve: false, message: 'nobody is waiting any more' }
  return { approve: true }
}

const client = createClient({
  style: 'scripted',
  root,
  builtins: ['read', 'write', 'edit'],
  hooks: { beforeTool },
  waitFor,
  script: [
    { toolCalls: [{ id: 'c1', name: 'write', args: { path: 'notes.txt', content: 'hello\n' } }] },
    { toolCalls: [{ id: 'c2', name: 'edit', args: { path: 'notes.txt', old_string: 'hello', new_string: 'bye' } }] },
    { toolCalls: [{ id: 'c3', name: 'read', args: { path: 'notes.txt' } }] },
    { text: 'Wrote and read notes.txt; the edit was refused.' },
    { stall: true },
  ],
})

try {
  const run = client.stream('Write hello to notes.txt, then change it, then read it back.')
  for await (const event of run) {
    if (event.type === 'gate') console.log(`  gate ${event.name}: ${event.decision}${event.message ? ` (${event.message})` : ''}`)
    if (event.type === 'tool_result') console.log(`  ${event.name} -> ${event.isError ? 'error: ' : ''}${event.content.split('\n')[0]}`)
  }
  const result = await run.result
  console.log(`${result.outcome}: ${result.finalText}`)
  console.log(`notes.txt: ${JSON.stringify(readFileSync(join(root, 'notes.txt'), 'utf8'))}`)

  // The next response of the script stalls: the AbortSignal ends the turn after 100 ms.
  const cancelled = await client.run('And now?', { signal: AbortSignal.timeout(100) })
  console.log(`second turn: ${cancelled.outcome}`)
} finally {
  client.close()
}
