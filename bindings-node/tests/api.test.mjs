// The JavaScript API itself: sync and async callbacks, failures that must not kill the process,
// AbortSignal before and during a run, waitFor's signal, register/unregister, transcripts,
// listModels, errors for misuse, and both entry points.
import assert from 'node:assert/strict'
import { createRequire } from 'node:module'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, before, describe, test } from 'node:test'

import * as esm from 'contenox'
import { ConfigurationError, createClient, deny, loadMcp, pending, tool, Transcript } from 'contenox'

import { startFakeServer, textOf } from './helpers.mjs'

const echo = (name = 'echo', extra = {}) =>
  tool({ name, description: 'Echo.', inputSchema: { type: 'object' }, execute: (args) => JSON.stringify(args), ...extra })

const calls = (...names) =>
  names.map((name, i) => ({ toolCalls: [{ id: `call_${i + 1}`, name, args: { n: i + 1 } }] }))

/** A scripted client: each entry of `names` is one response with one call, then `done`. */
function scripted(names, options = {}) {
  return createClient({ style: 'scripted', builtins: [], script: [...calls(...names), { text: 'done' }], ...options })
}

// Tool results with their text as `content`.
const toolResults = (result) =>
  result.transcript.messages.filter((m) => m.role === 'tool').map((m) => ({ ...m, content: textOf(m) }))

async function collect(run) {
  const events = []
  for await (const e of run) events.push(e)
  return { events, result: await run.result }
}

// A process-level safety net: nothing in here may reach these.
const uncaught = []
const onUncaught = (e) => uncaught.push(e)
before(() => {
  process.on('uncaughtException', onUncaught)
  process.on('unhandledRejection', onUncaught)
})
after(() => {
  process.off('uncaughtException', onUncaught)
  process.off('unhandledRejection', onUncaught)
  assert.deepEqual(uncaught, [], 'an error escaped to the process')
})

describe('model settings', () => {
  test('options in camelCase; a run\'s settings checked against the style before anything is sent', async () => {
    assert.throws(
      () => createClient({ style: 'openai', model: 'm', baseUrl: 'http://127.0.0.1:9/v1', topK: 3 }),
      (e) => e instanceof ConfigurationError && e.option === 'topK' && e.reason.includes('has no top_k'),
    )
    // Port 9 has no server: a refused run sends nothing there.
    const client = createClient({
      style: 'anthropic', model: 'm', baseUrl: 'http://127.0.0.1:9', apiKey: 'k', builtins: [],
      temperature: 0.2, stop: ['END'], promptCache: false, extraBody: { some_vendor_key: 1 },
    })
    await assert.rejects(client.run('x', { settings: { seed: 1 } }), (e) => e instanceof ConfigurationError && e.option === 'settings.seed')
    assert.throws(
      () => client.stream('x', { settings: { reasoning: { budgetTokens: 2048 } } }),
      (e) => e instanceof ConfigurationError && e.option === 'settings.temperature',
    )
    assert.throws(
      () => client.stream('x', { settings: { toolChoice: 'always' } }),
      (e) => e instanceof ConfigurationError && e.option === 'settings.toolChoice',
    )
    assert.throws(() => client.stream('x', { settings: 'hot' }), (e) => e instanceof ConfigurationError && e.option === 'settings')
    client.close()
    // The scripted style takes every setting and ignores it.
    const r = await scripted([], { topK: 1, seed: 2 }).run('x', { settings: { toolChoice: { name: 't' }, reasoning: { effort: 'high' } } })
    assert.equal(r.finalText, 'done')
  })
})

