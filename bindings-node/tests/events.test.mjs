// The TypeScript event union (lib/events.ts `Event`) against the one event vocabulary, the JSON Schema
// derived from the engine's `Event` (tests/conformance/event-schema.json): a new, missing or
// changed event or field fails here. Keys are compared in JavaScript's spelling, as the native
// side makes it (`jsName`, the one casing rule).
import assert from 'node:assert/strict'
import { readFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { join } from 'node:path'
import { test } from 'node:test'

import ts from 'typescript'

import { packageDir, repoDir } from './helpers.mjs'

const require = createRequire(import.meta.url)
const native = require(join(packageDir, 'native.js'))
const schema = JSON.parse(readFileSync(join(repoDir, 'tests/conformance/event-schema.json'), 'utf8'))

/** The members of `export type Event = ...` in lib/events.ts: type tag -> {key: {optional, type}}. */
function unionMembers() {
  const file = join(packageDir, 'lib/events.ts')
  const program = ts.createProgram([file], { strict: true, target: ts.ScriptTarget.ES2022, types: [] })
  const checker = program.getTypeChecker()
  const source = program.getSourceFile(file)
  const alias = source.statements.find((s) => ts.isTypeAliasDeclaration(s) && s.name.text === 'Event')
  assert.ok(alias, 'lib/events.ts declares `export type Event`')
  const members = {}
  for (const member of checker.getTypeAtLocation(alias).types) {
    const props = {}
    for (const p of member.getProperties()) {
      const declaration = p.valueDeclaration ?? p.declarations[0]
      props[p.name] = {
        optional: (p.flags & ts.SymbolFlags.Optional) !== 0,
        type: checker.typeToString(checker.getTypeOfSymbolAtLocation(p, declaration)),
      }
    }
    const tag = props.type.type.replaceAll('"', '')
    delete props.type
    members[tag] = props
  }
  return members
}

/** What a schema property may read as in TypeScript. */
function tsTypes(prop) {
  if (prop.$ref) {
    const name = prop.$ref.split('/').pop()
    const named = { GateVerdict: ['"allow" | "deny" | "ask"'], CompactTrigger: ['"auto" | "manual"'], Outcome: ['Outcome'], Source: ['Source'] }
    return named[name] ?? [name]
  }
  // `Option<T>` of a named type: T (optional in TypeScript).
  const options = prop.anyOf ?? prop.oneOf
  if (options) return options.filter((o) => o.type !== 'null').flatMap(tsTypes)
  if (prop.type === 'array' && prop.items) return tsTypes(prop.items).map((t) => `${t}[]`)
  const kinds = [prop.type ?? []].flat().filter((k) => k !== 'null')
  if (kinds.length === 0) return ['unknown']
  return kinds.map((k) => ({ string: 'string', integer: 'number', boolean: 'boolean' })[k])
}

test('one member of the Event union per event type, with the schema fields', () => {
  const members = unionMembers()
  const variants = Object.fromEntries(schema.oneOf.map((v) => [v.properties.type.const, v]))
  assert.deepEqual(Object.keys(members).sort(), Object.keys(variants).sort())
  for (const [tag, variant] of Object.entries(variants)) {
    const expected = Object.fromEntries(
      Object.entries(variant.properties)
        .filter(([key]) => key !== 'type')
        .map(([key, prop]) => [native.jsName(key), { prop, optional: !variant.required.includes(key) }]),
    )
    const actual = members[tag]
    assert.deepEqual(Object.keys(actual).sort(), Object.keys(expected).sort(), `${tag}: keys`)
    for (const [key, { prop, optional }] of Object.entries(expected)) {
      assert.equal(actual[key].optional, optional, `${tag}.${key}: optional`)
      // An optional member's type reads `T | undefined` under strict mode.
      const type = actual[key].type.replace(/ \| undefined$/, '')
      assert.ok(tsTypes(prop).includes(type), `${tag}.${key}: ${type} for ${JSON.stringify(prop)}`)
    }
  }
})
