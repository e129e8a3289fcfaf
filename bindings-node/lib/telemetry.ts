// The host's own OpenTelemetry tracer provider, when it has one.
//
// With `telemetry` on and a provider registered globally through `@opentelemetry/api`
// (`trace.setGlobalTracerProvider`), a client hands each turn's spans to that provider instead of
// starting an exporter of its own: the engine builds the spans (the same tree and attributes in
// every binding) and this module re-creates each one in the host's tracer, with the same name,
// kind, attributes, events, start and end times and status, parents before children, the turn's
// span a child of the span active where `run()` / `resume()` was called. Each span keeps the
// engine's ids when the tracer is the SDK's (its id generator is swapped for the span's start),
// so the `traceparent` a model, MCP or remote request carried names a span of the host's trace.
// `@opentelemetry/api` is
// an optional peer dependency: without it, or with no provider set (the API's no-op global), the
// engine's own OTLP exporter is used.
import type * as Otel from '@opentelemetry/api'

/** An attribute value as the engine sends it. */
type Attribute = string | number | boolean | string[]

/** One span of a turn, as the native module hands it over (times in nanoseconds, as text). */
interface ReplaySpan {
  traceId: string
  spanId: string
  parentSpanId: string | null
  name: string
  kind: 'internal' | 'client'
  startTimeUnixNano: string
  endTimeUnixNano: string
  attributes: Record<string, Attribute>
  events: { name: string; timeUnixNano: string; attributes: Record<string, Attribute> }[]
  status: 'unset' | 'error'
  statusMessage: string | null
}

/** What the native client takes: the host's active span, and the replay of a turn's spans. */
export interface HostTracer {
  current: () => string | null
  replay: (spansJson: string) => void
}

function api(): typeof Otel | undefined {
  try {
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    return require('@opentelemetry/api') as typeof Otel
  } catch {
    return undefined
  }
}

function packageVersion(): string | undefined {
  try {
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    return (require('../package.json') as { version?: string }).version
  } catch {
    return undefined
  }
}

/** Nanoseconds since the epoch (decimal text) as OpenTelemetry's `[seconds, nanoseconds]`. */
function hrTime(nanos: string): Otel.HrTime {
  const n = BigInt(nanos)
  return [Number(n / 1_000_000_000n), Number(n % 1_000_000_000n)]
}

/**
 * The host's global tracer provider as the native client takes it, or undefined when the host
 * has none (`@opentelemetry/api` not installed, or no provider registered).
 */
export function hostTracer(): HostTracer | undefined {
  const otel = api()
  if (otel === undefined) return undefined
  const provider = otel.trace.getTracerProvider()
  // The API's global is a proxy whose delegate stays the no-op provider until one is registered.
  const delegate = (provider as { getDelegate?: () => unknown }).getDelegate?.() ?? provider
  if (delegate === new otel.ProxyTracerProvider().getDelegate()) return undefined
  const tracer = provider.getTracer('contenox', packageVersion())
  return {
    current: () => {
      try {
        const ctx = otel.trace.getSpan(otel.context.active())?.spanContext()
        if (ctx === undefined || !otel.isSpanContextValid(ctx)) return null
        return `00-${ctx.traceId}-${ctx.spanId}-${ctx.traceFlags & otel.TraceFlags.SAMPLED ? '01' : '00'}`
      } catch {
        return null
      }
    },
    replay: (spansJson: string) => {
      try {
        replay(otel, tracer, JSON.parse(spansJson) as ReplaySpan[])
      } catch (e) {
        // The host's tracer failing loses these spans, never the turn.
        process.emitWarning(`contenox: the host's tracer provider refused a turn's spans: ${String(e)}`)
      }
    },
  }
}

function replay(otel: typeof Otel, tracer: Otel.Tracer, spans: ReplaySpan[]): void {
  const made = new Map<string, Otel.Span>()
  for (const s of spans) {
    let parent: Otel.Context = otel.ROOT_CONTEXT
    if (s.parentSpanId !== null) {
      const mine = made.get(s.parentSpanId)
      parent =
        mine !== undefined
          ? otel.trace.setSpan(otel.ROOT_CONTEXT, mine)
          : // The host's span active at run(): only its ids came through the engine.
            otel.trace.setSpanContext(otel.ROOT_CONTEXT, {
              traceId: s.traceId,
              spanId: s.parentSpanId,
              traceFlags: otel.TraceFlags.SAMPLED,
              isRemote: false,
            })
    }
    const span = withIds(tracer, s.traceId, s.spanId, () =>
      tracer.startSpan(
        s.name,
        {
          kind: s.kind === 'client' ? otel.SpanKind.CLIENT : otel.SpanKind.INTERNAL,
          attributes: s.attributes,
          startTime: hrTime(s.startTimeUnixNano),
        },
        parent,
      ),
    )
    for (const e of s.events) span.addEvent(e.name, e.attributes, hrTime(e.timeUnixNano))
    if (s.status === 'error') {
      span.setStatus({ code: otel.SpanStatusCode.ERROR, message: s.statusMessage ?? undefined })
    }
    span.end(hrTime(s.endTimeUnixNano))
    made.set(s.spanId, span)
  }
}

/** What the SDK's tracer draws ids from (`@opentelemetry/sdk-trace`'s `IdGenerator`). */
interface IdGenerator {
  generateTraceId(): string
  generateSpanId(): string
}

/**
 * Start a span with the engine's ids: the SDK's `Tracer` keeps its id generator in the field
 * `_idGenerator`; it is swapped for one giving these ids while `start` runs (synchronously, so no
 * other span can start meanwhile) and put back. Another tracer gives its own ids.
 */
function withIds(tracer: Otel.Tracer, traceId: string, spanId: string, start: () => Otel.Span): Otel.Span {
  const sdk = tracer as unknown as { _idGenerator?: IdGenerator }
  const own = sdk._idGenerator
  if (own === undefined || typeof own.generateSpanId !== 'function') return start()
  sdk._idGenerator = { generateTraceId: () => traceId, generateSpanId: () => spanId }
  try {
    return start()
  } finally {
    sdk._idGenerator = own
  }
}
