// The host-hooks design, spelled as it says: a gate from hints that denies with an error result
// and asks with pending, a waitFor that ends with the turn, a webSearch provider, and background
// shells the host owns (`new BackgroundShells()`, closed with `closeAll()` on shutdown).
import { mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

import { BackgroundShells, createClient, pending, type ToolCallEvent } from 'contenox'

const shells = new BackgroundShells()

const client = createClient({
  style: 'scripted',
  root: mkdtempSync(join(tmpdir(), 'contenox-host-hooks-')),
  builtins: ['write', 'bash'],
  background: shells,
  webSearch: async (request) => [{ title: `About ${request.query}`, url: 'https://example.com/', snippet: 'A result.' }],
  hooks: {
    beforeTool: (e: ToolCallEvent) => {
      if (e.hints?.readOnly) return // let reads run
      if (e.name === 'write') return { isError: true, content: 'no writes in this session' } // deny
      return { result: pending({ kind: 'input', prompt: `Run ${e.name}?` }) } // ask
    },
  },
  waitFor: async (request, { signal }) => {
    console.log(`asked: ${request.prompt}`)
    return { approve: !signal.aborted }
  },
  script: [
    { toolCalls: [{ id: 'c1', name: 'websearch', args: { query: 'contenox' } }] },
    { toolCalls: [{ id: 'c2', name: 'write', args: { path: 'a.txt', content: 'x' } }] },
    { toolCalls: [{ id: 'c3', name: 'bash', args: { command: 'echo building', run_in_background: true } }] },
    { text: 'Searched; the write was refused; the build runs in the background.' },
  ],
})

try {
  const result = await client.run('Search, write a.txt, then start the build.')
  for (const m of result.transcript.messages) {
    if (m.role !== 'tool') continue
    const text = m.content.flatMap((p) => (p.type === 'text' ? [p.text] : [])).join('')
    console.log(`${m.name}: ${text.split('\n')[0]}`)
  }
  console.log(`shells: ${JSON.stringify(shells.ids())}`)
  console.log(`${result.outcome}: ${result.finalText}`)
} finally {
  client.close()
  shells.closeAll() // on shutdown
}
