// loadRemote through the JavaScript API: a loopback service with an OpenAPI document, a hook
// with a secret header and an injected value, a scripted model calling its tool.
import assert from 'node:assert/strict'
import { once } from 'node:events'
import { createServer } from 'node:http'
import { inspect } from 'node:util'
import { test } from 'node:test'

import { ConfigurationError, createClient, loadRemote, RemoteHook } from 'contenox'

const SECRET = 'Bearer tok-9f8e7d6c5b4a'
const TENANT = 'tenant-3a2b1c0d'

const DOC = {
  openapi: '3.0.0',
  info: { title: 'greeter', version: '1' },
  paths: {
    '/greet/{who}': {
      get: {
        operationId: 'greet',
        parameters: [
          { name: 'who', in: 'path', required: true, schema: { type: 'string' } },
          { name: 'tenant', in: 'query', schema: { type: 'string' } },
        ],
      },
    },
  },
}

/** A loopback service: serves DOC and answers /greet/<who>, echoing the Authorization header. */
async function startService() {
  const calls = []
  const server = createServer((req, res) => {
    const url = new URL(req.url, 'http://127.0.0.1')
    let body
    if (url.pathname === '/openapi.json') body = JSON.stringify(DOC)
    else if (url.pathname.startsWith('/greet/')) {
      calls.push({ path: url.pathname, tenant: url.searchParams.get('tenant'), authorization: req.headers.authorization })
      body = JSON.stringify({ hello: url.pathname.slice('/greet/'.length), echo: req.headers.authorization })
    } else {
      res.writeHead(404).end()
      return
    }
    res.writeHead(200, { 'content-type': 'application/json' }).end(body)
  })
  server.listen(0, '127.0.0.1')
  await once(server, 'listening')
  return {
    url: `http://127.0.0.1:${server.address().port}`,
    calls,
    stop: () => new Promise((done) => server.close(done)),
  }
}

function neverShowsSecrets(...texts) {
  for (const text of texts) {
    assert.ok(!text.includes('tok-9f8e7d6c5b4a'), text)
    assert.ok(!text.includes(TENANT), text)
  }
}

test('a hook is loaded and called; its header and injected values never print', async () => {
  const service = await startService()
  try {
    const hook = new RemoteHook({ name: 'greeter', url: service.url, headers: { Authorization: SECRET }, inject: { tenant: TENANT } })
    neverShowsSecrets(String(hook), hook.toString(), JSON.stringify(hook), inspect(hook), inspect([hook], { depth: 5 }))
    assert.ok(String(hook).includes('Authorization') && String(hook).includes('<redacted>'))

    const states = []
    const source = await loadRemote([hook], { onHook: (name, state) => states.push({ name, state }) })
    assert.deepEqual(states, [{ name: 'greeter', state: { state: 'ready', tools: 1 } }])
    assert.deepEqual(source.hooks(), states)
    assert.deepEqual(source.tools().map((t) => t.name), ['greet'])
    neverShowsSecrets(String(source), inspect(source))

    const client = createClient({
      style: 'scripted',
      builtins: [],
      script: [{ toolCalls: [{ id: 'c1', name: 'greet', args: { who: 'bob' } }] }, { text: 'done' }],
    })
    source.registerInto(client)
    assert.deepEqual(client.tools, ['greet'])
    const run = client.stream('greet bob')
    const events = []
    for await (const e of run) events.push(e)
    const result = await run.result
    assert.equal(result.outcome, 'done')
    const results = events.filter((e) => e.type === 'tool_result')
    assert.equal(results.length, 1)
    assert.equal(results[0].isError, false)
    assert.match(results[0].content, /"hello":\s*"bob"/)
    // The service got the header and the injected value; what it echoed was scrubbed.
    assert.deepEqual(service.calls, [{ path: '/greet/bob', tenant: TENANT, authorization: SECRET }])
    neverShowsSecrets(JSON.stringify(events), JSON.stringify(result.transcript))

    await source.close()
    assert.equal(source.closed, true)
    assert.deepEqual(client.tools, [])
    client.close()
  } finally {
    await service.stop()
  }
})

test('plain hook objects take camelCase keys; an unreachable hook is unavailable', async () => {
  const service = await startService()
  const url = service.url
  await service.stop()
  const source = await loadRemote([{ name: 'down', url, timeoutMs: 2000, headers: { Authorization: SECRET } }])
  const [{ name, state }] = source.hooks()
  assert.equal(name, 'down')
  assert.equal(state.state, 'unavailable')
  neverShowsSecrets(state.error, String(source))
  assert.deepEqual(source.tools(), [])
  await source.close()
})

test('invalid hooks are ConfigurationErrors that do not print header values', async () => {
  await assert.rejects(loadRemote([{ name: 'x', url: 'ftp://nowhere' }]), ConfigurationError)
  await assert.rejects(loadRemote([{ name: 'x', url: 'http://127.0.0.1:1', header: {} }]), ConfigurationError)
  await assert.rejects(
    loadRemote([
      { name: 'x', url: 'http://127.0.0.1:1' },
      { name: 'x', url: 'http://127.0.0.1:2' },
    ]),
    ConfigurationError,
  )
  await assert.rejects(loadRemote({ name: 'x' }), ConfigurationError)
  try {
    await loadRemote([{ name: 'x', url: 'http://127.0.0.1:1', headers: { Authorization: `${SECRET}\n` } }])
    assert.fail('a header value with a line break was taken')
  } catch (e) {
    assert.ok(e instanceof ConfigurationError)
    neverShowsSecrets(e.message, String(e), inspect(e))
  }
})
