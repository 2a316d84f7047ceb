/**
 * How the SQL event store keeps hashes and event ids: as bytes (BLOB on SQLite, bytea on PostgreSQL), not as their
 * text. A hash the kernel writes (SHA-256 or HMAC-SHA-256, 64 lowercase hex digits) is its 32 bytes; an event id
 * the kernel writes (a lowercase UUID) is its 16 bytes. Any other text (an id or hash an application or a test chose)
 * is kept as its UTF-8 bytes, with one 0xFF byte added when those are exactly as long as a packed value: UTF-8 never
 * holds 0xFF, so a value of the packed length is always packed, and any other is text. The `Event` a store returns
 * keeps the text: `unpack(pack(text)) === text` for every string.
 *
 * The SQL expressions below do the same in the migration that converts a database written with text columns.
 */
import { GENESIS_HASH } from "./hash.js"

/** One kind of packed value: its length in bytes, and how its canonical text reads as bytes. */
interface Kind {
  readonly bytes: number
  /** The bytes of `text` when it is canonical (lowercase hex digits, a UUID's dashes where they go), else undefined. */
  readonly toBytes: (text: string) => Buffer | undefined
  readonly toText: (bytes: Buffer) => string
}

/** Each ASCII character's value as a lowercase hex digit, or -1. */
const DIGIT = new Int8Array(128).fill(-1)
for (let i = 0; i < 16; i++) DIGIT["0123456789abcdef".charCodeAt(i)] = i

/**
 * Lowercase hex digits of `text` (with a dash at each of `dashes`, ascending, and nowhere else) as `bytes` bytes, or
 * undefined. One pass, checking as it decodes: twice a written event (its id and hash), where a regular expression,
 * a `replace` and `Buffer.from(hex)` cost 3-5 times as much (0.8-1.0 against 0.2 us, micro-benchmark).
 */
const fromHex = (text: string, bytes: number, dashes: ReadonlyArray<number>): Buffer | undefined => {
  if (text.length !== 2 * bytes + dashes.length) return undefined
  const out = Buffer.allocUnsafe(bytes)
  let at = 0
  let dash = 0
  for (let i = 0; i < bytes; i++) {
    if (at === dashes[dash]) {
      if (text.charCodeAt(at) !== 45) return undefined
      at++
      dash++
    }
    const high = text.charCodeAt(at)
    const low = text.charCodeAt(at + 1)
    const h = high < 128 ? DIGIT[high]! : -1
    const l = low < 128 ? DIGIT[low]! : -1
    if ((h | l) < 0) return undefined
    out[i] = (h << 4) | l
    at += 2
  }
  return out
}

const hex = (bytes: Buffer): string => bytes.toString("hex")

const NO_DASHES: ReadonlyArray<number> = []
const UUID_DASHES: ReadonlyArray<number> = [8, 13, 18, 23]

/** SHA-256 / HMAC-SHA-256 in lowercase hex: 32 bytes. */
export const HASH: Kind = {
  bytes: 32,
  toBytes: (text) => fromHex(text, 32, NO_DASHES),
  toText: hex
}

/** A lowercase UUID: 16 bytes. */
export const UUID: Kind = {
  bytes: 16,
  toBytes: (text) => fromHex(text, 16, UUID_DASHES),
  toText: (bytes) => {
    const h = bytes.toString("hex")
    return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`
  }
}

const PAD = Buffer.from([0xff])

/** The bytes to store for `text`. */
export const pack = (kind: Kind, text: string): Buffer => {
  const canonical = kind.toBytes(text)
  if (canonical !== undefined) return canonical
  const utf8 = Buffer.from(text, "utf8")
  return utf8.length === kind.bytes ? Buffer.concat([utf8, PAD]) : utf8
}

const utf8 = new TextDecoder("utf-8", { fatal: true })

/**
 * The text of a stored value: bytes as `pack` wrote them, or text (a row written as text, which SQLite keeps as it
 * is given). Undefined for anything else (a corrupt row: the caller names it).
 */
export const unpack = (kind: Kind, value: unknown): string | undefined => {
  if (typeof value === "string") return value
  if (!(value instanceof Uint8Array)) return undefined
  const bytes = Buffer.isBuffer(value) ? value : Buffer.from(value.buffer, value.byteOffset, value.byteLength)
  if (bytes.length === kind.bytes) return kind.toText(bytes)
  const end = bytes.length > 0 && bytes[bytes.length - 1] === 0xff ? bytes.length - 1 : bytes.length
  try {
    return utf8.decode(bytes.subarray(0, end))
  } catch {
    return undefined
  }
}

/** The genesis hash, packed (32 zero bytes). */
export const GENESIS_BYTES: Buffer = pack(HASH, GENESIS_HASH)

/** A SQL expression packing the text column or expression `x` as `pack` does, for `dialect`. */
export const packSql = (kind: Kind, x: string, dialect: "pg" | "sqlite"): string => {
  const digits = kind === HASH ? "[0-9a-f]".repeat(64) : ["[0-9a-f]".repeat(8), "[0-9a-f]".repeat(4), "[0-9a-f]".repeat(4), "[0-9a-f]".repeat(4), "[0-9a-f]".repeat(12)].join("-")
  if (dialect === "pg") {
    const re = kind === HASH ? "^[0-9a-f]{64}$" : "^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$"
    return `(CASE WHEN ${x} ~ '${re}' THEN decode(replace(${x}, '-', ''), 'hex') WHEN octet_length(${x}) = ${kind.bytes} THEN convert_to(${x}, 'UTF8') || decode('ff', 'hex') ELSE convert_to(${x}, 'UTF8') END)`
  }
  // GLOB matches the whole text: exactly the canonical shape, character by character. (`||` would make text: the
  // padding goes through hex.)
  return `(CASE WHEN typeof(${x}) = 'text' AND ${x} GLOB '${digits}' THEN unhex(replace(${x}, '-', '')) WHEN typeof(${x}) = 'text' AND length(CAST(${x} AS BLOB)) = ${kind.bytes} THEN unhex(hex(${x}) || 'FF') WHEN typeof(${x}) = 'text' THEN CAST(${x} AS BLOB) ELSE ${x} END)`
}
