import { createHash, createHmac } from "node:crypto"
import type { Event } from "../Event.js"

/** prevHash of a run's first event. */
export const GENESIS_HASH = "0".repeat(64)

/**
 * Canonical JSON in the manner of RFC 8785: object keys sorted by UTF-16 code units, no whitespace, numbers
 * and strings as ECMAScript's JSON.stringify writes them (which is what RFC 8785 specifies); `undefined`
 * object fields are dropped. Written here rather than taken from `canonicalize`, whose CommonJS typings do
 * not load under NodeNext; it is small and tested against JSON.stringify.
 */
export const canonicalJson = (value: unknown): string => {
  if (value === null || typeof value !== "object") return JSON.stringify(value) ?? "null"
  if (Array.isArray(value)) return `[${value.map((v) => (v === undefined ? "null" : canonicalJson(v))).join(",")}]`
  const keys = Object.keys(value).sort()
  let out = "{"
  for (const key of keys) {
    const v: unknown = (value as Record<string, unknown>)[key]
    if (v === undefined) continue
    out += `${out.length > 1 ? "," : ""}${JSON.stringify(key)}:${canonicalJson(v)}`
  }
  return out + "}"
}

export const sha256 = (text: string): string => createHash("sha256").update(text).digest("hex")

/** `hash = SHA-256(prevHash || canonical JSON of the event without hash)`, or HMAC-SHA-256 with an audit key. */
export const eventHash = (event: Omit<Event, "hash">, auditKey: string | undefined): string => {
  const material = event.prevHash + canonicalJson(event)
  return auditKey === undefined
    ? createHash("sha256").update(material).digest("hex")
    : createHmac("sha256", auditKey).update(material).digest("hex")
}
