import { describe, expect, it } from "@effect/vitest"
import { FastCheck as fc } from "effect"
import { randomUUID } from "node:crypto"
import { HASH, pack, unpack, UUID } from "../src/internal/sqlCodec.js"

// Any well-formed text, and text shaped like what is packed but not quite (capitals, the packed length in bytes).
const text = fc.oneof(
  fc.string(),
  fc.fullUnicodeString(),
  fc.hexaString({ minLength: 64, maxLength: 64 }).map((h) => h.toUpperCase()),
  fc.hexaString({ minLength: 63, maxLength: 65 }),
  fc.string({ minLength: 16, maxLength: 16 }),
  fc.string({ minLength: 32, maxLength: 32 }),
  // UUIDs as written, in capitals, and with a dash moved or turned into a digit (the packed length of text is 36).
  fc.uuid(),
  fc.uuid().map((u) => u.toUpperCase()),
  fc.uuid().map((u) => `${u.slice(0, 7)}-${u.slice(7, 8)}${u.slice(9)}`),
  fc.uuid().map((u) => u.replace("-", "0")),
  fc.hexaString({ minLength: 36, maxLength: 36 }),
  fc.constantFrom("", "0".repeat(64), "run-1-event-1", "abcdefgh-event-1", "é".repeat(8), "é".repeat(16))
)

// The canonical shapes, the ones packed to their bytes.
const canonical = new Map([
  [HASH, /^[0-9a-f]{64}$/],
  [UUID, /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/]
])

describe("SQL storage of hashes and event ids", () => {
  it("reads back every text as it was written, packed or not", () => {
    fc.assert(
      fc.property(text, (value) => {
        for (const kind of [HASH, UUID]) {
          const stored = pack(kind, value)
          expect(unpack(kind, stored)).toBe(value)
          // Only the canonical shape takes the packed length.
          expect(stored.length === kind.bytes).toBe(canonical.get(kind)!.test(value))
        }
      }),
      { numRuns: 2000 }
    )
  })

  it("stores a digest in 32 bytes and a UUID in 16", () => {
    fc.assert(
      fc.property(fc.uint8Array({ minLength: 32, maxLength: 32 }), (bytes) => {
        const digest = Buffer.from(bytes).toString("hex")
        expect(pack(HASH, digest)).toEqual(Buffer.from(bytes))
        expect(unpack(HASH, pack(HASH, digest))).toBe(digest)
      })
    )
    const id = randomUUID()
    expect(pack(UUID, id).length).toBe(16)
    expect(unpack(UUID, pack(UUID, id))).toBe(id)
  })

  it("refuses bytes that are not UTF-8, and values that are neither bytes nor text", () => {
    expect(unpack(HASH, Buffer.from([0xc3, 0x28]))).toBeUndefined()
    expect(unpack(UUID, 42)).toBeUndefined()
    expect(unpack(HASH, null)).toBeUndefined()
  })
})
