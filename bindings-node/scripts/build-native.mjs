// Build the native module with the workspace's ordinary `cargo build` (so it shares
// target/debug with the rest of the workspace) and generate its loader and type definitions
// with @napi-rs/cli's own library functions: the same native.js and native.d.ts as
// `napi build --platform --js native.js --dts native.d.ts`, without that command's
// `--target <host>`, which would compile every dependency a second time in a separate
// directory.
//
//   node scripts/build-native.mjs [--release | --profile NAME] [--check-dts] [--out DIR]
//
// --profile NAME: a cargo profile of the workspace (`profiling`: the release settings plus line
// tables, for the benchmarks).
// --check-dts: leave native.d.ts as it is and fail when the build's type definitions differ from
// it (the committed file drifted from the Rust source).
// --out DIR: write the native module, native.js and native.d.ts into DIR instead of this package
// (scripts/pack.mjs: the release build goes into the packages, not over the development build).
import { spawnSync } from 'node:child_process'
import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { parseArgs } from 'node:util'

import { generateTypeDef, parseTriple, readNapiConfig, writeJsBinding } from '@napi-rs/cli'

const here = dirname(dirname(fileURLToPath(import.meta.url)))
const { values: args } = parseArgs({
  options: {
    release: { type: 'boolean', default: false },
    profile: { type: 'string' },
    'check-dts': { type: 'boolean', default: false },
    out: { type: 'string' },
  },
})
if (args.release && args.profile) throw new Error('--release or --profile, not both')
const profile = args.profile ?? (args.release ? 'release' : 'dev')
const checkDts = args['check-dts']
const outDir = args.out ? resolve(args.out) : here
mkdirSync(outDir, { recursive: true })
// packageName: the prefix of the platform packages (napi.packageName in package.json), which the
// loader requires when the module is not beside it: `@contenox/node-linux-x64-gnu`, ...
const { packageName, binaryName, packageJson: pkg } = await readNapiConfig(join(here, 'package.json'))
const crate = 'contenox-node'

const rustc = spawnSync(process.env.RUSTC ?? 'rustc', ['-vV'], { encoding: 'utf8' })
if (rustc.status !== 0) throw new Error(`rustc -vV failed: ${rustc.stderr}`)
const host = /^host: (.+)$/m.exec(rustc.stdout)[1].trim()
const { platformArchABI } = parseTriple(host)

const typeDefDir = mkdtempSync(join(tmpdir(), 'contenox-node-typedef-'))
try {
  const cargo = spawnSync(
    process.env.CARGO ?? 'cargo',
    ['build', '-p', crate, '--lib', '--message-format=json-render-diagnostics', '--profile', profile],
    {
      cwd: here,
      encoding: 'utf8',
      maxBuffer: 256 * 1024 * 1024,
      stdio: ['ignore', 'pipe', 'inherit'],
      env: {
        ...process.env,
        // napi-derive writes the type definitions of every #[napi] item here while it expands
        // them; the second variable makes cargo rebuild this crate so that it does.
        NAPI_TYPE_DEF_TMP_FOLDER: typeDefDir,
        NAPI_FORCE_BUILD_CONTENOX_NODE: String(Date.now()),
      },
    },
  )
  if (cargo.status !== 0) throw new Error(`cargo build failed (exit ${cargo.status})`)
  const artifact = cargo.stdout
    .split('\n')
    .filter((line) => line.startsWith('{'))
    .map((line) => JSON.parse(line))
    .find((m) => m.reason === 'compiler-artifact' && m.target?.kind?.includes('cdylib') && m.target.name === 'contenox_node')
  if (!artifact) throw new Error('cargo did not report the contenox_node cdylib')
  const library = artifact.filenames.find((f) => /\.(so|dylib|dll)$/.test(f))
  copyFileSync(library, join(outDir, `${binaryName}.${platformArchABI}.node`))

  const { exports, dts } = await generateTypeDef({ typeDefDir, cwd: here, declareBindingTarget: true })
  const dtsPath = join(outDir, 'native.d.ts')
  if (checkDts) {
    const committed = readFileSync(join(here, 'native.d.ts'), 'utf8')
    if (committed !== dts) {
      const a = committed.split('\n')
      const b = dts.split('\n')
      const at = a.findIndex((line, i) => line !== b[i])
      console.error(`native.d.ts drifted from the build (first difference at line ${at + 1}):`)
      console.error(`  committed: ${a[at] ?? '<end of file>'}`)
      console.error(`  built:     ${b[at] ?? '<end of file>'}`)
      console.error('Run `npm run build:debug` and commit native.d.ts.')
      process.exitCode = 1
    } else {
      console.log('native.d.ts matches the build')
    }
  } else {
    writeFileSync(dtsPath, dts)
  }
  await writeJsBinding({
    platform: true,
    idents: exports,
    jsBinding: 'native.js',
    format: 'commonjs',
    binaryName,
    packageName,
    version: pkg.version,
    outputDir: outDir,
  })
  console.log(`built ${binaryName}.${platformArchABI}.node (profile ${profile}), native.js, native.d.ts`)
} finally {
  rmSync(typeDefDir, { recursive: true, force: true })
}
