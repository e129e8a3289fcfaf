// The floor: the same two chat-completion requests per turn with bare fetch, no SDK (the tool
// "runs" inline). Not a peer; it shows what the HTTP round trips alone cost in Node.
import { check, measure } from './common.mjs'

const tools = [
  {
    type: 'function',
    function: {
      name: 'lookup',
      description: 'Look up a key.',
      parameters: { type: 'object', properties: { key: { type: 'string' } }, required: ['key'] },
    },
  },
]

async function chat(url, messages) {
  const res = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: 'Bearer test' },
    body: JSON.stringify({ model: 'fake', messages, tools }),
  })
  return (await res.json()).choices[0].message
}

await measure('raw-fetch', {
  setup: (baseUrl) => ({ url: `${baseUrl}/chat/completions` }),
  async run({ url }) {
    const messages = [{ role: 'user', content: 'Look up k.' }]
    const first = await chat(url, messages)
    const call = first.tool_calls[0]
    const args = JSON.parse(call.function.arguments)
    messages.push(first, { role: 'tool', tool_call_id: call.id, content: `value of ${args.key}` })
    const second = await chat(url, messages)
    check(second.content === 'done', second.content)
  },
})