describe('host tools', () => {
  test('sync and async execute, ctx.callId, JSON and text results', async () => {
    const seen = []
    const client = scripted(['sync_tool', 'async_tool'], {
      tools: [
        tool({
          name: 'sync_tool',
          description: 'sync',
          inputSchema: { type: 'object' },
          execute: (args, ctx) => (seen.push(ctx.callId), { got: args.n }),
        }),
        tool({
          name: 'async_tool',
          description: 'async',
          inputSchema: { type: 'object' },
          execute: async (args, ctx) => {
            await new Promise((r) => setTimeout(r, 5))
            seen.push(ctx.callId)
            return `text ${args.n}`
          },
        }),
      ],
    })
    const result = await client.run('go')
    assert.equal(result.outcome, 'done')
    assert.equal(result.finalText, 'done')
    assert.deepEqual(seen, ['call_1', 'call_2'])
    assert.deepEqual(
      toolResults(result).map((m) => [m.callId, m.content, m.isError]),
      [
        ['call_1', '{"got":1}', false],
        ['call_2', 'text 2', false],
      ],
    )
    client.close()
  })

  test('a throwing tool and a rejecting tool become error results; the turn goes on', async () => {
    const client = scripted(['throws', 'rejects', 'rejects_plain', 'echo'], {
      tools: [
        tool({ name: 'throws', description: 't', inputSchema: { type: 'object' }, execute: () => { throw new Error('thrown here') } }),
        tool({ name: 'rejects', description: 'r', inputSchema: { type: 'object' }, execute: async () => { throw new TypeError('rejected here') } }),
        tool({ name: 'rejects_plain', description: 'p', inputSchema: { type: 'object' }, execute: () => Promise.reject('a plain string') }),
        echo(),
      ],
    })
    const result = await client.run('go')
    assert.equal(result.outcome, 'done')
    assert.deepEqual(
      toolResults(result).map((m) => [m.content, m.isError]),
      [
        ['thrown here', true],
        ['rejected here', true],
        ['a plain string', true],
        ['{"n":4}', false],
      ],
    )
    client.close()
  })

  test('a result that is not JSON becomes an error result', async () => {
    const client = scripted(['cyclic'], {
      tools: [
        tool({ name: 'cyclic', description: 'c', inputSchema: { type: 'object' }, execute: () => { const o = {}; o.self = o; return o } }),
      ],
    })
    const result = await client.run('go')
    const [r] = toolResults(result)
    assert.equal(r.isError, true)
    assert.match(r.content, /circular/i)
    client.close()
  })

  test('register and unregister at any time, also during a turn', async () => {
    const client = createClient({
      style: 'scripted',
      builtins: [],
      script: [
        { toolCalls: [{ id: 'a', name: 'adder', args: {} }] },
        { toolCalls: [{ id: 'b', name: 'late', args: { x: 1 } }] },
        { toolCalls: [{ id: 'c', name: 'remover', args: {} }] },
        { toolCalls: [{ id: 'd', name: 'late', args: {} }] },
        { text: 'done' },
      ],
    })
    client.register(tool({ name: 'adder', description: 'a', inputSchema: { type: 'object' }, execute: () => (client.register(echo('late')), 'added') }))
    client.register(tool({ name: 'remover', description: 'r', inputSchema: { type: 'object' }, execute: () => String(client.unregister('late')) }))
    assert.deepEqual(client.tools.sort(), ['adder', 'remover'])
    const result = await client.run('go')
    const results = toolResults(result).map((m) => [m.callId, m.content, m.isError])
    assert.deepEqual(results.slice(0, 3), [
      ['a', 'added', false],
      ['b', '{"x":1}', false],
      ['c', 'true', false],
    ])
    assert.equal(results[3][0], 'd')
    assert.equal(results[3][2], true)
    assert.match(results[3][1], /unknown tool "late"/)
    assert.equal(client.unregister('late'), false)
    client.close()
  })

  test('an invalid tool is refused with core\'s message', () => {
    const client = scripted([])
    assert.throws(() => client.register(echo('bad name!')), /invalid tool/)
    assert.throws(() => client.register({ name: 'x', description: 'x', execute: () => 1 }), /input_schema/)
    client.close()
  })
})

