// A browser watches an agent turn live. `GET /` serves a page; its EventSource opens
// `GET /turn?prompt=...`, which runs one turn and streams the turn's events to the browser as
// server-sent events (`event: <type>`, `data: <the event as JSON>`), ending with `turn_end`.
// Closing the tab cancels the turn. One client per request: each visitor has their own
// conversation.
//
//   node build/sse_server.js          then open the printed address
//
// PORT picks the port (default: any free one); HOST the address (default 127.0.0.1). The model is
// the scripted one; set CONTENOX_BASE_URL and CONTENOX_MODEL (and OPENAI_API_KEY) to run the
// same code against an OpenAI-compatible server.
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'

import { createClient, tool, type ClientOptions, type Event } from 'contenox'

/** Longest prompt accepted from the query string. */
const MAX_PROMPT = 4000

const weather = tool<{ city: string }>({
  name: 'weather',
  description: 'The current weather of a city.',
  inputSchema: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
  hints: { readOnly: true, openWorld: true },
  execute: async ({ city }) => ({ city, sky: 'clear', celsius: 21 }),
})

function model(): ClientOptions {
  if (process.env.CONTENOX_BASE_URL) {
    return { style: 'openai', baseUrl: process.env.CONTENOX_BASE_URL, model: process.env.CONTENOX_MODEL ?? 'local' }
  }
  return {
    style: 'scripted',
    script: [
      { toolCalls: [{ id: 'call_1', name: 'weather', args: { city: 'Oslo' } }] },
      { text: 'It is clear and 21 °C in Oslo.' },
    ],
  }
}

const PAGE = `<!doctype html>
<meta charset="utf-8">
<title>contenox: a turn, live</title>
<style>body{font:15px system-ui;margin:2em}td{padding:2px 8px;vertical-align:top}pre{margin:0}</style>
<form><input name="prompt" size="60" value="What is the weather in Oslo?"> <button>Run</button></form>
<p id="answer"></p>
<table id="events"></table>
<script>
const form = document.querySelector('form')
form.onsubmit = (e) => {
  e.preventDefault()
  const rows = document.getElementById('events')
  const answer = document.getElementById('answer')
  rows.textContent = ''
  answer.textContent = ''
  const source = new EventSource('/turn?prompt=' + encodeURIComponent(form.prompt.value))
  const show = (type, data) => {
    const row = rows.insertRow()
    row.insertCell().textContent = type
    const pre = document.createElement('pre')
    pre.textContent = JSON.stringify(data)
    row.insertCell().appendChild(pre)
  }
  for (const type of ['turn_start', 'request', 'text', 'tool_call', 'gate', 'tool_start', 'tool_result', 'usage', 'retry'])
    source.addEventListener(type, (m) => show(type, JSON.parse(m.data)))
  source.addEventListener('text_delta', (m) => { answer.textContent += JSON.parse(m.data).text })
  source.addEventListener('turn_end', (m) => { show('turn_end', JSON.parse(m.data)); source.close() })
  source.onerror = () => source.close()
}
</script>
`

/** One server-sent event. JSON text has no raw newline, so one `data:` line carries it. */
function sse(event: Event): string {
  return `event: ${event.type}\ndata: ${JSON.stringify(event)}\n\n`
}

async function streamTurn(req: IncomingMessage, res: ServerResponse, prompt: string): Promise<void> {
  const client = createClient({ ...model(), builtins: [], tools: [weather] })
  const run = client.stream(prompt)
  // The browser left (tab closed, EventSource closed, network gone): stop the turn.
  const onClose = () => {
    if (!res.writableEnded) {
      console.log('browser left: turn cancelled')
      run.cancel()
    }
  }
  res.on('close', onClose)
  res.writeHead(200, {
    'content-type': 'text/event-stream; charset=utf-8',
    'cache-control': 'no-cache',
    'x-accel-buffering': 'no',
  })
  try {
    for await (const event of run) {
      if (!res.destroyed) res.write(sse(event))
    }
    const result = await run.result
    console.log(`turn ${result.outcome}: ${JSON.stringify(result.finalText)}`)
  } finally {
    res.off('close', onClose)
    res.end()
    client.close()
  }
}

const server = createServer((req, res) => {
  const url = new URL(req.url ?? '/', 'http://localhost')
  if (req.method !== 'GET') {
    res.writeHead(405, { allow: 'GET' }).end()
  } else if (url.pathname === '/') {
    res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' }).end(PAGE)
  } else if (url.pathname === '/turn') {
    const prompt = url.searchParams.get('prompt') ?? ''
    if (!prompt.trim() || prompt.length > MAX_PROMPT) {
      res.writeHead(400, { 'content-type': 'text/plain' }).end(`prompt: 1 to ${MAX_PROMPT} characters\n`)
      return
    }
    streamTurn(req, res, prompt).catch((err: unknown) => {
      console.error('turn failed:', err)
      if (!res.headersSent) res.writeHead(500)
      res.end()
    })
  } else {
    res.writeHead(404, { 'content-type': 'text/plain' }).end('not found\n')
  }
})

server.listen(Number(process.env.PORT ?? 0), process.env.HOST ?? '127.0.0.1', () => {
  const { address, port } = server.address() as AddressInfo
  console.log(`listening on http://${address}:${port}/`)
})

// Ctrl-C / SIGTERM: stop accepting, end open streams (their turns are cancelled by onClose).
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => {
    server.close()
    server.closeAllConnections()
  })
}
