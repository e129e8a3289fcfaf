// The conformance scenarios, run through the package's public JavaScript API: every *.json in
// tests/conformance/scenarios and each directory of $CONTENOX_SCENARIOS (colon-separated).
// One test per scenario, named after it; `conformance-check` judges each trace.
import assert from 'node:assert/strict'
import { spawn, spawnSync } from 'node:child_process'
import { connect, createServer } from 'node:net'
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, realpathSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join, relative, resolve } from 'node:path'
import { describe, test } from 'node:test'

import { CheckpointError, ConfigurationError, StepError, compactor, createClient, deny, loadMcp, loadRemote, pending, tool } from 'contenox'

import { conformanceCheck, repoDir, startFakeRemote, startFakeServer } from './helpers.mjs'

const SCENARIO_TIMEOUT_MS = 30_000

function scenarioFiles() {
  const dirs = [join(repoDir, 'tests/conformance/scenarios')]
  for (const d of (process.env.CONTENOX_SCENARIOS ?? '').split(':')) if (d) dirs.push(resolve(d))
  const seen = new Set()
  const files = []
  for (const dir of dirs) {
    if (!existsSync(dir)) continue
    for (const f of readdirSync(dir).sort()) {
      if (!f.endsWith('.json')) continue
      const path = realpathSync(join(dir, f))
      if (seen.has(path)) continue
      seen.add(path)
      files.push(path)
    }
  }
  return files
}

