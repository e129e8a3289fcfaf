// contenox's own overhead per turn: the same turn with the scripted style (responses replayed
// in-process, no HTTP), so what is left is engine + binding + the host tool's round trip into
// JavaScript. Compare with each peer's time above the bare-fetch floor.
import { createClient, tool, Transcript } from 'contenox'

import { check, measure } from './common.mjs'

const turns = Number(process.argv[3]) + Number(process.argv[4])
const script = []
for (let i = 0; i < turns; i++) {
  script.push({ toolCalls: [{ id: 'call_1', name: 'lookup', args: { key: 'k' } }] }, { text: 'done' })
}

await measure('contenox-scripted', {
  setup() {
    const client = createClient({
      style: 'scripted',
      script,
      builtins: [],
      maxTurns: 4,
      tools: [
        tool({
          name: 'lookup',
          description: 'Look up a key.',
          inputSchema: { type: 'object', properties: { key: { type: 'string' } }, required: ['key'] },
          execute: ({ key }) => `value of ${key}`,
        }),
      ],
    })
    return { client, empty: Transcript.fromJSON({ messages: [] }) }
  },
  async run({ client, empty }) {
    client.setTranscript(empty)
    const r = await client.run('Look up k.')
    check(r.outcome === 'done' && r.finalText === 'done', `${r.outcome} ${r.finalText} ${r.error ?? ''}`)
  },
  teardown({ client }) {
    client.close()
  },
})
