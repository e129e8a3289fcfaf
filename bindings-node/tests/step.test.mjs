// A turn stepped by its host from JavaScript (`client.step`): driven by hand it ends as `run`
// does; replaying the recorded results against an openai-style fake server sends no request and
// runs no tool; results that do not fit throw StepError and change nothing; no key in an action.
import assert from 'node:assert/strict'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, test } from 'node:test'

import { ConfigurationError, StepError, Stepper, createClient, tool } from 'contenox'

import { startFakeServer } from './helpers.mjs'

const API_KEY = 'sk-STEP-SECRET-KEY-0001'
const HEADER = 'STEP-HEADER-0002'

const reply = (...calls) => ({ tool_calls: calls.map(([id, name, args]) => ({ id, name, arguments: args })) })
const SCRIPT = [reply(['c0', 'read', { n: 0 }], ['c1', 'write', { n: 1 }]), { text: 'all done' }]
/** The scripted style's script, as JavaScript writes it. */
const JS_SCRIPT = [
  { toolCalls: [{ id: 'c0', name: 'read', args: { n: 0 } }, { id: 'c1', name: 'write', args: { n: 1 } }] },
  { text: 'all done' },
]

/** A client whose `read` and `write` count their runs and `waitFor` its asks (write asks). */
function counted(options = {}) {
  const counts = { reads: 0, writes: 0, asks: 0, keys: [] }
  const read = tool({
    name: 'read',
    description: 'Reads.',
    inputSchema: { type: 'object' },
    hints: { readOnly: true },
    execute: ({ n }, { idempotencyKey }) => {
      counts.reads += 1
      counts.keys.push(idempotencyKey)
      return `read ${n} as ${idempotencyKey}`
    },
  })
  const write = tool({
    name: 'write',
    description: 'Writes.',
    inputSchema: { type: 'object' },
    execute: ({ n }, { idempotencyKey }) => {
      counts.writes += 1
      counts.keys.push(idempotencyKey)
      return `wrote ${n} as ${idempotencyKey}`
    },
  })
  const client = createClient({
    style: 'scripted',
    script: JS_SCRIPT,
    builtins: [],
    tools: [read, write],
    policy: { version: 1, default_action: 'allow', rules: [{ tool: 'write', action: 'approve', timeout_s: 600 }] },
    waitFor: () => {
      counts.asks += 1
      return { approve: true }
    },
    ...options,
  })
  return { client, counts }
}

/** Feed each ask `approve`, perform the rest; the actions in order (the last one `done`). */
async function drive(stepper) {
  const actions = []
  for (let i = 0; i < 50; i++) {
    const action = await stepper.next()
    actions.push(action)
    if (action.kind === 'done') return actions
    if (action.kind === 'ask') stepper.feed({ kind: 'answer', callId: action.request.callId, answer: { approve: true } })
    else await stepper.perform()
  }
  throw new Error('the stepped turn did not end in 50 actions')
}

