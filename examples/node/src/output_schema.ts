// A typed final answer, on the scripted model (no network, no key): the model calls a tool,
// answers JSON that misses a field (sent back with the validation error), then a valid object,
// which `result.output` holds, typed and parsed by the Zod schema.
import { createClient, tool } from 'contenox'
import { z } from 'zod'

const Weather = z.object({ city: z.string(), tempC: z.number() })

// The scripted model replays its answers; swap in style: 'openai', model: ... to go live.
const client = createClient({
  style: 'scripted',
  builtins: [],
  script: [
    { toolCalls: [{ name: 'weather', args: { city: 'Oslo' } }] },
    { text: '{"city": "Oslo"}' }, // tempC missing: sent back with the error
    { text: '{"city": "Oslo", "tempC": 3.5}' },
  ],
  tools: [
    tool({
      name: 'weather',
      description: 'The weather in a city.',
      inputSchema: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
      execute: async ({ city }) => `${city}: 3.5 C, light rain`,
    }),
  ],
  outputSchema: Weather,
})
const result = await client.run('Weather in Oslo?')
// `result.output` is typed `{ city: string; tempC: number } | undefined`.
const output: z.infer<typeof Weather> | undefined = result.output
console.log(`${result.outcome}: ${output?.city} ${output?.tempC}`)
client.close()
