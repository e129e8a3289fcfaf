// Approval policies through the JavaScript API (`policy`, `client.setPolicy()`, `client.policy`,
// `policies`) and the options beside them (ceilings, timeouts, shellEnv, sandbox,
// webFetchAllowPrivate), each checked by the engine and named in JavaScript's spelling.
import assert from 'node:assert/strict'
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, test } from 'node:test'

import { ConfigurationError, createClient, policies, tool } from 'contenox'

import { textOf } from './helpers.mjs'

const echo = tool({ name: 'echo', description: 'Echo.', inputSchema: { type: 'object' }, hints: { readOnly: true }, execute: ({ text }) => text })
const call = (id, text = id) => ({ toolCalls: [{ id, name: 'echo', args: { text } }] })
const denyEcho = (name = 'no echo') => ({ version: 1, default_action: 'allow', rules: [{ tool: 'echo', action: 'deny', name }] })

function client(script, options = {}) {
  return createClient({ style: 'scripted', builtins: [], script, tools: [echo], ...options })
}

/** One turn; the result message of call `id`. */
async function turn(c, id) {
  const r = await c.run('go')
  assert.equal(r.outcome, 'done')
  const m = r.transcript.messages.find((m) => m.role === 'tool' && m.callId === id)
  return { ...m, content: textOf(m) }
}

function refused(options) {
  let error
  assert.throws(() => client([{ text: 'x' }], options), (e) => (error = e) instanceof ConfigurationError)
  return error
}

describe('policy', () => {
  for (const form of ['object', 'json', 'path']) {
    test(`takes a document, its JSON text or a file path (${form})`, async () => {
      const dir = mkdtempSync(join(tmpdir(), 'contenox-node-policy-'))
      try {
        const file = join(dir, 'policy.json')
        writeFileSync(file, JSON.stringify(denyEcho()))
        const policy = { object: denyEcho(), json: JSON.stringify(denyEcho()), path: file }[form]
        const c = client([call('c1'), { text: 'ok' }], { policy })
        const result = await turn(c, 'c1')
        assert.equal(result.isError, true)
        assert.match(result.content, /rules\[0\] \("no echo"\)/)
        assert.ok(result.content.endsWith('please ask for clarification or try a different, less destructive approach.'))
        assert.deepEqual(c.policy, denyEcho())
      } finally {
        rmSync(dir, { recursive: true, force: true })
      }
    })
  }

  test('setPolicy replaces it for the next call; null removes it', async () => {
    const c = client([call('c1'), { text: 'ok' }, call('c2'), { text: 'ok' }, call('c3'), { text: 'ok' }], { policy: denyEcho() })
    assert.equal((await turn(c, 'c1')).isError, true)
    const allow = { default_action: 'allow', rules: [{ tool: 'echo', action: 'allow' }] }
    c.setPolicy(JSON.stringify(allow))
    assert.deepEqual(c.policy, allow)
    const second = await turn(c, 'c2')
    assert.deepEqual([second.content, second.isError], ['c2', false])
    c.setPolicy(null)
    assert.equal(c.policy, undefined)
    assert.equal((await turn(c, 'c3')).isError, false)
  })

  for (const [bad, says] of [
    [{ rules: [{ tool: 'echo', action: 'maybe' }] }, 'rules[0].action'],
    [{ rules: [{ action: 'approve', on_timeout: 'allow' }] }, 'rules[0].on_timeout'],
    [{ version: 2 }, 'newer'],
    ['{"rules": [', 'not valid JSON'],
    ['/nonexistent/policy.json', '/nonexistent/policy.json'],
    [42, 'got 42'],
  ]) {
    test(`a bad policy is refused and the old one stays (${says})`, async () => {
      const c = client([call('c1'), { text: 'ok' }], { policy: denyEcho('old') })
      let error
      assert.throws(() => c.setPolicy(bad), (e) => (error = e) instanceof ConfigurationError)
      assert.equal(error.option, 'policy')
      assert.ok(error.message.includes(says), error.message)
      assert.deepEqual(c.policy, denyEcho('old'))
      assert.match((await turn(c, 'c1')).content, /rules\[0\] \("old"\)/)
      const atCreation = refused({ policy: bad })
      assert.equal(atCreation.option, 'policy')
      assert.ok(atCreation.message.includes(says), atCreation.message)
    })
  }

  test('presets are the engine documents, a fresh copy each time', async () => {
    const doc = policies.default()
    assert.equal(doc.default_action, 'approve')
    assert.equal(policies.strict().default_action, 'deny')
    assert.equal(policies.dev().default_action, 'allow')
    doc.rules.length = 0
    assert.ok(policies.default().rules.length > 0)

    const root = mkdtempSync(join(tmpdir(), 'contenox-node-preset-'))
    try {
      writeFileSync(join(root, 'notes.txt'), 'hello\n')
      mkdirSync(join(root, '.ssh'))
      writeFileSync(join(root, '.ssh', 'id_ed25519'), 'PRIVATE KEY\n')
      const c = createClient({
        style: 'scripted',
        builtins: ['read'],
        root,
        policy: policies.default(),
        script: [
          { toolCalls: [{ id: 'c1', name: 'read', args: { path: 'notes.txt' } }] },
          { toolCalls: [{ id: 'c2', name: 'read', args: { path: '.ssh/id_ed25519' } }] },
          { text: 'done' },
        ],
      })
      const r = await c.run('read them')
      const [notes, key] = r.transcript.messages.filter((m) => m.role === 'tool').map((m) => ({ ...m, content: textOf(m) }))
      assert.ok(notes.content.includes('hello') && !notes.isError)
      assert.ok(key.isError && key.content.includes('The approval policy denied read'), key.content)
      assert.ok(!key.content.includes('PRIVATE KEY'))
    } finally {
      rmSync(root, { recursive: true, force: true })
    }
  })

  test('gate events name the rule; ceilings end the turn with budget', async () => {
    const c = client([call('c1'), { text: 'ok' }], { policy: denyEcho() })
    const run = c.stream('go')
    const events = []
    for await (const e of run) events.push(e)
    const gate = events.find((e) => e.type === 'gate')
    assert.deepEqual([gate.decision, gate.rule], ['deny', 'rules[0] ("no echo")'])

    const two = { toolCalls: [{ id: 'c1', name: 'echo', args: { text: 'a' } }, { id: 'c2', name: 'echo', args: { text: 'b' } }] }
    let r = await client([two, { text: 'never' }], { maxToolCalls: 1 }).run('go')
    assert.equal(r.outcome, 'budget')
    assert.match(r.error, /max_tool_calls/)
    const [first, second] = r.transcript.messages.filter((m) => m.role === 'tool').map((m) => ({ ...m, content: textOf(m) }))
    assert.equal(first.content, 'a')
    assert.ok(second.isError && second.content.startsWith('budget reached'))

    r = await client([{ ...call('c1'), usage: { inputTokens: 50, outputTokens: 50 } }, { text: 'never' }], { maxTurnTokens: 10 }).run('go')
    assert.equal(r.outcome, 'budget')
    assert.match(r.error, /max_turn_tokens/)
  })
})

