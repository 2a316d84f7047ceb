// A local OTLP/HTTP receiver (JSON encoding, POST /v1/traces): collects the spans every export sends.
import { createServer, type Server } from "node:http"
import type { AddressInfo } from "node:net"

export interface Attribute {
  readonly key: string
  readonly value: { readonly stringValue?: string; readonly intValue?: number | string; readonly doubleValue?: number; readonly boolValue?: boolean }
}
interface WireSpan {
  readonly traceId: string
  readonly spanId: string
  readonly parentSpanId?: string
  readonly name: string
  readonly attributes?: ReadonlyArray<Attribute>
  readonly links?: ReadonlyArray<{ readonly traceId: string; readonly spanId: string; readonly attributes?: ReadonlyArray<Attribute> }>
  readonly status?: { readonly code?: number }
}
interface ExportRequest {
  readonly resourceSpans?: ReadonlyArray<{
    readonly resource?: { readonly attributes?: ReadonlyArray<Attribute> }
    readonly scopeSpans?: ReadonlyArray<{ readonly spans?: ReadonlyArray<WireSpan> }>
  }>
}

export interface Span {
  readonly traceId: string
  readonly spanId: string
  readonly parentSpanId: string | undefined
  readonly name: string
  readonly attributes: Record<string, unknown>
  readonly links: ReadonlyArray<{ readonly traceId: string; readonly spanId: string; readonly attributes: Record<string, unknown> }>
  readonly service: unknown
  readonly statusCode: number | undefined
}

const valueOf = (v: Attribute["value"]): unknown =>
  v.stringValue ?? (v.intValue === undefined ? undefined : Number(v.intValue)) ?? v.doubleValue ?? v.boolValue

const attributesOf = (list: ReadonlyArray<Attribute> | undefined): Record<string, unknown> =>
  Object.fromEntries((list ?? []).map((a) => [a.key, valueOf(a.value)]))

export interface Receiver {
  readonly endpoint: string
  readonly spans: Array<Span>
  /** Raw bodies received, as text: what left the processes, byte for byte. */
  readonly bodies: Array<string>
  readonly contentTypes: Array<string>
  readonly close: () => Promise<void>
}

export const start = async (): Promise<Receiver> => {
  const spans: Array<Span> = []
  const bodies: Array<string> = []
  const contentTypes: Array<string> = []
  const server: Server = createServer((req, res) => {
    const chunks: Array<Buffer> = []
    req.on("data", (c: Buffer) => chunks.push(c))
    req.on("end", () => {
      const text = Buffer.concat(chunks).toString("utf8")
      bodies.push(text)
      contentTypes.push(req.headers["content-type"] ?? "")
      if (req.method !== "POST" || req.url !== "/v1/traces") {
        res.writeHead(404).end()
        return
      }
      const body = JSON.parse(text) as ExportRequest
      for (const rs of body.resourceSpans ?? []) {
        const service = attributesOf(rs.resource?.attributes)["service.name"]
        for (const ss of rs.scopeSpans ?? []) {
          for (const s of ss.spans ?? []) {
            spans.push({
              traceId: s.traceId,
              spanId: s.spanId,
              parentSpanId: s.parentSpanId === undefined || s.parentSpanId === "" ? undefined : s.parentSpanId,
              name: s.name,
              attributes: attributesOf(s.attributes),
              links: (s.links ?? []).map((l) => ({ traceId: l.traceId, spanId: l.spanId, attributes: attributesOf(l.attributes) })),
              service,
              statusCode: s.status?.code
            })
          }
        }
      }
      res.writeHead(200, { "content-type": "application/json" }).end("{}")
    })
  })
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
  const { port } = server.address() as AddressInfo
  return {
    endpoint: `http://127.0.0.1:${port}`,
    spans,
    bodies,
    contentTypes,
    close: () => new Promise((resolve) => server.close(() => resolve()))
  }
}
