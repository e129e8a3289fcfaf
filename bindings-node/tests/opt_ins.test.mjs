// The opt-in builtins that need the host: a web search provider (`websearch`), sync or async,
// a function or an object, throwing, rejecting or aborted; and the background shells of a
// client (`background: true`, `client.backgroundShells()`), killed by `close()`.
import assert from 'node:assert/strict'
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, before, describe, test } from 'node:test'

import { BackgroundShells, createClient } from 'contenox'

import { textOf } from './helpers.mjs'

const RUST = '1. Rust\n   https://www.rust-lang.org/\n   A language empowering everyone.\n'
const TOKIO = '2. Tokio\n   https://tokio.rs/\n   An asynchronous runtime.\n'
const RESULTS = [
  { title: 'Rust', url: 'https://www.rust-lang.org/', snippet: 'A language empowering everyone.' },
  { title: 'Tokio', url: 'https://tokio.rs/', snippet: 'An asynchronous runtime.' },
  { title: 'Blog', url: 'https://blog.example.com/rust' },
]

const call = (name, args, id = 'call_1') => ({ toolCalls: [{ id, name, args }] })
const scripted = (script, options = {}) => createClient({ style: 'scripted', builtins: [], script, ...options })
// Tool results with their text as `content`.
const toolResults = (result) =>
  result.transcript.messages.filter((m) => m.role === 'tool').map((m) => ({ ...m, content: textOf(m) }))
const sleep = (ms) => new Promise((r) => setTimeout(r, ms))