describe('options beside the policy', () => {
  test('are passed in JavaScript spelling and checked by the engine', () => {
    const c = client([{ text: 'x' }], {
      requestTimeoutMs: 1000,
      idleTimeoutMs: 2000,
      maxToolCalls: 3,
      maxTurnTokens: 4000,
      shellEnv: ['LANG', 'CI_*', 'MODE=test'],
      sandbox: { enabled: true, network: false, writable: ['/var/cache/build'] },
      webFetchAllowPrivate: true,
      toolConcurrency: 'all',
      maxConcurrentTools: 2,
      streamTools: false,
    })
    assert.ok(c.tools.includes('echo'))
    const mode = refused({ toolConcurrency: 'sometimes' })
    assert.equal(mode.option, 'toolConcurrency')
    assert.match(mode.message, /read_only/)
    for (const option of ['requestTimeoutMs', 'idleTimeoutMs', 'maxToolCalls', 'maxTurnTokens', 'maxConcurrentTools']) {
      const e = refused({ [option]: 0 })
      assert.deepEqual([e.option, e.value], [option, '0'])
    }
    let e = refused({ shellEnv: ['LANG', '*'] })
    assert.deepEqual([e.option, e.value], ['shellEnv[1]', '"*"'])
    e = refused({ shellEnv: ['A*=s3cret'] })
    assert.equal(e.value, '"A*=<redacted>"')
    assert.ok(!e.message.includes('s3cret'))
    e = refused({ sandbox: { writable: ['relative/dir'] } })
    assert.equal(e.option, 'sandbox.writable[0]')
    assert.match(e.reason, /absolute/)
    e = refused({ sandbox: { netwrk: false } })
    assert.match(e.message, /netwrk/)
  })
})
