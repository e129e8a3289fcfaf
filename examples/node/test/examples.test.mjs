// Each one-shot example runs to its end (exit 0) and prints what it is about. The examples are
// the compiled build/*.js (npm run build), run with the `contenox` package this project
// resolves: the workspace's binding in development, the installed tarball in the package test.
import assert from 'node:assert/strict'
import { spawnSync } from 'node:child_process'
import { join } from 'node:path'
import { test } from 'node:test'
import { fileURLToPath } from 'node:url'

const build = fileURLToPath(new URL('../build/', import.meta.url))

const expected = {
  'quickstart.js': /^done: It is clear and 21 °C in Oslo\.$/m,
  'gate.js': /second turn: cancelled/,
  'transcript.js': /^done: Your name is Ada\./m,
  'output_schema.js': /^done: Oslo 3\.5$/m,
  'telemetry.js': /^done: Researcher says 42\.$/m,
  'stepped.js': /^done: Saved the note\.\nreplayed: 4 results, Saved the note\. \(save ran 1 time in all\)$/m,
  'images.js': /^done: Two red pixels\.\nsent: text, image, image\nrefused: prompt\[0\]\.data$/m,
  'host_hooks.js':
    /^asked: Run bash\?\nwebsearch: 1\. About contenox\nwrite: no writes in this session\nbash: Started in the background as shell shell_1\..*\nshells: \["shell_1"\]\ndone: Searched; the write was refused/m,
}

for (const [file, output] of Object.entries(expected)) {
  test(`example ${file} runs to its end`, () => {
    const env = { ...process.env }
    delete env.CONTENOX_BASE_URL // the scripted model, whatever the caller's environment
    const r = spawnSync(process.execPath, [join(build, file)], { encoding: 'utf8', timeout: 60_000, env })
    assert.equal(r.status, 0, `${file} exited ${r.status} (${r.signal ?? 'no signal'}):\n${r.stdout}\n${r.stderr}`)
    assert.match(r.stdout, output)
  })
}
