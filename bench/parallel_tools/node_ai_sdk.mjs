// Vercel AI SDK client of bench/parallel_tools: generateText with the tools `nap` (sleeps --ms)
// and `echo`, through @ai-sdk/openai-compatible (Chat Completions); a fresh conversation per
// turn; one JSON line out. run.py copies it into the harness's clients/ (its node_modules) and
// runs it with the harness's Node 22.
import { parseArgs } from 'node:util'
import { generateText, tool, isStepCount } from 'ai'
import { createOpenAICompatible } from '@ai-sdk/openai-compatible'
import { z } from 'zod'

const { values: a } = parseArgs({
  options: { 'base-url': { type: 'string' }, turns: { type: 'string', default: '5' }, ms: { type: 'string', default: '300' } },
})
const ms = Number(a.ms)
const provider = createOpenAICompatible({ name: 'mock', baseURL: a['base-url'], apiKey: 'sk-dummy', includeUsage: true })
const model = provider('fake')
const tools = {
  nap: tool({
    description: 'Wait a moment.',
    inputSchema: z.object({}),
    execute: () => new Promise((done) => setTimeout(() => done('rested'), ms)),
  }),
  echo: tool({
    description: 'Echo the arguments.',
    inputSchema: z.object({ n: z.number().optional() }),
    execute: async (args) => JSON.stringify(args),
  }),
}
const turnMs = []
let ok = true
for (let i = 1; i <= Number(a.turns); i++) {
  const t = performance.now()
  const r = await generateText({ model, tools, messages: [{ role: 'user', content: `turn ${i}` }], stopWhen: isStepCount(5), maxRetries: 0 })
  turnMs.push(performance.now() - t)
  ok = ok && r.text === 'done'
}
console.log(JSON.stringify({ sdk: 'vercel-ai-sdk-node', turn_ms: turnMs, ok }))
process.exitCode = ok ? 0 : 1
