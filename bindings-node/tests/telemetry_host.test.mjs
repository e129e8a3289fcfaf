// A host with its own OpenTelemetry tracer provider (@opentelemetry/sdk-trace-base's, registered
// globally through @opentelemetry/api): with `telemetry` on, a turn's spans are re-created in it
// (no second exporter), the turn's span a child of the host's active span, with the same tree and
// attribute names as the engine's own OTLP export of the same turn; no planted secret on any
// span; with telemetry off, nothing; with no provider registered, the engine's exporter.
import assert from 'node:assert/strict'
import { after, test } from 'node:test'
import { Worker } from 'node:worker_threads'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

import { context, trace, SpanKind, SpanStatusCode } from '@opentelemetry/api'
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks'
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base'

import { createClient } from 'contenox'

import { startFakeServer } from './helpers.mjs'

const SECRET_PROMPT = 'PROMPT-SECRET-6631'
const SECRET_ARG = 'ARG-SECRET-6632'
const SECRET_KEY = 'sk-KEY-SECRET-6633'

function clients(telemetry) {
  const researcher = createClient({ style: 'scripted', model: 'small', builtins: [], script: [{ text: '42.' }] })
  const lead = createClient({
    style: 'scripted',
    model: 'big',
    apiKey: SECRET_KEY,
    builtins: ['bash'],
    policy: { rules: [{ tool: 'bash', action: 'deny' }], default_action: 'allow' },
    script: [
      { toolCalls: [{ id: 'c1', name: 'researcher', args: { prompt: '?' } }] },
      { toolCalls: [{ id: 'c2', name: 'bash', args: { command: `echo ${SECRET_ARG}` } }] },
      { text: 'Done.' },
    ],
    telemetry,
  })
  lead.register(researcher.asToolWith('researcher', 'Looks things up.'))
  return { lead, researcher }
}

// An OTLP/HTTP receiver in a worker thread (close() waits for the export on the main thread).
const RECEIVER = `
const { createServer } = require('node:http')
const { parentPort } = require('node:worker_threads')
const server = createServer((req, res) => {
  const chunks = []
  req.on('data', (c) => chunks.push(c))
  req.on('end', () => {
    parentPort.postMessage({ body: Buffer.concat(chunks).toString('utf8') })
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
      else got.push(JSON.parse(m.body))
    })
  })
  return { url: `http://127.0.0.1:${port}`, got, close: () => worker.terminate() }
}

const settle = async (got) => {
  for (let i = 0; i < 100 && got.length === 0; i++) await new Promise((r) => setTimeout(r, 20))
}

let exporter
function registerHost() {
  exporter = new InMemorySpanExporter()
  const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] })
  assert.ok(trace.setGlobalTracerProvider(provider))
  context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable())
  return provider
}

after(() => {
  trace.disable()
  context.disable()
})

const sorted = (pairs) => pairs.map((p) => JSON.stringify(p)).sort()