const camel = (k) => (k === 'arguments' ? 'args' : k.replace(/_([a-z0-9])/g, (_, c) => c.toUpperCase()))
const snake = (k) => (k === 'args' ? 'arguments' : k.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`))
const renameKeys = (o, f) =>
  o && typeof o === 'object' && !Array.isArray(o) ? Object.fromEntries(Object.entries(o).map(([k, v]) => [f(k), v])) : o

/** An event (or a compaction notice) back in core's serialized form (snake_case keys), as the trace wants it. */
function traceEvent(e) {
  const out = renameKeys(e, snake)
  for (const k of ['usage', 'request']) if (k in out) out[k] = renameKeys(out[k], snake)
  return out
}

/** `type[:name][@agent]`: `@a/b` a subagent chain, `@*` any subagent, `@` the client's own; no `@` = any origin. */
function eventMatches(e, pattern) {
  const at = pattern.indexOf('@')
  const agent = at < 0 ? undefined : pattern.slice(at + 1)
  const p = at < 0 ? pattern : pattern.slice(0, at)
  const i = p.indexOf(':')
  const [type, name] = i < 0 ? [p, undefined] : [p.slice(0, i), p.slice(i + 1)]
  if (e.type !== type || (name !== undefined && e.name !== name)) return false
  const chain = e.agent ?? []
  if (agent === undefined) return true
  if (agent === '*') return chain.length > 0
  return chain.join('/') === agent
}

const MATCH_KEYS = new Set(['name', 'hint', 'no_hints', 'source', 'server'])

function ruleMatches(match, e) {
  for (const key of Object.keys(match)) if (!MATCH_KEYS.has(key)) throw new Error(`unknown match key ${key}`)
  if (match.name !== undefined && match.name !== e.name) return false
  if (match.hint !== undefined && e.hints[match.hint] !== true) return false
  if (match.no_hints !== undefined) {
    const none = e.hints.readOnly === undefined && e.hints.destructive === undefined && e.hints.openWorld === undefined
    if (none !== match.no_hints) return false
  }
  if (match.source !== undefined && match.source !== e.source) return false
  if (match.server !== undefined && match.server !== e.server) return false
  return true
}

function echoTool(name, spec = {}) {
  return tool({ description: 'Echo the arguments.', inputSchema: { type: 'object' }, ...spec, name, execute: (args) => JSON.stringify(args) })
}

function hostTool(t, state) {
  const spec = {
    name: t.name,
    description: t.description ?? `Host tool ${t.name} (${t.kind}).`,
    inputSchema: t.schema ?? { type: 'object' },
    hints: t.hints === undefined ? undefined : renameKeys(t.hints, camel),
    tier: t.tier,
  }
  switch (t.kind) {
    case 'echo':
      return echoTool(t.name, spec)
    case 'fail':
      return tool({
        ...spec,
        execute: (args) => {
          throw new Error(args.message)
        },
      })
    case 'sleep':
      return tool({
        ...spec,
        execute: (args, { signal }) =>
          new Promise((done) => {
            const timer = setTimeout(() => done('slept'), args.ms)
            // Woken by the abort, it says so: the call's result must still be the engine's
            // `cancelled` (the conformance README).
            signal.addEventListener('abort', () => (clearTimeout(timer), done('interrupted')), { once: true })
          }),
      })
    case 'rendezvous':
      // Shared by the client's rendezvous tools (README): the calls running now, and the
      // meetings so far (a call that finds `count` running releases every call running then).
      state.meeting ??= { running: 0, epoch: 0 }
      return tool({ ...spec, execute: (args, { signal }) => rendezvous(state.meeting, args, signal) })
    case 'register':
      return tool({
        ...spec,
        execute: async (args) => {
          state.client.register(echoTool(args.name))
          return 'registered'
        },
      })
    default:
      throw new Error(`unknown host tool kind ${t.kind}`)
  }
}

async function rendezvous(m, args, signal) {
  const count = args.count ?? 1
  const deadline = Date.now() + (args.timeout_ms ?? 5000)
  m.running += 1
  const entered = m.epoch
  const running = m.running
  if (running >= count) m.epoch += 1
  const over = args.max !== undefined && running > args.max ? `; over max: ${running} running` : ''
  const pause = (ms) => new Promise((done) => setTimeout(done, ms))
  try {
    for (;;) {
      if (signal.aborted) return 'cancelled'
      if (m.epoch > entered) {
        await pause(args.hold_ms ?? 0)
        return `met ${count}${over}`
      }
      if (Date.now() >= deadline) return `timed out with ${m.running} running${over}`
      await pause(5)
    }
  } finally {
    m.running -= 1
  }
}

function beforeTool(rules) {
  return async (e) => {
    const rule = rules.find((r) => ruleMatches(r.match ?? {}, e))
    if (!rule || rule.decision === 'allow') return undefined
    const d = rule.decision
    if ('deny' in d) return deny(d.deny ?? undefined)
    if ('ask' in d) {
      const { kind = 'approval', prompt, timeout_ms: timeoutMs, data } = d.ask
      return pending({ kind, prompt, timeoutMs, data })
    }
    throw new Error(`unknown decision ${JSON.stringify(d)}`)
  }
}

/** Extension `resume.edit`: `newer` raises the version, `tampered` changes the first call's arguments. */
function editCheckpoint(checkpoint, edit) {
  if (edit === undefined) return checkpoint
  const cp = JSON.parse(checkpoint)
  if (edit === 'newer') cp.version += 1
  else if (edit === 'tampered') cp.reply.calls[0].arguments.tampered = true
  else throw new Error(`resume.edit: ${edit} is not newer or tampered`)
  return JSON.stringify(cp)
}

function scriptedWaitFor(answers) {
  const queue = [...answers]
  return (_request, { signal }) => {
    const next = queue.length ? queue.shift() : 'never'
    if (next !== 'never') return next
    // Hold the ask until the engine stops waiting.
    return new Promise((done) => {
      const stop = () => done({ approve: false, message: 'the wait was aborted' })
      if (signal.aborted) stop()
      else signal.addEventListener('abort', stop, { once: true })
    })
  }
}

/**
 * `config.websearch`: false/absent = off; `{"results": [...]}` = a provider that answers every
 * query with those results (the engine filters and caps them).
 */
function fixedWebsearch(spec) {
  if (spec === false || spec === null || spec === undefined) return undefined
  if (!Array.isArray(spec?.results)) throw new Error(`websearch must be false or {"results": [...]}, got ${JSON.stringify(spec)}`)
  const results = spec.results.map(({ title, url, snippet }) => ({ title, url, snippet }))
  return async () => results
}

/** A scenario's `prompt_parts` as a Node host writes them: image data as a Buffer. */
const nodeParts = (parts) =>
  parts.map((p) => (typeof p.data === 'string' ? { ...p, data: Buffer.from(p.data, 'base64') } : p))

/** `run_settings` in JavaScript's spelling (`extra_body`'s own keys stay as written). */
function runSettings(settings) {
  if (settings === undefined) return undefined
  const out = {}
  for (const [k, v] of Object.entries(settings)) out[camel(k)] = k === 'reasoning' ? renameKeys(v, camel) : v
  return out
}

function clientOptions(scenario, server, root) {
  const options = {}
  for (const [k, v] of Object.entries(scenario.config ?? {})) {
    if (k === 'websearch') {
      const websearch = fixedWebsearch(v)
      if (websearch) options.websearch = websearch
      continue
    }
    options[camel(k)] = k === 'retry' || k === 'reasoning' ? renameKeys(v, camel) : v
  }
  const style = scenario.style ?? 'openai'
  const base = (s) => (s.startsWith('openai') ? `${server.root}/v1` : server.root)
  // A `fallback` entry of another style without a base URL talks to the fake server too (it
  // serves every style's chat endpoint).
  if (Array.isArray(options.fallback)) {
    options.fallback = options.fallback.map((f) =>
      typeof f === 'object' && f.style && f.style !== style && f.base_url === undefined ? { ...f, base_url: base(f.style) } : f)
  }
  return { ...options, style, baseUrl: style.startsWith('openai') ? `${server.root}/v1` : server.root, model: 'fake', apiKey: 'test', root }
}

// The scenario key `mcp`: the project's MCP test servers (tests/mcp, installed by
// tests/mcp/install.sh), loaded with loadMcp and registered into the client (README of
// tests/conformance; the Rust runner's tests/src/mcp_support.rs does the same).
function installed(path, what) {
  if (!existsSync(path)) throw new Error(`${what} not found at ${path}: run tests/mcp/install.sh`)
  return path
}

function mcpCommand(server, port) {
  if (server === 'fast') {
    const python = process.env.CONTENOX_MCP_PYTHON || installed(join(repoDir, 'tests/mcp/.venv/bin/python'), 'the MCP venv')
    const script = installed(join(repoDir, 'tests/mcp/fast_server.py'), 'fast_server.py')
    return [python, port === undefined ? [script] : [script, 'http', String(port)]]
  }
  if (server === 'everything') {
    const modules = process.env.CONTENOX_MCP_NODE_MODULES || join(repoDir, 'tests/mcp/node_modules')
    const js = installed(join(modules, '@modelcontextprotocol/server-everything/dist/index.js'), '@modelcontextprotocol/server-everything')
    return [process.execPath, [js, port === undefined ? 'stdio' : 'streamableHttp']]
  }
  throw new Error(`mcp: unknown test server ${JSON.stringify(server)} (expected "fast" or "everything")`)
}

async function freePort() {
  const srv = createServer()
  await new Promise((done) => srv.listen(0, '127.0.0.1', done))
  const { port } = srv.address()
  await new Promise((done) => srv.close(done))
  return port
}

const listens = (port) =>
  new Promise((done) => {
    const socket = connect(port, '127.0.0.1')
    socket.once('connect', () => (socket.destroy(), done(true)))
    socket.once('error', () => done(false))
  })

async function startMcpHttp(server, children) {
  const port = await freePort()
  const [command, args] = mcpCommand(server, port)
  const child = spawn(command, args, { env: { ...process.env, PORT: String(port) }, stdio: 'ignore' })
  children.push(child)
  const deadline = Date.now() + 20_000
  while (!(await listens(port))) {
    if (Date.now() > deadline) throw new Error(`mcp: ${server} over HTTP did not listen on ${port}`)
    await new Promise((r) => setTimeout(r, 50))
  }
  return `http://127.0.0.1:${port}/mcp`
}

