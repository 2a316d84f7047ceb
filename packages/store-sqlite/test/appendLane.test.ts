// The store's own append runs on the client's connection itself (the driver's prepared statements), so it must take
// turns with the client's statements and transactions: an append never lands inside another fiber's transaction
// (where that transaction's rollback would take it), and one inside the caller's own transaction is part of it.
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { afterAll, describe, expect, it } from "@effect/vitest"
import { SqlClient } from "@effect/sql"
import { Context, Deferred, Effect, Either, Fiber, Layer } from "effect"
import { EventStore, Tenant, Verify } from "@artana/core"
import { TestLog } from "@artana/core/testing"
import { SqliteStore } from "@artana/store-sqlite"

const root = fs.mkdtempSync(path.join(os.tmpdir(), "artana-append-lane-"))
afterAll(() => fs.rmSync(root, { recursive: true, force: true }))
const tempDb = () => path.join(fs.mkdtempSync(path.join(root, "db-")), "artana.db")

const tenant = Tenant.TenantContext.make({ tenantId: "acme", capabilities: [], budgetUsdLimit: 1 })
const started = TestLog.chain("run-1", "acme", [], [{ _tag: "RunStarted", workflow: "w", input: null, tenant }])
const step = (name: string) => ({ _tag: "StepCompleted", name, value: name }) as const

const open = (filename: string) =>
  Effect.map(Layer.build(SqliteStore.layer({ filename })), (context) => ({
    store: Context.get(context, EventStore.EventStore),
    sql: Context.get(context, SqlClient.SqlClient)
  }))

describe("SQLite append on the client's connection", () => {
  it.scoped("an append made while another fiber's transaction is open waits for it, and that transaction's rollback leaves it written", () =>
    Effect.gen(function*() {
      const { sql, store } = yield* open(tempDb())
      yield* store.append({ runId: "run-1", tenantId: "acme", expectedSeq: 0, events: started })
      yield* sql`CREATE TABLE scratch (note TEXT)`
      const inside = yield* Deferred.make<void>()
      const release = yield* Deferred.make<void>()
      // Another fiber's transaction writes, waits, then fails: everything it wrote is rolled back.
      const other = yield* Effect.fork(Effect.either(sql.withTransaction(Effect.gen(function*() {
        yield* sql`INSERT INTO scratch (note) VALUES ('rolled back')`
        yield* Deferred.succeed(inside, undefined)
        yield* Deferred.await(release)
        return yield* Effect.fail("the other fiber gives up")
      }))))
      yield* Deferred.await(inside)
      const next = TestLog.chain("run-1", "acme", started, [step("while-the-other-transaction-is-open")])
      const appended = yield* Effect.fork(store.append({ runId: "run-1", tenantId: "acme", expectedSeq: 1, events: next }))
      // Its group is written at the end of a turn of the event loop: give it a few turns before the other ends.
      for (let turn = 0; turn < 5; turn++) yield* Effect.promise(() => new Promise<void>((resolve) => setImmediate(resolve)))
      yield* Deferred.succeed(release, undefined)
      expect(Either.isLeft(yield* Fiber.join(other))).toBe(true)
      yield* Fiber.join(appended)
      expect(yield* sql`SELECT note FROM scratch`).toEqual([])
      const stored = yield* store.readEvents("acme", "run-1")
      expect(stored).toEqual([...started, ...next])
      expect(Verify.verifyEvents("run-1", stored).ok).toBe(true)
    }))

  it.scoped("appends inside the caller's transaction are part of it: rolled back with it, and a refused one leaves it usable", () =>
    Effect.gen(function*() {
      const { sql, store } = yield* open(tempDb())
      yield* store.append({ runId: "run-1", tenantId: "acme", expectedSeq: 0, events: started })
      const second = TestLog.chain("run-1", "acme", started, [step("two")])
      // Rolled back with the caller's transaction.
      const failed = yield* Effect.either(sql.withTransaction(Effect.zipRight(
        store.append({ runId: "run-1", tenantId: "acme", expectedSeq: 1, events: second }),
        Effect.fail("the caller gives up")
      )))
      expect(Either.isLeft(failed)).toBe(true)
      expect(yield* store.readEvents("acme", "run-1")).toEqual(started)
      // A refused batch (a new run's batch without RunStarted, then a stale seq) fails alone; the transaction commits the rest.
      const third = TestLog.chain("run-1", "acme", [...started, ...second], [step("three")])
      const outcomes = yield* sql.withTransaction(Effect.gen(function*() {
        const stale = yield* Effect.either(store.append({ runId: "run-1", tenantId: "acme", expectedSeq: 0, events: started }))
        yield* store.append({ runId: "run-1", tenantId: "acme", expectedSeq: 1, events: second })
        const gap = yield* Effect.either(store.append({ runId: "run-1", tenantId: "acme", expectedSeq: 5, events: TestLog.chain("run-1", "acme", [...started, ...second, ...third], [step("gap")]).map((e) => ({ ...e, seq: 6 })) }))
        yield* store.append({ runId: "run-1", tenantId: "acme", expectedSeq: 2, events: third })
        return [stale, gap].map((o) => (Either.isLeft(o) ? o.left._tag : "ok"))
      }))
      expect(outcomes).toEqual(["SequenceConflict", "SequenceConflict"])
      const stored = yield* store.readEvents("acme", "run-1")
      expect(stored).toEqual([...started, ...second, ...third])
      expect(Verify.verifyEvents("run-1", stored).ok).toBe(true)
    }))
})