describe('the gate', () => {
  test('beforeTool sees name, args, callId, hints (undefined when unknown) and source', async () => {
    const seen = []
    const client = scripted(['ro', 'plain'], {
      tools: [echo('ro', { hints: { readOnly: true, destructive: false } }), echo('plain')],
      hooks: { beforeTool: (e) => void seen.push(e) },
    })
    await client.run('go')
    assert.equal(seen.length, 2)
    assert.deepEqual(
      { name: seen[0].name, args: seen[0].args, callId: seen[0].callId, source: seen[0].source },
      { name: 'ro', args: { n: 1 }, callId: 'call_1', source: 'host' },
    )
    assert.equal(seen[0].hints.readOnly, true)
    assert.equal(seen[0].hints.destructive, false)
    assert.equal(seen[0].hints.openWorld, undefined)
    assert.equal(seen[1].hints.readOnly, undefined)
    assert.equal(seen[1].hints.destructive, undefined)
    client.close()
  })

  test('every decision shape, sync and async', async () => {
    const decisions = {
      t1: () => undefined,
      t2: async () => deny('no way'),
      t3: () => deny(),
      t4: async () => ({ result: deny('wrapped') }),
      t5: () => ({ result: undefined }),
      t6: () => ({ result: pending({ kind: 'input', prompt: 'Run t6?' }) }),
      t7: async () => pending({ kind: 'approval', prompt: 'Run t7?', data: { why: 'test' } }),
      t8: () => 42,
    }
    const requests = []
    const client = scripted(Object.keys(decisions), {
      tools: Object.keys(decisions).map((n) => echo(n)),
      hooks: { beforeTool: (e) => decisions[e.name]() },
      waitFor: (request) => {
        requests.push(request)
        return request.name === 't6' ? { result: { typed: 'by host' } } : { approve: true }
      },
    })
    const result = await client.run('go')
    const r = toolResults(result).map((m) => [m.name, m.content, m.isError])
    assert.deepEqual(r.slice(0, 7), [
      ['t1', '{"n":1}', false],
      ['t2', 'no way', true],
      ['t3', 'User denied the operation. Please ask for clarification or try a different, less destructive approach.', true],
      ['t4', 'wrapped', true],
      ['t5', '{"n":5}', false],
      ['t6', '{"typed":"by host"}', false],
      ['t7', '{"n":7}', false],
    ])
    assert.equal(r[7][2], true)
    assert.match(r[7][1], /before_tool hook failed: beforeTool must return nothing/)
    assert.deepEqual(
      requests.map((q) => [q.kind, q.prompt, q.name, q.callId, q.args, q.data]),
      [
        ['input', 'Run t6?', 't6', 'call_6', { n: 6 }, undefined],
        ['approval', 'Run t7?', 't7', 'call_7', { n: 7 }, { why: 'test' }],
      ],
    )
    client.close()
  })

  test("the design's deny: an error result, bare or as { result }, refuses the call", async () => {
    const decisions = {
      e1: () => ({ isError: true, content: 'no writes today' }),
      e2: async () => ({ result: { isError: true, content: 'wrapped denial' } }),
      e3: () => ({ isError: true, content: { why: 'json' }, metadata: { rule: 'r1' } }),
      e4: () => ({ isError: true }),
      e5: () => ({ isError: false, content: 'a plain result is no decision' }),
      e6: () => ({ isError: true, content: 'x', surprise: 1 }),
      e7: () => ({ result: deny('one'), other: 2 }),
    }
    const ran = []
    const client = scripted(Object.keys(decisions), {
      tools: Object.keys(decisions).map((n) =>
        tool({ name: n, description: 'Run.', inputSchema: { type: 'object' }, execute: () => (ran.push(n), 'ran') }),
      ),
      hooks: { beforeTool: (e) => decisions[e.name]() },
    })
    const result = await client.run('go')
    assert.equal(result.outcome, 'done')
    assert.deepEqual(ran, [])
    const r = toolResults(result).map((m) => [m.name, m.content, m.isError])
    assert.deepEqual(r.slice(0, 4), [
      ['e1', 'no writes today', true],
      ['e2', 'wrapped denial', true],
      ['e3', '{"why":"json"}', true],
      ['e4', 'User denied the operation. Please ask for clarification or try a different, less destructive approach.', true],
    ])
    for (const [name, content, isError] of r.slice(4)) {
      assert.equal(isError, true, name)
      assert.match(content, /beforeTool must return nothing/, name)
    }
    client.close()
  })

  test('a throwing beforeTool, a rejecting afterTool and a throwing waitFor are error results', async () => {
    const client = scripted(['a', 'b', 'c', 'd'], {
      tools: ['a', 'b', 'c', 'd'].map((n) => echo(n)),
      hooks: {
        beforeTool: (e) => {
          if (e.name === 'a') throw new Error('hook broke')
          if (e.name === 'c') return pending({ kind: 'approval' })
        },
        afterTool: async (e, result) => {
          if (e.name === 'b') throw new Error('after broke')
          if (e.name === 'd') return { content: `replaced ${result.content}`, metadata: { by: 'after' } }
        },
      },
      waitFor: () => {
        throw new Error('wait broke')
      },
    })
    const result = await client.run('go')
    assert.equal(result.outcome, 'done')
    assert.deepEqual(
      toolResults(result).map((m) => [m.content, m.isError]),
      [
        ['before_tool hook failed: hook broke', true],
        ['after_tool hook failed: after broke', true],
        ['wait_for failed: wait broke', true],
        ['replaced {"n":4}\n\n[metadata: {"by":"after"}]', false],
      ],
    )
    client.close()
  })

  test('events report the gate and the answer', async () => {
    const client = scripted(['x'], {
      tools: [echo('x')],
      hooks: { beforeTool: () => pending({ kind: 'approval', prompt: 'ok?', timeoutMs: 10_000 }) },
      waitFor: async () => ({ approve: false, message: 'not today' }),
    })
    const { events, result } = await collect(client.stream('go'))
    const types = events.map((e) => e.type)
    assert.deepEqual(types.filter((t) => ['gate', 'pending', 'answer', 'tool_result', 'turn_end'].includes(t)), [
      'gate',
      'pending',
      'answer',
      'tool_result',
      'turn_end',
    ])
    const byType = Object.fromEntries(events.map((e) => [e.type, e]))
    assert.equal(byType.gate.decision, 'ask')
    assert.equal(byType.pending.request.timeoutMs, 10_000)
    assert.equal(byType.pending.request.callId, 'call_1')
    assert.deepEqual(byType.answer.answer, { approve: false, message: 'not today' })
    assert.equal(byType.tool_result.isError, true)
    assert.equal(byType.tool_result.content, 'not today')
    assert.equal(byType.turn_end.finalText, 'done')
    assert.deepEqual(byType.turn_end.usage, { inputTokens: 0, outputTokens: 0 })
    assert.equal(result.outcome, 'done')
    client.close()
  })
})