async function mcpSetup(spec) {
  const children = []
  const setup = {
    source: undefined,
    resourceTools: spec.resource_tools === true,
    async close() {
      await setup.source?.close()
      for (const child of children) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL')
    },
  }
  try {
    const entries = {}
    for (const [name, s] of Object.entries(spec.servers ?? {})) {
      const transport = s.transport ?? 'stdio'
      let entry
      if (transport === 'stdio') {
        const [command, args] = mcpCommand(s.server)
        entry = { command, args }
      } else if (transport === 'http') {
        entry = { type: 'http', url: await startMcpHttp(s.server, children) }
      } else {
        throw new Error(`mcp: unknown transport ${JSON.stringify(transport)}`)
      }
      for (const key of ['inject', 'headers', 'timeout_ms', 'env', 'elicitation', 'sampling', 'roots']) if (key in s) entry[key] = s[key]
      entries[name] = entry
    }
    setup.source = await loadMcp({ mcpServers: entries })
    const failed = setup.source.servers().filter((s) => s.state.state === 'failed')
    if (failed.length) throw new Error(failed.map((s) => `mcp: server ${s.name} failed: ${s.state.error}`).join('\n'))
    return setup
  } catch (e) {
    await setup.close()
    throw e
  }
}

// The scenario key `remote`: the Rust harness's fake services (fake-remote-service), loaded
// with loadRemote; the `unreachable` ones are started after the client has the hooks.
async function remoteSetup(file, services) {
  const fake = await startFakeRemote(file)
  try {
    const reported = []
    const source = await loadRemote(fake.hooks, { onHook: (name) => reported.push(name) })
    if (reported.length !== fake.hooks.length) throw new Error(`remote: onHook reported ${JSON.stringify(reported)}`)
    for (const [i, { name, state }] of source.hooks().entries()) {
      const down = Boolean(services[i]?.unreachable)
      if ((state.state === 'ready') === down) {
        throw new Error(`remote: hook ${name} should be ${down ? 'down' : 'ready'}: ${JSON.stringify(state)}`)
      }
    }
    return {
      source,
      unreachable: services.some((s) => s.unreachable),
      requests: () => fake.requests(),
      up: () => fake.up(),
      async close() {
        await source.close()
        await fake.stop()
      },
    }
  } catch (e) {
    await fake.stop()
    throw e
  }
}

