// The lifecycle hooks beside beforeTool / afterTool: each point's argument and answer, sync and
// async, and a method that throws, rejects, answers what its point does not take or hangs past
// hookTimeoutMs: the point's fallback, never a failed turn or an unhandled rejection.
import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'

import { ConfigurationError, createClient, pending, tool } from 'contenox'

import { textOf } from './helpers.mjs'

const failing = tool({
  name: 'fail',
  description: 'Fails.',
  inputSchema: { type: 'object' },
  execute: () => {
    throw new Error('it broke')
  },
})

function scripted(script, options = {}) {
  return createClient({ style: 'scripted', builtins: [], hookTimeoutMs: 300, script, tools: [failing], ...options })
}

const callFail = { toolCalls: [{ id: 'c1', name: 'fail', args: {} }] }
const compaction = { thresholdTokens: 1_000_000, keepRecent: 1 }

const uncaught = []
const onUncaught = (e) => uncaught.push(e)
before(() => {
  process.on('uncaughtException', onUncaught)
  process.on('unhandledRejection', onUncaught)
})
after(() => {
  process.off('uncaughtException', onUncaught)
  process.off('unhandledRejection', onUncaught)
  assert.deepEqual(uncaught, [])
})

describe('lifecycle hooks', () => {
  test('every point is called in order with its typed argument', async () => {
    const log = []
    let stops = 0
    const client = scripted([callFail, { text: 'first answer' }, { text: 'second answer' }], {
      maxTurns: 5,
      hooks: {
        beforeTool: () => pending({ kind: 'approval', prompt: 'run?' }),
        onTurnStart: (prompt) => void log.push(`turn_start ${prompt}`),
        async onPrompt(prompt) {
          log.push(`prompt ${prompt}`)
          return { addContext: '(from the hook)' }
        },
        onNotification: (n) => void log.push(`notification ${n.kind}`),
        onToolError: (e, result) => void log.push(`tool_error ${e.name} ${e.callId} ${result.isError} ${result.content}`),
        onStop(text) {
          log.push(`stop ${text}`)
          return ++stops === 1 ? { continue: 'check again' } : undefined
        },
        onTurnEnd: (end) => void log.push(`turn_end ${end.outcome} ${end.finalText}`),
      },
      waitFor: () => ({ approve: true }),
    })
    const r = await client.run('hello')
    assert.equal(r.outcome, 'done')
    assert.equal(r.finalText, 'second answer')
    assert.deepEqual(log, [
      'turn_start hello',
      'prompt hello',
      'notification ask',
      'tool_error fail c1 true it broke',
      'stop first answer',
      'stop second answer',
      'turn_end done second answer',
    ])
    const first = textOf(r.transcript.messages[0])
    assert.ok(first.includes('hello') && first.includes('(from the hook)'), first)
    assert.ok(r.transcript.messages.some((m) => m.role === 'user' && textOf(m) === 'check again'))
  })

  test('onPrompt replaces or refuses the prompt', async () => {
    let r = await scripted([{ text: 'ok' }], { hooks: { onPrompt: () => ({ replace: 'tidy' }) } }).run('messy')
    assert.equal(textOf(r.transcript.messages[0]), 'tidy')

    r = await scripted([{ text: 'never' }], { hooks: { onPrompt: async () => ({ refuse: 'not that' }) } }).run('bad')
    assert.equal(r.outcome, 'error')
    assert.equal(r.error, 'the prompt was refused by a hook: not that')
    assert.equal(r.transcript.messages.length, 0)
  })

  test('onStop sending the model back is bounded by maxTurns', async () => {
    const seen = []
    const client = scripted([{ text: 'one' }, { text: 'two' }, { text: 'three' }], {
      maxTurns: 2,
      hooks: { onStop: (t) => (seen.push(t), { continue: 'again' }) },
    })
    const r = await client.run('go')
    assert.equal(r.outcome, 'done')
    assert.equal(r.finalText, 'two')
    assert.deepEqual(seen, ['one'])
  })

  test('beforeCompact vetoes or sets the instructions', async () => {
    const seen = []
    let client = scripted([{ text: 'a' }, { text: 'b' }], {
      compaction,
      hooks: { beforeCompact: (req) => (seen.push(req), { veto: 'not now' }) },
    })
    await client.run('one')
    await client.run('two')
    assert.equal(await client.compact(), null)
    assert.equal(client.transcript.messages.length, 4)
    assert.equal(seen[0].trigger, 'manual')
    assert.ok(seen[0].preTokens > 0)

    client = scripted([{ text: 'a' }, { text: 'b' }, { text: 'the summary' }], {
      compaction,
      hooks: { beforeCompact: async () => ({ instructions: 'keep names' }) },
    })
    await client.run('one')
    await client.run('two')
    const notice = await client.compact()
    assert.equal(notice?.summary, 'the summary')
  })

  const failures = {
    throws: () => {
      throw new Error('hook bug')
    },
    rejects: async () => {
      throw new Error('hook bug')
    },
    hangs: () => new Promise(() => {}),
    'answers what it does not take': () => ({ refuse_it: 'no' }),
  }
  for (const [what, hook] of Object.entries(failures)) {
    test(`a method that ${what} falls back and the turn goes on`, async () => {
      const points = ['onPrompt', 'onStop', 'beforeCompact', 'onToolError', 'onTurnStart', 'onTurnEnd', 'onNotification']
      const hooks = Object.fromEntries(points.map((p) => [p, hook]))
      const client = scripted([callFail, { text: 'done' }, { text: 'second' }, { text: 'the summary' }], {
        compaction,
        hooks,
      })
      const r = await client.run('as it is')
      assert.equal(r.outcome, 'done')
      assert.equal(r.finalText, 'done')
      assert.equal(textOf(r.transcript.messages[0]), 'as it is')
      await client.run('more')
      const notice = await client.compact()
      assert.equal(notice?.summary, 'the summary')
    })
  }

  test('hookTimeoutMs 0 is a configuration error', () => {
    assert.throws(() => scripted([{ text: 'x' }], { hookTimeoutMs: 0 }), ConfigurationError)
  })
})
