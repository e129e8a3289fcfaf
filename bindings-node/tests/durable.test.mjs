// Durable turns through the JavaScript API: `waitFor` answers `{ suspend: true }`, the result
// carries `checkpoint` and `pending`, and another client built from the same options resumes
// it with `client.resume` / `client.resumeStream`. The engine decides; these check the binding
// carries each piece through (the Rust and Python suites try the rest).
import assert from 'node:assert/strict'
import { describe, test } from 'node:test'

import { CheckpointError, ConfigurationError, createClient, tool } from 'contenox'

function parts(answer, script) {
  const ran = []
  const write = tool({
    name: 'write',
    description: 'Writes.',
    inputSchema: { type: 'object' },
    execute: ({ path }) => {
      ran.push(path)
      return 'ok'
    },
  })
  const client = createClient({
    style: 'scripted',
    builtins: [],
    script,
    tools: [write],
    policy: { version: 1, default_action: 'allow', rules: [{ tool: 'write', action: 'approve', timeout_s: 600 }] },
    waitFor: () => answer,
  })
  return { client, ran }
}

const writeCall = { toolCalls: [{ id: 'c1', name: 'write', args: { path: 'a', content: 'b' } }] }

describe('suspend and resume', () => {
  test('a suspended turn resumes in another client: the tool runs once, the turn goes on', async () => {
    const a = parts({ suspend: true }, [writeCall])
    const first = await a.client.run('go')
    assert.equal(first.outcome, 'suspended')
    assert.equal(typeof first.checkpoint, 'string')
    assert.equal(first.pending.length, 1)
    assert.equal(first.pending[0].callId, 'c1')
    assert.deepEqual(first.pending[0].args, { path: 'a', content: 'b' })
    assert.ok(first.pending[0].deadlineMs > Date.now())
    assert.deepEqual(a.ran, [])

    const b = parts({ approve: false, message: 'the host was asked again' }, [{ text: 'done' }])
    const run = b.client.resumeStream(first.checkpoint, { c1: { approve: true } })
    const kinds = []
    for await (const e of run) kinds.push(e.type)
    const done = await run.result
    assert.equal(done.outcome, 'done')
    assert.equal(done.finalText, 'done')
    assert.deepEqual(b.ran, ['a'])
    assert.equal(kinds[0], 'turn_start')
    assert.ok(kinds.includes('answer'))
    assert.equal(kinds.at(-1), 'turn_end')
    assert.equal(done.checkpoint, undefined)

    // Applied once: the same checkpoint again on this client is refused.
    await assert.rejects(b.client.resume(first.checkpoint, { c1: { approve: true } }), CheckpointError)
    assert.deepEqual(b.ran, ['a'])
  })

  test('a wrong call, a tampered or newer checkpoint and a bad answer are refused before anything runs', async () => {
    const a = parts({ suspend: true }, [writeCall])
    const { checkpoint } = await a.client.run('go')
    const b = parts({ approve: true }, [{ text: 'done' }])
    await assert.rejects(b.client.resume(checkpoint, { nope: { approve: true } }), (e) => e instanceof CheckpointError && /no call nope/.test(e.message))
    const tampered = JSON.parse(checkpoint)
    tampered.reply.calls[0].arguments.path = '/etc/passwd'
    await assert.rejects(b.client.resume(JSON.stringify(tampered), { c1: { approve: true } }), /digest/)
    const newer = JSON.parse(checkpoint)
    newer.version += 1
    await assert.rejects(b.client.resume(JSON.stringify(newer), {}), (e) => e instanceof CheckpointError && /newer/.test(e.message))
    await assert.rejects(b.client.resume(checkpoint, { c1: { maybe: true } }), ConfigurationError)
    assert.deepEqual(b.ran, [])
    // Still resumable: nothing was claimed.
    const done = await b.client.resume(checkpoint, { c1: { approve: true } })
    assert.equal(done.outcome, 'done')
    assert.deepEqual(b.ran, ['a'])
  })

  test('a policy now denying wins over the answer', async () => {
    const a = parts({ suspend: true }, [writeCall])
    const { checkpoint } = await a.client.run('go')
    const b = parts({ approve: true }, [{ text: 'done' }])
    b.client.setPolicy({ version: 1, default_action: 'allow', rules: [{ tool: 'write', action: 'deny' }] })
    const done = await b.client.resume(checkpoint, { c1: { approve: true } })
    assert.equal(done.outcome, 'done')
    assert.deepEqual(b.ran, [])
    const result = done.transcript.messages.find((m) => m.role === 'tool')
    assert.equal(result.isError, true)
  })
})