async function waitUntil(what, check, ms = 10_000) {
  const deadline = Date.now() + ms
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting until ${what}`)
    await sleep(20)
  }
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

describe('websearch', () => {
  const shapes = (seen) => ({
    sync: (request) => (seen.push(request), RESULTS),
    async: async (request, { signal }) => {
      assert.equal(signal.aborted, false)
      await sleep(1)
      seen.push(request)
      return RESULTS
    },
    object: {
      prefix: 'kept',
      async search(request) {
        assert.equal(this.prefix, 'kept') // called as a method
        seen.push(request)
        return RESULTS
      },
    },
  })

  for (const shape of ['sync', 'async', 'object']) {
    test(`${shape} provider: results numbered with title, URL and snippet`, async () => {
      const seen = []
      const client = scripted(
        [
          call('websearch', { query: 'rust async' }),
          call('websearch', { query: 'rust', max_results: 1, blocked_domains: ['rust-lang.org'] }, 'call_2'),
          { text: 'ok' },
        ],
        { websearch: shapes(seen)[shape] },
      )
      assert.deepEqual(client.tools, ['websearch'])
      const result = await client.run('search')
      assert.equal(result.outcome, 'done')
      assert.equal(result.finalText, 'ok')
      const [first, second] = toolResults(result)
      assert.equal(first.isError, false)
      assert.equal(first.content, `${RUST}\n${TOKIO}\n3. Blog\n   https://blog.example.com/rust\n`)
      assert.equal(second.isError, false)
      assert.ok(second.content.startsWith('1. Tokio\n'), second.content)
      assert.ok(!second.content.includes('2. '), second.content)
      assert.deepEqual(seen, [
        { query: 'rust async', maxResults: 10, allowedDomains: [], blockedDomains: [] },
        { query: 'rust', maxResults: 1, allowedDomains: [], blockedDomains: ['rust-lang.org'] },
      ])
      client.close()
    })
  }

  test('a throwing and a rejecting provider become error results; the turn goes on', async () => {
    const failing = {
      sync: () => {
        throw new Error('quota exceeded')
      },
      async: async () => {
        throw new TypeError('rejected here')
      },
      plain: () => Promise.reject('a plain string'),
    }
    const client = scripted(
      [
        call('websearch', { query: 'sync' }, 'a'),
        call('websearch', { query: 'async' }, 'b'),
        call('websearch', { query: 'plain' }, 'c'),
        call('websearch', { query: 'fine' }, 'd'),
        { text: 'still alive' },
      ],
      { websearch: (request) => (failing[request.query] ?? (() => RESULTS))() },
    )
    const result = await client.run('go')
    assert.equal(result.outcome, 'done')
    assert.equal(result.finalText, 'still alive')
    const r = toolResults(result).map((m) => [m.content, m.isError])
    assert.deepEqual(r.slice(0, 3), [
      ['web search failed: quota exceeded', true],
      ['web search failed: rejected here', true],
      ['web search failed: a plain string', true],
    ])
    assert.ok(r[3][0].startsWith(RUST))
    assert.equal(r[3][1], false)
    client.close()
  })

  test('a result that is not a list of results is a clear error result', async () => {
    const returned = [{ title: 'x', url: 'y' }, 'not a list', null, [{ title: 'x' }], [{ title: 'x', url: 3 }]]
    const client = scripted([...returned.map((_, i) => call('websearch', { query: `q${i}` }, `c${i}`)), { text: 'ok' }], {
      websearch: (request) => returned[Number(request.query.slice(1))],
    })
    const result = await client.run('go')
    assert.equal(result.outcome, 'done')
    for (const m of toolResults(result)) {
      assert.equal(m.isError, true)
      assert.match(m.content, /^web search failed: websearch (must return a list of \{title, url, snippet\} results, not |result 0: )/)
    }
    client.close()
  })

  test('the provider\'s signal aborts when the turn is cancelled', async () => {
    let aborted = false
    let started
    const startedP = new Promise((r) => (started = r))
    const client = scripted([call('websearch', { query: 'slow' }), { text: 'unreachable' }], {
      websearch: (_request, { signal }) =>
        new Promise((resolve) => {
          started()
          signal.addEventListener('abort', () => ((aborted = true), resolve([])), { once: true })
        }),
    })
    const controller = new AbortController()
    const pending = client.run('go', { signal: controller.signal })
    await startedP
    controller.abort()
    const result = await pending
    assert.equal(result.outcome, 'cancelled')
    await waitUntil('the signal aborts', () => aborted)
    assert.equal(toolResults(result)[0].content, 'cancelled')
    client.close()
  })

  test("webSearch, the design's spelling, is the same option", async () => {
    const seen = []
    const client = scripted([call('websearch', { query: 'rust' }), { text: 'ok' }], {
      webSearch: (request) => (seen.push(request.query), RESULTS),
    })
    const result = await client.run('search')
    assert.deepEqual(seen, ['rust'])
    assert.equal(toolResults(result)[0].content, RUST + '\n' + TOKIO + '\n3. Blog\n   https://blog.example.com/rust\n')
    client.close()
    assert.throws(
      () => scripted([], { webSearch: () => [], websearch: () => [] }),
      (e) => e.name === 'ConfigurationError' && /webSearch or websearch/.test(e.message),
    )
  })

  test('misconfigured: not a provider, or the builtin without one', () => {
    assert.throws(() => scripted([], { websearch: 42 }), /websearch must be a function/)
    assert.throws(() => scripted([], { websearch: { find() {} } }), /websearch must be a function/)
    assert.throws(() => scripted([], { builtins: ['websearch'] }), /web search provider/)
    const client = scripted([], { websearch: false })
    assert.deepEqual(client.tools, [])
    client.close()
  })
})

