// Durable turns through the JavaScript API: `waitFor` answers `{ suspend: true }`, the result
// carries `checkpoint` and `pending`, and another client built from the same options resumes
// it with `client.resume` / `client.resumeStream`. The engine decides; these check the binding
// carries each piece through (the Rust and Python suites try the rest).
import assert from 'node:assert/strict'
import { describe, test } from 'node:test'

import { CheckpointError, ConfigurationError, createClient, tool } from 'contenox'

function parts(answer, script) {
  const ran = []
  const keys = []
  const write = tool({
    name: 'write',
    description: 'Writes.',
    inputSchema: { type: 'object' },
    execute: ({ path }, { idempotencyKey }) => {
      ran.push(path)
      keys.push(idempotencyKey)
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
  return { client, ran, keys }
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

  test('the idempotency key names the call across resumes: turnId:callId, the same in every process that runs it', async () => {
    const a = parts({ suspend: true }, [writeCall])
    const { checkpoint } = await a.client.run('go')
    const turnId = JSON.parse(checkpoint).turn_id
    assert.match(turnId, /^turn_[0-9a-f]{32}$/)
    // Two clients resume the same checkpoint (a worker that crashed while the tool ran, and the
    // one that took over): the tool gets the same key both times.
    const b1 = parts({ approve: true }, [{ text: 'done' }])
    const b2 = parts({ approve: true }, [{ text: 'done' }])
    assert.equal((await b1.client.resume(checkpoint, { c1: { approve: true } })).outcome, 'done')
    assert.equal((await b2.client.resume(checkpoint, { c1: { approve: true } })).outcome, 'done')
    assert.deepEqual(b1.keys, [`${turnId}:c1`])
    assert.deepEqual(b2.keys, b1.keys)
    // A new turn draws a new id: its calls' keys differ from the first turn's.
    const c = parts({ approve: true }, [writeCall, { text: 'done' }])
    await c.client.run('go')
    assert.equal(c.keys.length, 1)
    assert.match(c.keys[0], /^turn_[0-9a-f]{32}:c1$/)
    assert.notEqual(c.keys[0], b1.keys[0])
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
