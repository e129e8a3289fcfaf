// The `telemetry` option from Node: spans posted over OTLP/HTTP JSON to a receiver the test
// starts (the real-collector check is tests/telemetry/check.py), the camelCase settings reaching
// the engine, a collector that is down failing no turn, and a bad option refused.
import assert from 'node:assert/strict'
import { createServer as createNetServer } from 'node:net'
import { test } from 'node:test'
import { Worker } from 'node:worker_threads'

import { ConfigurationError, createClient } from 'contenox'

function clients(telemetry) {
  const researcher = createClient({ style: 'scripted', model: 'small', builtins: [], script: [{ text: '42.' }] })
  const lead = createClient({
    style: 'scripted',
    model: 'big',
    builtins: ['bash'],
    policy: { rules: [{ tool: 'bash', action: 'deny' }], default_action: 'allow' },
    script: [
      { toolCalls: [{ id: 'c1', name: 'researcher', args: { prompt: '?' } }] },
      { toolCalls: [{ id: 'c2', name: 'bash', args: { command: 'ls' } }] },
      { text: 'Done.' },
    ],
    telemetry,
  })
  lead.register(researcher.asToolWith('researcher', 'Looks things up.'))
  return { lead, researcher }
}

// The receiver runs in a worker thread: `close()` waits (briefly) for the export, which the
// main thread's event loop, blocked in that call, could not answer.
const RECEIVER = `
const { createServer } = require('node:http')
const { parentPort } = require('node:worker_threads')
const server = createServer((req, res) => {
  const chunks = []
  req.on('data', (c) => chunks.push(c))
  req.on('end', () => {
    parentPort.postMessage({ path: req.url, headers: req.headers, body: Buffer.concat(chunks).toString('utf8') })
    res.writeHead(200, { 'content-type': 'application/json' }).end('{}')
  })
})
server.listen(0, '127.0.0.1', () => parentPort.postMessage({ port: server.address().port }))
`

async function receiver() {
  const got = []
  const worker = new Worker(RECEIVER, { eval: true })
  const port = await new Promise((resolve) => {
    worker.on('message', (m) => {
      if (m.port) resolve(m.port)
      else got.push({ path: m.path, headers: m.headers, body: JSON.parse(m.body) })
    })
  })
  return { url: `http://127.0.0.1:${port}`, got, server: { close: () => worker.terminate() } }
}

test('spans reach the endpoint, in the same tree as every binding, and close flushes them', async () => {
  const { url, got, server } = await receiver()
  try {
    const { lead, researcher } = clients({ endpoint: url, serviceName: 'node-test', headers: { 'x-key': 'k' } })
    const result = await lead.run('Go.')
    assert.equal(result.outcome, 'done')
    lead.close()
    researcher.close()
    // close() waited for the export; the receiver's handler may still be finishing its reply.
    for (let i = 0; i < 100 && got.length === 0; i++) await new Promise((r) => setTimeout(r, 20))
    assert.ok(got.length > 0, 'nothing was exported')
    assert.ok(got.every((e) => e.path === '/v1/traces' && e.headers['x-key'] === 'k'))
    assert.deepEqual(got[0].body.resourceSpans[0].resource.attributes[0], {
      key: 'service.name',
      value: { stringValue: 'node-test' },
    })
    const spans = got.flatMap((e) => e.body.resourceSpans.flatMap((rs) => rs.scopeSpans.flatMap((ss) => ss.spans)))
    const byId = new Map(spans.map((s) => [s.spanId, s]))
    const sorted = (pairs) => pairs.map((p) => JSON.stringify(p)).sort()
    const tree = sorted(spans.map((s) => [s.name, s.parentSpanId ? byId.get(s.parentSpanId).name : null]))
    assert.deepEqual(tree, sorted([
      ['chat big', 'invoke_agent'],
      ['chat big', 'invoke_agent'],
      ['chat big', 'invoke_agent'],
      ['chat small', 'invoke_agent researcher'],
      ['execute_tool bash', 'invoke_agent'],
      ['execute_tool researcher', 'invoke_agent'],
      ['invoke_agent', null],
      ['invoke_agent researcher', 'execute_tool researcher'],
    ]))
    const bash = spans.find((s) => s.name === 'execute_tool bash')
    assert.deepEqual(bash.attributes.find((a) => a.key === 'contenox.gate.decision').value, { stringValue: 'deny' })
    assert.equal(bash.status.code, 2)
  } finally {
    server.close()
  }
})

test('a collector that is down fails no turn', async () => {
  const probe = createNetServer()
  await new Promise((resolve) => probe.listen(0, '127.0.0.1', resolve))
  const port = probe.address().port
  await new Promise((resolve) => probe.close(resolve))
  const { lead, researcher } = clients({ endpoint: `http://127.0.0.1:${port}` })
  const result = await lead.run('Go.')
  assert.equal(result.outcome, 'done')
  assert.equal(result.finalText, 'Done.')
  lead.close()
  researcher.close()
})

test('a bad telemetry option is a ConfigurationError', () => {
  assert.throws(
    () => createClient({ style: 'scripted', script: [], telemetry: { endpoint: 'ftp://127.0.0.1' } }),
    (e) => e instanceof ConfigurationError && e.option === 'telemetry',
  )
  assert.throws(
    () => createClient({ style: 'scripted', script: [], telemetry: { endpont: 'http://127.0.0.1' } }),
    (e) => e instanceof ConfigurationError,
  )
})
