// Group commit when things go wrong, on both SQLite appends: the store's own (`SqliteStore.layer`) and core's
// (`SqlEventStore.make` on a client without the store's dialect). A failure that ends the group's transaction fails
// the whole group and writes none of it; a caller interrupted while its group waits for the connection is not
// written; an append inside another client's transaction (another database's) is not part of it.
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { afterAll, describe, expect, it } from "@effect/vitest"
import { SqlClient } from "@effect/sql"
import { Cause, Context, Deferred, Effect, Either, Exit, Fiber, Layer, Option } from "effect"
import { type Event, type EventStore, EventStore as Store, SqlEventStore, Tenant, Verify } from "@artana/core"
import { TestLog } from "@artana/core/testing"
import { SqliteStore } from "@artana/store-sqlite"

const root = fs.mkdtempSync(path.join(os.tmpdir(), "artana-group-failures-"))
afterAll(() => fs.rmSync(root, { recursive: true, force: true }))
const tempDb = () => path.join(fs.mkdtempSync(path.join(root, "db-")), "artana.db")

const tenant = Tenant.TenantContext.make({ tenantId: "acme", capabilities: [], budgetUsdLimit: 1 })
const startOf = (runId: string, workflow = "w") => TestLog.chain(runId, "acme", [], [{ _tag: "RunStarted", workflow, input: null, tenant }])
const step = (name: string) => ({ _tag: "StepCompleted", name, value: name }) as const

/** Some turns of the event loop: a group is written at the end of one. */
const turns = (n: number) => Effect.promise(() => new Promise<void>((resolve) => { let left = n; const next = () => (--left === 0 ? resolve() : setImmediate(next)); setImmediate(next) }))

const appends = {
  "the store's own append": (filename: string) =>
    Effect.map(Layer.build(SqliteStore.layer({ filename })), (context) => ({
      store: Context.get(context, Store.EventStore),
      sql: Context.get(context, SqlClient.SqlClient)
    })),
  // The client alone (`SqliteStore.make`), without the store's dialect: core's append and group commit.
  "core's append on the client": (filename: string) =>
    Effect.gen(function*() {
      const sql = yield* SqliteStore.make({ filename })
      return { store: yield* Effect.provideService(SqlEventStore.make(), SqlClient.SqlClient, sql), sql: sql as SqlClient.SqlClient }
    })
} as const

/** An append's outcome, told: "ok", its error's tag and reason, or the whole cause when it is not a plain failure. */
const described = (exit: Exit.Exit<void, { readonly _tag: string; readonly reason?: string }>): string =>
  Exit.match(exit, {
    onSuccess: () => "ok",
    onFailure: (cause) =>
      Option.match(Cause.failureOption(cause), { onNone: () => Cause.pretty(cause), onSome: (error) => `${error._tag}: ${error.reason ?? ""}` })
  })

const appendTo = (store: EventStore.Service, runId: string, before: ReadonlyArray<Event.Event>, events: ReadonlyArray<Event.Event>) =>
  store.append({ runId, tenantId: "acme", expectedSeq: before.length, events })

