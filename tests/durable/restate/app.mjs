// A Restate endpoint serving contenox turns (process A or B of the Restate crash tests):
//   node app.mjs PORT
// serves the workflows `contenox-turn` and `contenox-stepped-turn` (bindings-node's
// contenox/restate) on 127.0.0.1:PORT until killed. The agent is tests/durable/agent.py's, in JavaScript: the same environment variables,
// the same gate.jsonl / tool-runs.jsonl logs.
import { appendFileSync, mkdirSync, writeFileSync } from 'node:fs'
import http from 'node:http'
import http2 from 'node:http2'
import { createRequire } from 'node:module'
import { basename, join } from 'node:path'

// The binding as built in the checkout, and its copy of the Restate SDK (its optional peer):
// the app and the adapter share one SDK, as an installed app would.
const node = join(import.meta.dirname, '..', '..', '..', 'bindings-node')
const require = createRequire(join(node, 'package.json'))
const restate = require('@restatedev/restate-sdk')
const { createClient, deny, pending, tool } = require(join(node, 'index.js'))
const { steppedTurnWorkflow, turnWorkflow } = require(join(node, 'restate.js'))

const env = process.env
const workdir = env.DURABLE_WORKDIR
const files = join(workdir, 'files')
mkdirSync(files, { recursive: true })

function log(name, record) {
  appendFileSync(join(workdir, name), JSON.stringify({ role: env.DURABLE_ROLE ?? '?', pid: process.pid, ...record }) + '\n')
}

function beforeTool(event) {
  log('gate.jsonl', { call_id: event.callId, name: event.name })
  if (event.name !== 'write') return undefined
  const gate = env.DURABLE_GATE ?? 'ask'
  if (gate === 'allow') return undefined
  if (gate === 'deny') return deny('The policy now denies write.')
  const timeout = env.DURABLE_ASK_TIMEOUT_MS
  return pending({ kind: 'approval', prompt: 'Write the file?', ...(timeout ? { timeoutMs: Number(timeout) } : {}) })
}

const write = tool({
  name: 'write',
  description: 'Write content to a file (relative to the work directory).',
  inputSchema: {
    type: 'object',
    properties: { path: { type: 'string' }, content: { type: 'string' } },
    required: ['path', 'content'],
  },
  execute: async ({ path, content }, { idempotencyKey }) => {
    log('tool-runs.jsonl', { path, key: idempotencyKey })
    // The test kills this process while the tool runs.
    if (env.DURABLE_TOOL_HANGS === env.DURABLE_ROLE) await new Promise(() => {})
    writeFileSync(join(files, basename(path)), content)
    return `wrote ${content.length} bytes to ${path}`
  },
})

// DURABLE_MODEL_HANGS=ROLE: this process's model requests go through a proxy on 127.0.0.1 that
// passes the first DURABLE_MODEL_PASSES (default 1) on to the fake model server and holds every
// later one unanswered (logged in model-hangs.jsonl), so the test can kill the process between
// two model requests.
let baseUrl = env.DURABLE_BASE_URL
if (env.DURABLE_MODEL_HANGS === env.DURABLE_ROLE) {
  const upstream = new URL(env.DURABLE_BASE_URL)
  let seen = 0
  const proxy = http.createServer((req, res) => {
    seen += 1
    if (seen > Number(env.DURABLE_MODEL_PASSES ?? 1)) {
      log('model-hangs.jsonl', { request: seen })
      return
    }
    const path = upstream.pathname.replace(/\/$/, '') + req.url.slice('/v1'.length)
    const out = http.request({ host: upstream.hostname, port: upstream.port, path, method: req.method, headers: req.headers }, (up) => {
      res.writeHead(up.statusCode ?? 502, up.headers)
      up.pipe(res)
    })
    out.on('error', () => res.destroy())
    req.pipe(out)
  })
  await new Promise((done) => proxy.listen(0, '127.0.0.1', done))
  baseUrl = `http://127.0.0.1:${proxy.address().port}/v1`
}

function makeClient(waitFor) {
  return createClient({
    style: 'openai',
    baseUrl,
    model: 'fake',
    apiKey: env.DURABLE_API_KEY ?? 'test',
    builtins: [],
    root: files,
    tools: [write],
    hooks: { beforeTool },
    waitFor,
    ...(env.DURABLE_MAX_TURNS ? { maxTurns: Number(env.DURABLE_MAX_TURNS) } : {}),
    // DURABLE_COMPACTION_TOKENS: compact past that many input tokens, keeping the last message.
    ...(env.DURABLE_COMPACTION_TOKENS ? { compaction: { thresholdTokens: Number(env.DURABLE_COMPACTION_TOKENS), keepRecent: 1 } } : {}),
  })
}

const endpoint = restate.endpoint().bind(turnWorkflow(makeClient)).bind(steppedTurnWorkflow(makeClient))
const server = http2.createServer(endpoint.http2Handler())
server.listen(Number(process.argv[2]), '127.0.0.1', () => console.log('listening'))
