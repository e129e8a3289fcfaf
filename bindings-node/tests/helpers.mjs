// Shared by the tests: paths of the harness binaries and a fake model server handle.
import { spawn } from 'node:child_process'
import { once } from 'node:events'
import { dirname, join, resolve } from 'node:path'
import { createInterface } from 'node:readline'
import { fileURLToPath } from 'node:url'

export const packageDir = resolve(dirname(fileURLToPath(import.meta.url)), '..')
export const repoDir = resolve(packageDir, '..')
export const fakeModelServer = process.env.FAKE_MODEL_SERVER || join(repoDir, 'target/debug/fake-model-server')
export const conformanceCheck = process.env.CONFORMANCE_CHECK || join(repoDir, 'target/debug/conformance-check')

/**
 * Start `fake-model-server --scenario FILE [...args]`. It prints its port on the first line and
 * exits when its stdin closes; `stop()` closes it, waits, and kills it if it lingers.
 */
export async function startFakeServer(file, args = []) {
  const child = spawn(fakeModelServer, ['--scenario', file, ...args], { stdio: ['pipe', 'pipe', 'inherit'] })
  const exited = once(child, 'exit')
  const lines = createInterface({ input: child.stdout })
  const first = await Promise.race([
    once(lines, 'line').then(([line]) => line),
    exited.then(([code]) => {
      throw new Error(`fake-model-server exited with ${code} before printing its port`)
    }),
  ])
  lines.close()
  const port = Number(first.trim())
  return {
    port,
    root: `http://127.0.0.1:${port}`,
    async requests() {
      const res = await fetch(`http://127.0.0.1:${port}/_fake/requests`)
      return res.json()
    },
    async stop() {
      if (child.exitCode !== null || child.signalCode !== null) return
      child.stdin.end()
      const timer = setTimeout(() => child.kill('SIGKILL'), 5000)
      await exited
      clearTimeout(timer)
    },
  }
}

export const fakeRemoteService = process.env.FAKE_REMOTE_SERVICE || join(repoDir, 'target/debug/fake-remote-service')

/**
 * Start `fake-remote-service --scenario FILE`: the scenario's `remote` services. It prints one
 * JSON line (`{control, hooks, services}`) and exits when its stdin closes. `up()` starts the
 * `unreachable` services, `requests()` is what they received, `stop()` closes it (killing it if
 * it lingers).
 */
export async function startFakeRemote(file) {
  const child = spawn(fakeRemoteService, ['--scenario', file], { stdio: ['pipe', 'pipe', 'inherit'] })
  const exited = once(child, 'exit')
  const lines = createInterface({ input: child.stdout })
  const stop = async () => {
    if (child.exitCode !== null || child.signalCode !== null) return
    child.stdin.end()
    const timer = setTimeout(() => child.kill('SIGKILL'), 5000)
    await exited
    clearTimeout(timer)
  }
  const first = await Promise.race([
    once(lines, 'line').then(([line]) => line),
    exited.then(([code]) => {
      throw new Error(`fake-remote-service exited with ${code} before printing its line`)
    }),
  ])
  lines.close()
  let info
  try {
    info = JSON.parse(first)
  } catch {
    await stop()
    throw new Error(`fake-remote-service printed ${JSON.stringify(first)}`)
  }
  const control = `http://127.0.0.1:${info.control}`
  return {
    hooks: info.hooks,
    async up() {
      const res = await fetch(`${control}/_fake/up`, { method: 'POST' })
      if (!res.ok) throw new Error(`remote: cannot bring the services up: ${await res.text()}`)
    },
    async requests() {
      const res = await fetch(`${control}/_fake/remote_requests`)
      return res.json()
    },
    stop,
  }
}

/** The text of a transcript message (its text parts, joined). */
export const textOf = (m) => m.content.filter((p) => p.type === 'text').map((p) => p.text).join('')
