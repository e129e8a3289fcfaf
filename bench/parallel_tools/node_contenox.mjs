// contenox (Node) client of bench/parallel_tools: a fresh client per turn (built outside the
// timed part), the read-only host tools `nap` (sleeps --ms) and `echo`; one JSON line out.
// CONTENOX_NODE: the path of bindings-node/index.mjs.
import { parseArgs } from 'node:util'
import { pathToFileURL } from 'node:url'

const { createClient, tool } = await import(pathToFileURL(process.env.CONTENOX_NODE).href)
const { values: a } = parseArgs({
  options: {
    'base-url': { type: 'string' },
    style: { type: 'string', default: 'openai' },
    turns: { type: 'string', default: '5' },
    ms: { type: 'string', default: '300' },
  },
})
const ms = Number(a.ms)
const tools = [
  tool({
    name: 'nap',
    description: 'Wait a moment.',
    inputSchema: { type: 'object' },
    hints: { readOnly: true },
    execute: () => new Promise((done) => setTimeout(() => done('rested'), ms)),
  }),
  tool({
    name: 'echo',
    description: 'Echo the arguments.',
    inputSchema: { type: 'object' },
    hints: { readOnly: true },
    execute: (args) => JSON.stringify(args),
  }),
]
const turnMs = []
let ok = true
for (let i = 1; i <= Number(a.turns); i++) {
  const client = createClient({ style: a.style, baseUrl: a['base-url'], model: 'fake', apiKey: 'sk-dummy', builtins: [], tools })
  const t = performance.now()
  const r = await client.run(`turn ${i}`)
  turnMs.push(performance.now() - t)
  ok = ok && r.finalText === 'done'
  client.close()
}
console.log(JSON.stringify({ sdk: 'contenox-node', turn_ms: turnMs, ok }))
process.exitCode = ok ? 0 : 1