describe('background shells', () => {
  const hasProc = existsSync('/proc/self/cmdline')

  /** Live processes whose command line holds `marker` (zombies have an empty one). */
  function pidsRunning(marker) {
    const pids = []
    for (const entry of readdirSync('/proc')) {
      if (!/^\d+$/.test(entry) || Number(entry) === process.pid) continue
      let cmdline
      try {
        cmdline = readFileSync(`/proc/${entry}/cmdline`, 'latin1')
      } catch {
        continue
      }
      if (cmdline.includes(marker)) pids.push(Number(entry))
    }
    return pids
  }

  /** A command that runs until killed, and a marker unique to its processes. */
  function sleeper() {
    const marker = (300 + Math.random()).toFixed(9)
    return [`sleep ${marker}; echo never`, marker]
  }

  function backgroundClient(root, ...commands) {
    return scripted(
      [...commands.map((command, i) => call('bash', { command, run_in_background: true }, `call_${i}`)), { text: 'started' }],
      { builtins: ['bash'], background: true, root },
    )
  }

  let root
  before(() => {
    root = mkdtempSync(join(tmpdir(), 'contenox-node-shells-'))
  })
  after(() => rmSync(root, { recursive: true, force: true }))

  test('off: backgroundShells() is undefined', () => {
    const client = scripted([], { builtins: ['bash'] })
    assert.equal(client.backgroundShells(), undefined)
    client.close()
  })

  test('ids and status; close() kills the process', { skip: !hasProc && 'needs /proc' }, async () => {
    const [command, marker] = sleeper()
    const client = backgroundClient(root, 'echo quick', command)
    const shells = client.backgroundShells()
    assert.ok(shells instanceof BackgroundShells)
    assert.deepEqual(shells.ids(), [])
    const result = await client.run('start them')
    assert.equal(result.outcome, 'done')
    assert.deepEqual(
      toolResults(result).map((m) => m.content.split('.')[0]),
      ['Started in the background as shell shell_1', 'Started in the background as shell shell_2'],
    )
    assert.deepEqual(shells.ids(), ['shell_1', 'shell_2'])
    await waitUntil('shell_1 exits', () => shells.status('shell_1') === 'exited 0')
    assert.equal(shells.status('shell_2'), 'running')
    assert.equal(shells.status('shell_3'), undefined)
    assert.equal(shells.status('nonsense'), undefined)
    await waitUntil('the sleeper runs', () => pidsRunning(marker).length > 0)

    client.close()
    await waitUntil('the sleeper is gone', () => pidsRunning(marker).length === 0)
    await waitUntil('shell_2 reads killed', () => shells.status('shell_2') === 'killed')
    assert.equal(shells.status('shell_1'), 'exited 0')
    assert.deepEqual(client.backgroundShells().ids(), ['shell_1', 'shell_2']) // still readable after close
  })

  test('host-owned: new BackgroundShells() shared by clients; close() ends only what its turns started', { skip: !hasProc && 'needs /proc' }, async () => {
    const shells = new BackgroundShells()
    assert.deepEqual(shells.ids(), [])
    assert.equal(shells.status('shell_1'), undefined)
    const [commandA, markerA] = sleeper()
    const [commandB, markerB] = sleeper()
    const sharing = (command) =>
      scripted([call('bash', { command, run_in_background: true }), { text: 'started' }], {
        builtins: ['bash'],
        background: shells,
        root,
      })
    const a = sharing(commandA)
    const b = sharing(commandB)
    assert.equal((await a.run('start')).outcome, 'done')
    assert.equal((await b.run('start')).outcome, 'done')
    assert.deepEqual(shells.ids(), ['shell_1', 'shell_2'])
    assert.deepEqual(a.backgroundShells().ids(), shells.ids()) // the same shells, not a copy
    await waitUntil('both sleepers run', () => pidsRunning(markerA).length > 0 && pidsRunning(markerB).length > 0)

    a.close()
    await waitUntil("a's sleeper is gone", () => pidsRunning(markerA).length === 0)
    assert.ok(pidsRunning(markerB).length > 0, "closing a killed b's shell")
    assert.equal(shells.status('shell_2'), 'running')

    shells.closeAll() // the host's shutdown
    await waitUntil("b's sleeper is gone", () => pidsRunning(markerB).length === 0)
    await waitUntil('shell_2 reads killed', () => shells.status('shell_2') === 'killed')
    assert.equal(b.closed, false)
    b.close()
  })

  test('closeAll() kills the shells and keeps the client', { skip: !hasProc && 'needs /proc' }, async () => {
    const [command, marker] = sleeper()
    const client = backgroundClient(root, command)
    await client.run('start')
    const shells = client.backgroundShells()
    await waitUntil('the sleeper runs', () => pidsRunning(marker).length > 0)
    shells.closeAll()
    await waitUntil('the sleeper is gone', () => pidsRunning(marker).length === 0)
    await waitUntil('shell_1 reads killed', () => shells.status('shell_1') === 'killed')
    assert.equal(client.closed, false)
    client.close()
  })
})