for (const [name, open] of Object.entries(appends)) {
  describe(`SQLite group commit, failures: ${name}`, () => {
    it.scoped("a full disk in the middle of a group fails every append of it, and writes none", () =>
      Effect.gen(function*() {
        const { sql, store } = yield* open(tempDb())
        const a = startOf("a")
        const c = startOf("c")
        yield* appendTo(store, "a", [], a)
        yield* appendTo(store, "c", [], c)
        // Room for a few pages more: a step's batch fits, a batch that needs many new pages fails with SQLITE_FULL, and
        // SQLite may answer that by rolling back the whole transaction, not only the statement.
        const [{ page_count }] = (yield* sql`PRAGMA page_count`) as unknown as [{ page_count: number }]
        yield* sql.unsafe(`PRAGMA max_page_count = ${page_count + 8}`)
        const aNext = TestLog.chain("a", "acme", a, [step("a-2")])
        const cNext = TestLog.chain("c", "acme", c, [step("c-2")])
        const outcomes = yield* Effect.all([
          Effect.exit(appendTo(store, "a", a, aNext)),
          // A new run whose start needs many new pages: its workflow's name alone is 200 KB.
          Effect.exit(appendTo(store, "b", [], startOf("b", "w".repeat(200_000)))),
          Effect.exit(appendTo(store, "c", c, cNext))
        ], { concurrency: "unbounded" })
        // Each a failure (not a defect): the disk's.
        expect(outcomes.map(described)).toEqual(Array(3).fill("StoreError: database or disk is full"))
        expect(yield* store.readEvents("acme", "a")).toEqual(a)
        expect(yield* store.readEvents("acme", "c")).toEqual(c)
        // No transaction was left open: with room again, the same appends are written and committed.
        yield* sql.unsafe(`PRAGMA max_page_count = 1073741823`)
        yield* Effect.all([appendTo(store, "a", a, aNext), appendTo(store, "c", c, cNext)], { concurrency: "unbounded" })
        for (const [runId, log] of [["a", [...a, ...aNext]], ["c", [...c, ...cNext]]] as const) {
          const stored = yield* store.readEvents("acme", runId)
          expect(stored).toEqual(log)
          expect(Verify.verifyEvents(runId, stored).ok).toBe(true)
        }
      }))

    it.scoped("an append interrupted while its group waits for another fiber's transaction is not written", () =>
      Effect.gen(function*() {
        const { sql, store } = yield* open(tempDb())
        const started = startOf("r")
        yield* appendTo(store, "r", [], started)
        const inside = yield* Deferred.make<void>()
        const release = yield* Deferred.make<void>()
        const other = yield* Effect.fork(sql.withTransaction(Effect.zipRight(Deferred.succeed(inside, undefined), Deferred.await(release))))
        yield* Deferred.await(inside)
        const next = TestLog.chain("r", "acme", started, [step("interrupted")])
        const appended = yield* Effect.fork(appendTo(store, "r", started, next))
        // Its group left the turn and waits for the connection; its caller is interrupted meanwhile.
        yield* turns(5)
        yield* Fiber.interrupt(appended)
        yield* Deferred.succeed(release, undefined)
        yield* Fiber.join(other)
        expect(Exit.isInterrupted(yield* Fiber.await(appended))).toBe(true)
        yield* turns(5)
        expect(yield* store.readEvents("acme", "r")).toEqual(started)
        // The seq it would have taken is free: another step is written there.
        const instead = TestLog.chain("r", "acme", started, [step("instead")])
        yield* appendTo(store, "r", started, instead)
        expect(yield* store.readEvents("acme", "r")).toEqual([...started, ...instead])
      }))
  })
}

describe("SQLite store inside another client's transaction", () => {
  it.scoped("an append and a read there wait for the store's connection: another fiber's transaction neither takes nor shows them", () =>
    Effect.gen(function*() {
      const { sql, store } = yield* appends["the store's own append"](tempDb())
      // The application's own database, on a client of its own.
      const app = Context.get(yield* Layer.build(SqliteStore.layerClient({ filename: tempDb() })), SqlClient.SqlClient)
      yield* app`CREATE TABLE orders (id TEXT)`
      const started = startOf("r")
      yield* appendTo(store, "r", [], started)
      // Another fiber's transaction on the store's connection appends an event, waits, then rolls back.
      const inside = yield* Deferred.make<void>()
      const release = yield* Deferred.make<void>()
      const rolledBack = TestLog.chain("r", "acme", started, [step("rolled-back")])
      const other = yield* Effect.fork(Effect.either(sql.withTransaction(Effect.gen(function*() {
        yield* appendTo(store, "r", started, rolledBack)
        yield* Deferred.succeed(inside, undefined)
        yield* Deferred.await(release)
        return yield* Effect.fail("the other fiber gives up")
      }))))
      yield* Deferred.await(inside)
      // Inside the application's transaction: a read of the run, then an append to it.
      const kept = TestLog.chain("r", "acme", started, [step("kept")])
      const caller = yield* Effect.fork(app.withTransaction(Effect.gen(function*() {
        yield* app`INSERT INTO orders (id) VALUES ('o-1')`
        const read = yield* store.readEvents("acme", "r")
        yield* appendTo(store, "r", started, kept)
        return read
      })))
      yield* turns(5)
      yield* Deferred.succeed(release, undefined)
      expect(Either.isLeft(yield* Fiber.join(other))).toBe(true)
      // The read did not see the other transaction's event, and the append outlived its rollback.
      expect(yield* Fiber.join(caller)).toEqual(started)
      const stored = yield* store.readEvents("acme", "r")
      expect(stored).toEqual([...started, ...kept])
      expect(Verify.verifyEvents("r", stored).ok).toBe(true)
      expect(yield* app`SELECT id FROM orders`).toEqual([{ id: "o-1" }])
    }))
})
