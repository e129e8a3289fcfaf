// Write hot-code.ld, the linker script that packs the native module's start-up and turn code
// together (bindings-node/build.rs passes it to release links on x86-64 Linux), from callgrind
// profiles of a process that does what a user's does: load the module, create a client with a
// tool, run fresh and continued turns, close. To regenerate (in bindings-node/):
//
//   cargo rustc --release -p contenox-node --lib -- -C strip=none   # the release build, symbols kept
//   cp ../target/release/libcontenox_node.so contenox.linux-x64-gnu.node && npm run build:ts
//   valgrind --tool=callgrind --demangle=no --callgrind-out-file=/tmp/cg.out \
//     node scripts/hot-code-workload.mjs
//   node scripts/hot-code.mjs /tmp/cg.out [more.out ...] [--module contenox] \
//     --symbols contenox.linux-x64-gnu.node > hot-code.ld
//
// `--symbols MODULE`: a function also counts as the module's when MODULE (the profiled file)
// defines its name (`nm --defined-only`), wherever callgrind filed it. Under Node, callgrind
// often files most of the module's functions under an unnamed object (`ob=(2) ???`, the mapping
// not matched to its file), and the module's own `ob=` then holds a few dozen of its ~2,000;
// its symbol names (Rust's hashes) are the module's alone, so the names decide.
//
// Several profiles (other workloads, other model servers) give the union of their functions.
// The release build has the same symbol hashes as the profiled one when Cargo.lock is the same
// (`-C strip` does not change them); the exact names then fill .text.hot.
//
// Why: the kernel maps a file's pages in 64 KB-or-larger blocks around every page fault
// (fault-around, large page-cache folios), and the code a client and a turn run was scattered
// over the module's 8.7 MB of .text, so a process that runs 1.2 MB of it had 7 MB of the module's
// code resident (docs/benchmarks.md, "Node binding: memory"). rustc gives every function its
// own section (.text.<symbol>), so the linker can put the profiled ones first, contiguously.
//
// Exact names go stale: a Rust symbol's trailing hash (`17h<16 hex digits>E`; in v0 mangling,
// the crate disambiguators) and LLVM's `.llvm.<digits>` suffix change with a dependency's
// version, the toolchain, any code change. So the script names no function exactly: each one
// is a pattern with those parts as `*`, which stays valid from build to build (the pattern of a
// generic function also matches its other instances, every `RawTable<T>::reserve_rehash`: about
// 2.2 MB packed where the exact names of one build's 2,000 functions were 1.24 MB, measured in
// docs/benchmarks.md). What goes stale now is only a renamed or new hot function, which lands in
// the ordinary .text: a stale script costs layout, never the build, and regenerating it is
// wanted after large changes to the engine, not after every release.
import { execFileSync } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { parseArgs } from 'node:util'

const { values: opts, positionals } = parseArgs({
  allowPositionals: true,
  options: { module: { type: 'string', default: 'contenox' }, symbols: { type: 'string' } },
})
if (positionals.length === 0) {
  process.stderr.write('usage: node scripts/hot-code.mjs CALLGRIND_OUT... [--module NAME]\n')
  process.exit(2)
}

// The text symbols the module defines (`T`/`t`), when asked: see `--symbols` above.
const defined = new Set()
if (opts.symbols) {
  const nm = execFileSync('nm', ['--defined-only', opts.symbols], { encoding: 'utf8', maxBuffer: 1 << 28 })
  for (const line of nm.split('\n')) {
    const [, kind, sym] = line.split(' ')
    if (sym && (kind === 'T' || kind === 't')) defined.add(sym)
  }
  if (defined.size === 0) {
    process.stderr.write(`hot-code.mjs: ${opts.symbols} defines no text symbols (stripped?)\n`)
    process.exit(1)
  }
}
const moduleFile = new RegExp(`/${opts.module.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}[^/]*\\.(node|so)$`)
const hot = []
const seen = new Set()
for (const file of positionals) {
  const text = readFileSync(file, 'utf8')
  // callgrind compresses names: `ob=(3) /path` defines id 3, a later `ob=(3)` refers to it; the
  // same for fn=, cfn=, cob=. A function's own costs follow its `fn=` line, under the last `ob=`.
  const objects = new Map()
  const functions = new Map()
  const name = (table, value) => {
    const m = /^\((\d+)\)(?: (.*))?$/.exec(value)
    if (!m) return value
    if (m[2] !== undefined) table.set(m[1], m[2])
    return table.get(m[1])
  }
  let object = ''
  for (const line of text.split('\n')) {
    const eq = line.indexOf('=')
    if (eq < 0) continue
    const key = line.slice(0, eq)
    const value = line.slice(eq + 1)
    if (key === 'ob') object = name(objects, value) ?? ''
    else if (key === 'cob') name(objects, value)
    else if (key === 'cfn') name(functions, value)
    else if (key === 'fn') {
      const fn = name(functions, value)
      if (fn && (moduleFile.test(object) || defined.has(fn)) && !seen.has(fn)) {
        seen.add(fn)
        hot.push(fn)
      }
    }
  }
}
if (hot.length === 0) {
  process.stderr.write(`hot-code.mjs: no function of a module matching ${moduleFile} in the profile\n`)
  process.exit(1)
}

// Only names a linker script can carry unquoted (Rust's legacy mangling and C names are
// [A-Za-z0-9_$.]); callgrind names code without a symbol by its address, which no section has.
const usable = hot.filter((fn) => /^[A-Za-z0-9_$.]+$/.test(fn) && !/^0x[0-9a-f]+$/.test(fn))
const patterns = []
const kept = new Set()
for (const fn of usable) {
  const pattern = fn
    // LLVM's numbering of a promoted or local copy: `.llvm.<digits>`, `.<digits>`
    .replace(/\.llvm\.\d+$/, '.llvm.*')
    .replace(/\.\d+$/, '.*')
    // legacy mangling (_ZN...): the crate-and-instance hash at the end (before such a suffix)
    .replace(/17h[0-9a-f]{16}E(?=$|\.)/, '17h*E')
    // v0 mangling (_R..., the standard library's): crate disambiguators and the back-references
    // whose offsets shift when a disambiguator's length does
    .replace(/^_R.*/, (v0) => v0.replace(/Cs[0-9A-Za-z]*_/g, 'Cs*_').replace(/B[0-9A-Za-z]*_/g, 'B*_'))
  if (kept.has(pattern)) continue
  kept.add(pattern)
  patterns.push(pattern)
}

// .text.hot: the profiled functions as patterns, in profile order. A section goes to the first
// pattern that matches it. `.text*.`: LLVM puts functions it guesses cold into
// .text.unlikely.<symbol>, and some of them run all the same.
process.stdout.write(
  [
    '/* Generated by bindings-node/scripts/hot-code.mjs from a callgrind profile of loading the',
    '   module, creating a client with a tool and running turns: do not edit, regenerate. The',
    '   functions such a process runs, packed before the rest of .text so that the pages the',
    '   kernel maps around each fault hold code that runs (docs/benchmarks.md, "Node binding:',
    '   memory"). Patterns only, no symbol hashes: valid for any build; a stale entry costs',
    '   layout, never the build. */',
    'SECTIONS',
    '{',
    '  .text.hot : {',
    ...patterns.map((p) => `    *(.text*.${p})`),
    '  }',
    '}',
    'INSERT BEFORE .text;',
    '',
  ].join('\n'),
)
process.stderr.write(`hot-code.mjs: ${usable.length} functions, ${patterns.length} patterns\n`)