function snapshot(root) {
  const out = {}
  const walk = (dir) => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      const path = join(dir, entry.name)
      if (entry.isDirectory()) walk(path)
      else if (entry.isFile()) out[relative(root, path).split('\\').join('/')] = readFileSync(path, 'utf8')
    }
  }
  walk(root)
  return out
}

/**
 * The scenario key `subagents`: clients offered as tools (`asToolWith`), built like the
 * scenario's client against the same fake server. `close()` closes them.
 */
function buildSubagents(scenario, server, root) {
  const specs = scenario.subagents ?? []
  const clients = []
  const set = {
    close: () => clients.forEach((c) => c.close()),
    tool(name) {
      const i = specs.findIndex((s) => s.name === name)
      if (i < 0) throw new Error(`no subagent ${JSON.stringify(name)}`)
      const sub = specs[i]
      const o = sub.options ?? {}
      const options = renameKeys(o, camel)
      return clients[i].asToolWith(name, sub.description ?? `The subagent ${name}.`, options)
    },
    parentTools: () => specs.filter((s) => s.in_parent !== false).map((s) => set.tool(s.name)),
  }
  try {
    for (const sub of specs) {
      const state = { client: undefined }
      const options = { ...clientOptions({ ...scenario, config: sub.config ?? {} }, server, root) }
      options.tools = (sub.host_tools ?? []).map((t) => hostTool(t, state))
      if (sub.before_tool !== undefined) options.hooks = { beforeTool: beforeTool(sub.before_tool) }
      if (sub.wait_for !== undefined) options.waitFor = scriptedWaitFor(sub.wait_for)
      state.client = createClient(options)
      clients.push(state.client)
    }
    for (const [i, sub] of specs.entries()) for (const name of sub.subagents ?? []) clients[i].register(set.tool(name))
    return set
  } catch (e) {
    set.close()
    throw e
  }
}

/**
 * Extension `lifecycle`: for each point named, the answer every call gives (core's JSON form,
 * spelled as JavaScript hosts write it; `true` for an observer) or `"raise"`; every call is
 * logged as `point` or `point:detail` before it answers. Methods named as the engine's points.
 */
