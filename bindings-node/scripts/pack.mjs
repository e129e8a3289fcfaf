// Pack the npm packages the way napi-rs publishes them: the main package `contenox` (JavaScript,
// types, the loader) with `optionalDependencies` on one platform package per napi target
// (`@contenox/node-linux-x64-gnu`, ...: `napi.packageName` + the target's platform-arch-abi),
// and the platform package of this machine carrying the release native module. The same steps
// as a release: `napi create-npm-dirs`, the module into its platform package (what
// `napi artifacts` does), the optionalDependencies that `napi prepublish` writes, then
// `npm pack` of each (publishing would be `npm publish` of the same directories).
//
//   node scripts/pack.mjs [--out DIR]          (default DIR: <cargo target dir>/dist/node)
//
// Prints the two tarballs' paths, main package first. The native module is built with
// `cargo build --release -p contenox-node` in the workspace's target directory (shared with the
// other release builds); the development build in this directory is left as it is.
import { execFileSync, spawnSync } from 'node:child_process'
import { copyFileSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { dirname, join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { parseArgs } from 'node:util'

import { NapiCli, parseTriple, readNapiConfig } from '@napi-rs/cli'

const here = dirname(dirname(fileURLToPath(import.meta.url)))
const repo = dirname(here)
const target = process.env.CARGO_TARGET_DIR ? resolve(process.env.CARGO_TARGET_DIR) : join(repo, 'target')
const { values: args } = parseArgs({ options: { out: { type: 'string' } } })
const out = resolve(args.out ?? join(target, 'dist', 'node'))
const stage = join(out, 'stage')
const npm = process.platform === 'win32' ? 'npm.cmd' : 'npm'

function run(command, argv, cwd) {
  const r = spawnSync(command, argv, { cwd, stdio: 'inherit' })
  if (r.status !== 0) throw new Error(`${command} ${argv.join(' ')} failed (exit ${r.status}) in ${cwd}`)
}

/** `npm pack` of `dir` into `out`; returns the tarball's path. */
function pack(dir) {
  const json = execFileSync(npm, ['pack', '--json', '--pack-destination', out], { cwd: dir, encoding: 'utf8' })
  const [{ filename, files }] = JSON.parse(json)
  return { tarball: join(out, filename), files: files.map((f) => f.path) }
}

rmSync(out, { recursive: true, force: true })
mkdirSync(stage, { recursive: true })

// 1. The release native module, its loader and types (into the stage, not over the dev build).
const artifacts = join(stage, 'artifacts')
run(process.execPath, [join(here, 'scripts/build-native.mjs'), '--release', '--out', artifacts], here)
// 2. The TypeScript layer (index.js, index.d.ts, index.mjs, index.d.mts, lib/*.js, lib/*.d.ts).
run(npm, ['run', '--silent', 'build:ts'], here)

// 3. The main package: what `files` lists, the release loader, and the optionalDependencies
//    `napi prepublish` writes (every target of napi.targets, at this version).
const { packageJson, packageName, binaryName, targets } = await readNapiConfig(join(here, 'package.json'))
const main = join(stage, 'contenox')
mkdirSync(main)
const fromBuild = new Set(['native.js', 'native.d.ts'])
// `files` holds plain names and `DIR/*.EXT` patterns (the TypeScript layer's lib/*.js, ...).
const listed = packageJson.files.flatMap((file) => {
  const glob = /^([\w-]+)\/\*(\.[\w.]+)$/.exec(file)
  if (glob) return readdirSync(join(here, glob[1])).filter((f) => f.endsWith(glob[2])).map((f) => `${glob[1]}/${f}`)
  if (file.includes('*')) throw new Error(`pack.mjs copies plain names and DIR/*.EXT only, not ${file}`)
  return [file]
})
for (const file of [...listed, 'README.md']) {
  mkdirSync(dirname(join(main, file)), { recursive: true })
  copyFileSync(join(fromBuild.has(file) ? artifacts : here, file), join(main, file))
}
const optionalDependencies = Object.fromEntries(
  targets.map((t) => [`${packageName}-${t.platformArchABI}`, packageJson.version]),
)
writeFileSync(join(main, 'package.json'), `${JSON.stringify({ ...packageJson, optionalDependencies }, null, 2)}\n`)

// 4. The platform packages (`napi create-npm-dirs`), and this machine's native module copied
//    into its own. (A release job runs `napi artifacts`, which does this copy for the modules of
//    every target at once and refuses to run while one is missing; here only the host's exists.)
await new NapiCli().createNpmDirs({ cwd: main, npmDir: 'npm' })
const rustc = execFileSync(process.env.RUSTC ?? 'rustc', ['-vV'], { encoding: 'utf8' })
const { platformArchABI } = parseTriple(/^host: (.+)$/m.exec(rustc)[1].trim())
const platformDir = join(main, 'npm', platformArchABI)
const moduleFile = `${binaryName}.${platformArchABI}.node`
const platformPkg = JSON.parse(readFileSync(join(platformDir, 'package.json'), 'utf8'))
if (platformPkg.main !== moduleFile) {
  throw new Error(`${platformDir}/package.json names ${platformPkg.main}, the build made ${moduleFile}`)
}
copyFileSync(join(artifacts, moduleFile), join(platformDir, moduleFile))

// 5. npm pack: the main package (no native module inside) and this machine's platform package.
const mainPack = pack(main)
const stray = mainPack.files.filter((f) => f.endsWith('.node'))
if (stray.length) throw new Error(`the main package must not carry a native module: ${stray}`)
const platformPack = pack(platformDir)
if (!platformPack.files.includes(moduleFile)) {
  throw new Error(`${platformPack.tarball} lacks ${moduleFile}: ${platformPack.files}`)
}
rmSync(stage, { recursive: true, force: true })
console.log(mainPack.tarball)
console.log(platformPack.tarball)
