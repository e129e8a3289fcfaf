// contenox through its Node API: one client, a fresh conversation per turn.
import { createClient, tool, Transcript } from 'contenox'

import { check, measure } from './common.mjs'

await measure('contenox', {
  setup(baseUrl) {
    const client = createClient({
      style: 'openai',
      baseUrl,
      model: 'fake',
      apiKey: 'test',
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
