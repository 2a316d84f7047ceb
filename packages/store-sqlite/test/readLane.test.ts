// The store's own read (the pages of `readEvents` on the driver's prepared statement) runs on the client's connection
// itself, so it must take turns with the client's transactions: a read never runs inside another fiber's open
// transaction (where it would see rows that transaction may still roll back), and one inside the caller's own
// transaction reads that transaction's rows.
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { afterAll, describe, expect, it } from "@effect/vitest"
import { SqlClient } from "@effect/sql"
import { Context, Deferred, Effect, Either, Fiber, Layer } from "effect"
import { EventStore, Tenant, Verify } from "@artana/core"
import { TestLog } from "@artana/core/testing"
import { SqliteStore } from "@artana/store-sqlite"

const root = fs.mkdtempSync(path.join(os.tmpdir(), "artana-read-lane-"))
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

describe("SQLite read on the client's connection", () => {
  it.scoped("a read made while another fiber's transaction is open waits for it, and never sees what that transaction rolls back", () =>
    Effect.gen(function*() {
      const { sql, store } = yield* open(tempDb())
      yield* store.append({ runId: "run-1", tenantId: "acme", expectedSeq: 0, events: started })
      const inside = yield* Deferred.make<void>()
      const release = yield* Deferred.make<void>()
      const rolledBack = TestLog.chain("run-1", "acme", started, [step("rolled-back")])
      // Another fiber's transaction appends, waits, then fails: its event is rolled back.
      const other = yield* Effect.fork(Effect.either(sql.withTransaction(Effect.gen(function*() {
        yield* store.append({ runId: "run-1", tenantId: "acme", expectedSeq: 1, events: rolledBack })
        yield* Deferred.succeed(inside, undefined)
        yield* Deferred.await(release)
        return yield* Effect.fail("the other fiber gives up")
      }))))
      yield* Deferred.await(inside)
      const read = yield* Effect.fork(store.readEvents("acme", "run-1", 1, 256))
      for (let turn = 0; turn < 5; turn++) yield* Effect.promise(() => new Promise<void>((resolve) => setImmediate(resolve)))
      yield* Deferred.succeed(release, undefined)
      expect(Either.isLeft(yield* Fiber.join(other))).toBe(true)
      expect(yield* Fiber.join(read)).toEqual(started)
    }))

  it.scoped("a read inside the caller's transaction reads that transaction's events, a page at a time", () =>
    Effect.gen(function*() {
      const { sql, store } = yield* open(tempDb())
      yield* store.append({ runId: "run-1", tenantId: "acme", expectedSeq: 0, events: started })
      const more = TestLog.chain("run-1", "acme", started, [step("two"), step("three"), step("four")])
      const pages = yield* sql.withTransaction(Effect.gen(function*() {
        yield* store.append({ runId: "run-1", tenantId: "acme", expectedSeq: 1, events: more })
        return [yield* store.readEvents("acme", "run-1", 1, 2), yield* store.readEvents("acme", "run-1", 3, 2), yield* store.readEvents("acme", "run-1", 5)]
      }))
      expect(pages).toEqual([[...started, more[0]], more.slice(1), []])
      const stored = yield* store.readEvents("acme", "run-1")
      expect(stored).toEqual([...started, ...more])
      expect(Verify.verifyEvents("run-1", stored).ok).toBe(true)
    }))
})
