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

/** One kind of packed value: its length in bytes, and how its canonical text looks. */
interface Kind {
  readonly bytes: number
  readonly canonical: RegExp
  readonly toBytes: (text: string) => Buffer
  readonly toText: (bytes: Buffer) => string
}

const hex = (bytes: Buffer): string => bytes.toString("hex")

/** SHA-256 / HMAC-SHA-256 in lowercase hex: 32 bytes. */
export const HASH: Kind = {
  bytes: 32,
  canonical: /^[0-9a-f]{64}$/,
  toBytes: (text) => Buffer.from(text, "hex"),
  toText: hex
}

/** A lowercase UUID: 16 bytes. */
export const UUID: Kind = {
  bytes: 16,
  canonical: /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/,
  toBytes: (text) => Buffer.from(text.replace(/-/g, ""), "hex"),
  toText: (bytes) => {
    const h = bytes.toString("hex")
    return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`
  }
}

const PAD = Buffer.from([0xff])

/** The bytes to store for `text`. */
export const pack = (kind: Kind, text: string): Buffer => {
  if (kind.canonical.test(text)) return kind.toBytes(text)
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
