// A run appending alone: its append is written at once, not at the end of the event loop's turn, and a run that
// appends without pause still lets the event loop turn (timers, I/O) every few milliseconds.
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { afterAll, describe, expect, it } from "@effect/vitest"
import * as SqlClient from "@effect/sql/SqlClient"
import { Context, Deferred, Effect, Fiber, Layer } from "effect"
import { type Event, EventStore, Tenant, Verify } from "@artana/core"
import { TestLog } from "@artana/core/testing"
import { SqliteStore } from "@artana/store-sqlite"

const root = fs.mkdtempSync(path.join(os.tmpdir(), "artana-append-alone-"))
afterAll(() => fs.rmSync(root, { recursive: true, force: true }))
const tempDb = () => path.join(fs.mkdtempSync(path.join(root, "db-")), "artana.db")

const tenant = Tenant.TenantContext.make({ tenantId: "acme", capabilities: [], budgetUsdLimit: 1 })
const started = { _tag: "RunStarted", workflow: "w", input: null, tenant } as const
const step = (name: string) => ({ _tag: "StepCompleted", name, value: name }) as const

/** The store (and its SQL client), with every commit's count of appends; `onGroupCommit` may also throw after counting. */
const observedStore = (filename: string, hook: () => void = () => {}) =>
  Effect.gen(function*() {
    const commits: Array<number> = []
    const onGroupCommit = (appends: number) => {
      commits.push(appends)
      hook()
    }
    const context = yield* Layer.build(SqliteStore.layer({ filename, onGroupCommit }))
    return { store: Context.get(context, EventStore.EventStore), sql: Context.get(context, SqlClient.SqlClient), commits }
  })

/** The next turn of the event loop: what the store gathered in this one is written by then. */
const nextTurn = Effect.promise(() => new Promise<void>((resolve) => setImmediate(resolve)))

const appendStep = (store: EventStore.Service, log: Array<Event.Event>, name: string, runId = "a") =>
  Effect.gen(function*() {
    const events = TestLog.chain(runId, "acme", log, [step(name)])
    yield* store.append({ runId, tenantId: "acme", expectedSeq: log.length, events })
    log.push(...events)
  })

/** A run `runId` started (its `RunStarted` appended): its log so far. */
const startRun = (store: EventStore.Service, runId: string) =>
  Effect.gen(function*() {
    const log = TestLog.chain(runId, "acme", [], [started])
    yield* store.append({ runId, tenantId: "acme", expectedSeq: 0, events: log })
    return log
  })

describe("SQLite append of a run alone", () => {
  it.scoped("is committed and answered at once, before anything else the event loop holds runs", () =>
    Effect.gen(function*() {
      const filename = tempDb()
      const { commits, store } = yield* observedStore(filename)
      const log = TestLog.chain("a", "acme", [], [started])
      yield* store.append({ runId: "a", tenantId: "acme", expectedSeq: 0, events: log })
      yield* nextTurn
      let turned = false
      yield* Effect.sync(() => setImmediate(() => (turned = true)))
      yield* appendStep(store, log, "s1")
      // Durable already (a second connection reads it), and the turn it would have waited for has not come.
      expect(turned).toBe(false)
      expect(commits).toEqual([1, 1])
      const other = yield* observedStore(filename)
      const stored = yield* other.store.readEvents("acme", "a")
      expect(stored).toEqual(log)
      expect(Verify.verifyEvents("a", stored).ok).toBe(true)
    }))

  it.scoped("appending without pause, it still lets the event loop turn: a callback queued at its start runs long before its end", () =>
    Effect.gen(function*() {
      const { commits, store } = yield* observedStore(tempDb())
      const log = TestLog.chain("a", "acme", [], [started])
      yield* store.append({ runId: "a", tenantId: "acme", expectedSeq: 0, events: log })
      const APPENDS = 500
      let appended = 0
      let seenAt: number | undefined
      yield* Effect.sync(() => setImmediate(() => (seenAt = appended)))
      for (let i = 1; i <= APPENDS; i++) {
        yield* appendStep(store, log, `s${i}`)
        appended = i
      }
      // 500 commits (each an fsync at synchronous=FULL) take far longer than the few milliseconds a run may write alone.
      expect(seenAt).toBeDefined()
      expect(seenAt!).toBeLessThan(APPENDS)
      // Alone or after the turn, each append is its own commit, and the log is whole.
      expect(commits.length).toBe(APPENDS + 1)
      expect(commits.every((c) => c === 1)).toBe(true)
      const stored = yield* store.readEvents("acme", "a")
      expect(stored.length).toBe(APPENDS + 1)
      expect(Verify.verifyEvents("a", stored).ok).toBe(true)
    }))

  it.scoped("appends are written in the order they were made: one that waited for a transaction is not overtaken by a later run's append alone", () =>
    Effect.gen(function*() {
      const { sql, store } = yield* observedStore(tempDb())
      const a = yield* startRun(store, "a")
      const b = yield* startRun(store, "b")
      yield* nextTurn
      // A transaction holds the connection until it is released: run a's append waits for it, as a group of one.
      const holding = yield* Deferred.make<void>()
      const release = yield* Deferred.make<void>()
      const transaction = yield* Effect.fork(sql.withTransaction(Effect.zipRight(Deferred.succeed(holding, undefined), Deferred.await(release))))
      yield* Deferred.await(holding)
      const first = yield* Effect.fork(appendStep(store, a, "a1", "a"))
      yield* nextTurn
      yield* nextTurn
      yield* Deferred.succeed(release, undefined)
      yield* Fiber.join(transaction)
      // The connection is free again: run b appends alone, in this turn, whether or not a's write has run yet.
      yield* appendStep(store, b, "b1", "b")
      yield* Fiber.join(first)
      // The events table is a rowid table: rowids are the order of the writes.
      const order = yield* sql<{ readonly run_id: string }>`SELECT run_id FROM events WHERE seq = 2 ORDER BY rowid`
      expect(order.map((row) => row.run_id)).toEqual(["a", "b"])
    }))

  it.scoped("a throwing onGroupCommit fails no append: alone, grouped, every append is answered and stored", () =>
    Effect.gen(function*() {
      const { commits, store } = yield* observedStore(tempDb(), () => {
        throw new Error("the metrics hook failed")
      })
      const a = yield* startRun(store, "a")
      yield* nextTurn
      yield* appendStep(store, a, "alone", "a")
      const b = yield* startRun(store, "b")
      const c = yield* startRun(store, "c")
      const d = yield* startRun(store, "d")
      yield* nextTurn
      // Three runs in one turn: the first writes alone, the other two wait and are written as one group at its end.
      yield* Effect.all([appendStep(store, b, "b1", "b"), appendStep(store, c, "c1", "c"), appendStep(store, d, "d1", "d")], {
        concurrency: "unbounded"
      })
      expect(commits).toContain(2)
      for (const [runId, log] of [["a", a], ["b", b], ["c", c], ["d", d]] as const) {
        const stored = yield* store.readEvents("acme", runId)
        expect(stored).toEqual(log)
        expect(Verify.verifyEvents(runId, stored).ok).toBe(true)
      }
    }))
})
