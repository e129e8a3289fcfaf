// `outputSchema` through the JavaScript API and the real fake model server: a Zod v4 schema (a
// Standard Schema) gives the JSON Schema the engine asks for and parses the validated answer; a
// plain JSON Schema gives JSON; the turn calls a tool first and corrects an invalid answer.
import assert from 'node:assert/strict'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, before, describe, test } from 'node:test'

import { ConfigurationError, createClient, tool } from 'contenox'
import { z } from 'zod'

import { startFakeServer } from './helpers.mjs'

const Weather = z.object({
  city: z.string(),
  tempC: z.number().describe('degrees Celsius'),
  // A transform: the model writes a string, the host gets its parsed form.
  observed: z.string().transform((s) => new Date(s)),
})

describe('outputSchema', () => {
  let dir
  const servers = []
  before(() => {
    dir = mkdtempSync(join(tmpdir(), 'contenox-node-output-'))
  })
  after(async () => {
    for (const s of servers) await s.stop()
    rmSync(dir, { recursive: true, force: true })
  })
  const serve = async (style, model) => {
    const file = join(dir, `s${servers.length}.json`)
    writeFileSync(file, JSON.stringify({ name: 'output', style, model, prompt: 'p', expect: {} }))
    const server = await startFakeServer(file)
    servers.push(server)
    return server
  }
  const baseUrl = (style, server) => (style === 'openai' ? `${server.root}/v1` : server.root)

  for (const style of ['openai', 'anthropic', 'ollama']) {
    test(`a Zod object after a tool call and an invalid answer (${style})`, async () => {
      const server = await serve(style, [
        { tool_calls: [{ name: 'weather', arguments: { city: 'Oslo' } }] },
        { text: '{"city": "Oslo", "tempC": "cold", "observed": "2026-12-07T09:00:00Z"}' },
        { text: '{"city": "Oslo", "tempC": 3.5, "observed": "2026-12-07T09:00:00Z"}' },
      ])
      const client = createClient({
        style,
        baseUrl: baseUrl(style, server),
        model: 'fake',
        apiKey: 'test',
        builtins: [],
        outputSchema: Weather,
        tools: [
          tool({
            name: 'weather',
            description: 'Weather of a city.',
            inputSchema: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
            execute: async ({ city }) => `${city}: 3.5 C`,
          }),
        ],
      })
      try {
        const r = await client.run('Weather in Oslo?')
        assert.equal(r.outcome, 'done', r.error)
        assert.equal(r.output.city, 'Oslo')
        assert.equal(r.output.tempC, 3.5)
        assert.ok(r.output.observed instanceof Date)
        assert.equal(r.output.observed.toISOString(), '2026-12-07T09:00:00.000Z')
        const requests = await server.requests()
        assert.equal(requests.length, 3)
        assert.match(JSON.stringify(requests[1]), /3\.5 C/)
        assert.match(JSON.stringify(requests[2]), /at \/tempC/)
        const native = { openai: (b) => b.response_format.json_schema.schema, anthropic: (b) => b.output_config.format.schema, ollama: (b) => b.format }[style](requests[0])
        // Property names are the host's own: never renamed to snake_case.
        assert.equal(native.properties.tempC.description, 'degrees Celsius')
      } finally {
        client.close()
      }
    })
  }

  test('a run of its own: a JSON Schema, streamed output_delta events, retries run out', async () => {
    const server = await serve('openai', [
      { text: '{"n": 1, "note": "one"}' },
      { text: '{"n": "two"}' },
      { text: 'two' },
    ])
    const client = createClient({ baseUrl: `${server.root}/v1`, model: 'fake', apiKey: 'test', builtins: [], outputRetries: 1 })
    try {
      const schema = { type: 'object', properties: { n: { type: 'integer' }, note: { type: 'string' } }, required: ['n'] }
      const run = client.stream('n?', { outputSchema: schema })
      const partial = []
      for await (const e of run) if (e.type === 'output_delta') partial.push(e.output)
      const r = await run.result
      assert.deepEqual(r.output, { n: 1, note: 'one' })
      assert.deepEqual(partial.at(-1), { n: 1, note: 'one' })
      assert.deepEqual(partial[0], {})
      const bad = await client.run('n again?', { outputSchema: schema })
      assert.equal(bad.outcome, 'output_invalid')
      assert.equal(bad.output, undefined)
      assert.equal(bad.finalText, 'two')
      assert.match(bad.error, /not valid JSON/)
    } finally {
      client.close()
    }
  })

  test("a check of the Zod schema's own that JSON Schema cannot say is an outcome, not a rejection", async () => {
    const server = await serve('openai', [{ text: '{"n": 3}' }])
    const Even = z.object({ n: z.number().refine((n) => n % 2 === 0, 'n must be even') })
    const client = createClient({ baseUrl: `${server.root}/v1`, model: 'fake', apiKey: 'test', builtins: [], outputSchema: Even })
    try {
      const r = await client.run('n?')
      assert.equal(r.outcome, 'output_invalid')
      assert.equal(r.output, undefined)
      assert.match(r.error, /n must be even/)
    } finally {
      client.close()
    }
  })

  test('a bad schema is a ConfigurationError', async () => {
    assert.throws(() => createClient({ model: 'fake', apiKey: 'test', outputSchema: { type: 'nope' } }), (e) => e instanceof ConfigurationError && /outputSchema|output_schema/.test(e.message))
    assert.throws(() => createClient({ model: 'fake', apiKey: 'test', outputSchema: 'object' }), ConfigurationError)
    // A transform-only schema has no JSON Schema for the output... but its input has one; a
    // schema with no JSON form at all is refused.
    assert.throws(() => createClient({ model: 'fake', apiKey: 'test', outputSchema: z.custom(() => true) }), ConfigurationError)
    const client = createClient({ model: 'fake', apiKey: 'test', baseUrl: 'http://127.0.0.1:9/v1' })
    try {
      await assert.rejects(client.run('x', { outputSchema: { type: 7 } }), ConfigurationError)
    } finally {
      client.close()
    }
  })
})