function lifecycleHooks(spec, log) {
  if (!spec) return {}
  const camel = (k) => k.replace(/_([a-z])/g, (_, c) => c.toUpperCase())
  const answer = (point, entry) => {
    log.push(entry)
    const given = spec[point]
    if (given === 'raise') throw new Error(`${point} raised`)
    if (given !== null && typeof given === 'object') {
      const [[tag, text]] = Object.entries(given)
      return { [camel(tag)]: text }
    }
    return undefined // true, "continue", "stop", "proceed": the point's default
  }
  const details = {
    on_prompt: () => 'on_prompt',
    on_stop: () => 'on_stop',
    before_compact: (req) => `before_compact:${req.trigger}`,
    on_tool_error: (call) => `on_tool_error:${call.name}`,
    on_turn_start: () => 'on_turn_start',
    on_turn_end: (end) => `on_turn_end:${end.outcome}`,
    on_notification: (n) => `on_notification:${n.kind}`,
  }
  return Object.fromEntries(
    Object.keys(spec).map((point) => [camel(point), async (...args) => answer(point, details[point](...args))]),
  )
}

/** A stepped turn's action as the trace has it (extension `step`). */
function traceAction(action) {
  switch (action.kind) {
    case 'model_request':
      return { kind: 'model_request', step: action.step }
    case 'summary_request':
      return { kind: 'summary_request', step: action.step }
    case 'tool_call':
      return { kind: 'tool_call', name: action.call.name, call_id: action.call.id, idempotency_key: action.idempotencyKey }
    case 'ask':
      return { kind: 'ask', call_id: action.request.callId }
    case 'done':
      return { kind: 'done' }
    default:
      throw new Error(`step: unknown action ${JSON.stringify(action)}`)
  }
}

/** A feed the stepper must refuse: its StepError's message, or nothing when it was taken. */
function refusedFeed(stepper, result, errors) {
  try {
    stepper.feed(result)
  } catch (e) {
    if (!(e instanceof StepError)) throw e
    errors.push(e.message)
  }
}

/**
 * Extension `step`: the prompt as a turn stepped by hand (`client.step`), each action performed;
 * with `wrong_feed`, a result for no waiting call fed before the first action and after the
 * end; with `replay`, the journal fed to a stepper of a client built again from the same start.
 */
async function runStepped(scenario, client, build, deadline) {
  const { replay = false, wrong_feed: wrongFeed = false } = scenario.step
  const stepper = client.step(scenario.prompt, { signal: deadline })
  const stepErrors = []
  const events = []
  const drain = () => events.push(...stepper.events().map(traceEvent))
  if (wrongFeed) {
    const first = await stepper.next()
    if (first.kind !== 'model_request') throw new Error(`step: the first action is ${first.kind}`)
    refusedFeed(stepper, { kind: 'tool_result', callId: 'nope', output: { content: 'x', isError: false } }, stepErrors)
  }
  const actions = []
  let done
  for (let i = 0; !done; i++) {
    if (i > 1000) throw new Error('step: no done after 1000 actions')
    const action = await stepper.next()
    actions.push(traceAction(action))
    if (action.kind === 'done') done = action.result
    else {
      await stepper.perform()
      drain()
    }
  }
  drain()
  if (wrongFeed) refusedFeed(stepper, { kind: 'answer', callId: 'nope', answer: { approve: true } }, stepErrors)
  const trace = {
    outcome: done.outcome,
    final_text: done.finalText,
    usage: renameKeys(done.usage, snake),
    output: done.output ?? null,
    events,
    turn_id: stepper.turnId,
    actions,
    step_errors: stepErrors,
  }
  if (replay) {
    const journal = stepper.journal()
    const start = stepper.options()
    client.close()
    const again = build()
    const replayer = again.step(scenario.prompt, { ...start, signal: deadline })
    const replayed = []
    for (let i = 0; ; i++) {
      const action = await replayer.next()
      replayed.push(traceAction(action))
      if (action.kind === 'done') {
        trace.replay_final_text = action.result.finalText ?? null
        break
      }
      if (i >= journal.length) throw new Error(`step: the replay wants a result past the journal's ${journal.length}`)
      replayer.feed(journal[i])
    }
    trace.replay_actions = replayed
  }
  return trace
}

