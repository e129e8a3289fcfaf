// A prompt with images, on the scripted model (no network, no key): image bytes, an image file
// beneath the root, and a bad part refused before anything is sent.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

import { ConfigurationError, createClient } from 'contenox'

// A 1x1 PNG. Any PNG, JPEG, GIF or WebP works: the engine reads the type from the bytes.
const png = Buffer.from(
  'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAIAAACQd1PeAAAADElEQVR4nGP4z8AAAAMBAQDJ/pLvAAAAAElFTkSuQmCC',
  'base64',
)
const root = mkdtempSync(join(tmpdir(), 'contenox-images-'))
writeFileSync(join(root, 'shot.png'), png)

// The scripted model replays its answer; swap in style: 'openai', model: ... to go live.
const client = createClient({ style: 'scripted', builtins: [], root, script: [{ text: 'Two red pixels.' }] })
const result = await client.run([
  { type: 'text', text: 'What is in these pictures?' },
  { type: 'image', data: png }, // a Buffer or Uint8Array; media_type read from the bytes
  { type: 'image', path: 'shot.png' }, // read beneath the root for each request
])
console.log(`${result.outcome}: ${result.finalText}`)
console.log(`sent: ${result.transcript.messages[0]!.content.map((p) => p.type).join(', ')}`)
try {
  await client.run([{ type: 'image', data: Buffer.from('not an image') }])
} catch (e) {
  if (!(e instanceof ConfigurationError)) throw e
  console.log(`refused: ${e.option}`)
}
client.close()
rmSync(root, { recursive: true, force: true })
