// The Node side of the scale curve (bench/scale/run.sh), through the contenox binding as a user
// would write it. Same modes, workload, checks and JSON line as tests/src/bin/scale-client.rs:
//
//   node client.mjs --base-url URL --mode messages --transcript FILE --turns K [--warmup W]
//   node client.mjs --base-url URL --mode clients --clients C --turns K [--warmup W]   (Promise.all)
//
// CONTENOX_NODE picks the package directory (default: this checkout's bindings-node, built).
import { readFileSync } from 'node:fs'
import { dirname, join, resolve } from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'
import { parseArgs } from 'node:util'
import { performance } from 'node:perf_hooks'

const here = dirname(fileURLToPath(import.meta.url))
const pkg = process.env.CONTENOX_NODE ?? resolve(here, '../../bindings-node')
const { createClient, tool, Transcript } = await import(pathToFileURL(join(pkg, 'index.mjs')).href)

const FINAL_TEXT = 'done'
const { values: a } = parseArgs({
  options: {
    'base-url': { type: 'string' },
    mode: { type: 'string' },
    transcript: { type: 'string' },
    clients: { type: 'string', default: '1' },
    turns: { type: 'string', default: '10' },
    warmup: { type: 'string', default: '2' },
  },
})
const turns = Number(a.turns)
const warmup = Number(a.warmup)
const nClients = Number(a.clients)

/** [current, peak] resident set in MB from /proc/self/status (VmRSS, VmHWM). */
function rssMb() {
  const status = readFileSync('/proc/self/status', 'utf8')
  const field = (name) => Number(status.match(new RegExp(`^${name}:\\s+(\\d+)`, 'm'))[1]) / 1024
  return [field('VmRSS'), field('VmHWM')]
}
const cpuS = () => {
  const u = process.cpuUsage()
  return (u.user + u.system) / 1e6
}
const median = (xs) => {
  const s = [...xs].sort((x, y) => x - y)
  const m = s.length >> 1
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2
}

function makeClient() {
  return createClient({
    style: 'openai', baseUrl: a['base-url'], model: 'gpt-4o-mini', apiKey: 'sk-dummy',
    system: 'You are a benchmark agent. Use the echo tool.', builtins: [],
    tools: [tool({
      name: 'echo', description: 'Echo the given text back.',
      inputSchema: { type: 'object', properties: { text: { type: 'string' } }, required: ['text'] },
      execute: async ({ text }) => text,
    })],
  })
}

async function turn(client, i) {
  const t = performance.now()
  const r = await client.run(`turn ${i}`)
  const took = performance.now() - t
  if (r.finalText.trim() !== FINAL_TEXT) throw new Error(`turn ${i}: ${r.outcome} ${JSON.stringify(r.finalText)}`)
  return took
}

async function messages() {
  const restored = Transcript.fromJSON(readFileSync(a.transcript, 'utf8'))
  const n = restored.length
  const client = makeClient()
  const lat = []
  const restores = []
  const cpu0 = cpuS()
  for (let i = 0; i < warmup + turns; i++) {
    const t = performance.now()
    client.setTranscript(restored)
    const restore = performance.now() - t
    const took = await turn(client, i + 1)
    const grown = client.transcript.length
    if (grown !== n + 4) throw new Error(`turn ${i + 1}: ${n} messages became ${grown}, not ${n + 4}`)
    if (i >= warmup) {
      lat.push(took)
      restores.push(restore)
    }
  }
  const cpu = cpuS() - cpu0
  const [rss, peak] = rssMb()
  client.close()
  return {
    messages: n, turns, warmup, per_turn_ms: median(lat), restore_ms: median(restores),
    cpu_ms_per_turn: (cpu * 1000) / (warmup + turns), rss_mb: rss, peak_rss_mb: peak,
  }
}

async function clients() {
  const [baseRss] = rssMb()
  const everyone = Array.from({ length: nClients }, makeClient)
  const [createdRss] = rssMb()
  const one = async (client, first, count) => {
    const lat = []
    for (let i = first; i < first + count; i++) lat.push(await turn(client, i))
    return lat
  }
  // Warm-up turns, all clients at once and untimed: connections open, lazy setup done.
  for (let w = 0; w < warmup; w++) await Promise.all(everyone.map((c) => one(c, w + 1, 1)))
  const cpu0 = cpuS()
  const t0 = performance.now()
  const perClient = await Promise.all(everyone.map((c) => one(c, warmup + 1, turns)))
  const wall = (performance.now() - t0) / 1000
  const cpu = cpuS() - cpu0
  const expected = 4 * (warmup + turns)
  for (const c of everyone) {
    const n = c.transcript.length
    if (n !== expected) throw new Error(`a client holds ${n} messages, not ${expected}`)
  }
  const [rss, peak] = rssMb()
  for (const c of everyone) c.close()
  const total = nClients * turns
  return {
    clients: nClients, turns, warmup, total_turns: total, wall_s: wall, per_turn_ms: (wall * 1000) / total,
    latency_median_ms: median(perClient.flat()), cpu_ms_per_turn: (cpu * 1000) / total,
    rss_mb: rss, peak_rss_mb: peak, base_rss_mb: baseRss, rss_per_client_kb: ((peak - baseRss) * 1024) / nClients,
    created_rss_per_client_kb: ((createdRss - baseRss) * 1024) / nClients,
  }
}

if (!a['base-url'] || !['messages', 'clients'].includes(a.mode)) {
  console.error('usage: client.mjs --base-url URL --mode messages|clients ...')
  process.exit(2)
}
if (a.mode === 'messages' && !a.transcript) {
  console.error('--transcript is required in messages mode')
  process.exit(2)
}
try {
  const out = a.mode === 'messages' ? await messages() : await clients()
  console.log(JSON.stringify({ ...out, lang: 'node', mode: a.mode }))
} catch (e) {
  console.error(`client.mjs: ${e.message}`)
  process.exitCode = 1
}
