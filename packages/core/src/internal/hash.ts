import * as crypto from "node:crypto"
import type { Event, EventPayload } from "../Event.js"
import { StoredText } from "./storedText.js"

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
  const text = leafJson(value)
  if (text !== undefined) return text
  if (Array.isArray(value)) {
    let out = "["
    for (let i = 0; i < value.length; i++) {
      const item: unknown = value[i]
      out += (i === 0 ? "" : ",") + (item === undefined ? "null" : leafJson(item) ?? canonicalJson(item))
    }
    return out + "]"
  }
  const record = value as Record<string, unknown>
  const keys = Object.keys(record)
  if (keys.length > 1) sortKeys(keys)
  let out = "{"
  let first = true
  for (let i = 0; i < keys.length; i++) {
    const key = keys[i]!
    const v = record[key]
    if (v === undefined) continue
    out += (first ? "" : ",") + quoteKey(key) + ":" + (leafJson(v) ?? canonicalJson(v))
    first = false
  }
  return out + "}"
}

/**
 * Sorts object keys by UTF-16 code units, as `Array.prototype.sort` does: an insertion sort for the few keys of a
 * message or a tool call (V8's sort allocates work arrays on every call: 5 MB of a mixed replay's 67), the built-in
 * sort for more.
 */
const sortKeys = (keys: Array<string>): void => {
  if (keys.length > 16) {
    keys.sort()
    return
  }
  for (let i = 1; i < keys.length; i++) {
    const key = keys[i]!
    let j = i - 1
    while (j >= 0 && keys[j]! > key) {
      keys[j + 1] = keys[j]!
      j--
    }
    keys[j + 1] = key
  }
}

/**
 * A value that is not an object or an array as `JSON.stringify` writes it ("null" where it writes nothing), or
 * undefined for an object or an array. Strings without a character to escape, and finite numbers, skip the call.
 */
const leafJson = (value: unknown): string | undefined => {
  switch (typeof value) {
    case "string":
      return quote(value)
    case "number":
      return Number.isFinite(value) ? String(value) : "null"
    case "boolean":
      return value ? "true" : "false"
    case "object":
      return value === null ? "null" : undefined
    default:
      return JSON.stringify(value) ?? "null"
  }
}

/** SHA-256, hex. One-shot `crypto.hash` where Node has it (20.12+), which skips the Hash object. */
export const sha256: (text: string) => string = typeof crypto.hash === "function"
  ? (text) => crypto.hash("sha256", text, "hex")
  : (text) => crypto.createHash("sha256").update(text).digest("hex")

/**
 * An event as a store read it, with its payload's stored text beside it. The text is a private field: invisible to
 * equality, spreading and `JSON.stringify`, so the event stays the plain value its schema says (a class instance is
 * as cheap to build as the object literal it replaces; a `WeakMap` entry per event cost a replay a third more).
 */
export class StoredEvent implements Event {
  readonly #payloadText: string
  constructor(
    readonly eventId: string,
    readonly runId: string,
    readonly tenantId: string,
    readonly seq: number,
    readonly timestamp: number,
    readonly type: string,
    readonly stepKey: string,
    readonly payload: EventPayload,
    readonly prevHash: string,
    readonly hash: string,
    payloadText: string
  ) {
    this.#payloadText = payloadText
  }
  /** The stored text of `event`'s payload, when a store read it (a replay's lazy `ModelRequested` too, `lazyPayload.ts`). */
  static payloadTextOf(event: object): string | undefined {
    return event instanceof StoredEvent ? event.#payloadText : StoredText.of(event)
  }
}

/** The payload text the kernel hashed for each event it is writing (what the store is to write). */
const writtenPayloads = new WeakMap<object, string>()

/**
 * The text to store for an event's payload, or to hash for one read back: the text a store read, else the text the
 * kernel hashed when it wrote the event, else `JSON.stringify` of the payload (what the kernel hashes). Not
 * canonical JSON: code renders decoded values (a tool's result becomes the text of the model's next message), so the
 * stored text keeps the key order the code produced, and a replay renders the same text.
 */
export const storedPayload = (event: Pick<Event, "payload">): string =>
  StoredEvent.payloadTextOf(event) ?? writtenPayloads.get(event) ?? JSON.stringify(event.payload)

