// The errors contenox throws, one class per engine error kind, made by the native side through the
// factory registered here.

import * as native from '../native'

/**
 * Base class of every error contenox throws. They are thrown for misuse and invalid options
 * only: everything that happens inside a turn (a model that fails, a tool that throws, a cancel)
 * is the turn's outcome and events. `cause` is the engine's cause chain (`ContenoxCause`s).
 */
export class ContenoxError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options)
    this.name = new.target.name
  }
}

/**
 * An option is invalid (unknown option or key, wrong value, missing `model`, a `baseUrl` that is
 * not a URL...). Thrown by `createClient` and `listModels`. `option` names it as you wrote it
 * (`baseUrl`, `script[0]`; empty when no single option is at fault), `value` is the bad value
 * as JSON text, `reason` what is wrong and what is allowed.
 */
export class ConfigurationError extends ContenoxError {
  readonly option: string
  readonly value?: string
  readonly reason: string
  constructor(message: string, options: { option?: string; value?: string | null; reason?: string; cause?: unknown } = {}) {
    super(message, options)
    this.option = options.option ?? ''
    if (options.value != null) this.value = options.value
    this.reason = options.reason ?? message
  }
}

/** A tool could not be registered (bad name, input schema that is not an object schema...). */
export class ToolDefinitionError extends ContenoxError {}

/** The client was closed (`client.close()`): it runs no more turns. */
export class ClosedError extends ContenoxError {}

/** A turn is running and the operation needs the client idle (`setTranscript`). */
export class BusyError extends ContenoxError {}

/** A transcript is not valid (a tool result without its call, a call without a result). */
export class TranscriptError extends ContenoxError {}

/** The model server failed outside a turn (`listModels`). */
export class ModelError extends ContenoxError {}

/** The model server answered with an HTTP error. */
export class HttpError extends ModelError {
  readonly status: number
  readonly body: string
  /** The server's Retry-After, in seconds, when it sent one. */
  readonly retryAfter?: number
  constructor(message: string, options: { status?: number; body?: string; retryAfter?: number | null; cause?: unknown } = {}) {
    super(message, options)
    this.status = options.status ?? 0
    this.body = options.body ?? ''
    if (options.retryAfter != null) this.retryAfter = options.retryAfter
  }
}

/** The model server could not be reached, or its answer broke off; `cause` says why. */
export class TransportError extends ModelError {}

/** The engine failed where it should not (a turn's task panicked): a bug. */
export class InternalError extends ContenoxError {}

/** `client.compact()` could not compact: the summary request or the compactor failed (the conversation is unchanged). */
export class CompactionError extends ContenoxError {}

/** A transcript or options document could not be read or written as JSON. */
export class SerializationError extends ContenoxError {}

/** A file system error outside any tool. */
export class ContenoxIOError extends ContenoxError {}

/**
 * A checkpoint cannot be resumed: not a checkpoint, written by a newer engine, edited (its
 * digest does not match), already resumed on this client, or an answer for a call that is not
 * waiting (a wrong call id, or one already answered). Thrown before anything runs.
 */
export class CheckpointError extends ContenoxError {}

/**
 * A stepper refused a result (`stepper.feed`, `stepper.perform`): it is not one, no action
 * waits for it (call `next()` first; the turn may be done), or it is for another action (another
 * kind, step or call id). Nothing changed: the action still waits.
 */
export class StepError extends ContenoxError {}

/** One link of an engine error's cause chain. */
export class ContenoxCause extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options)
    this.name = 'ContenoxCause'
  }
}

type ErrorClass = new (message: string, options?: { cause?: unknown }) => ContenoxError

const ERROR_CLASSES: Record<string, ErrorClass> = {
  configuration: ConfigurationError,
  tool: ToolDefinitionError,
  closed: ClosedError,
  busy: BusyError,
  transcript: TranscriptError,
  http: HttpError,
  transport: TransportError,
  internal: InternalError,
  compaction: CompactionError,
  serialization: SerializationError,
  io: ContenoxIOError,
  checkpoint: CheckpointError,
  step: StepError,
}

// The native side makes every engine error through this, on the JavaScript thread (see
// src/error.rs): the kind picks the class, `causes` (outermost first) becomes the `cause` chain.
native.setErrorFactory((kind: string, message: string, detailsJson: string) => {
  const details = JSON.parse(detailsJson) as { causes?: string[] } & Record<string, unknown>
  const cause = (details.causes ?? []).reduceRight<Error | undefined>(
    (inner, text) => new ContenoxCause(text, inner === undefined ? undefined : { cause: inner }),
    undefined,
  )
  const Class = ERROR_CLASSES[kind] ?? ContenoxError
  const { causes: _, ...fields } = details
  return new Class(message, cause === undefined ? fields : { ...fields, cause })
})
