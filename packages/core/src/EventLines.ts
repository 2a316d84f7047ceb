/**
 * A run's events as JSON lines, one event per line, with the fields its hash chain covers: what `artana export`
 * writes, so a log can be kept or checked outside the store. A line's `payload` is the payload's text exactly as the
 * store holds it (the bytes its hash covers), so `decode` gives back an event that `Verify` checks as it checked it in
 * the store, on any machine, with the audit key when the log was written with one.
 *
 * ```ts
 * // lines of `artana export RUN`
 * const verifier = Verify.make(runId, { auditKey })
 * for (const line of lines) {
 *   const event = EventLines.decode(line)
 *   if (Either.isLeft(event)) throw new Error(event.left)
 *   verifier.push([event.right])
 * }
 * verifier.finish() // { ok: true, events, headSeq, headHash }
 * ```
 *
 * @since 0.1.0
 */
import * as Either from "effect/Either"
import * as ParseResult from "effect/ParseResult"
import * as Schema from "effect/Schema"
import { decodePayload, Event } from "./Event.js"
import { StoredEvent, storedPayload } from "./internal/hash.js"

/**
 * One event as a JSON line (no newline): `{"eventId","runId","tenantId","seq","timestamp","type","stepKey","payload",
 * "prevHash","hash"}`, its `payload` the stored text itself.
 *
 * @example
 * process.stdout.write(`${EventLines.encode(event)}\n`)
 */
export const encode = (event: Event): string =>
  `{"eventId":${JSON.stringify(event.eventId)},"runId":${JSON.stringify(event.runId)},"tenantId":${JSON.stringify(event.tenantId)},` +
  `"seq":${event.seq},"timestamp":${event.timestamp},"type":${JSON.stringify(event.type)},"stepKey":${JSON.stringify(event.stepKey)},` +
  `"payload":${storedPayload(event)},"prevHash":${JSON.stringify(event.prevHash)},"hash":${JSON.stringify(event.hash)}}`

/** A line's fields, its payload still as parsed JSON. */
const Line = Schema.Struct({ ...Event.fields, payload: Schema.Unknown })
const decodeLine = Schema.decodeUnknownEither(Line, { onExcessProperty: "error" })

/**
 * The event of a line `encode` wrote, or why the line is not one. The payload's stored text is the line's payload
 * written back as `JSON.stringify` writes it, which is the text the store held (stores hold `JSON.stringify`'s text,
 * which reads back to itself): `Verify` checks the event's hash over it.
 */
export const decode = (line: string): Either.Either<Event, string> => {
  let json: unknown
  try {
    json = JSON.parse(line)
  } catch (error) {
    return Either.left(`not JSON: ${error instanceof Error ? error.message : String(error)}`)
  }
  const fields = decodeLine(json)
  if (Either.isLeft(fields)) return Either.left(ParseResult.TreeFormatter.formatErrorSync(fields.left))
  const f = fields.right
  return Either.map(
    decodePayload(f.payload),
    (payload) => new StoredEvent(f.eventId, f.runId, f.tenantId, f.seq, f.timestamp, f.type, f.stepKey, payload, f.prevHash, f.hash, JSON.stringify(f.payload))
  )
}