describe('client.step', () => {
  test('a turn stepped by hand ends as run does', async () => {
    const ran = counted()
    const expected = await ran.client.run('go')
    assert.deepEqual([ran.counts.reads, ran.counts.writes, ran.counts.asks], [1, 1, 1])

    const { client, counts } = counted()
    const stepper = client.step('go')
    assert.ok(stepper instanceof Stepper)
    assert.match(stepper.turnId, /^turn_[0-9a-f]{32}$/)
    const actions = await drive(stepper)
    assert.deepEqual(
      actions.map((a) => a.kind),
      ['model_request', 'tool_call', 'ask', 'tool_call', 'model_request', 'done'],
    )
    // The ask was fed, not asked of waitFor; each tool ran once, with its key.
    assert.deepEqual([counts.reads, counts.writes, counts.asks], [1, 1, 0])
    const key = `${stepper.turnId}:c1`
    assert.deepEqual(counts.keys, [`${stepper.turnId}:c0`, key])
    const [request, read, ask, write, second] = actions
    assert.equal(request.turnId, stepper.turnId)
    assert.equal(request.step, 0)
    assert.equal(second.step, 1)
    assert.deepEqual(read.call, { id: 'c0', name: 'read', args: { n: 0 } })
    assert.equal(write.idempotencyKey, key)
    assert.equal(ask.request.callId, 'c1')
    assert.equal(ask.request.name, 'write')
    assert.deepEqual(ask.request.args, { n: 1 })

    const result = actions.at(-1).result
    assert.equal(result.outcome, expected.outcome)
    assert.equal(result.finalText, expected.finalText)
    assert.deepEqual(result.usage, expected.usage)
    const tools = (r) => r.transcript.messages.filter((m) => m.role === 'tool')
    assert.deepEqual(tools(result).map((m) => m.callId), tools(expected).map((m) => m.callId))
    assert.ok(JSON.stringify(tools(result)).includes(key))
    // The client's conversation is the turn's, as after run.
    assert.equal(client.transcript.length, result.transcript.length)
    // done again: the same result.
    const again = await stepper.next()
    assert.equal(again.kind, 'done')
    assert.equal(again.result.finalText, 'all done')

    const kinds = stepper.events().map((e) => e.type)
    assert.equal(kinds[0], 'turn_start')
    assert.equal(kinds.at(-1), 'turn_end')
    assert.ok(kinds.includes('tool_call') && kinds.includes('gate'), kinds.join(' '))
    const journal = stepper.journal()
    assert.deepEqual(
      journal.map((r) => r.kind),
      ['model_response', 'tool_result', 'answer', 'tool_result', 'model_response'],
    )
    assert.deepEqual(journal[1], { kind: 'tool_result', callId: 'c0', output: { content: `read 0 as ${stepper.turnId}:c0`, isError: false } })
    assert.deepEqual(journal[2], { kind: 'answer', callId: 'c1', answer: { approve: true } })
    assert.deepEqual(stepper.options(), { turnId: stepper.turnId, clockMs: stepper.options().clockMs })
    assert.ok(Math.abs(stepper.options().clockMs - Date.now()) < 60_000)
    client.close()
    ran.client.close()
  })

  test('replaying the journal gives the same actions and does no I/O', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'contenox-node-step-'))
    const file = join(dir, 'scenario.json')
    writeFileSync(file, JSON.stringify({ name: 'step', style: 'openai', model: SCRIPT, prompt: 'go', expect: {} }))
    const server = await startFakeServer(file)
    try {
      const options = {
        style: 'openai',
        baseUrl: `${server.root}/v1`,
        model: 'fake',
        apiKey: API_KEY,
        headers: { 'X-Secret': HEADER },
        script: undefined,
      }
      const first = counted(options)
      const stepper = first.client.step('go')
      const actions = await drive(stepper)
      assert.equal((await server.requests()).length, 2)
      assert.deepEqual([first.counts.reads, first.counts.writes], [1, 1])
      // The request bodies are the wire's, without the key or headers.
      const body = actions[0].request
      assert.equal(body.model, 'fake')
      assert.equal(body.messages.at(-1).content, 'go')
      const text = JSON.stringify(actions.slice(0, -1)) + JSON.stringify(stepper.journal())
      assert.ok(!text.includes(API_KEY) && !text.includes(HEADER))
      // What a durable engine keeps: plain JSON.
      const journal = JSON.parse(JSON.stringify(stepper.journal()))
      const start = JSON.parse(JSON.stringify(stepper.options()))

      // Another process would do this: the same start, the recorded results fed.
      const again = counted(options)
      const replay = again.client.step('go', start)
      assert.equal(replay.turnId, stepper.turnId)
      const replayed = []
      for (const recorded of journal) {
        replayed.push(await replay.next())
        replay.feed(recorded)
      }
      const done = await replay.next()
      assert.equal(done.kind, 'done')
      assert.deepEqual(replayed, actions.slice(0, -1))
      assert.deepEqual([again.counts.reads, again.counts.writes, again.counts.asks], [0, 0, 0])
      assert.equal((await server.requests()).length, 2, 'the replay sent no request')
      assert.equal(done.result.finalText, 'all done')
      assert.deepEqual(replay.journal(), journal)
      first.client.close()
      again.client.close()
    } finally {
      await server.stop()
      rmSync(dir, { recursive: true, force: true })
    }
  })

  test('results that do not fit throw StepError and change nothing', async () => {
    const { client, counts } = counted()
    const stepper = client.step('go')
    const refused = (result, pattern) =>
      assert.throws(() => stepper.feed(result), (e) => e instanceof StepError && pattern.test(e.message), String(pattern))
    refused({ kind: 'tool_result', callId: 'c0', output: { content: 'x' } }, /call next\(\) first/)
    await assert.rejects(stepper.perform(), (e) => e instanceof StepError && /call next\(\) first/.test(e.message))
    const first = await stepper.next()
    assert.equal(first.kind, 'model_request')
    assert.deepEqual(await stepper.next(), first)
    // Wrong kind, wrong step, not a result at all.
    refused({ kind: 'answer', callId: 'c0', answer: { approve: true } }, /model_request; a ask result does not answer it/)
    refused({ kind: 'model_response', step: 3, reply: { text: 'x' } }, /step 0/)
    refused({ kind: 'model_response', step: 0 }, /either a reply or an error/)
    for (const hostile of [42, 'x', null, undefined, [], { kind: 'nonsense' }, { kind: 'tool_result' }]) {
      refused(hostile, /not an action result/)
    }
    const cyclic = { kind: 'tool_result', callId: 'c0' }
    cyclic.output = cyclic
    refused(cyclic, /not an action result/)
    assert.deepEqual(await stepper.next(), first, 'the request still waits')
    const recorded = await stepper.perform()
    assert.equal(recorded.kind, 'model_response')
    assert.equal(recorded.step, 0)
    assert.deepEqual(recorded.reply.calls.map((c) => c.id), ['c0', 'c1'])

    const read = await stepper.next()
    assert.equal(read.kind, 'tool_call')
    // Wrong call id: refused, the call still waits.
    refused({ kind: 'tool_result', callId: 'c1', output: { content: 'x' } }, /another tool_call .*call c0/)
    stepper.feed({ kind: 'tool_result', callId: 'c0', output: { content: 'fed' } })
    refused({ kind: 'tool_result', callId: 'c0', output: { content: 'again' } }, /call next\(\) first/)
    const ask = await stepper.next()
    assert.equal(ask.kind, 'ask')
    refused({ kind: 'answer', callId: 'c1', answer: 'yes' }, /not one/)
    refused({ kind: 'answer', callId: 'c9', answer: { approve: true } }, /another ask/)
    stepper.feed({ kind: 'answer', callId: 'c1', answer: { approve: false, message: 'no' } })
    let action
    for (let i = 0; i < 10; i++) {
      action = await stepper.next()
      if (action.kind === 'done') break
      await stepper.perform()
    }
    assert.equal(action.kind, 'done')
    assert.equal(action.result.outcome, 'done')
    // The fed result is the one the model saw; the denial too.
    const tools = action.result.transcript.messages.filter((m) => m.role === 'tool')
    assert.equal(tools[0].content[0].text, 'fed')
    assert.equal(tools[1].isError, true)
    refused({ kind: 'tool_result', callId: 'c1', output: { content: 'x' } }, /the turn is done/)
    await assert.rejects(stepper.perform(), (e) => e instanceof StepError && /the turn is done/.test(e.message))
    assert.equal((await stepper.next()).kind, 'done')
    assert.deepEqual([counts.reads, counts.writes, counts.asks], [0, 0, 0])
    assert.deepEqual(
      stepper.journal().map((r) => r.kind),
      ['model_response', 'tool_result', 'answer', 'model_response'],
    )
    client.close()
  })

  test('a stepped ask performed asks waitFor; its suspend is a denial', async () => {
    const { client, counts } = counted({ waitFor: () => ({ suspend: true }) })
    const stepper = client.step('go')
    let action
    for (let i = 0; i < 10; i++) {
      action = await stepper.next()
      if (action.kind === 'done') break
      const result = await stepper.perform()
      if (action.kind === 'ask') assert.deepEqual(result, { kind: 'answer', callId: 'c1', answer: { suspend: true } })
    }
    assert.equal(action.result.outcome, 'done')
    assert.equal(action.result.checkpoint, undefined)
    assert.deepEqual([counts.reads, counts.writes], [1, 0])
    client.close()
  })

  test('a compaction is a summary_request action, performed and replayed like a model request', async () => {
    const script = [
      { toolCalls: [{ id: 'c0', name: 'read', args: { n: 0 } }] },
      { toolCalls: [{ id: 'c1', name: 'read', args: { n: 1 } }], usage: { inputTokens: 1500, outputTokens: 5 } },
      { text: 'SUMMARY: two reads.' },
      { text: 'all done' },
    ]
    const options = { script, compaction: { thresholdTokens: 1000, keepRecent: 1 } }
    const first = counted(options)
    const stepper = first.client.step('go')
    const actions = await drive(stepper)
    assert.deepEqual(
      actions.map((a) => (a.kind === 'summary_request' || a.kind === 'model_request' ? `${a.kind}:${a.step}` : a.kind)),
      ['model_request:0', 'tool_call', 'model_request:1', 'tool_call', 'summary_request:2', 'model_request:2', 'done'],
    )
    assert.equal(actions[4].turnId, stepper.turnId)
    const summary = stepper.journal()[4]
    assert.equal(summary.kind, 'model_response')
    assert.equal(summary.summary, true)
    assert.equal(summary.reply.text, 'SUMMARY: two reads.')
    assert.equal(actions.at(-1).result.finalText, 'all done')
    // A summary's result does not answer the model request of the same step, nor the reverse.
    const again = counted(options)
    const replay = again.client.step('go', stepper.options())
    const journal = stepper.journal()
    for (const [i, recorded] of journal.entries()) {
      const action = await replay.next()
      if (action.kind === 'summary_request') {
        assert.throws(() => replay.feed({ ...recorded, summary: false }), StepError)
      }
      if (action.kind === 'model_request' && action.step === 2) {
        assert.throws(() => replay.feed({ ...journal[i - 1] }), StepError)
      }
      replay.feed(recorded)
    }
    const done = await replay.next()
    assert.equal(done.kind, 'done')
    assert.equal(done.result.finalText, 'all done')
    assert.deepEqual([again.counts.reads, again.counts.writes], [0, 0])
    first.client.close()
    again.client.close()
  })

  test('bad start options and a closed client are refused before the turn', () => {
    const { client } = counted()
    for (const clockMs of [-1, 1.5, Number.NaN, 2 ** 60]) {
      assert.throws(() => client.step('go', { clockMs }), (e) => e instanceof ConfigurationError && e.option === 'clockMs', String(clockMs))
    }
    for (const turnId of [5, {}, true]) {
      assert.throws(() => client.step('go', { turnId }), (e) => e instanceof ConfigurationError && e.option === 'turnId', String(turnId))
    }
    assert.throws(() => client.step('go', { clockMs: '123' }), (e) => e instanceof ConfigurationError && e.option === 'clockMs')
    // null is absent, as undefined: a turn id and a clock drawn now.
    const drawn = client.step('go', { turnId: null, clockMs: null })
    assert.match(drawn.turnId, /^turn_[0-9a-f]{32}$/)
    drawn.cancel()
    assert.throws(() => client.step('go', { allow: [''] }), ConfigurationError)
    client.close()
    assert.throws(() => client.step('go'), /closed/)
  })

  test('cancel and an aborted signal end the turn as cancelled', async () => {
    const { client, counts } = counted()
    const stepper = client.step('go')
    assert.equal((await stepper.next()).kind, 'model_request')
    stepper.cancel()
    let action
    for (let i = 0; i < 10; i++) {
      action = await stepper.next()
      if (action.kind === 'done') break
      await stepper.perform().catch(() => {})
    }
    assert.equal(action.result.outcome, 'cancelled')
    const aborted = client.step('go', { signal: AbortSignal.abort() })
    for (let i = 0; i < 10; i++) {
      action = await aborted.next()
      if (action.kind === 'done') break
      await aborted.perform().catch(() => {})
    }
    assert.equal(action.result.outcome, 'cancelled')
    assert.deepEqual([counts.reads, counts.writes], [0, 0])
    client.close()
  })
})
