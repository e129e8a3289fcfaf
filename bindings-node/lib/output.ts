// `outputSchema`: what a TypeScript host passes for a typed final answer, as the engine's JSON
// Schema plus how the validated JSON becomes the host's value.
//
// A plain JSON Schema object is sent as it is; the answer comes back as JSON. A Standard Schema
// (Zod v4, Valibot, ArkType, ...: an object with `~standard`) gives its JSON Schema through the
// Standard JSON Schema interface (`~standard.jsonSchema.input`, what the model must write) or
// Zod's own `toJSONSchema`, and its `~standard.validate` parses the engine-validated answer
// (transforms applied). The engine validates and corrects the answer; the Standard Schema's own
// checks run after, here, and a value they refuse ends the turn as `output_invalid`.

import { ConfigurationError } from './errors'
import type { JsonObject } from './types'

/** The Standard Schema v1 interface (standardschema.dev), the part used here. */
export interface StandardSchemaV1<Input = unknown, Output = Input> {
  readonly '~standard': {
    readonly version: 1
    readonly vendor: string
    readonly validate: (
      value: unknown,
    ) => StandardResult<Output> | Promise<StandardResult<Output>>
    readonly types?: { readonly input: Input; readonly output: Output } | undefined
    /** Standard JSON Schema: the schema of what the validator takes (`input`) or gives. */
    readonly jsonSchema?: {
      readonly input: (options: { target: string }) => Record<string, unknown>
      readonly output: (options: { target: string }) => Record<string, unknown>
    }
  }
}

/** What `~standard.validate` returns. */
export type StandardResult<Output> =
  | { readonly value: Output; readonly issues?: undefined }
  | { readonly issues: ReadonlyArray<{ readonly message: string; readonly path?: ReadonlyArray<unknown> }> }

/** A JSON Schema object, or a Standard Schema (Zod v4 and others). */
export type OutputSchema = JsonObject | StandardSchemaV1

/** The type of `result.output` for an output schema: a Standard Schema's output type. */
export type InferOutput<S> = S extends StandardSchemaV1<unknown, infer O> ? O : unknown

/** An output schema read: the JSON Schema's text for the engine, and the parser of the answer. */
export interface OutputSpec {
  schemaJson: string
  parse?: (value: unknown) => Promise<{ value: unknown } | { error: string }>
}

function isStandard(schema: object): schema is StandardSchemaV1 {
  const std = (schema as Record<string, unknown>)['~standard']
  return typeof std === 'object' && std !== null && typeof (std as { validate?: unknown }).validate === 'function'
}

/** The JSON Schema of what a Standard Schema takes as input (what the model writes). */
function standardJsonSchema(schema: StandardSchemaV1): Record<string, unknown> {
  const std = schema['~standard']
  try {
    if (std.jsonSchema && typeof std.jsonSchema.input === 'function') {
      return std.jsonSchema.input({ target: 'draft-2020-12' })
    }
    // Zod v4 before Standard JSON Schema: its own method.
    const toJson = (schema as { toJSONSchema?: (o: { io: string }) => Record<string, unknown> }).toJSONSchema
    if (typeof toJson === 'function') return toJson.call(schema, { io: 'input' })
  } catch (e) {
    throw new ConfigurationError(
      `outputSchema: the ${std.vendor} schema has no JSON Schema form: ${e instanceof Error ? e.message : String(e)}`,
      { option: 'outputSchema' },
    )
  }
  throw new ConfigurationError(
    `outputSchema: the ${std.vendor} schema offers no JSON Schema (neither ~standard.jsonSchema nor toJSONSchema); pass a JSON Schema object`,
    { option: 'outputSchema' },
  )
}

function issuesText(issues: ReadonlyArray<{ message: string; path?: ReadonlyArray<unknown> }>): string {
  return issues
    .map((i) => {
      const path = (i.path ?? []).map((p) => (typeof p === 'object' && p !== null && 'key' in p ? String(p.key) : String(p)))
      return path.length ? `at /${path.join('/')}: ${i.message}` : i.message
    })
    .join('; ')
}

/** Read an `outputSchema` option; `undefined` when not given. */
export function outputSpec(schema: OutputSchema | undefined | null): OutputSpec | undefined {
  if (schema === undefined || schema === null) return undefined
  if (typeof schema !== 'object' || Array.isArray(schema)) {
    throw new ConfigurationError(`outputSchema must be a JSON Schema object or a Standard Schema, got ${JSON.stringify(schema)}`, {
      option: 'outputSchema',
    })
  }
  if (!isStandard(schema)) return { schemaJson: JSON.stringify(schema) }
  const std = schema['~standard']
  return {
    schemaJson: JSON.stringify(standardJsonSchema(schema)),
    parse: async (value) => {
      try {
        const r = await std.validate(value)
        if (r.issues) return { error: `the answer matches the output schema, but its ${std.vendor} schema refused it: ${issuesText(r.issues)}` }
        return { value: r.value }
      } catch (e) {
        return { error: `the ${std.vendor} schema failed on the answer: ${e instanceof Error ? e.message : String(e)}` }
      }
    },
  }
}
