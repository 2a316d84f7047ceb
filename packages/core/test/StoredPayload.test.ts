import { describe, expect, it } from "@effect/vitest"
import { Arbitrary, Either, FastCheck as fc, Schema } from "effect"
import { Event } from "@artana/core"

// A store decodes a payload with the guard of its row's type (`decodeStoredPayload`): that must give what decoding
// through the whole union gives (`decodePayload`), value or error, whatever the row's type says and the payload holds.
const stored = Arbitrary.make(Schema.encodedSchema(Event.EventPayload)).map((value) => JSON.parse(JSON.stringify(value)) as unknown)
const types = fc.oneof(fc.constantFrom(...Event.EVENT_TYPES), fc.constant("NoSuchType"))

describe("decodeStoredPayload", () => {
  it("decodes as decodePayload does, under its own type, another type or none, for stored payloads and any JSON", () => {
    let asRead = 0
    fc.assert(
      fc.property(fc.oneof(stored, fc.jsonValue()), types, (payload, type) => {
        const ownType = typeof payload === "object" && payload !== null && "_tag" in payload ? payload._tag : undefined
        for (const t of [type, ownType]) {
          if (typeof t !== "string") continue
          const fast = Event.decodeStoredPayload(t, payload)
          expect(fast).toStrictEqual(Event.decodePayload(payload))
          if (Either.isRight(fast) && fast.right === payload) asRead++
        }
      }),
      { numRuns: 600 }
    )
    // Most stored payloads are used as parsed (no copy): the guard of their type vouches for them.
    expect(asRead).toBeGreaterThan(150)
  })

  it("knows every payload type, and no other", () => {
    expect(Event.EVENT_TYPES.size).toBe(Event.EventPayload.members.length)
    for (const type of ["RunStarted", "ModelRequested", "ToolCompleted", "StepCompleted", "SignalSent", "ApprovalDecided"]) expect(Event.EVENT_TYPES.has(type)).toBe(true)
    expect(Event.EVENT_TYPES.has("constructor")).toBe(false)
  })
})