async function runScenario(file, scenario, deadline) {
  const root = realpathSync(mkdtempSync(join(tmpdir(), 'contenox-node-conformance-')))
  const server = await startFakeServer(file)
  const state = { client: undefined }
  let mcp
  let remote
  let subagents
  try {
    for (const [path, content] of Object.entries(scenario.workspace ?? {})) {
      mkdirSync(dirname(join(root, path)), { recursive: true })
      writeFileSync(join(root, path), content)
    }
    const base = clientOptions(scenario, server, root)
    if (scenario.remote?.length) remote = await remoteSetup(file, scenario.remote)
    const waitFor = scriptedWaitFor(scenario.wait_for ?? [])
    subagents = buildSubagents(scenario, server, root)
    const compactions = []
    const lifecycleLog = []
    const told = compactor({ onCompact: (notice) => void compactions.push(traceEvent(notice)) })
    const build = () => {
      const hooks = {
        beforeTool: beforeTool(scenario.before_tool ?? []),
        ...lifecycleHooks(scenario.lifecycle, lifecycleLog),
      }
      const afterRules = scenario.after_tool
      if (afterRules) {
        hooks.afterTool = (e) => {
          const rule = afterRules.find((r) => ruleMatches(r.match ?? {}, e))
          return rule ? { content: rule.replace } : undefined
        }
      }
      const tools = (scenario.host_tools ?? []).map((t) => hostTool(t, state))
      state.client = createClient({ ...base, tools, hooks, waitFor, compactor: told })
      for (const t of subagents.parentTools()) state.client.register(t)
      remote?.source.registerInto(state.client)
      return state.client
    }
    const refused = async (e) => {
      if (!(e instanceof ConfigurationError) || scenario.expect?.config_error_contains === undefined) throw e
      // SPEC "Approval policies": the creation error is the result; no turn runs.
      return {
        scenario: scenario.name,
        binding: 'node',
        config_error: e.message,
        requests: await server.requests(),
        workspace: snapshot(root),
      }
    }
    let client
    try {
      client = build()
    } catch (e) {
      return await refused(e)
    }
    if (scenario.mcp) {
      mcp = await mcpSetup(scenario.mcp)
      mcp.source.registerInto(client)
      if (mcp.resourceTools) for (const t of mcp.source.resourceTools()) client.register(t)
    }
    if (remote?.unreachable) await remote.up()
    if (scenario.transcript !== undefined) client.setTranscript(scenario.transcript)
    if (scenario.step !== undefined) {
      const stepped = await runStepped(scenario, client, build, deadline)
      return {
        scenario: scenario.name,
        binding: 'node',
        ...stepped,
        requests: await server.requests(),
        workspace: snapshot(root),
        remote_requests: remote ? await remote.requests() : [],
        compactions: [...compactions],
      }
    }
    const actions = scenario.actions ?? []
    const fired = actions.map(() => false)
    const events = []
    let last
    let chainError
    const prompts = [scenario.prompt, ...(scenario.more_prompts ?? [])]
    for (const [i, prompt] of prompts.entries()) {
      if (scenario.restart_between_prompts && i > 0) {
        const saved = JSON.stringify(client.transcript)
        client.close()
        client = build()
        client.setTranscript(saved)
      }
      let run
      // Extension `run_settings`: the first prompt's run has its own model settings, in
      // JavaScript's spelling; a refusal of them is the trace's config_error.
      const settings = i === 0 ? runSettings(scenario.run_settings) : undefined
      // Extension `prompt_parts`: the first prompt as parts, image data as a Buffer.
      const parts = i === 0 ? scenario.prompt_parts : undefined
      // Extension `run_output_schema`: the first prompt's run has its own output schema.
      const outputSchema = i === 0 ? scenario.run_output_schema : undefined
      if (scenario.chain === undefined) {
        try {
          run = client.stream(parts === undefined ? prompt : nodeParts(parts), { signal: deadline, settings, outputSchema })
        } catch (e) {
          client.close()
          return await refused(e)
        }
      } else {
        // Extension `chain`: the prompt is the chain's input. A chain that does not read is the
        // trace's `chain_error`; nothing runs.
        try {
          run = client.streamChain(scenario.chain, prompt, { signal: deadline, settings })
        } catch (e) {
          if (!(e instanceof ConfigurationError)) throw e
          chainError = e.message
          break
        }
      }
      for await (const event of run) {
        for (const [j, action] of actions.entries()) {
          if (fired[j] || !eventMatches(event, action.on)) continue
          fired[j] = true
          if (action.do === 'cancel') run.cancel()
          else if (action.do?.register) client.register(echoTool(action.do.register.name))
          else throw new Error(`unknown action ${JSON.stringify(action.do)}`)
        }
        events.push(traceEvent(event))
      }
      last = await run.result
    }
    // Extension `resume`: the last turn suspended; a client built again from the same parts
    // resumes it from its checkpoint with `answers` (under `policy` when given, after `wait_ms`,
    // from a checkpoint `edit`ed to be `tampered` or `newer`, a second time when `twice`). A
    // refusal is the trace's `resume_error`.
    let resumeError
    if (scenario.resume !== undefined) {
      const spec = scenario.resume
      if (!last?.checkpoint) throw new Error('resume: the turn did not suspend (no checkpoint)')
      const checkpoint = editCheckpoint(last.checkpoint, spec.edit)
      if (spec.wait_ms) await new Promise((r) => setTimeout(r, spec.wait_ms))
      client.close()
      client = build()
      if (spec.policy !== undefined) client.setPolicy(spec.policy)
      for (let k = 0; k < (spec.twice ? 2 : 1); k++) {
        let run
        try {
          run = client.resumeStream(checkpoint, spec.answers ?? {}, { signal: deadline })
        } catch (e) {
          if (!(e instanceof CheckpointError)) throw e
          resumeError = e.message
          break
        }
        for await (const event of run) events.push(traceEvent(event))
        last = await run.result
      }
    }
    const notices = [...compactions]
    if (scenario.settle_ms) await new Promise((r) => setTimeout(r, scenario.settle_ms))
    if (chainError !== undefined) {
      return {
        scenario: scenario.name,
        binding: 'node',
        outcome: null,
        final_text: null,
        usage: null,
        events,
        requests: await server.requests(),
        workspace: snapshot(root),
        compactions: notices,
        chain_error: chainError,
      }
    }
    return {
      scenario: scenario.name,
      binding: 'node',
      outcome: last.outcome,
      final_text: last.finalText,
      usage: renameKeys(last.usage, snake),
      events,
      requests: await server.requests(),
      workspace: snapshot(root),
      remote_requests: remote ? await remote.requests() : [],
      compactions: notices,
      output: last.output ?? null,
      resume_error: resumeError,
      ...(scenario.lifecycle ? { lifecycle: [...lifecycleLog] } : {}),
    }
  } finally {
    state.client?.close()
    subagents?.close()
    await mcp?.close()
    await remote?.close()
    await server.stop()
    rmSync(root, { recursive: true, force: true })
  }
}

