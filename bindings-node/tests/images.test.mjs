// Prompts with images through the JavaScript API: a Uint8Array, a Buffer and base64 text reach
// the request as the style takes images; a file beneath the root is read by its bytes; every
// bad part is a ConfigurationError naming it (the engine's check, the same in every binding).
import assert from 'node:assert/strict'
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, before, describe, test } from 'node:test'

import { ConfigurationError, createClient, tool, ToolOutput } from 'contenox'

import { startFakeServer } from './helpers.mjs'

const PNG_B64 = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAIAAACQd1PeAAAADElEQVR4nGP4z8AAAAMBAQDJ/pLvAAAAAElFTkSuQmCC'
const PNG = Buffer.from(PNG_B64, 'base64')
// A GIF with no colour table: its bytes decide its type, whatever its file's name.
const GIF = Buffer.from('GIF89a\x01\x00\x01\x00\x00\x00\x00,\x00\x00\x00\x00\x01\x00\x01\x00\x00\x02\x00;', 'latin1')

/** The bytes of `big` from `at` on, as a view whose buffer holds more than the image. */
const viewInto = (big, at) => new Uint8Array(big.buffer, big.byteOffset + at, big.length - at)

describe('image prompts', () => {
  let dir, root, server
  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'contenox-node-images-'))
    root = join(dir, 'root')
    mkdirSync(root)
    writeFileSync(join(root, 'shot.png'), GIF)
    writeFileSync(join(root, 'notes.png'), 'not an image')
    writeFileSync(join(dir, 'secret.png'), PNG)
    const file = join(dir, 's.json')
    const model = [1, 2, 3, 4].map(() => ({ text: 'A square.' }))
    writeFileSync(file, JSON.stringify({ name: 'images', style: 'anthropic', model, prompt: 'p', expect: {} }))
    server = await startFakeServer(file)
  })
  after(async () => {
    await server.stop()
    rmSync(dir, { recursive: true, force: true })
  })
  const client = () =>
    createClient({ style: 'anthropic', baseUrl: server.root, model: 'fake', apiKey: 'test', builtins: [], root })

  for (const [name, data] of [
    ['Buffer', PNG],
    ['Uint8Array', new Uint8Array(PNG)],
    ['a Uint8Array view into a larger buffer', viewInto(Buffer.concat([Buffer.from('xx'), PNG]), 2)],
    ['base64 text', PNG_B64],
  ]) {
    test(`image data as ${name} reaches the request`, async () => {
      const before = (await server.requests()).length
      const c = client()
      const r = await c.run([
        { type: 'text', text: 'What is this?' },
        { type: 'image', data },
        { type: 'image', path: 'shot.png' },
      ])
      c.close()
      assert.equal(r.outcome, 'done', r.error)
      const req = (await server.requests())[before]
      const content = req.messages[0].content
      assert.equal(content[0].text, 'What is this?')
      assert.deepEqual(
        content.filter((b) => b.type === 'image').map((b) => b.source),
        [
          { type: 'base64', media_type: 'image/png', data: PNG_B64 },
          { type: 'base64', media_type: 'image/gif', data: GIF.toString('base64') },
        ],
      )
    })
  }

  test('bad parts are ConfigurationErrors naming the part; nothing is sent', async () => {
    const before = (await server.requests()).length
    const c = client()
    for (const [prompt, option, says] of [
      [[{ type: 'video', path: 'a.mp4' }], 'prompt[0].type', "is not a prompt part's type"],
      [[{ type: 'image', data: 'no base64!' }], 'prompt[0].data', 'not base64'],
      [[{ type: 'image', data: new Uint8Array() }], 'prompt[0].data', 'empty'],
      [[{ type: 'image', data: Buffer.from('hello') }], 'prompt[0].data', 'not image/png'],
      [[{ type: 'image', data: PNG, media_type: 'image/gif' }], 'prompt[0].media_type', 'bytes are image/png'],
      [[{ type: 'text', text: 'a' }, { type: 'image', path: '../secret.png' }], 'prompt[1].path', 'outside'],
      [[{ type: 'image', path: 'notes.png' }], 'prompt[0].path', 'not a PNG'],
      [[{ type: 'image', path: 'missing.png' }], 'prompt[0].path', 'missing.png'],
      [42, 'prompt', 'a string or a list of parts'],
    ]) {
      for (const start of [() => c.stream(prompt), () => c.run(prompt)]) {
        await assert.rejects(
          async () => start(),
          (e) => e instanceof ConfigurationError && e.option === option && e.message.includes(says),
          `${JSON.stringify(prompt)}`,
        )
      }
    }
    c.close()
    assert.equal((await server.requests()).length, before)
  })
})

