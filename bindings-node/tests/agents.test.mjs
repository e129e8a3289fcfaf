// Subagents and compaction through the JavaScript API (`asToolWith`, `compaction`,
// `compactor({ onCompact, compact })`, `client.compact()`), with scripted models; the
// conformance scenarios cover the engine's part.
import assert from 'node:assert/strict'
import { describe, test } from 'node:test'

import { CompactionError, ConfigurationError, compactor, createClient, tool } from 'contenox'

const call = (id, name, args) => ({ toolCalls: [{ id, name, args }] })

function scripted(script, options = {}) {
  return createClient({ style: 'scripted', builtins: [], script, ...options })
}

describe('subagents', () => {
  test("a child's calls pass the parent's gate with agent, its events reach the stream tagged", async () => {
    const nap = tool({ name: 'nap', description: 'Naps.', inputSchema: { type: 'object' }, execute: async () => 'rested' })
    const child = scripted([call('c1', 'nap', {}), { text: 'Child done.' }], { tools: [nap] })
    const seen = []
    const parent = scripted([call('p1', 'worker', { prompt: 'Nap.' }), { text: 'Parent done.' }], {
      hooks: { beforeTool: (e) => void seen.push(e.agent ?? []) },
    })
    parent.register(child.asToolWith('worker', 'Naps.', { maxTurns: 3 }))
    const run = parent.stream('Go.')
    const events = []
    for await (const e of run) events.push(e)
    const result = await run.result
    assert.equal(result.finalText, 'Parent done.')
    const napResult = events.find((e) => e.type === 'tool_result' && e.name === 'nap')
    assert.deepEqual(napResult.agent, ['worker'])
    assert.equal(napResult.content, 'rested')
    assert.deepEqual(seen, [[], ['worker']])
    child.close()
    parent.close()
  })

  test('bad options are a ConfigurationError', () => {
    const child = scripted([{ text: 'x' }])
    assert.throws(() => child.asToolWith('worker', 'Works.', { maxTurns: 0 }), ConfigurationError)
    assert.throws(() => child.asToolWith('worker', 'Works.', { conversation: 'sometimes' }), ConfigurationError)
    child.close()
  })
})

describe('compaction', () => {
  test('compact() on demand tells onCompact; nothing to summarise is null', async () => {
    const told = []
    const client = scripted([{ text: 'It is 4.' }, { text: 'The user asked 2 + 2; it is 4.' }], {
      compaction: { thresholdTokens: 100_000, keepRecent: 1 },
      compactor: compactor({ onCompact: (n) => void told.push(n) }),
    })
    assert.equal(await client.compact(), null)
    await client.run('What is 2 + 2?')
    const notice = await client.compact()
    assert.equal(notice.trigger, 'manual')
    assert.equal(notice.summary, 'The user asked 2 + 2; it is 4.')
    assert.ok(notice.preTokens > 0 && notice.postTokens > 0)
    assert.deepEqual(told, [notice])
    client.close()
  })

  test('a compact function returning an invalid transcript, or throwing, leaves the conversation', async () => {
    const junk = scripted([{ text: 'One.' }], {
      compactor: compactor({ compact: () => ({ messages: [{ role: 'tool', call_id: 'nope', name: 'x', content: '' }] }) }),
    })
    await junk.run('First.')
    await assert.rejects(junk.compact(), CompactionError)
    assert.equal(junk.transcript.length, 2)
    junk.close()
    const throwing = scripted([{ text: 'One.' }], {
      compactor: compactor({
        compact: () => {
          throw new Error('no room')
        },
      }),
    })
    await throwing.run('First.')
    await assert.rejects(throwing.compact(), /no room/)
    assert.equal(throwing.transcript.length, 2)
    throwing.close()
  })
})
