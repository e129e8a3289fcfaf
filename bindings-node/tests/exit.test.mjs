// The process exits by itself: callbacks are weak, so neither an idle client nor a callback that
// never settles keeps Node alive once the client is closed. Each case runs in a child process.
import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import { once } from 'node:events'
import { test } from 'node:test'

import { packageDir } from './helpers.mjs'

/** Run `body` as an ES module in a child Node; it must exit by itself within `ms`. */
async function child(body, ms = 10_000) {
  const proc = spawn(process.execPath, ['--input-type=module', '-e', body], {
    cwd: packageDir,
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  let out = ''
  let err = ''
  proc.stdout.on('data', (d) => (out += d))
  proc.stderr.on('data', (d) => (err += d))
  const timer = setTimeout(() => proc.kill('SIGKILL'), ms)
  const [code, signal] = await once(proc, 'exit')
  clearTimeout(timer)
  assert.equal(signal, null, `the child did not exit by itself within ${ms} ms; stdout: ${out} stderr: ${err}`)
  return { code, out, err }
}

const prelude = `
import { createClient, tool, pending } from 'contenox'
const never = () => new Promise(() => {})
// Settles when the callback under test is running: close() comes then, not after a guess.
let called
const calling = new Promise((r) => (called = r))
`

test('a pending waitFor does not keep the process alive after close()', async () => {
  const { code, out, err } = await child(`${prelude}
const client = createClient({
  style: 'scripted', builtins: [],
  script: [{ toolCalls: [{ id: 'c1', name: 'x', args: {} }] }, { text: 'unreachable' }],
  tools: [tool({ name: 'x', description: 'x', inputSchema: { type: 'object' }, execute: () => 'ran' })],
  hooks: { beforeTool: () => pending({ kind: 'approval', prompt: 'Run x?' }) },
  waitFor: never,
})
const run = client.stream('go')
for await (const e of run) if (e.type === 'pending') client.close()
console.log('outcome', (await run.result).outcome)
`)
  assert.equal(code, 0, err)
  assert.match(out, /outcome cancelled/)
})

test('a host tool that never settles does not keep the process alive after close()', async () => {
  const { code, out, err } = await child(`${prelude}
const client = createClient({
  style: 'scripted', builtins: [],
  script: [{ toolCalls: [{ id: 'c1', name: 'hang', args: {} }] }, { text: 'unreachable' }],
  tools: [tool({ name: 'hang', description: 'h', inputSchema: { type: 'object' }, execute: () => (called(), never()) })],
  hooks: { beforeTool: () => undefined },
})
const result = client.run('go')
await calling
client.close()
console.log('outcome', (await result).outcome)
`)
  assert.equal(code, 0, err)
  assert.match(out, /outcome cancelled/)
})

test('a websearch provider that never settles does not keep the process alive after close()', async () => {
  const { code, out, err } = await child(`${prelude}
const client = createClient({
  style: 'scripted', builtins: [],
  script: [{ toolCalls: [{ id: 'c1', name: 'websearch', args: { query: 'forever' } }] }, { text: 'unreachable' }],
  websearch: () => (called(), never()),
})
const result = client.run('go')
await calling
client.close()
console.log('outcome', (await result).outcome)
`)
  assert.equal(code, 0, err)
  assert.match(out, /outcome cancelled/)
})

test('an idle client with callbacks does not keep the process alive', async () => {
  const { code, out, err } = await child(`${prelude}
const client = createClient({
  style: 'scripted', builtins: [], script: [{ text: 'hello' }],
  hooks: { beforeTool: () => undefined, afterTool: () => undefined },
  waitFor: () => ({ approve: true }),
  tools: [tool({ name: 'x', description: 'x', inputSchema: { type: 'object' }, execute: () => 1 })],
})
console.log('final', (await client.run('go')).finalText)
`)
  assert.equal(code, 0, err)
  assert.match(out, /final hello/)
})

test('a throwing hook and a rejecting tool leave the process running to a clean exit', async () => {
  const { code, out, err } = await child(`${prelude}
const client = createClient({
  style: 'scripted', builtins: [],
  script: [
    { toolCalls: [{ id: 'c1', name: 'bad', args: {} }] },
    { toolCalls: [{ id: 'c2', name: 'ok', args: {} }] },
    { text: 'survived' },
  ],
  tools: [
    tool({ name: 'bad', description: 'b', inputSchema: { type: 'object' }, execute: async () => { throw new Error('rejected') } }),
    tool({ name: 'ok', description: 'o', inputSchema: { type: 'object' }, execute: () => 'fine' }),
  ],
  hooks: { beforeTool: (e) => { if (e.name === 'ok') throw new Error('hook threw') } },
})
const r = await client.run('go')
console.log(r.finalText, r.transcript.messages.filter((m) => m.role === 'tool').map((m) => m.content.map((p) => p.text).join('')).join('|'))
client.close()
`)
  assert.equal(code, 0, err)
  assert.match(out, /survived rejected\|before_tool hook failed: hook threw/)
})
