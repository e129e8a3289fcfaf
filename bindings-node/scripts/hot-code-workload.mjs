// The workload scripts/hot-code.mjs profiles: what a user's process does with the module. It
// serves a minimal OpenAI-compatible model on 127.0.0.1 (streamed chat completions: one `echo`
// tool call per user turn, then "done <n>"), loads the package, creates a client with one tool,
// runs fresh and continued turns and closes. Run it under callgrind (hot-code.mjs says how);
// it exits non-zero when a turn does not end as scripted.
//
//   node scripts/hot-code-workload.mjs [TURNS]      (default 12; the package from this directory)
//   node scripts/hot-code-workload.mjs [TURNS] --package DIR --resident
//
// --package DIR: load the package installed there instead (scripts/package/node.sh: the packed
// one). --resident: print the native module's resident code after the turns, in MB
// (`/proc/self/smaps` of its executable mappings): what hot-code.ld exists to keep small, and
// what grows back toward 4.5 MB when its profile went stale.
import { readFileSync } from 'node:fs'
import { createServer } from 'node:http'
import { createRequire } from 'node:module'
import { join, resolve } from 'node:path'
import { pathToFileURL } from 'node:url'
import { parseArgs } from 'node:util'

const { values: opts, positionals } = parseArgs({
  allowPositionals: true,
  options: { package: { type: 'string' }, resident: { type: 'boolean', default: false } },
})
const turns = Number.parseInt(positionals[0] ?? '12', 10)
const entry = opts.package ? pathToFileURL(join(resolve(opts.package), 'package.json')) : import.meta.url
const contenox = opts.package ? 'contenox' : '../index.js'

/** The resident kB of the executable mappings of the loaded `.node` file. */
function residentCode() {
  let kb = 0
  let code = false
  for (const line of readFileSync('/proc/self/smaps', 'utf8').split('\n')) {
    const map = /^[0-9a-f]+-[0-9a-f]+ (\S+) \S+ \S+ \S+\s*(.*)$/.exec(line)
    if (map) code = map[1].includes('x') && map[2].endsWith('.node')
    else if (code) kb += Number(/^Rss:\s+(\d+) kB/.exec(line)?.[1] ?? 0)
  }
  return kb
}

function chunk(delta, finish = null) {
  return `data: ${JSON.stringify({ id: 'c', object: 'chat.completion.chunk', model: 'm', choices: [{ index: 0, delta, finish_reason: finish }] })}\n\n`
}

/** The scripted reply: a tool call to a new user turn, "done <n>" to a tool result. */
function reply(body) {
  const messages = body.messages ?? []
  const last = messages[messages.length - 1] ?? {}
  const users = messages.filter((m) => m.role === 'user')
  const n = /(\d+)/.exec(String(users[users.length - 1]?.content ?? ''))?.[1] ?? '0'
  if (last.role === 'tool') {
    return [chunk({ role: 'assistant', content: `done ${n}` }), chunk({}, 'stop')]
  }
  const call = { index: 0, id: `call_${n}`, type: 'function', function: { name: 'echo', arguments: JSON.stringify({ text: n }) } }
  return [chunk({ role: 'assistant', tool_calls: [call] }), chunk({}, 'tool_calls')]
}

const server = createServer((req, res) => {
  let raw = ''
  req.setEncoding('utf8')
  req.on('data', (d) => {
    raw += d
  })
  req.on('end', () => {
    const chunks = reply(JSON.parse(raw))
    res.writeHead(200, { 'content-type': 'text/event-stream' })
    res.end(`${chunks.join('')}data: [DONE]\n\n`)
  })
})
await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve))
const { port } = server.address()

try {
  const { createClient, tool } = createRequire(entry)(contenox)
  const client = createClient({
    style: 'openai',
    baseUrl: `http://127.0.0.1:${port}/v1`,
    model: 'm',
    apiKey: 'sk-none',
    system: 'Use the echo tool.',
    builtins: [],
    tools: [
      tool({
        name: 'echo',
        description: 'Echo the given text back.',
        inputSchema: { type: 'object', properties: { text: { type: 'string' } }, required: ['text'] },
        execute: async ({ text }) => text,
      }),
    ],
  })
  const empty = client.transcript
  for (let i = 1; i <= turns; i++) {
    // The first half start from an empty conversation, the second half continue one: the
    // benchmark's two modes (fresh, session).
    if (i <= turns / 2) client.setTranscript(empty)
    const r = await client.run(`turn ${i}`)
    if (r.finalText.trim() !== `done ${i}`) throw new Error(`turn ${i} ended with ${JSON.stringify(r.finalText)}`)
  }
  if (opts.resident) console.log(`resident code of the module: ${(residentCode() / 1024).toFixed(2)} MB`)
  client.close()
} finally {
  server.close()
}
