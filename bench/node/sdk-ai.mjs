// The Vercel AI SDK: generateText with an OpenAI-compatible provider and one tool.
import { createOpenAICompatible } from '@ai-sdk/openai-compatible'
import { generateText, stepCountIs, tool } from 'ai'
import { z } from 'zod'

import { check, measure } from './common.mjs'

await measure('ai-sdk', {
  setup(baseUrl) {
    const provider = createOpenAICompatible({ name: 'fake', baseURL: baseUrl, apiKey: 'test' })
    const tools = {
      lookup: tool({
        description: 'Look up a key.',
        inputSchema: z.object({ key: z.string() }),
        execute: async ({ key }) => `value of ${key}`,
      }),
    }
    return { model: provider.chatModel('fake'), tools }
  },
  async run({ model, tools }) {
    const r = await generateText({ model, tools, prompt: 'Look up k.', stopWhen: stepCountIs(4), maxRetries: 0 })
    check(r.text === 'done' && r.steps.length === 2, `${r.text} after ${r.steps.length} steps`)
  },
})