describe('cancellation', () => {
  const stalled = (options = {}) =>
    createClient({ style: 'scripted', builtins: [], script: [{ stall: true }], ...options })

  test('a signal aborted before the run: outcome cancelled, no rejection', async () => {
    const client = stalled()
    const result = await client.run('go', { signal: AbortSignal.abort() })
    assert.equal(result.outcome, 'cancelled')
    // A turn cancelled before it began leaves the conversation unchanged (docs/decisions.md).
    assert.deepEqual(result.transcript.messages, [])
    const streamed = await collect(client.stream('again', { signal: AbortSignal.abort() }))
    assert.equal(streamed.result.outcome, 'cancelled')
    assert.equal(streamed.events.at(-1).type, 'turn_end')
    assert.equal(streamed.events.at(-1).outcome, 'cancelled')
    client.close()
  })

  test('a signal aborted during a run: outcome cancelled with its transcript', async () => {
    const client = stalled()
    const controller = new AbortController()
    const started = Date.now()
    const run = client.stream('go', { signal: controller.signal })
    // Aborted while the turn waits for the model, not before it started.
    for await (const e of run) if (e.type === 'request') controller.abort()
    const result = await run.result
    assert.equal(result.outcome, 'cancelled')
    assert.ok(Date.now() - started < 5000)
    assert.equal(result.transcript.length, 1)
    client.close()
  })

  test('aborting during a tool aborts ctx.signal and the call gets the result "cancelled"', async () => {
    let toolSignal
    let seenAbort
    const aborted = new Promise((r) => (seenAbort = r))
    const client = scripted(['slow'], {
      tools: [
        tool({
          name: 'slow',
          description: 's',
          inputSchema: { type: 'object' },
          execute: (_args, { signal }) => {
            toolSignal = signal
            signal.addEventListener('abort', seenAbort, { once: true })
            return new Promise(() => {}) // never settles by itself
          },
        }),
      ],
    })
    const controller = new AbortController()
    const run = client.stream('go', { signal: controller.signal })
    const events = []
    for await (const e of run) {
      events.push(e)
      if (e.type === 'tool_start') controller.abort()
    }
    const result = await run.result
    assert.equal(result.outcome, 'cancelled')
    const [r] = toolResults(result)
    assert.deepEqual([r.content, r.isError], ['cancelled', true])
    // The tool's signal fires (bounded: a signal never aborted fails here, not by the runner's
    // timeout).
    let timer
    const late = new Promise((_, reject) => {
      timer = setTimeout(() => reject(new Error('ctx.signal was not aborted within 10 s')), 10_000)
    })
    await Promise.race([aborted, late]).finally(() => clearTimeout(timer))
    assert.equal(toolSignal.aborted, true)
    client.close()
  })

  test('run.cancel() ends a streamed turn', async () => {
    const client = stalled()
    const run = client.stream('go')
    for await (const e of run) if (e.type === 'request') run.cancel()
    assert.equal((await run.result).outcome, 'cancelled')
    client.close()
  })

  test('waitFor sees its signal abort when the run is cancelled', async () => {
    let waitSignal
    let resolveSeen
    const seen = new Promise((r) => (resolveSeen = r))
    const client = scripted(['x'], {
      tools: [echo('x')],
      hooks: { beforeTool: () => pending({ kind: 'approval', prompt: 'Run x?' }) },
      waitFor: (_request, { signal }) =>
        new Promise((_resolve, reject) => {
          waitSignal = signal
          signal.addEventListener('abort', () => {
            resolveSeen()
            reject(new Error('aborted'))
          })
        }),
    })
    const controller = new AbortController()
    const run = client.stream('go', { signal: controller.signal })
    for await (const e of run) if (e.type === 'pending') controller.abort()
    const result = await run.result
    assert.equal(result.outcome, 'cancelled')
    await seen
    assert.equal(waitSignal.aborted, true)
    client.close()
  })

  test('waitFor sees its signal abort when the ask times out', async () => {
    let seenAbort
    const aborted = new Promise((r) => (seenAbort = r))
    const client = scripted(['x'], {
      tools: [echo('x')],
      hooks: { beforeTool: () => pending({ kind: 'approval', timeoutMs: 30 }) },
      waitFor: (_request, { signal }) =>
        new Promise((resolve) => signal.addEventListener('abort', () => (seenAbort(), resolve({ approve: true })))),
    })
    const result = await client.run('go')
    await aborted
    const [r] = toolResults(result)
    assert.deepEqual([r.content, r.isError], ['Approval timed out. The operation was automatically denied.', true])
    client.close()
  })

  test('close() cancels running turns and refuses new ones', async () => {
    const client = stalled()
    const run = client.stream('go')
    // Closed while the turn waits for the model, not before it started.
    for await (const e of run) if (e.type === 'request') client.close()
    assert.equal((await run.result).outcome, 'cancelled')
    assert.equal(client.closed, true)
    await assert.rejects(client.run('again'), /closed/)
    assert.throws(() => client.stream('again'), /closed/)
  })
})