test("the spans go to the host's provider, under its active span, as the engine exports them", async () => {
  const recv = await receiver()
  try {
    // First with no provider registered: the engine's own exporter (what the collector gets).
    {
      const { lead, researcher } = clients({ endpoint: recv.url })
      assert.equal((await lead.run(`Go ${SECRET_PROMPT}.`)).outcome, 'done')
      lead.close()
      researcher.close()
      await settle(recv.got)
    }
    const otlp = recv.got.flatMap((b) => b.resourceSpans.flatMap((rs) => rs.scopeSpans.flatMap((ss) => ss.spans)))
    assert.equal(otlp.length, 8)
    const expected = new Map(otlp.map((s) => [s.name, s.attributes.map((a) => a.key).sort()]))
    recv.got.length = 0

    const provider = registerHost()
    const { lead, researcher } = clients({ endpoint: recv.url })
    const tracer = trace.getTracer('host-app')
    let hostContext
    const result = await tracer.startActiveSpan('host request', async (span) => {
      hostContext = span.spanContext()
      try {
        return await lead.run(`Go ${SECRET_PROMPT}.`)
      } finally {
        span.end()
      }
    })
    assert.equal(result.outcome, 'done')
    lead.close()
    researcher.close()
    await new Promise((r) => setTimeout(r, 100))
    assert.deepEqual(recv.got, [], 'a second exporter posted spans')
    await provider.forceFlush()

    const spans = exporter.getFinishedSpans().filter((s) => s.name !== 'host request')
    const byId = new Map(spans.map((s) => [s.spanContext().spanId, s.name]))
    const parentOf = (s) => s.parentSpanContext?.spanId
    const tree = sorted(spans.map((s) => [s.name, parentOf(s) ? (byId.get(parentOf(s)) ?? 'HOST') : null]))
    assert.deepEqual(tree, sorted([
      ['chat big', 'invoke_agent'],
      ['chat big', 'invoke_agent'],
      ['chat big', 'invoke_agent'],
      ['chat small', 'invoke_agent researcher'],
      ['execute_tool bash', 'invoke_agent'],
      ['execute_tool researcher', 'invoke_agent'],
      ['invoke_agent', 'HOST'],
      ['invoke_agent researcher', 'execute_tool researcher'],
    ]))
    const turn = spans.find((s) => s.name === 'invoke_agent')
    assert.equal(parentOf(turn), hostContext.spanId)
    assert.ok(spans.every((s) => s.spanContext().traceId === hostContext.traceId))
    // The same attribute names as the engine's own export, span by span.
    for (const s of spans) assert.deepEqual(Object.keys(s.attributes).sort(), expected.get(s.name), s.name)
    assert.equal(turn.instrumentationScope.name, 'contenox')
    const chats = spans.filter((s) => s.name.startsWith('chat '))
    assert.ok(chats.every((s) => s.kind === SpanKind.CLIENT))
    assert.ok(spans.filter((s) => !chats.includes(s)).every((s) => s.kind === SpanKind.INTERNAL))
    const nanos = ([sec, ns]) => BigInt(sec) * 1_000_000_000n + BigInt(ns)
    for (const s of spans) assert.ok(nanos(s.startTime) <= nanos(s.endTime), s.name)
    const bash = spans.find((s) => s.name === 'execute_tool bash')
    assert.equal(bash.status.code, SpanStatusCode.ERROR)
    assert.equal(bash.attributes['contenox.gate.decision'], 'deny')
    assert.equal(bash.attributes['error.type'], 'denied')
    assert.equal(typeof turn.attributes['gen_ai.usage.input_tokens'], 'number')
    // No planted secret anywhere on a span.
    const text = JSON.stringify(
      spans.map((s) => ({ name: s.name, attributes: s.attributes, events: s.events, status: s.status })),
    )
    for (const secret of [SECRET_PROMPT, SECRET_ARG, SECRET_KEY]) assert.ok(!text.includes(secret), secret)

    // Two turns at once, each under the span active where it was started.
    exporter.reset()
    const one = createClient({ style: 'scripted', builtins: [], script: [{ text: 'a' }], telemetry: true })
    const two = createClient({ style: 'scripted', builtins: [], script: [{ text: 'b' }], telemetry: true })
    const under = (name, client) =>
      tracer.startActiveSpan(name, async (span) => {
        await new Promise((r) => setTimeout(r, 5))
        await client.run('Go.')
        span.end()
        return span.spanContext().spanId
      })
    const ids = await Promise.all([under('one', one), under('two', two)])
    one.close()
    two.close()
    const turns = exporter.getFinishedSpans().filter((s) => s.name === 'invoke_agent')
    assert.deepEqual(turns.map(parentOf).sort(), [...ids].sort())

    // The traceparent a model request carried names the chat span the host's trace holds (the
    // server's own spans would join the host's trace under it).
    exporter.reset()
    const dir = mkdtempSync(join(tmpdir(), 'contenox-ids-'))
    const file = join(dir, 'scenario.json')
    writeFileSync(file, JSON.stringify({ name: 'ids', style: 'openai', model: [{ text: 'Hi.' }], prompt: 'go', expect: {} }))
    const server = await startFakeServer(file)
    try {
      const client = createClient({
        style: 'openai',
        baseUrl: `${server.root}/v1`,
        model: 'fake',
        apiKey: 'k',
        builtins: [],
        telemetry: true,
      })
      await tracer.startActiveSpan('host request', async (span) => {
        assert.equal((await client.run('go')).finalText, 'Hi.')
        span.end()
      })
      client.close()
      const sent = (await server.requests()).map((r) => r._traceparent)
      const chat = exporter.getFinishedSpans().find((s) => s.name === 'chat fake')
      assert.deepEqual(sent, [`00-${chat.spanContext().traceId}-${chat.spanContext().spanId}-01`])
      const agent = exporter.getFinishedSpans().find((s) => s.name === 'invoke_agent')
      assert.equal(chat.parentSpanContext?.spanId, agent.spanContext().spanId)
    } finally {
      await server.stop()
      rmSync(dir, { recursive: true, force: true })
    }

    // Telemetry off: the host's provider gets nothing.
    exporter.reset()
    for (const off of [undefined, false]) {
      const c = clients(off)
      assert.equal((await c.lead.run('Go.')).outcome, 'done')
      c.lead.close()
      c.researcher.close()
    }
    assert.deepEqual(exporter.getFinishedSpans(), [])
  } finally {
    recv.close()
  }
})
