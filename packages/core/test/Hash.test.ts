import { describe, expect, it } from "@effect/vitest"
import { createHash } from "node:crypto"
import { FastCheck as fc } from "effect"
import { Verify } from "@artana/core"
import { chainChecker, GENESIS_HASH, hashMatches, newEventHash, StoredEvent } from "../src/internal/hash.js"

// The chain's hash, written out from its definition: SHA-256 of "artana:v2:", the previous hash, and the event
// without its hash as `JSON.stringify` writes it with its keys in sorted order.
const specHash = (event: Record<string, unknown> & { readonly prevHash: string }) =>
  createHash("sha256").update(`artana:v2:${event.prevHash}${JSON.stringify(event)}`).digest("hex")

const text = fc.oneof(fc.string(), fc.fullUnicodeString(), fc.string({ unit: "binary" }), fc.constantFrom('"', "\\", "\n", "\u2028", "\ud800", "é"))

describe("the hash chain's material", () => {
  it("is the event as JSON.stringify writes it, for ids and keys that need escaping too, and verifies as read back", () => {
    fc.assert(
      fc.property(text, text, text, text, fc.integer({ min: 1, max: 2 ** 40 }), fc.oneof(fc.integer(), fc.double()), (eventId, runId, stepKey, note, seq, timestamp) => {
        const payload = { _tag: "StepCompleted", name: note, value: { note } } as const
        const event = { eventId, payload, prevHash: GENESIS_HASH, runId, seq, stepKey, tenantId: "acme", timestamp, type: "StepCompleted" }
        const hash = newEventHash(event, undefined)
        expect(hash).toBe(specHash(event))
        const read = new StoredEvent(eventId, runId, "acme", seq, timestamp, "StepCompleted", stepKey, payload, GENESIS_HASH, hash, JSON.stringify(payload))
        expect(hashMatches(read, undefined)).toBe(true)
      }),
      { numRuns: 500 }
    )
  })

  it("verifies a whole chain read back, whatever its run, tenant and step keys, and names the first event altered", () => {
    fc.assert(
      fc.property(text, text, fc.array(text, { minLength: 1, maxLength: 4 }), (runId, tenantId, keys) => {
        let prevHash = GENESIS_HASH
        const read = keys.map((stepKey, i) => {
          const payload = { _tag: "StepCompleted", name: stepKey, value: i } as const
          const event = { eventId: `e${i}`, payload, prevHash, runId, seq: i + 1, stepKey, tenantId, timestamp: 1_700_000_000_000 + i, type: "StepCompleted" }
          const hash = newEventHash(event, "key")
          const stored = new StoredEvent(`e${i}`, runId, tenantId, i + 1, event.timestamp, "StepCompleted", stepKey, payload, prevHash, hash, JSON.stringify(payload))
          prevHash = hash
          return stored
        })
        expect(Verify.verifyEvents(runId, read, { auditKey: "key" }).ok).toBe(true)
        const last = read[read.length - 1]!
        const altered = new StoredEvent(last.eventId, runId, tenantId, last.seq, last.timestamp, last.type, last.stepKey, last.payload, last.prevHash, last.hash, JSON.stringify({ ...last.payload, value: -1 }))
        expect(Verify.verifyEvents(runId, [...read.slice(0, -1), altered], { auditKey: "key" })).toMatchObject({ ok: false, firstBrokenSeq: last.seq })
      }),
      { numRuns: 200 }
    )
  })

  it("one checker verifies events of several runs, tenants and types in any order, and refuses each one altered", () => {
    const types = fc.constantFrom("StepCompleted", "Step\"Completed", "é", "")
    const stored = fc.record({ eventId: text, runId: fc.constantFrom("r1", "r\"2", "r1"), tenantId: fc.constantFrom("acme", "t\n"), stepKey: text, type: types, seq: fc.oneof(fc.integer({ min: 1 }), fc.constant(Number.NaN)), timestamp: fc.double(), prevHash: fc.oneof(fc.constant(GENESIS_HASH), text) })
    fc.assert(
      fc.property(fc.array(stored, { minLength: 1, maxLength: 8 }), (fields) => {
        const check = chainChecker(undefined)
        for (const f of fields) {
          const payload = { _tag: "StepCompleted", name: f.stepKey, value: f.seq } as const
          const hash = newEventHash({ ...f, payload }, undefined)
          const read = (over: Partial<typeof f>) => {
            const e = { ...f, ...over }
            return new StoredEvent(e.eventId, e.runId, e.tenantId, e.seq, e.timestamp, e.type, e.stepKey, payload, e.prevHash, hash, JSON.stringify(payload))
          }
          expect(check(read({}), false)).toBe(true)
          expect(check(read({ runId: `${f.runId}x` }), false)).toBe(false)
          expect(check(read({ tenantId: `${f.tenantId}x` }), false)).toBe(false)
          expect(check(read({ type: `${f.type}x` }), false)).toBe(false)
          // A timestamp is hashed as JSON writes it: a change JSON cannot see (a non-finite one, 2^60 + 1) is none.
          const written = (n: number) => JSON.stringify(n)
          expect(check(read({ timestamp: f.timestamp + 1 }), false)).toBe(written(f.timestamp + 1) === written(f.timestamp))
        }
      }),
      { numRuns: 300 }
    )
  })
})
