/**
 * The contract every `MemoryStore` implementation passes: in memory, SQLite, Postgres. Each test builds a fresh
 * layer, so a store backed by a database gets one database per test.
 *
 * @example
 * import { MemoryStoreSuite } from "@artana/agent/testing"
 * MemoryStoreSuite.suite("sqlite", () => SqlMemoryStore.layer().pipe(Layer.provide(SqliteStore.layerClient({ filename: tempFile() }))))
 *
 * @since 0.1.0
 */
import { describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import type * as Layer from "effect/Layer"
import * as TestClock from "effect/TestClock"
import { TenantIsolation } from "@artana/core/testing"
import { MemoryStore, type Scope, type Service } from "./MemoryStore.js"

const analyst: Scope = { tenantId: "acme", agentId: "analyst" }
const otherAgent: Scope = { tenantId: "acme", agentId: "researcher" }
const otherTenant: Scope = { tenantId: "globex", agentId: "analyst" }

const contents = (entries: ReadonlyArray<{ readonly content: string }>) => entries.map((e) => e.content)

const appendsInOrder = (store: Service) =>
  Effect.gen(function*() {
    const first = yield* store.append(analyst, "The user's fiscal year starts in April.")
    yield* TestClock.adjust("1 second")
    yield* store.append(analyst, "Revenue figures are in EUR.")
    yield* store.append(otherAgent, "Researcher notes.")
    yield* store.append(otherTenant, "Globex's own memory.")
    expect(first).toMatchObject({ tenantId: "acme", agentId: "analyst", content: "The user's fiscal year starts in April." })
    expect(first.id).not.toBe("")
    expect(first.createdAt).toBe(first.updatedAt)
    const listed = yield* store.list(analyst)
    expect(contents(listed)).toEqual(["The user's fiscal year starts in April.", "Revenue figures are in EUR."])
    expect(listed[1]!.createdAt - listed[0]!.createdAt).toBe(1000)
    expect(contents(yield* store.list(otherAgent))).toEqual(["Researcher notes."])
    expect(contents(yield* store.list(otherTenant))).toEqual(["Globex's own memory."])
    expect(yield* store.list({ tenantId: "nobody", agentId: "analyst" })).toEqual([])
  })

const idempotentWrites = (store: Service) =>
  Effect.gen(function*() {
    const a = yield* store.append(analyst, "Budget owner is Dana.", { key: "run-1/turn:5/tool:0" })
    const b = yield* store.append(analyst, "Budget owner is Dana.", { key: "run-1/turn:5/tool:0" })
    expect(b).toEqual(a)
    // Keys are per tenant: another tenant's write with the same key is its own.
    const c = yield* store.append(otherTenant, "Budget owner is Lee.", { key: "run-1/turn:5/tool:0" })
    expect(c.id).not.toBe(a.id)
    const r1 = yield* store.replace(analyst, "Dana", "Dana Smith", { key: "run-1/turn:6/tool:0" })
    // Replayed with the same key: "Dana" now also matches "Dana Smith", but nothing changes twice.
    const r2 = yield* store.replace(analyst, "Dana", "Dana Smith", { key: "run-1/turn:6/tool:0" })
    expect(r2).toEqual(r1)
    expect(contents(yield* store.list(analyst))).toEqual(["Budget owner is Dana Smith."])
  })

const otherTenantSeesNothing = (store: Service) =>
  Effect.gen(function*() {
    const a = yield* store.append(analyst, "Acme's budget owner is Dana.", { key: "run-1/tool:0" })
    yield* store.replace(analyst, "Dana", "Dana Smith", { key: "run-1/tool:1" })
    const intruder: Scope = { tenantId: "globex", agentId: analyst.agentId }
    // Replacing A's text, as B, fails as replacing text nobody wrote (also under A's idempotency keys).
    const sameFailure = <A, E>(text: string, f: (text: string) => Effect.Effect<A, E>) =>
      Effect.gen(function*() {
        const theirs = yield* Effect.flip(f(text))
        const none = yield* Effect.flip(f("never-written"))
        expect(TenantIsolation.shape(theirs, text)).toEqual(TenantIsolation.shape(none, "never-written"))
        expect(theirs).toMatchObject({ _tag: "MemoryNotFound" })
      })
    yield* sameFailure("Dana Smith", (text) => store.replace(intruder, text, "Lee"))
    yield* sameFailure("Dana Smith", (text) => store.replace(intruder, text, "Lee", { key: "run-1/tool:1" }))
    expect(yield* store.list(intruder)).toEqual([])
    expect(yield* store.search(intruder, "Dana budget owner")).toEqual([])
    expect(yield* store.search(intruder, "")).toEqual([])
    // A's key, used by B, writes B's own entry; A's memory is as A left it.
    const theirs = yield* store.append(intruder, "Globex's note.", { key: "run-1/tool:0" })
    expect(theirs).toMatchObject({ tenantId: "globex", content: "Globex's note." })
    expect(theirs.id).not.toBe(a.id)
    expect(contents(yield* store.list(analyst))).toEqual(["Acme's budget owner is Dana Smith."])
    expect(contents(yield* store.list(intruder))).toEqual(["Globex's note."])
  })

const replaceOneEntry = (store: Service) =>
  Effect.gen(function*() {
    yield* store.append(analyst, "Preferred chart: bar.")
    yield* store.append(analyst, "Region focus: EMEA and APAC.")
    yield* store.append(analyst, "Region owner: APAC is Kim.")
    yield* TestClock.adjust("5 seconds")
    const changed = yield* store.replace(analyst, "bar", "line")
    expect(changed).toMatchObject({ removed: false, entry: { content: "Preferred chart: line." } })
    expect(changed.entry.updatedAt - changed.entry.createdAt).toBe(5000)
    const missing = yield* Effect.either(store.replace(analyst, "pie", "donut"))
    expect(Either.isLeft(missing) && missing.left).toMatchObject({ _tag: "MemoryNotFound", agentId: "analyst", text: "pie" })
    // Case-sensitive: "Bar" is not "bar".
    expect(Either.isLeft(yield* Effect.either(store.replace(analyst, "LINE", "x")))).toBe(true)
    const ambiguous = yield* Effect.either(store.replace(analyst, "APAC", "Asia-Pacific"))
    expect(Either.isLeft(ambiguous) && ambiguous.left).toMatchObject({ _tag: "AmbiguousMemory", matches: 2 })
    // Another scope's entries are not candidates.
    yield* store.append(otherAgent, "Preferred chart: line.")
    yield* store.replace(analyst, "Preferred chart: line.", "")
    expect(contents(yield* store.list(analyst))).toEqual(["Region focus: EMEA and APAC.", "Region owner: APAC is Kim."])
    expect(contents(yield* store.list(otherAgent))).toEqual(["Preferred chart: line."])
    const removed = yield* store.replace(analyst, "Region owner: APAC is Kim.", "   ")
    expect(removed.removed).toBe(true)
    expect(contents(yield* store.list(analyst))).toEqual(["Region focus: EMEA and APAC."])
    // A failed replace changed nothing, and is not recorded under its key.
    const failed = yield* Effect.either(store.replace(analyst, "Kim", "Lee", { key: "k-1" }))
    expect(Either.isLeft(failed)).toBe(true)
    yield* store.append(analyst, "Kim joined.")
    expect((yield* store.replace(analyst, "Kim", "Lee", { key: "k-1" })).entry.content).toBe("Lee joined.")
    // Every occurrence within the entry.
    yield* store.append(analyst, "q1 q1 q2")
    expect((yield* store.replace(analyst, "q1", "Q1")).entry.content).toBe("Q1 Q1 q2")
  })

const searchRanking = (store: Service) =>
  Effect.gen(function*() {
    yield* store.append(analyst, "Churn in EMEA rose to 4%.")
    yield* TestClock.adjust("1 second")
    yield* store.append(analyst, "Churn target for APAC is 2%.")
    yield* TestClock.adjust("1 second")
    yield* store.append(analyst, "Meeting ÜBER Straße notes, 100_000 rows.")
    yield* TestClock.adjust("1 second")
    yield* store.append(analyst, "EMEA churn review is monthly.")
    yield* store.append(otherTenant, "Churn in EMEA is a secret of Globex.")
    expect(contents(yield* store.search(analyst, "EMEA churn"))).toEqual([
      "EMEA churn review is monthly.",
      "Churn in EMEA rose to 4%.",
      "Churn target for APAC is 2%."
    ])
    expect(contents(yield* store.search(analyst, "über straße"))).toEqual(["Meeting ÜBER Straße notes, 100_000 rows."])
    expect(contents(yield* store.search(analyst, "CHURN", { limit: 1 }))).toEqual(["EMEA churn review is monthly."])
    // Words are letters and digits: "100_000" is "100" and "000".
    expect(contents(yield* store.search(analyst, "100_000"))).toEqual(["Meeting ÜBER Straße notes, 100_000 rows."])
    expect(yield* store.search(analyst, "nothing-like-this")).toEqual([])
    // An empty query: the most recent entries.
    expect(contents(yield* store.search(analyst, "  ", { limit: 2 }))).toEqual([
      "EMEA churn review is monthly.",
      "Meeting ÜBER Straße notes, 100_000 rows."
    ])
    // An update counts as recent.
    yield* TestClock.adjust("1 second")
    yield* store.replace(analyst, "rose to 4%", "rose to 5%")
    expect(contents(yield* store.search(analyst, "churn EMEA"))[0]).toBe("Churn in EMEA rose to 5%.")
  })

const concurrentWrites = (store: Service) =>
  Effect.gen(function*() {
    const facts = Array.from({ length: 20 }, (_, i) => `fact ${i}`)
    yield* Effect.forEach(facts, (fact, i) => store.append(analyst, fact, { key: `k-${i % 10}` }), { concurrency: "unbounded" })
    const listed = contents(yield* store.list(analyst))
    // Ten keys: ten entries, one per key, whatever the interleaving.
    expect(listed).toHaveLength(10)
    expect(new Set(listed).size).toBe(10)
  })

/** The contract's cases, by title. */
const cases: ReadonlyArray<readonly [string, (store: Service) => Effect.Effect<void, unknown>]> = [
  ["appends in order, scoped by tenant and by agent", appendsInOrder],
  ["a write with an idempotency key happens once and returns what the first returned", idempotentWrites],
  ["as another tenant, every call acts on nothing of A's: the same answers as for memory that never existed", otherTenantSeesNothing],
  ["replace changes the one entry that contains the text; none or several is an error; blank removes", replaceOneEntry],
  ["search ranks by words matched, case-insensitively (Unicode too), then recency", searchRanking],
  ["concurrent writes all land, each once", concurrentWrites]
]

/**
 * Runs the contract against `layer()`, called once per test.
 */
export const suite = <E>(name: string, layer: () => Layer.Layer<MemoryStore, E>): void => {
  describe(`MemoryStore contract: ${name}`, () => {
    for (const [title, body] of cases) it.effect(title, () => Effect.flatMap(MemoryStore, body).pipe(Effect.provide(layer())))
  })
}
