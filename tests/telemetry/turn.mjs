// One turn with a subagent and a denied call, its spans sent to the collector at argv[2].
// Run by tests/telemetry/check.py beside turn.py (the same turn from Python).
import { createClient } from '../../bindings-node/index.mjs'

const SECRET = 'sk-PLANTED-SECRET-4242'
const endpoint = process.argv[2]

const researcher = createClient({
  style: 'scripted',
  model: 'small-model',
  apiKey: SECRET,
  builtins: [],
  script: [{ text: 'The answer is 42.' }],
})
const lead = createClient({
  style: 'scripted',
  model: 'big-model',
  apiKey: SECRET,
  headers: { 'x-secret': SECRET },
  builtins: ['bash'],
  temperature: 0.25,
  policy: {
    rules: [{ tool: 'bash', action: 'deny', name: 'no shell' }],
    default_action: 'allow',
  },
  script: [
    { toolCalls: [{ id: 'c1', name: 'researcher', args: { prompt: 'Find it.' } }] },
    { toolCalls: [{ id: 'c2', name: 'bash', args: { command: `echo ${SECRET}` } }] },
    { text: 'Researcher says 42.' },
  ],
  telemetry: {
    endpoint,
    serviceName: 'contenox-node',
    headers: { authorization: `Bearer ${SECRET}` },
  },
})
lead.register(researcher.asToolWith('researcher', 'Looks things up.'))
const result = await lead.run(`Ask the researcher. ${SECRET}`)
if (result.outcome !== 'done') throw new Error(`outcome ${result.outcome}`)
lead.close()
researcher.close()