describe('transcripts', () => {
  test('save, load and continue in a new client', async () => {
    const first = scripted(['echo'], { tools: [echo()] })
    const result = await first.run('hello')
    const saved = JSON.stringify(result.transcript)
    const doc = JSON.parse(saved)
    assert.equal(doc.messages[2].call_id, 'call_1') // core's document, snake_case
    first.close()

    const second = createClient({ style: 'scripted', builtins: [], script: [{ text: 'continued' }] })
    second.setTranscript(saved)
    assert.equal(second.transcript.length, result.transcript.length)
    const next = await second.run('more')
    assert.equal(next.finalText, 'continued')
    assert.deepEqual(next.transcript.messages.slice(0, 4), result.transcript.messages)
    second.setTranscript(Transcript.fromJSON(doc))
    second.setTranscript(result.transcript)
    assert.equal(String(second.transcript), result.transcript.toString())
    second.close()
  })

  test("each result keeps its turn's conversation (snapshots share messages, never change)", async () => {
    const client = createClient({ style: 'scripted', builtins: [], script: [{ text: 'a' }, { text: 'b' }, { text: 'c' }] })
    const one = await client.run('first')
    const two = await client.run('second')
    assert.deepEqual(two.transcript.messages.slice(0, 2), one.transcript.messages)
    const oneSaved = one.transcript.toString()
    // Replacing the conversation, then running on, leaves the earlier snapshots as they were.
    client.setTranscript(one.transcript)
    const three = await client.run('third')
    assert.equal(one.transcript.toString(), oneSaved)
    assert.equal(one.transcript.length, 2)
    assert.equal(two.transcript.length, 4)
    assert.deepEqual(
      three.transcript.messages.map(textOf),
      ['first', 'a', 'third', 'c'],
    )
    assert.deepEqual(
      two.transcript.messages.map(textOf),
      ['first', 'a', 'second', 'b'],
    )
    assert.equal(client.transcript.toString(), three.transcript.toString())
    client.close()
  })

  test('after many turns, replaces and an edit, result k still holds exactly its conversation', async () => {
    // Snapshots are chains of shared segments (src/transcript.rs): each result's transcript must
    // stay what the conversation was after its turn, whatever the client did afterwards.
    const script = Array.from({ length: 120 }, (_, i) => ({ text: `reply ${i}` }))
    const client = createClient({ style: 'scripted', builtins: [], script })
    const results = []
    const saved = []
    const run = async (prompt) => {
      const r = await client.run(prompt)
      results.push(r)
      saved.push(r.transcript.toString())
      return r
    }
    for (let i = 0; i < 60; i++) await run(`turn ${i}`)
    const contents = (r) => r.transcript.messages.map(textOf)
    results.forEach((r, k) => {
      assert.equal(r.transcript.length, 2 * (k + 1))
      assert.deepEqual(
        contents(r),
        Array.from({ length: k + 1 }, (_, i) => [`turn ${i}`, `reply ${i}`]).flat(),
      )
    })
    // Back to the 21st turn's conversation (a snapshot in the middle of the chain), then on.
    client.setTranscript(results[20].transcript)
    const back = await run('after the replace')
    assert.deepEqual(contents(back), [...contents(results[20]), 'after the replace', 'reply 60'])
    // A loaded transcript whose last message differs from the snapshot it came from.
    const doc = JSON.parse(results[30].transcript.toString())
    doc.messages[doc.messages.length - 1].content = 'edited'
    client.setTranscript(doc)
    const edited = await run('after the edit')
    assert.deepEqual(contents(edited), [
      ...contents(results[30]).slice(0, -1),
      'edited',
      'after the edit',
      'reply 61',
    ])
    assert.deepEqual(JSON.parse(edited.transcript.toString()).messages[61].content, [{ type: 'text', text: 'edited' }])
    for (let i = 0; i < 5; i++) await run(`more ${i}`)
    // Every snapshot, JSON byte for byte, as when its result was made.
    results.forEach((r, k) => assert.equal(r.transcript.toString(), saved[k], `result ${k}`))
    assert.equal(client.transcript.toString(), saved[saved.length - 1])
    client.close()
  })

  test('an invalid transcript is refused', () => {
    const bad = { messages: [{ role: 'tool', call_id: 'nope', name: 'x', content: '' }] }
    assert.throws(() => Transcript.fromJSON(bad), /unknown call nope/)
    assert.throws(() => Transcript.fromJSON('not json'), /./)
  })
})

