/**
 * The contract every `ExperienceStore` passes: in memory, SQLite, PostgreSQL. Each test builds a fresh layer (one
 * database per test).
 *
 * @example
 * import { ExperienceStoreSuite } from "@artana/experience/testing"
 * ExperienceStoreSuite.suite("sqlite", () => SqlExperienceStore.layer().pipe(Layer.provide(SqliteStore.layer({ filename }))))
 *
 * @since 0.1.0
 */
import { describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import type * as Layer from "effect/Layer"
import { TenantIsolation } from "@artana/core/testing"
import type { NewRule } from "./ExperienceRule.js"
import { ExperienceStore, type Service } from "./ExperienceStore.js"

const rule = (content: string, overrides: Partial<NewRule> = {}): NewRule => ({
  tenantId: "tenant-a",
  taskCategory: "booking",
  ruleType: "win_pattern",
  content,
  ...overrides
})

/** One contract test, on a store of its own. */
type Test = (title: string, body: (store: Service) => Effect.Effect<void, unknown>) => void

/** Registers the contract tests for the store `makeLayer` builds; called once per test. */
export const suite = (name: string, makeLayer: () => Layer.Layer<ExperienceStore, unknown>): void => {
  const test: Test = (title, body) => it.effect(title, () => Effect.provide(Effect.flatMap(ExperienceStore, body), makeLayer()))

  describe(`ExperienceStore contract: ${name}`, () => {
    savingAndRanking(test)
    isolationAndWrites(test)
  })
}

/** Saving, deduplicating and ranking rules. */
const savingAndRanking = (test: Test): void => {
  test("saved rules come back for their tenant and category, with no successes or failures yet", (store) =>
    Effect.gen(function*() {
      const saved = yield* store.saveRules([
        rule("Dates are ISO 8601 (YYYY-MM-DD)", { ruleType: "fact" }),
        rule("Calling book_flight with a US date fails", { ruleType: "anti_pattern" }),
        rule("Check seat availability first", { taskCategory: "seating" })
      ])
      expect(saved.map((r) => [r.ruleType, r.content, r.successCount, r.failCount])).toEqual([
        ["fact", "Dates are ISO 8601 (YYYY-MM-DD)", 0, 0],
        ["anti_pattern", "Calling book_flight with a US date fails", 0, 0],
        ["win_pattern", "Check seat availability first", 0, 0]
      ])
      expect(new Set(saved.map((r) => r.ruleId)).size).toBe(3)
      const booking = yield* store.getRules("tenant-a", "booking")
      expect(booking.map((r) => r.content).sort()).toEqual(["Calling book_flight with a US date fails", "Dates are ISO 8601 (YYYY-MM-DD)"])
      expect(booking.every((r) => r.tenantId === "tenant-a" && r.taskCategory === "booking")).toBe(true)
      expect(yield* store.getRules("tenant-a", "unknown")).toEqual([])
    }))

  test("a rule that says the same as a stored one reinforces it instead of adding another", (store) =>
    Effect.gen(function*() {
      const [first] = yield* store.saveRules([rule("Use ISO dates (YYYY-MM-DD).")])
      const [again] = yield* store.saveRules([rule("  use ISO   dates (yyyy-mm-dd) ")])
      const [third] = yield* store.saveRules([rule("\"Use ISO dates (YYYY-MM-DD)!\"", { ruleType: "fact" })])
      expect(again!.ruleId).toBe(first!.ruleId)
      expect(third).toMatchObject({ ruleId: first!.ruleId, content: "Use ISO dates (YYYY-MM-DD).", ruleType: "win_pattern", successCount: 2, failCount: 0 })
      expect(yield* store.getRules("tenant-a", "booking")).toHaveLength(1)
      // The same words in another category are another rule.
      const [other] = yield* store.saveRules([rule("Use ISO dates (YYYY-MM-DD).", { taskCategory: "invoices" })])
      expect(other!.ruleId).not.toBe(first!.ruleId)
      expect(other!.successCount).toBe(0)
    }))

  test("getRules puts the rules that helped most first, within the limit (10 by default)", (store) =>
    Effect.gen(function*() {
      const saved = yield* store.saveRules(Array.from({ length: 12 }, (_, i) => rule(`rule number ${i}`)))
      const [r0, r1, r2, r3] = saved
      for (let i = 0; i < 3; i++) yield* store.reinforce("tenant-a", r3!.ruleId, true)
      yield* store.reinforce("tenant-a", r1!.ruleId, true)
      yield* store.reinforce("tenant-a", r1!.ruleId, true)
      yield* store.reinforce("tenant-a", r2!.ruleId, true)
      yield* store.reinforce("tenant-a", r2!.ruleId, true)
      yield* store.reinforce("tenant-a", r2!.ruleId, false)
      yield* store.reinforce("tenant-a", r0!.ruleId, false)
      const ranked = yield* store.getRules("tenant-a", "booking")
      expect(ranked).toHaveLength(10)
      expect(ranked.slice(0, 3).map((r) => r.ruleId)).toEqual([r3!.ruleId, r1!.ruleId, r2!.ruleId])
      expect(ranked.map((r) => r.ruleId)).not.toContain(r0!.ruleId)
      expect(ranked[2]).toMatchObject({ successCount: 2, failCount: 1 })
      expect((yield* store.getRules("tenant-a", "booking", 2)).map((r) => r.ruleId)).toEqual([r3!.ruleId, r1!.ruleId])
      expect((yield* store.getRules("tenant-a", "booking", 50)).at(-1)!.ruleId).toBe(r0!.ruleId)
    }))

}

/** Tenant isolation, idempotent writes, validation and concurrent writers. */
const isolationAndWrites = (test: Test): void => {
  test("a tenant cannot read, reinforce or overwrite another tenant's rules, whatever ids it passes", (store) =>
    Effect.gen(function*() {
      const [mine] = yield* store.saveRules([rule("Only A knows this")])
      expect(yield* store.getRules("tenant-b", "booking")).toEqual([])
      const error = yield* Effect.flip(store.reinforce("tenant-b", mine!.ruleId, false))
      expect(error).toMatchObject({ _tag: "RuleNotFound", tenantId: "tenant-b", ruleId: mine!.ruleId })
      // Exactly the failure of an id that never existed, with or without an idempotency key.
      const never = "rule_never_saved"
      for (const options of [{}, { idempotencyKey: "run-1/reinforce" }]) {
        for (const positive of [true, false]) {
          const theirs = yield* Effect.flip(store.reinforce("tenant-b", mine!.ruleId, positive, options))
          const none = yield* Effect.flip(store.reinforce("tenant-b", never, positive, options))
          expect(TenantIsolation.shape(theirs, mine!.ruleId)).toEqual(TenantIsolation.shape(none, never))
        }
      }
      expect(yield* store.getRules("tenant-a", "booking")).toEqual([{ ...mine!, successCount: 0, failCount: 0 }])
      // B saving the same words gets a rule of its own; A's is untouched.
      const [theirs] = yield* store.saveRules([rule("Only A knows this", { tenantId: "tenant-b" })])
      expect(theirs!.ruleId).not.toBe(mine!.ruleId)
      expect(theirs).toMatchObject({ tenantId: "tenant-b", successCount: 0 })
      expect(yield* store.getRules("tenant-a", "booking")).toEqual([{ ...mine!, successCount: 0, failCount: 0 }])
      expect((yield* store.getRules("tenant-b", "booking")).map((r) => r.ruleId)).toEqual([theirs!.ruleId])
      // An idempotency key is per tenant too: B using A's key does not block B, nor touch A.
      yield* store.reinforce("tenant-a", mine!.ruleId, true, { idempotencyKey: "run-1/reinforce" })
      expect(yield* store.reinforce("tenant-b", theirs!.ruleId, true, { idempotencyKey: "run-1/reinforce" })).toMatchObject({ successCount: 1 })
      expect(yield* store.getRules("tenant-a", "booking")).toMatchObject([{ successCount: 1, failCount: 0 }])
    }))

  test("a write with an idempotency key happens once, however often it is repeated", (store) =>
    Effect.gen(function*() {
      const key = { idempotencyKey: "run-7/save_rules" }
      const first = yield* store.saveRules([rule("Confirm the fare before booking"), rule("Never book twice", { ruleType: "anti_pattern" })], key)
      const again = yield* store.saveRules([rule("Confirm the fare before booking"), rule("Never book twice", { ruleType: "anti_pattern" })], key)
      expect(again).toEqual(first)
      expect(again.map((r) => r.successCount)).toEqual([0, 0])
      const once = { idempotencyKey: "run-7/reinforce" }
      yield* store.reinforce("tenant-a", first[0]!.ruleId, true, once)
      expect(yield* store.reinforce("tenant-a", first[0]!.ruleId, true, once)).toMatchObject({ successCount: 1 })
      // A key is each tenant's own in a batch of several tenants' rules: B having used it skips B's rules, not A's.
      const shared = { idempotencyKey: "run-9/save_rules" }
      yield* store.saveRules([rule("B's first", { tenantId: "tenant-b" })], shared)
      const mixed = yield* store.saveRules([rule("A's rule under B's key"), rule("B's second", { tenantId: "tenant-b" })], shared)
      expect(mixed.map((r) => [r.tenantId, r.content])).toEqual([["tenant-a", "A's rule under B's key"]])
      expect((yield* store.getRules("tenant-b", "booking")).map((r) => r.content)).toEqual(["B's first"])
      // Its repeat writes nothing more.
      expect(yield* store.saveRules([rule("A's rule under B's key"), rule("B's second", { tenantId: "tenant-b" })], shared)).toEqual(mixed)
      // Without a key every write counts.
      yield* store.saveRules([rule("Never book twice")])
      expect((yield* store.getRules("tenant-a", "booking")).find((r) => r.content === "Never book twice")).toMatchObject({ successCount: 1 })
    }))

  test("an invalid rule is refused with InvalidRule and nothing of its batch is written", (store) =>
    Effect.gen(function*() {
      const empty = yield* Effect.flip(store.saveRules([rule("A fine rule"), rule("  ...  ")]))
      expect(empty).toMatchObject({ _tag: "InvalidRule" })
      expect(empty.message).toContain("content is empty")
      const category = yield* Effect.flip(store.saveRules([rule("A fine rule", { taskCategory: " " })]))
      expect(category.message).toContain("taskCategory is empty")
      const long = yield* Effect.flip(store.saveRules([rule("x".repeat(2001))]))
      expect(long.message).toContain("at most 2000")
      expect(yield* store.getRules("tenant-a", "booking")).toEqual([])
      expect(yield* store.saveRules([])).toEqual([])
    }))

  test("the same rule saved by many writers at once is one rule, counted once per extra save", (store) =>
    Effect.gen(function*() {
      const results = yield* Effect.forEach(Array.from({ length: 6 }, () => rule("Retry on a 503")), (r) => store.saveRules([r]), { concurrency: "unbounded" })
      expect(new Set(results.map(([r]) => r!.ruleId)).size).toBe(1)
      expect(yield* store.getRules("tenant-a", "booking")).toMatchObject([{ content: "Retry on a 503", successCount: 5 }])
    }))
}