const files = scenarioFiles()
const names = new Map()
for (const file of files) {
  const name = JSON.parse(readFileSync(file, 'utf8')).name
  names.set(name, (names.get(name) ?? 0) + 1)
}

describe('conformance', { concurrency: 4 }, () => {
  test('scenarios were found', () => {
    assert.ok(files.length > 0, 'no scenario files')
  })
  for (const file of files) {
    const scenario = JSON.parse(readFileSync(file, 'utf8'))
    const label = names.get(scenario.name) > 1 ? `${scenario.name} (${file})` : scenario.name
    test(label, { timeout: SCENARIO_TIMEOUT_MS + 10_000 }, async () => {
      const deadline = AbortSignal.timeout(SCENARIO_TIMEOUT_MS)
      const trace = await runScenario(file, scenario, deadline)
      assert.ok(!deadline.aborted, `still running after ${SCENARIO_TIMEOUT_MS / 1000} s`)
      const dir = process.env.CONTENOX_TRACE_DIR || mkdtempSync(join(tmpdir(), 'contenox-node-trace-'))
      mkdirSync(dir, { recursive: true })
      const tracePath = join(dir, `${scenario.name}.node.json`)
      writeFileSync(tracePath, JSON.stringify(trace, null, 2))
      const check = spawnSync(conformanceCheck, [file, tracePath], { encoding: 'utf8' })
      if (!process.env.CONTENOX_TRACE_DIR) rmSync(dir, { recursive: true, force: true })
      assert.equal(check.status, 0, `${check.stdout}${check.stderr}`)
    })
  }
})
