import * as crypto from "node:crypto"
import type { Event } from "../Event.js"

/** prevHash of a run's first event. */
export const GENESIS_HASH = "0".repeat(64)

/** Quoted object keys: the same few names recur in every payload, so each is escaped once. */
const quotedKeys = new Map<string, string>()
const QUOTED_KEYS_MAX = 4096

const quoteKey = (key: string): string => {
  let quoted = quotedKeys.get(key)
  if (quoted === undefined) {
    quoted = JSON.stringify(key)
    if (quotedKeys.size < QUOTED_KEYS_MAX) quotedKeys.set(key, quoted)
  }
  return quoted
}

/**
 * Canonical JSON in the manner of RFC 8785: object keys sorted by UTF-16 code units, no whitespace, numbers
 * and strings as ECMAScript's JSON.stringify writes them (which is what RFC 8785 specifies); `undefined`
 * object fields are dropped. Written here rather than taken from `canonicalize`, whose CommonJS typings do
 * not load under NodeNext; it is small and tested against JSON.stringify.
 */
export const canonicalJson = (value: unknown): string => {
  if (value === null || typeof value !== "object") return JSON.stringify(value) ?? "null"
  if (Array.isArray(value)) {
    let out = "["
    for (let i = 0; i < value.length; i++) {
      const item: unknown = value[i]
      out += (i === 0 ? "" : ",") + (item === undefined ? "null" : canonicalJson(item))
    }
    return out + "]"
  }
  const record = value as Record<string, unknown>
  const keys = Object.keys(record)
  if (keys.length > 1) keys.sort()
  let out = "{"
  let first = true
  for (let i = 0; i < keys.length; i++) {
    const key = keys[i]!
    const v = record[key]
    if (v === undefined) continue
    out += (first ? "" : ",") + quoteKey(key) + ":" + canonicalJson(v)
    first = false
  }
  return out + "}"
}

/** SHA-256, hex. One-shot `crypto.hash` where Node has it (20.12+), which skips the Hash object. */
export const sha256: (text: string) => string = typeof crypto.hash === "function"
  ? (text) => crypto.hash("sha256", text, "hex")
  : (text) => crypto.createHash("sha256").update(text).digest("hex")

/**
 * The canonical JSON of an event without its hash: the fields in sorted order, written directly, with only the
 * payload canonicalized field by field. The same text `canonicalJson` gives for the event object.
 */
const canonicalEvent = (event: Omit<Event, "hash">): string =>
  `{"eventId":${JSON.stringify(event.eventId)},"payload":${canonicalJson(event.payload)},"prevHash":${
    JSON.stringify(event.prevHash)
  },"runId":${JSON.stringify(event.runId)},"seq":${JSON.stringify(event.seq)},"stepKey":${JSON.stringify(event.stepKey)},"tenantId":${
    JSON.stringify(event.tenantId)
  },"timestamp":${JSON.stringify(event.timestamp)},"type":${JSON.stringify(event.type)}}`

/** `hash = SHA-256(prevHash || canonical JSON of the event without hash)`, or HMAC-SHA-256 with an audit key. */
export const eventHash = (event: Omit<Event, "hash">, auditKey: string | undefined): string => {
  const material = event.prevHash + canonicalEvent(event)
  return auditKey === undefined ? sha256(material) : crypto.createHmac("sha256", auditKey).update(material).digest("hex")
}
