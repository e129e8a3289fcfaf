// An MCP server's own requests through the JavaScript API, against the real npm
// server-everything (stdio): an elicitation reaches waitFor as a typed pending request and the
// answer reaches the server; sampling is denied by a policy, then allowed and answered by the
// client's model; roots/list gives the client's root. docs/mcp.md has the rules.
import assert from 'node:assert/strict'
import { existsSync, mkdtempSync, realpathSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { test } from 'node:test'
import { fileURLToPath } from 'node:url'

import { createClient, elicitationOf, loadMcp } from 'contenox'

const here = dirname(fileURLToPath(import.meta.url))
const modules = process.env.CONTENOX_MCP_NODE_MODULES ?? join(here, '..', '..', 'tests', 'mcp', 'node_modules')
const js = join(modules, '@modelcontextprotocol', 'server-everything', 'dist', 'index.js')
const ELICIT = 'everything__trigger-elicitation-request'
const SAMPLE = 'everything__trigger-sampling-request'

function everything(switches = {}) {
  assert.ok(existsSync(js), `server-everything not found at ${js}: run tests/mcp/install.sh`)
  return { mcpServers: { everything: { command: 'node', args: [js, 'stdio'], ...switches } } }
}

const call = (name, args = {}) => ({ toolCalls: [{ id: 'c1', name, args }] })

async function runOne(client) {
  const run = client.stream('go')
  const events = []
  for await (const e of run) events.push(e)
  const result = await run.result
  assert.equal(result.outcome, 'done')
  const results = events.filter((e) => e.type === 'tool_result')
  assert.equal(results.length, 1)
  return { result, toolResult: results[0], events }
}

test('an elicitation reaches waitFor with its schema and the answer reaches the server', async () => {
  const seen = []
  const source = await loadMcp(everything())
  try {
    const client = createClient({
      style: 'scripted',
      builtins: [],
      script: [call(ELICIT), { text: 'done' }],
      waitFor: async (request) => {
        seen.push(request)
        return { result: { name: 'Katherine Johnson', check: true } }
      },
    })
    source.registerInto(client)
    const { toolResult } = await runOne(client)
    assert.match(toolResult.content, /Name: Katherine Johnson/)
  } finally {
    await source.close()
  }
  assert.equal(seen.length, 1)
  assert.equal(seen[0].kind, 'elicitation')
  assert.equal(seen[0].name, ELICIT)
  const e = elicitationOf(seen[0])
  assert.equal(e.server, 'everything')
  assert.deepEqual(e.requestedSchema.required, ['name'])
  assert.equal(elicitationOf({ ...seen[0], kind: 'approval' }), undefined)
})

test('an answer outside the requested schema is declined', async () => {
  const source = await loadMcp(everything())
  try {
    const client = createClient({
      style: 'scripted',
      builtins: [],
      script: [call(ELICIT), { text: 'done' }],
      waitFor: async () => ({ result: { name: 4711 } }),
    })
    source.registerInto(client)
    const { toolResult } = await runOne(client)
    assert.match(toolResult.content, /declined/)
    assert.doesNotMatch(toolResult.content, /4711/)
  } finally {
    await source.close()
  }
})

test('sampling is denied by a policy, then allowed and answered by the client model', async () => {
  const policy = { default_action: 'allow', rules: [{ tools: 'mcp', tool: 'sampling', action: 'deny' }] }
  const ask = call(SAMPLE, { prompt: 'a haiku', maxTokens: 30 })
  let source = await loadMcp(everything({ sampling: true }))
  try {
    const client = createClient({ style: 'scripted', builtins: [], script: [ask, { text: 'done' }], policy })
    source.registerInto(client)
    const { toolResult, events } = await runOne(client)
    assert.match(toolResult.content, /policy denied sampling/)
    const gates = events.filter((e) => e.type === 'gate' && e.name === 'sampling')
    assert.deepEqual(gates.map((g) => [g.decision, g.source]), [['deny', 'mcp']])
  } finally {
    await source.close()
  }
  source = await loadMcp(everything({ sampling: true }))
  try {
    const answer = { text: 'Moss on the server rack', usage: { inputTokens: 700, outputTokens: 6 } }
    const client = createClient({ style: 'scripted', builtins: [], script: [ask, answer, { text: 'done' }] })
    source.registerInto(client)
    const { toolResult, result } = await runOne(client)
    assert.match(toolResult.content, /Moss on the server rack/)
    assert.ok(result.usage.inputTokens >= 700, JSON.stringify(result.usage))
  } finally {
    await source.close()
  }
})

test('sampling is off by default; roots are the client root', async () => {
  const root = realpathSync(mkdtempSync(join(tmpdir(), 'contenox-node-roots-')))
  const source = await loadMcp(everything())
  try {
    assert.ok(!source.tools().some((t) => t.name.includes('sampling')))
    const client = createClient({
      style: 'scripted',
      builtins: [],
      root,
      script: [call('everything__get-roots-list'), { text: 'done' }],
    })
    source.registerInto(client)
    const { toolResult } = await runOne(client)
    assert.ok(toolResult.content.includes(`file://${root}`), toolResult.content)
  } finally {
    await source.close()
  }
})
