// A host tool, one turn, its result. The scripted style replays fixed model responses without
// any network; set CONTENOX_BASE_URL and CONTENOX_MODEL (and OPENAI_API_KEY) to run the same
// code against an OpenAI-compatible server instead.
import { createClient, tool, type ClientOptions } from 'contenox'

const weather = tool<{ city: string }>({
  name: 'weather',
  description: 'The current weather of a city.',
  inputSchema: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
  hints: { readOnly: true, openWorld: true },
  execute: async ({ city }, ctx) => ({ city, sky: 'clear', celsius: 21, callId: ctx.callId }),
})

const model: ClientOptions = process.env.CONTENOX_BASE_URL
  ? { style: 'openai', baseUrl: process.env.CONTENOX_BASE_URL, model: process.env.CONTENOX_MODEL ?? 'local' }
  : {
      style: 'scripted',
      script: [
        { toolCalls: [{ id: 'call_1', name: 'weather', args: { city: 'Oslo' } }] },
        { text: 'It is clear and 21 °C in Oslo.' },
      ],
    }

const client = createClient({ ...model, builtins: [], tools: [weather] })
try {
  const result = await client.run('What is the weather in Oslo?', { signal: AbortSignal.timeout(60_000) })
  console.log(`${result.outcome}: ${result.finalText}`)
  for (const m of result.transcript.messages) {
    if (m.role === 'tool') console.log(`  tool ${m.name} (${m.callId}) -> ${m.content}`)
  }
} finally {
  client.close()
}
