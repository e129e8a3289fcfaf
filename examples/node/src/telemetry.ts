// Traces of a turn, as OpenTelemetry spans (GenAI semantic conventions), posted to a local
// collector: a lead whose model asks a researcher subagent, on the scripted model (no network, no
// key). Start a collector listening for OTLP/HTTP on 127.0.0.1:4318 first (docs/telemetry.md);
// without one the turn runs all the same and its spans are dropped.
//
//   OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.1:4318 node build/telemetry.js
import { createClient } from 'contenox'

const researcher = createClient({ style: 'scripted', script: [{ text: 'The answer is 42.' }], builtins: [] })
const lead = createClient({
  style: 'scripted',
  script: [
    { toolCalls: [{ id: 'c1', name: 'researcher', args: { prompt: 'Find it.' } }] },
    { text: 'Researcher says 42.' },
  ],
  builtins: [],
  // true reads the standard OTEL_* variables; an object sets the endpoint, headers,
  // includeContents (prompts and results on the spans, off by default), serviceName.
  telemetry: {
    endpoint: process.env.OTEL_EXPORTER_OTLP_ENDPOINT ?? 'http://127.0.0.1:4318',
    serviceName: 'telemetry-example',
  },
})
lead.register(researcher.asToolWith('researcher', 'Looks things up.'))
const result = await lead.run('What is the answer?')
console.log(`done: ${result.finalText}`)
// close() sends the spans still queued (a few seconds at most when the collector is slow).
lead.close()
researcher.close()
