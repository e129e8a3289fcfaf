// The SSE server example as a browser uses it: the real program in its own process, real HTTP
// requests on loopback, the event stream read to turn_end; a browser that leaves mid-turn
// cancels the turn; SIGTERM stops the server. Every process a test starts is gone when it ends.
import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import { once } from 'node:events'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createInterface } from 'node:readline'
import { test } from 'node:test'
import { fileURLToPath } from 'node:url'

const program = fileURLToPath(new URL('../build/sse_server.js', import.meta.url))

/** A child process whose stdout lines can be awaited; killed (and awaited) by `stop()`. */
function start(command, args, env = {}) {
  const child = spawn(command, args, { stdio: ['pipe', 'pipe', 'inherit'], env: { ...process.env, ...env } })
  const lines = []
  const waiters = []
  createInterface({ input: child.stdout }).on('line', (line) => {
    lines.push(line)
    for (const w of [...waiters]) if (w.re.test(line)) w.resolve(line)
  })
  const exited = once(child, 'exit')
  return {
    child,
    lines,
    exited,
    /** The first stdout line matching `re` (past or future), within `ms`. */
    line(re, ms = 20_000) {
      const seen = lines.find((l) => re.test(l))
      if (seen) return Promise.resolve(seen)
      return new Promise((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`no line matching ${re} within ${ms} ms; got:\n${lines.join('\n')}`)), ms)
        waiters.push({ re, resolve: (l) => { clearTimeout(timer); resolve(l) } })
      })
    },
    async stop() {
      if (child.exitCode !== null || child.signalCode !== null) return
      child.kill('SIGKILL')
      await exited
    },
  }
}

async function startExample(t, env = {}) {
  const server = start(process.execPath, [program], { PORT: '0', CONTENOX_BASE_URL: '', ...env })
  t.after(() => server.stop())
  const line = await server.line(/^listening on /)
  return { server, base: line.slice('listening on '.length) }
}

/** Reads server-sent events from a fetch response until `until(event)` or the stream ends. */
async function readEvents(response, until = () => false) {
  const events = []
  const decoder = new TextDecoder()
  let buffer = ''
  for await (const chunk of response.body) {
    buffer += decoder.decode(chunk, { stream: true })
    let end
    while ((end = buffer.indexOf('\n\n')) >= 0) {
      const block = buffer.slice(0, end)
      buffer = buffer.slice(end + 2)
      const type = /^event: (.*)$/m.exec(block)?.[1]
      const data = /^data: (.*)$/m.exec(block)?.[1]
      assert.ok(type && data, `not an SSE event: ${JSON.stringify(block)}`)
      const event = JSON.parse(data)
      assert.equal(event.type, type)
      events.push(event)
      if (until(event)) return events
    }
  }
  return events
}

test('a turn streams to the browser as server-sent events, ending with turn_end', async (t) => {
  const { base } = await startExample(t)

  const page = await fetch(base)
  assert.equal(page.status, 200)
  assert.match(page.headers.get('content-type'), /^text\/html/)
  assert.match(await page.text(), /new EventSource\('\/turn\?prompt='/)

  const response = await fetch(`${base}turn?prompt=${encodeURIComponent('Weather in Oslo?')}`)
  assert.equal(response.status, 200)
  assert.match(response.headers.get('content-type'), /^text\/event-stream/)
  const events = await readEvents(response)
  const types = events.map((e) => e.type)
  assert.equal(types[0], 'turn_start')
  assert.equal(events[0].prompt, 'Weather in Oslo?')
  for (const type of ['tool_call', 'gate', 'tool_start', 'tool_result', 'text_delta', 'text'])
    assert.ok(types.includes(type), `${type} missing from ${types}`)
  assert.ok(types.indexOf('tool_result') < types.indexOf('text'), types.join(' '))
  const result = events.find((e) => e.type === 'tool_result')
  assert.equal(result.name, 'weather')
  assert.match(result.content, /"sky":"clear"/)
  const end = events.at(-1)
  assert.equal(end.type, 'turn_end', 'the stream ends with turn_end')
  assert.equal(types.filter((x) => x === 'turn_end').length, 1)
  assert.equal(end.outcome, 'done')
  assert.equal(end.finalText, 'It is clear and 21 °C in Oslo.')
})

test('bad requests get a status, not a turn', async (t) => {
  const { base } = await startExample(t)
  assert.equal((await fetch(`${base}turn`)).status, 400)
  assert.equal((await fetch(`${base}turn?prompt=%20`)).status, 400)
  assert.equal((await fetch(`${base}turn?prompt=${'x'.repeat(4001)}`)).status, 400)
  assert.equal((await fetch(`${base}turn?prompt=hi`, { method: 'POST' })).status, 405)
  assert.equal((await fetch(`${base}nope`)).status, 404)
})

test('a browser leaving mid-turn cancels the turn; SIGTERM stops the server', async (t) => {
  // A model that accepts the request and never answers: the turn waits until cancelled.
  const fakeServer = process.env.FAKE_MODEL_SERVER
  assert.ok(fakeServer, 'FAKE_MODEL_SERVER (the conformance harness binary) must be set')
  const dir = mkdtempSync(join(tmpdir(), 'contenox-sse-'))
  t.after(() => rmSync(dir, { recursive: true, force: true }))
  const scenario = join(dir, 'stall.json')
  writeFileSync(scenario, JSON.stringify({ name: 'stall', style: 'openai', prompt: 'p', model: [{ stall: true }] }))
  const model = start(fakeServer, ['--scenario', scenario])
  t.after(() => model.stop())
  const port = Number(await model.line(/^\d+$/))

  const { server, base } = await startExample(t, { CONTENOX_BASE_URL: `http://127.0.0.1:${port}/v1`, CONTENOX_MODEL: 'fake' })
  const browser = new AbortController()
  const response = await fetch(`${base}turn?prompt=wait`, { signal: browser.signal })
  const seen = await readEvents(response, (e) => e.type === 'request')
  assert.deepEqual(seen.map((e) => e.type), ['turn_start', 'request'])
  browser.abort() // the tab closes
  await server.line(/^browser left: turn cancelled$/)
  await server.line(/^turn cancelled: /)

  server.child.kill('SIGTERM')
  const [code, signal] = await server.exited
  assert.equal(signal, null, 'the server exits by itself on SIGTERM')
  assert.equal(code, 0)
  model.child.stdin.end() // the fake model server exits on stdin EOF
  await model.exited
})
