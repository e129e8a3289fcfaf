// The package's public TypeScript surface as text: every export of the built index.d.ts (followed
// through re-exports into whichever file declares it), sorted by name, each with its declaration
// as tsc wrote it (doc comment included). Two builds with the same surface print the same bytes,
// however the source is split into files:
//
//   node scripts/api-surface.mjs > before.txt   (after `npm run build:ts`)
//
// Also lists the runtime exports of index.js (what index.mjs re-exports).
import { cpSync, mkdtempSync, readdirSync, rmSync, symlinkSync } from 'node:fs'
import { createRequire } from 'node:module'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'

const here = join(dirname(fileURLToPath(import.meta.url)), '..')
const require = createRequire(import.meta.url)
const ts = require('typescript')

// The declarations alone, away from the .ts sources (which the compiler would read instead).
const copy = mkdtempSync(join(tmpdir(), 'contenox-api-surface-'))
for (const entry of readdirSync(here, { recursive: true })) {
  if (entry.endsWith('.d.ts') && !entry.startsWith('node_modules')) cpSync(join(here, entry), join(copy, entry))
}
symlinkSync(join(here, 'node_modules'), join(copy, 'node_modules'))
const entry = join(copy, 'index.d.ts')
const program = ts.createProgram([entry], { module: ts.ModuleKind.Node16, moduleResolution: ts.ModuleResolutionKind.Node16, types: ['node'] })
const checker = program.getTypeChecker()
const file = program.getSourceFile(entry)
const moduleSymbol = checker.getSymbolAtLocation(file)
const out = []
for (const exported of checker.getExportsOfModule(moduleSymbol).sort((a, b) => a.name.localeCompare(b.name))) {
  const symbol = exported.flags & ts.SymbolFlags.Alias ? checker.getAliasedSymbol(exported) : exported
  for (const decl of symbol.declarations ?? []) {
    // The statement that declares it (a variable's declaration sits inside its statement).
    const stmt = ts.isVariableDeclaration(decl) ? decl.parent.parent : decl
    // Its doc comments and its text, without other comments before it (a file's header).
    const docs = (stmt.jsDoc ?? []).map((d) => d.getText())
    const text = [...docs, stmt.getText()].join('\n')
    out.push(`=== ${exported.name}\n${text}\n`)
  }
}
rmSync(copy, { recursive: true, force: true })
out.push(`=== runtime exports of index.js\n${Object.keys(require(join(here, 'index.js'))).sort().join('\n')}\n`)
process.stdout.write(out.join('\n'))
