// @openai/agents on the Chat Completions API, tracing off (its exporter would post elsewhere).
import { Agent, run, setDefaultOpenAIClient, setOpenAIAPI, setTracingDisabled, tool } from '@openai/agents'
import OpenAI from 'openai'
import { z } from 'zod'

import { check, measure } from './common.mjs'

await measure('openai-agents', {
  setup(baseUrl) {
    setTracingDisabled(true)
    setOpenAIAPI('chat_completions')
    setDefaultOpenAIClient(new OpenAI({ baseURL: baseUrl, apiKey: 'test', maxRetries: 0 }))
    const agent = new Agent({
      name: 'bench',
      instructions: 'Use the tool.',
      model: 'fake',
      tools: [
        tool({
          name: 'lookup',
          description: 'Look up a key.',
          parameters: z.object({ key: z.string() }),
          execute: async ({ key }) => `value of ${key}`,
        }),
      ],
    })
    return { agent }
  },
  async run({ agent }) {
    const r = await run(agent, 'Look up k.', { maxTurns: 4 })
    check(r.finalOutput === 'done', String(r.finalOutput))
  },
})