describe('options and models', () => {
  test('camelCase options reach core; unknown and invalid ones are refused with its message', async () => {
    const client = createClient({ style: 'scripted', builtins: [], maxTurns: 1, script: calls('echo', 'echo'), tools: [echo()] })
    assert.equal((await client.run('go')).outcome, 'max_turns')
    client.close()
    assert.throws(() => createClient({ style: 'scripted', script: [], fooBar: 1 }), /unknown option "fooBar"; the options are style, baseUrl/)
    assert.throws(() => createClient({ style: 'openai' }), /model: is missing/)
    assert.throws(() => createClient({ style: 'scripted', script: [], maxTurns: 0 }), /maxTurns: 0 is too small/)
  })

  test('the whole config is checked at creation, named as JavaScript spells it', () => {
    const refused = (options) => {
      let error
      assert.throws(() => createClient(options), (e) => (error = e) instanceof esm.ConfigurationError)
      assert.ok(error instanceof esm.ContenoxError && error instanceof Error)
      assert.doesNotMatch(error.message, /line \d|column/)
      return error
    }
    const style = refused({ style: 'nope' })
    assert.equal(style.message, 'invalid configuration: style: "nope" is not one of openai, anthropic, ollama, scripted')
    assert.deepEqual([style.option, style.value], ['style', '"nope"'])
    const typo = refused({ style: 'scripted', script: [{ txt: 'x' }] })
    assert.equal(typo.option, 'script[0]')
    assert.match(typo.reason, /^unknown key "txt"; the keys are text, toolCalls, error, stall, usage, breakAfterBytes, stopReason$/)
    assert.equal(refused({ style: 'scripted', script: [{ text: 'a' }, {}] }).option, 'script[1]')
    const url = refused({ style: 'openai', model: 'm', baseUrl: 'not a url' })
    assert.deepEqual([url.option, url.value], ['baseUrl', '"not a url"'])
    assert.equal(refused({ style: 'scripted', script: [{ text: 'a' }], retry: { maxRetries: 'x' } }).option, 'retry.maxRetries')
    assert.equal(refused({ style: 'scripted', script: [{ toolCalls: [{ id: 'c' }] }] }).option, 'script[0].toolCalls[0]')
  })

  test('misuse has its own error class', async () => {
    const client = createClient({ style: 'scripted', builtins: [], script: [{ stall: true }] })
    const run = client.stream('wait')
    for await (const e of run) if (e.type === 'request') break
    assert.throws(() => client.setTranscript(Transcript.fromJSON({ messages: [] })), esm.BusyError)
    run.cancel()
    assert.equal((await run.result).outcome, 'cancelled')
    client.close()
    await assert.rejects(client.run('after'), esm.ClosedError)
    assert.throws(() => Transcript.fromJSON({ messages: [{ role: 'tool', call_id: 'x', name: 'y', content: '' }] }), esm.TranscriptError)
  })

  test('a transport error keeps its causes as cause', async () => {
    const { createServer } = await import('node:net')
    const probe = createServer()
    await new Promise((ok) => probe.listen(0, '127.0.0.1', ok))
    const { port } = probe.address()
    await new Promise((ok) => probe.close(ok)) // nobody listens there now
    const error = await esm.listModels({ style: 'openai', model: 'm', apiKey: 'k', baseUrl: `http://127.0.0.1:${port}/v1` }).then(
      () => assert.fail('listModels should fail'),
      (e) => e,
    )
    assert.ok(error instanceof esm.TransportError && error instanceof esm.ModelError, String(error))
    assert.equal(error.message, 'could not reach the model server')
    const chain = []
    for (let c = error.cause; c !== undefined; c = c.cause) chain.push(c)
    assert.ok(chain.length >= 2, String(chain))
    assert.ok(chain.every((c) => c instanceof esm.ContenoxCause))
    assert.ok(chain.some((c) => /refused/i.test(c.message)), chain.map(String).join(' / '))
  })

  test('a per-run allowlist narrows the tools', async () => {
    const client = scripted(['echo'], { tools: [echo()] })
    const result = await client.run('go', { allow: ['!echo'] })
    assert.match(toolResults(result)[0].content, /unknown tool/)
    client.close()
  })

  test('listModels against a real wire (fake server) and for the scripted style', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'contenox-node-models-'))
    const file = join(dir, 'models.json')
    writeFileSync(
      file,
      JSON.stringify({ name: 'models', style: 'openai', model: [{ text: 'hi' }], prompt: 'p', expect: {} }),
    )
    const server = await startFakeServer(file)
    try {
      const options = { style: 'openai', baseUrl: `${server.root}/v1`, model: 'fake', apiKey: 'test' }
      const models = await esm.listModels(options)
      assert.ok(models.length > 0 && models.every((m) => typeof m.id === 'string'))
      const client = createClient(options)
      assert.deepEqual(await client.listModels(), models)
      client.close()
    } finally {
      await server.stop()
      rmSync(dir, { recursive: true, force: true })
    }
    assert.deepEqual(await esm.listModels({ style: 'scripted', script: [], model: 'm1' }), [{ id: 'm1' }])
  })
})

