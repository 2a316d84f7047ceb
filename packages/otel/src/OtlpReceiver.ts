/**
 * A local OTLP/HTTP receiver for tests (`@artana/otel/testing`): it accepts `POST /v1/traces` in OTLP's JSON encoding
 * on 127.0.0.1 and keeps the spans every export sends, and the raw bodies, so a test can assert what left a process.
 *
 * @example
 * const receiver = await OtlpReceiver.start()
 * // run with ArtanaOtel.layer({ url: `${receiver.endpoint}/v1/traces`, protocol: "http/json" }), close the client
 * expect(receiver.spans.map((s) => s.name)).toContain("artana.run")
 * await receiver.close()
 *
 * @since 0.1.0
 */
import { createServer } from "node:http"
import * as Schema from "effect/Schema"

const AnyValue = Schema.Struct({
  stringValue: Schema.optional(Schema.NullOr(Schema.String)),
  intValue: Schema.optional(Schema.NullOr(Schema.Union(Schema.Number, Schema.String))),
  doubleValue: Schema.optional(Schema.NullOr(Schema.Number)),
  boolValue: Schema.optional(Schema.NullOr(Schema.Boolean))
})
const KeyValue = Schema.Struct({ key: Schema.String, value: AnyValue })
const Attributes = Schema.optional(Schema.Array(KeyValue))
const WireSpan = Schema.Struct({
  traceId: Schema.String,
  spanId: Schema.String,
  parentSpanId: Schema.optional(Schema.NullOr(Schema.String)),
  name: Schema.String,
  attributes: Attributes,
  links: Schema.optional(Schema.Array(Schema.Struct({ traceId: Schema.String, spanId: Schema.String, attributes: Attributes }))),
  status: Schema.optional(Schema.Struct({ code: Schema.optional(Schema.Number) }))
})
const ExportRequest = Schema.parseJson(Schema.Struct({
  resourceSpans: Schema.optional(Schema.Array(Schema.Struct({
    resource: Schema.optional(Schema.Struct({ attributes: Attributes })),
    scopeSpans: Schema.optional(Schema.Array(Schema.Struct({ spans: Schema.optional(Schema.Array(WireSpan)) })))
  })))
}))
const decodeRequest = Schema.decodeUnknownEither(ExportRequest)

/** A span as received, its attributes as plain values. */
export interface Span {
  readonly traceId: string
  readonly spanId: string
  readonly parentSpanId: string | undefined
  readonly name: string
  readonly attributes: Readonly<Record<string, unknown>>
  readonly links: ReadonlyArray<{ readonly traceId: string; readonly spanId: string; readonly attributes: Readonly<Record<string, unknown>> }>
  /** The `service.name` of its resource. */
  readonly service: unknown
  /** OTLP's status code: 1 ok, 2 error (unset: 0 or absent). */
  readonly statusCode: number | undefined
}

const valueOf = (v: typeof AnyValue.Type): unknown =>
  v.stringValue ?? (v.intValue === undefined || v.intValue === null ? undefined : Number(v.intValue)) ?? v.doubleValue ?? v.boolValue ?? undefined

const attributesOf = (list: ReadonlyArray<typeof KeyValue.Type> | undefined): Record<string, unknown> =>
  Object.fromEntries((list ?? []).map((a) => [a.key, valueOf(a.value)]))

export interface Receiver {
  /** `http://127.0.0.1:PORT`: the value of `OTEL_EXPORTER_OTLP_ENDPOINT`. */
  readonly endpoint: string
  readonly spans: Array<Span>
  /** The bodies received, as text: what left the processes, byte for byte. */
  readonly bodies: Array<string>
  readonly contentTypes: Array<string>
  readonly close: () => Promise<void>
}

const spansOf = (text: string): ReadonlyArray<Span> | undefined => {
  const decoded = decodeRequest(text)
  if (decoded._tag === "Left") return undefined
  return (decoded.right.resourceSpans ?? []).flatMap((rs) => {
    const service = attributesOf(rs.resource?.attributes)["service.name"]
    return (rs.scopeSpans ?? []).flatMap((ss) =>
      (ss.spans ?? []).map((s): Span => ({
        traceId: s.traceId,
        spanId: s.spanId,
        parentSpanId: s.parentSpanId === undefined || s.parentSpanId === null || s.parentSpanId === "" ? undefined : s.parentSpanId,
        name: s.name,
        attributes: attributesOf(s.attributes),
        links: (s.links ?? []).map((l) => ({ traceId: l.traceId, spanId: l.spanId, attributes: attributesOf(l.attributes) })),
        service,
        statusCode: s.status?.code
      }))
    )
  })
}

/** Starts a receiver on a free port of 127.0.0.1. A body that is not OTLP JSON is answered 400. */
export const start = async (): Promise<Receiver> => {
  const spans: Array<Span> = []
  const bodies: Array<string> = []
  const contentTypes: Array<string> = []
  const server = createServer((req, res) => {
    const chunks: Array<Buffer> = []
    req.on("data", (c: Buffer) => chunks.push(c))
    req.on("end", () => {
      const text = Buffer.concat(chunks).toString("utf8")
      bodies.push(text)
      contentTypes.push(req.headers["content-type"] ?? "")
      if (req.method !== "POST" || req.url !== "/v1/traces") return void res.writeHead(404).end()
      const received = spansOf(text)
      if (received === undefined) return void res.writeHead(400).end()
      spans.push(...received)
      res.writeHead(200, { "content-type": "application/json" }).end("{}")
    })
  })
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
  const address = server.address()
  const port = typeof address === "object" && address !== null ? address.port : 0
  return {
    endpoint: `http://127.0.0.1:${port}`,
    spans,
    bodies,
    contentTypes,
    close: () => new Promise((resolve) => server.close(() => resolve()))
  }
}