/** A character `JSON.stringify` escapes in a string: a quote, a backslash, a control, or (maybe) a surrogate. */
// eslint-disable-next-line no-control-regex
const ESCAPED = /[\u0000-\u001f"\\\ud800-\udfff]/

/** `JSON.stringify(text)`, without its cost for the common text that needs no escape (ids, hashes, keys). */
const quote = (text: string): string => (ESCAPED.test(text) ? JSON.stringify(text) : `"${text}"`)

/**
 * `head` and then the event without its hash, its fields in sorted order, its payload as the given text (what
 * `JSON.stringify` of that object writes, numbers included: a non-finite one is `null`). Joined from an array. What
 * verifying reads back builds is `storedMaterial`'s text, which is the same.
 */
const envelope = (head: string, event: Omit<Event, "hash">, payload: string): string =>
  [
    head,
    '{"eventId":',
    quote(event.eventId),
    ',"payload":',
    payload,
    ',"prevHash":',
    quote(event.prevHash),
    ',"runId":',
    quote(event.runId),
    ',"seq":',
    Number.isFinite(event.seq) ? String(event.seq) : "null",
    ',"stepKey":',
    quote(event.stepKey),
    ',"tenantId":',
    quote(event.tenantId),
    ',"timestamp":',
    Number.isFinite(event.timestamp) ? String(event.timestamp) : "null",
    ',"type":',
    quote(event.type),
    "}"
  ].join("")

/**
 * Events are hashed over their payload's stored bytes, in a domain of their own (`STORED`), so no event of the
 * earlier scheme (the canonical JSON of the decoded payload, see `legacyHash`) can pass for one of these, or back.
 */
const STORED = "artana:v2:"

const hashMaterial = (material: string, auditKey: string | undefined): string =>
  auditKey === undefined ? sha256(material) : crypto.createHmac("sha256", auditKey).update(material).digest("hex")

/**
 * The hash of an event being written: `SHA-256("artana:v2:" || prevHash || the event without hash, its payload as
 * the text that is stored)`, or HMAC-SHA-256 with an audit key. The payload's text is remembered as what to store
 * (`storedPayload`), so a store writes exactly the bytes the hash covers.
 */
export const newEventHash = (event: Omit<Event, "hash">, auditKey: string | undefined): string => {
  const payload = JSON.stringify(event.payload)
  writtenPayloads.set(event, payload)
  return hashMaterial(envelope(STORED + event.prevHash, event, payload), auditKey)
}

/**
 * The hash of an event written before hashes covered stored bytes: over the canonical JSON of its payload's value.
 * Such an event verifies only when its stored text is what that release wrote (compact `JSON.stringify` text):
 * spacing added since is caught; a reordering of its keys is not (its value, which the hash covers, is unchanged).
 */
const legacyHash = (event: Omit<Event, "hash">, payload: string, auditKey: string | undefined): string | undefined => {
  let value: unknown
  try {
    value = JSON.parse(payload)
  } catch {
    return undefined
  }
  if (JSON.stringify(value) !== payload) return undefined
  return hashMaterial(envelope(event.prevHash, event, canonicalJson(value)), auditKey)
}

/**
 * Whether `event` hashes to its `hash` over its payload's stored bytes (any byte added, removed or changed breaks
 * it), or, for an event of the earlier scheme, over its payload's value.
 */
export const hashMatches = (event: Event, auditKey: string | undefined): boolean => chainChecker(auditKey)(event, false)

/**
 * `hashMatches` for the events of one run in order: the values that repeat are quoted once, and `linked` says the
 * event's `prevHash` is the previous event's hash, already checked (a digest, which needs no escape).
 */
export const chainChecker = (auditKey: string | undefined) => {
  const material = storedMaterial()
  return (event: Event, linked: boolean): boolean => {
    const payload = storedPayload(event)
    if (hashMaterial(material(event, payload, linked), auditKey) === event.hash) return true
    return legacyHash(event, payload, auditKey) === event.hash
  }
}

/**
 * The event `newEventHash` hashes, built as a `StoredEvent` that carries the payload text it hashed (what a store
 * writes): the same hash, without `newEventHash`'s side table (a `WeakMap` entry per event written, as much CPU as
 * the hash itself). `material`: a writer's `writerMaterial()`, which keeps the parts its run, tenant and types
 * repeat. What the ledger writes.
 */
export const newStoredEvent = (event: Omit<Event, "hash">, auditKey: string | undefined, material?: StoredMaterial): StoredEvent => {
  const payload = JSON.stringify(event.payload)
  const text = material === undefined ? envelope(STORED + event.prevHash, event, payload) : material(event, payload, false)
  const hash = hashMaterial(text, auditKey)
  return new StoredEvent(event.eventId, event.runId, event.tenantId, event.seq, event.timestamp, event.type, event.stepKey, event.payload, event.prevHash, hash, payload)
}

/** The hash material of one writer's events (the same text as `envelope`'s, its repeated parts kept). */
export type StoredMaterial = (event: Omit<Event, "hash">, payload: string, linked: boolean) => string

/** A writer's material builder: keeps the few parts a writer repeats (its run, tenant and event types). */
export const writerMaterial = (): StoredMaterial => storedMaterial()

/**
 * `envelope(STORED + prevHash, event, payload)` for the events of one run read in order, the same text built with
 * less work: the parts around the run, the tenant and the type are kept with their keys and quotes (they repeat in
 * every event of the run), and the text is joined from one array of parts that each call refills (a new array per
 * event was a third of what verifying a page allocated; concatenated, the parts made a rope that hashing flattened into
 * a copy). `linked`: the event's `prevHash` is the previous event's hash, already checked (a digest, which needs no
 * escape).
 */
const storedMaterial = (): StoredMaterial => materialBuilder(STORED, ESCAPED)

/**
 * `storedMaterial`, given its domain prefix and the test of a character to escape. Self-contained: it refers to
 * nothing but its parameters and the language's built-ins, and names no inner function, so the verify worker runs
 * this very code from its source text (`verifyWorker`): one material, whichever thread builds it.
 */
export const materialBuilder = (stored: string, escaped: RegExp): StoredMaterial => {
  let runId: string | undefined
  let runPart = ""
  let linkedRunPart = ""
  let tenantId: string | undefined
  const typeParts = new Map<string, string>()
  // The material's parts, joined: one flat text, which hashing reads as it is (concatenated, a rope of ~15 nodes and
  // the copy hashing flattened it into were 1.2 KB per event, ~15% of what a replay allocated).
  const parts: Array<string> = [
    stored,
    "",
    '{"eventId":"',
    "",
    '","payload":',
    "",
    ',"prevHash":',
    "",
    "",
    "",
    ',"stepKey":"',
    "",
    "",
    "",
    ""
  ]
  // `quote` and `unquoted` (above), written out: this function names no inner function.
  return (event: Omit<Event, "hash">, payload: string, linked: boolean): string => {
    if (event.runId !== runId) {
      runId = event.runId
      runPart = ',"runId":' + (escaped.test(runId) ? JSON.stringify(runId) : '"' + runId + '"') + ',"seq":'
      linkedRunPart = '"' + runPart
    }
    if (event.tenantId !== tenantId) {
      tenantId = event.tenantId
      parts[12] = '","tenantId":' + (escaped.test(tenantId) ? JSON.stringify(tenantId) : '"' + tenantId + '"') + ',"timestamp":'
    }
    let typePart = typeParts.get(event.type)
    if (typePart === undefined) {
      typePart = ',"type":' + (escaped.test(event.type) ? JSON.stringify(event.type) : '"' + event.type + '"') + "}"
      if (typeParts.size < 64) typeParts.set(event.type, typePart)
    }
    parts[1] = event.prevHash
    parts[3] = escaped.test(event.eventId) ? JSON.stringify(event.eventId).slice(1, -1) : event.eventId
    parts[5] = payload
    // A linked prevHash is a digest, which needs no escape: its quotes go with the parts around it.
    parts[6] = linked ? ',"prevHash":"' : ',"prevHash":'
    parts[7] = linked ? event.prevHash : escaped.test(event.prevHash) ? JSON.stringify(event.prevHash) : '"' + event.prevHash + '"'
    parts[8] = linked ? linkedRunPart : runPart
    parts[9] = Number.isFinite(event.seq) ? String(event.seq) : "null"
    parts[11] = escaped.test(event.stepKey) ? JSON.stringify(event.stepKey).slice(1, -1) : event.stepKey
    parts[13] = Number.isFinite(event.timestamp) ? String(event.timestamp) : "null"
    parts[14] = typePart
    const text = parts.join("")
    // The payload is not held past the call (the array lives as long as the builder).
    parts[5] = ""
    return text
  }
}

/** The domain prefix of `newEventHash`'s material and the test of a character `JSON.stringify` escapes, for `materialBuilder` elsewhere. */
export const MATERIAL_CONSTANTS = { stored: STORED, escaped: ESCAPED.source } as const

/**
 * The start of a worker thread's code (CommonJS, evaluated) that hashes events as this module does: \`crypto\`, \`builder\`
 * (\`materialBuilder\`'s own source text) and its \`constants\`, and \`hashOf(material, key)\` (SHA-256, or with an audit key
 * its HMAC, as hex). \`__name\`: what a transpiler keeping function names (tsx) may call in the builder's text. The verify
 * worker's and the read-ahead worker's (\`verifyWorker.ts\`, \`readWorker.ts\`).
 */
export const WORKER_HASHING = `
const crypto = require("node:crypto")
var __name = (target) => target
const sha256 = typeof crypto.hash === "function"
  ? (text) => crypto.hash("sha256", text, "hex")
  : (text) => crypto.createHash("sha256").update(text).digest("hex")
const hashOf = (material, key) => key === undefined ? sha256(material) : crypto.createHmac("sha256", key).update(material).digest("hex")
const builder = (${materialBuilder.toString()})
const constants = ${JSON.stringify(MATERIAL_CONSTANTS)}
`