describe('entry points', () => {
  test('import and require give the same module', () => {
    const cjs = createRequire(import.meta.url)('contenox')
    assert.deepEqual(Object.keys(esm).sort(), Object.keys(cjs).sort())
    assert.equal(esm.Client, cjs.Client)
    assert.equal(esm.createClient, cjs.createClient)
  })
})

describe('mcp', () => {
  test('a server that cannot start is reported to onServer before loadMcp resolves, and left out', async () => {
    const reports = []
    const source = await loadMcp(
      { mcpServers: { broken: { command: '/nonexistent/contenox-test-server', args: [] } } },
      { onServer: (name, state) => reports.push([name, state.state]) },
    )
    assert.deepEqual(reports, [['broken', 'failed']])
    const [server] = source.servers()
    assert.equal(server.name, 'broken')
    assert.equal(server.state.state, 'failed')
    assert.ok(server.state.error.length > 0)
    assert.deepEqual(source.tools(), [])
    const client = scripted([])
    source.registerInto(client)
    for (const t of source.resourceTools()) client.register(t)
    assert.deepEqual(client.tools.sort(), ['list_mcp_resources', 'read_mcp_resource'])
    assert.equal(source.closed, false)
    client.close() // stops the servers of a source registered into it (its closed may follow)
    await source.close()
    assert.equal(source.closed, true)
    await source.close() // idempotent
  })

  test('an invalid MCP config is refused with core\'s message', async () => {
    await assert.rejects(loadMcp('{"servers": 1}'), /mcp|config|field/i)
  })
})

test('a reply that stops short says why: a stop event and result.stopReason', async () => {
  const client = createClient({ style: 'scripted', builtins: [],
    script: [{ text: "I can't help with that.", stopReason: 'refusal' }, { text: 'ok' }] })
  const run = client.stream('x')
  const stops = []
  for await (const e of run) if (e.type === 'stop') stops.push(e.reason)
  const r = await run.result
  assert.deepEqual(stops, ['refusal'])
  assert.equal(r.stopReason, 'refusal')
  assert.equal(r.finalText, "I can't help with that.")
  assert.equal((await client.run('again')).stopReason, undefined)
  client.close()
})
