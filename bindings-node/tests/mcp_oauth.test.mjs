// OAuth for MCP servers through the JavaScript API (loadMcp(config, { auth })), against
// tests/mcp/oauth_server.py (the MCP Python SDK's own authorization server and protected
// server): the protected server's tools load after the authorization callback, an expired token
// is refreshed and a revoked one authorized again, a failing browser step fails the server
// cleanly, and no token appears in any event, result or transcript. docs/mcp.md "OAuth".
import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import { existsSync } from 'node:fs'
import { createServer, connect } from 'node:net'
import { dirname, join } from 'node:path'
import { test } from 'node:test'
import { fileURLToPath } from 'node:url'

import { createClient, loadMcp } from 'contenox'

const here = dirname(fileURLToPath(import.meta.url))
const mcpDir = join(here, '..', '..', 'tests', 'mcp')
const python = process.env.CONTENOX_MCP_PYTHON ?? join(mcpDir, '.venv', 'bin', 'python')

function freePort() {
  return new Promise((resolve) => {
    const s = createServer().listen(0, '127.0.0.1', () => {
      const { port } = s.address()
      s.close(() => resolve(port))
    })
  })
}

async function startVault() {
  assert.ok(existsSync(python), `the MCP venv's python not found at ${python}: run tests/mcp/install.sh`)
  const port = await freePort()
  const child = spawn(python, [join(mcpDir, 'oauth_server.py'), String(port)], { stdio: 'ignore' })
  const deadline = Date.now() + 20_000
  for (;;) {
    const up = await new Promise((resolve) => {
      const c = connect(port, '127.0.0.1', () => {
        c.end()
        resolve(true)
      })
      c.on('error', () => resolve(false))
    })
    if (up) break
    assert.ok(Date.now() < deadline, 'oauth_server.py did not listen')
    await new Promise((r) => setTimeout(r, 50))
  }
  const origin = `http://127.0.0.1:${port}`
  return {
    url: `${origin}/mcp`,
    post: async (path) => (await fetch(origin + path, { method: 'POST' })).text(),
    stats: async () => (await fetch(`${origin}/_test/stats`)).json(),
    close: () =>
      new Promise((resolve) => {
        child.once('exit', resolve)
        child.kill('SIGKILL')
      }),
  }
}

/** The host's part: tokens in a Map, a "browser" that follows the URL and hands back the redirect. */
function hostAuth() {
  const store = new Map()
  const saved = []
  const urls = []
  return {
    urls,
    saved,
    redirectUri: 'http://127.0.0.1:9/callback',
    async authorize(server, url) {
      urls.push(url)
      const reply = await fetch(url, { redirect: 'manual' })
      const location = reply.headers.get('location')
      assert.ok(location, `no redirect: HTTP ${reply.status}`)
      return location
    },
    load: (key) => store.get(key),
    save: async (key, value) => {
      store.set(key, value)
      saved.push(value)
    },
    tokens() {
      return saved.flatMap((v) => {
        const d = JSON.parse(v)
        return [d.access_token, d.refresh_token].filter(Boolean)
      })
    },
  }
}

const call = (name, args = {}) => ({ toolCalls: [{ id: 'c1', name, args }] })

test('the protected server loads after the callback, refreshes, re-authorizes and never shows a token', async () => {
  const vault = await startVault()
  const auth = hostAuth()
  const shown = []
  try {
    const source = await loadMcp({ mcpServers: { vault: { type: 'http', url: vault.url } } }, { auth })
    try {
      assert.deepEqual(
        source.tools().map((t) => t.name),
        ['vault__vault_sum'],
      )
      assert.equal(auth.urls.length, 1)
      assert.match(auth.urls[0], /code_challenge_method=S256/)
      shown.push(JSON.stringify(source.servers()))
      for (const step of ['first', 'expire', 'revoke']) {
        if (step !== 'first') await vault.post(`/_test/${step}`)
        const client = createClient({
          style: 'scripted',
          builtins: [],
          script: [call('vault__vault_sum', { a: 40, b: 2 }), { text: 'done' }],
        })
        source.registerInto(client)
        const run = client.stream('go')
        const events = []
        for await (const e of run) events.push(e)
        const result = await run.result
        const toolResult = events.find((e) => e.type === 'tool_result')
        assert.match(toolResult.content, /vault says 42/, step)
        shown.push(JSON.stringify(events), JSON.stringify(result), JSON.stringify(client.transcript))
      }
      assert.equal(auth.urls.length, 2, 'the revoked token needed a new authorization')
      assert.ok((await vault.stats()).refreshes >= 1, 'the expired token was refreshed')
    } finally {
      await source.close()
    }
  } finally {
    await vault.close()
  }
  const tokens = auth.tokens()
  assert.ok(tokens.length >= 4)
  for (const text of shown) for (const token of tokens) assert.ok(!text.includes(token), 'a token was shown')
})

test('a browser step that fails leaves the server failed with the reason, and no token', async () => {
  const vault = await startVault()
  const states = []
  try {
    const source = await loadMcp(
      { mcpServers: { vault: { type: 'http', url: vault.url } } },
      {
        onServer: (name, state) => states.push([name, state]),
        auth: {
          redirectUri: 'http://127.0.0.1:9/callback',
          authorize: () => {
            throw new Error('the person closed the browser')
          },
          load: () => null,
          save: () => assert.fail('nothing to save'),
        },
      },
    )
    try {
      assert.deepEqual(source.tools(), [])
      assert.equal(states.length, 1)
      assert.equal(states[0][1].state, 'failed')
      assert.match(states[0][1].error, /the person closed the browser/)
    } finally {
      await source.close()
    }
  } finally {
    await vault.close()
  }
})