test('an image read by read survives an afterTool copy', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'contenox-node-read-image-'))
  writeFileSync(join(dir, 'shot.png'), GIF)
  const seen = []
  const client = createClient({
    style: 'scripted',
    builtins: ['read'],
    root: dir,
    script: [{ toolCalls: [{ id: 'c1', name: 'read', args: { path: 'shot.png' } }] }, { text: 'a pixel' }],
    hooks: {
      afterTool: (e, result) => {
        seen.push(result)
        return { ...result, metadata: { seen: true } }
      },
    },
  })
  const r = await client.run('look')
  client.close()
  rmSync(dir, { recursive: true, force: true })
  const b64 = GIF.toString('base64')
  assert.deepEqual(seen[0].images, [{ media_type: 'image/gif', data: b64 }])
  const tool = r.transcript.messages.find((m) => m.role === 'tool')
  assert.ok(
    tool.content.some((p) => p.type === 'image' && p.data === b64),
    JSON.stringify(tool),
  )
  assert.match(JSON.stringify(tool), /seen/)
})

test('a host tool returns images in a ToolOutput, checked by the engine', async () => {
  const client = createClient({
    style: 'scripted',
    builtins: [],
    script: [
      {
        toolCalls: [
          { id: 'c1', name: 'good', args: {} },
          { id: 'c2', name: 'bad', args: {} },
          { id: 'c3', name: 'plain', args: {} },
        ],
      },
      { text: 'seen' },
    ],
  })
  const schema = { type: 'object', properties: {} }
  // Bytes as a Buffer, and as base64 text labelled with a type the bytes are not.
  client.register(tool({
    name: 'good', description: 'A screenshot.', inputSchema: schema,
    execute: () => new ToolOutput({ content: 'the screen', images: [{ mediaType: 'image/png', data: PNG }] }),
  }))
  client.register(tool({
    name: 'bad', description: 'A mislabelled screenshot.', inputSchema: schema,
    execute: async () => new ToolOutput({ content: 'the screen', images: [{ mediaType: 'image/gif', data: PNG_B64 }] }),
  }))
  // A plain object that looks like a result is still only content.
  client.register(tool({
    name: 'plain', description: 'JSON.', inputSchema: schema,
    execute: () => ({ content: 'x', images: [{ media_type: 'image/png', data: PNG_B64 }] }),
  }))
  const r = await client.run('look')
  client.close()
  const tools = r.transcript.messages.filter((m) => m.role === 'tool')
  assert.equal(tools.length, 3)
  assert.ok(
    tools[0].content.some((p) => p.type === 'image' && p.mediaType === 'image/png' && p.data === PNG_B64),
    JSON.stringify(tools[0]),
  )
  assert.equal(tools[0].isError, false)
  assert.equal(tools[1].isError, true)
  assert.match(JSON.stringify(tools[1]), /bytes are image\/png, not image\/gif/)
  assert.ok(!tools[2].content.some((p) => p.type === 'image'), JSON.stringify(tools[2]))
  assert.equal(tools[2].isError, false)
})

test('a ToolOutput the engine cannot read is an error result; the turn goes on', async () => {
  const client = createClient({
    style: 'scripted',
    builtins: [],
    script: [{ toolCalls: [{ id: 'c1', name: 'broken', args: {} }] }, { text: 'went on' }],
  })
  const schema = { type: 'object', properties: {} }
  // Untyped JavaScript: an image without its media type, data that is not base64.
  client.register(tool({
    name: 'broken', description: 'Broken.', inputSchema: schema,
    execute: () => new ToolOutput({ content: 'x', images: [{ data: '%%%not base64' }] }),
  }))
  const r = await client.run('look')
  client.close()
  assert.equal(r.outcome, 'done')
  assert.equal(r.finalText, 'went on')
  const result = r.transcript.messages.find((m) => m.role === 'tool')
  assert.equal(result.isError, true, JSON.stringify(result))
  assert.ok(!result.content.some((p) => p.type === 'image'), JSON.stringify(result))
  assert.match(JSON.stringify(result), /returned a ToolOutput the engine cannot read: .*media_type/)
})
