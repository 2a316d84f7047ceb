// The write path's fast parts must write what the general ones write: `newStoredEvent` (the ledger's event, which
// carries the payload text it hashed) hashes exactly as `newEventHash`, and `encodeExactOnce` (a step's value)
// encodes exactly as the schema's own encoding.
import { describe, expect, it } from "@effect/vitest"
import { Arbitrary, Either, FastCheck as fc, Schema } from "effect"
import { Event, Json } from "@artana/core"
import { encodeExactOnce } from "../src/internal/exactGuard.js"
import { GENESIS_HASH, hashMatches, newEventHash, newStoredEvent, storedPayload, writerMaterial } from "../src/internal/hash.js"

const payloads = Arbitrary.make(Event.EventPayload)
const texts = fc.oneof(fc.string(), fc.constantFrom("run-1", "tenant \"quoted\"", "tool:1", "\u0000\ud800", GENESIS_HASH, "a".repeat(64)))

describe("the ledger's events", () => {
  it("hash as newEventHash hashes them, and store the text they hashed", () => {
    const material = writerMaterial()
    fc.assert(
      fc.property(payloads, texts, texts, texts, texts, fc.integer({ min: 1, max: 2 ** 40 }), fc.integer(), fc.option(fc.string(), { nil: undefined }), (payload, runId, tenantId, stepKey, prevHash, seq, timestamp, auditKey) => {
        const fields = { eventId: crypto.randomUUID(), runId, tenantId, seq, timestamp, type: payload._tag, stepKey, payload, prevHash }
        const general = { ...fields, hash: "" }
        general.hash = newEventHash(general, auditKey)
        // With the default quoting and with a writer's remembering one: the same hash, the same text to store.
        for (const event of [newStoredEvent(fields, auditKey), newStoredEvent(fields, auditKey, material)]) {
          expect(event.hash).toBe(general.hash)
          expect(storedPayload(event)).toBe(storedPayload(general))
          expect(hashMatches(event, auditKey)).toBe(true)
          expect({ ...event }).toStrictEqual(general)
        }
      }),
      { numRuns: 300 }
    )
  })
})

describe("encodeExactOnce", () => {
  const schemas = [
    Schema.Struct({ ok: Schema.Boolean, i: Schema.Number }),
    Schema.Struct({ at: Schema.Date, tags: Schema.Array(Schema.String) }),
    Schema.Struct({ n: Schema.NumberFromString, note: Schema.optional(Schema.String) }),
    Json.Json
  ] as const
  it("encodes as the schema's encoding does, value or failure", () => {
    for (const schema of schemas) {
      const s = schema as unknown as Schema.Schema<unknown, unknown>
      fc.assert(
        fc.property(fc.oneof(Arbitrary.make(s), fc.jsonValue() as fc.Arbitrary<unknown>), (value) => {
          const fast = encodeExactOnce(s, value)
          const general = Schema.encodeEither(s)(value)
          expect(Either.isRight(fast)).toBe(Either.isRight(general))
          if (Either.isRight(fast) && Either.isRight(general)) expect(fast.right).toStrictEqual(general.right)
        }),
        { numRuns: 200 }
      )
    }
  })
})
