// A long verified read through the store's read-ahead worker (core's `readWorker`: a worker thread with a read-only
// connection of its own that reads a run's pages, makes their text and hashes them ahead of the replay), against the
// same read on the main thread alone: the same events, a row the worker does not read taken over by the main thread,
// tampering caught before any event of its page is given, an audit key's HMAC, a worker ended mid-read, a read
// inside a transaction (which the worker's connection cannot see) never sent to it, the worker's hashes of the page
// ahead, and which wrapped stores keep the read-ahead.
import { afterAll, describe, expect, it } from "@effect/vitest"
import * as fs from "node:fs"
import { getHeapStatistics } from "node:v8"
import { fileURLToPath } from "node:url"
import * as SqlClient from "@effect/sql/SqlClient"
import { Effect, Option } from "effect"
import { type Event, EventStore } from "@artana/core"
import { TestLog } from "@artana/core/testing"
import { SqliteStore } from "@artana/store-sqlite"
import * as ReadWorker from "../../core/src/internal/readWorker.js"
import { verifiedPages } from "../../core/src/internal/verifiedRead.js"
import * as VerifyWorker from "../../core/src/internal/verifyWorker.js"
import { kernelOn, writeKeyed, writtenLongRun } from "./longLog.js"
import { lastJsonLine, runChild, workDir } from "./helpers.js"
import { tenant } from "./child/workflows.js"

const QUEUE_CHILD = fileURLToPath(new URL("./child/read-worker-queue.ts", import.meta.url))
const HEAP_CHILD = fileURLToPath(new URL("./child/read-ahead-heap.ts", import.meta.url))
const STEPS = 3_000
const PAGE = 256

afterAll(() => {
  ReadWorker.use(true)
  VerifyWorker.use(true)
  return VerifyWorker.shutdown()
})

const written = writtenLongRun(STEPS)

/** Runs `sql` on the file, outside the store. */
const alter = (db: string, sql: string, ...params: Array<unknown>) => {
  const file = new (SqliteStore.driver())(db)
  file.prepare(sql).run(...params)
  file.close()
}

/**
 * The pages `verifiedPages` gives for run `runId`, read to the end or to its failure, in pages of `PAGE` events: with
 * the store's read-ahead worker ready before the read (and the verify worker off), or on the main thread alone;
 * `between` runs after the second page. `readAhead`: the pages the worker read.
 */
const readPages = (
  db: string,
  ahead: boolean,
  options: { readonly between?: () => Promise<void>; readonly auditKey?: string; readonly runId?: string; readonly started?: boolean } = {}
) =>
  Effect.gen(function*() {
    const store = yield* EventStore.EventStore
    ReadWorker.use(ahead)
    VerifyWorker.use(ahead)
    if (ahead && options.started !== false) {
      const worker = ReadWorker.aheadOf(store)
      expect(worker).toBeDefined()
      expect(yield* Effect.promise(() => worker!.ready())).toBe(true)
    }
    const info = yield* store.getRun(tenant.tenantId, options.runId ?? "long")
    const next = verifiedPages(store, options.auditKey, info, { pageSize: PAGE })
    const pages: Array<ReadonlyArray<Event.Event>> = []
    const before = ReadWorker.pagesSoFar()
    const hashedBefore = VerifyWorker.hashedSoFar()
    const failure = yield* Effect.gen(function*() {
      for (;;) {
        const page = yield* next
        if (Option.isNone(page)) return undefined
        pages.push(page.value)
        if (pages.length === 2 && options.between !== undefined) yield* Effect.promise(options.between)
      }
    }).pipe(Effect.flip, Effect.option, Effect.map(Option.getOrUndefined))
    return { pages, failure, readAhead: ReadWorker.pagesSoFar() - before, hashedByVerifyWorker: VerifyWorker.hashedSoFar() - hashedBefore }
  }).pipe(Effect.ensuring(Effect.sync(() => (ReadWorker.use(true), VerifyWorker.use(true)))), Effect.provide(kernelOn(db, options.auditKey)))

/** A verified read of run "long" through `store`, in pages of `PAGE`: its events, and the pages the worker read. */
const countedRead = (store: EventStore.Service) =>
  Effect.gen(function*() {
    const next = verifiedPages(store, undefined, yield* store.getRun(tenant.tenantId, "long"), { pageSize: PAGE })
    const before = ReadWorker.pagesSoFar()
    let events = 0
    for (;;) {
      const page = yield* next
      if (Option.isNone(page)) break
      events += page.value.length
    }
    return { events, readAhead: ReadWorker.pagesSoFar() - before }
  })

describe("where a store reads ahead", () => {
  it.scopedLive("the worker keeps at most a few pages to hash, however many reads run at once", () =>
    Effect.gen(function*() {
      // Four reads at once, 40 pages each of ~5 MB of payload text (a stand-in opener, no database): the worker hashes
      // only while no message waits, so pages it is never idle enough to hash must still leave it.
      const output = lastJsonLine(yield* runChild(["4", "40"], 120_000, { script: QUEUE_CHILD, nodeArgs: ["--expose-gc"] }))
      expect(output).toMatchObject({ samples: 16 })
      // The worker's heap after a full collection: ~14 MB here; keeping every page it sent, it grew to ~830 MB.
      expect((output as { readonly maxMb: number }).maxMb).toBeLessThan(64)
    }))


  it.scopedLive("a store on a database file reads long logs ahead, never in memory", () =>
    Effect.gen(function*() {
      const { db } = yield* workDir
      const onFile = yield* Effect.provide(EventStore.EventStore, kernelOn(db))
      // On node:sqlite only in a heap of 512 MiB or more (the next test): the test runner's must be that large.
      if (SqliteStore.driverName === "node:sqlite") expect(getHeapStatistics().heap_size_limit).toBeGreaterThanOrEqual(512 * 2 ** 20)
      expect(ReadWorker.aheadOf(onFile)).toBeDefined()
      const inMemory = yield* Effect.provide(EventStore.EventStore, kernelOn(":memory:"))
      expect(ReadWorker.aheadOf(inMemory)).toBeUndefined()
    }))

  it.scopedLive("on node:sqlite (Node 24+) a process whose heap is capped under 512 MiB reads on the main thread; on better-sqlite3 it reads ahead", () =>
    Effect.gen(function*() {
      const { db } = yield* workDir
      const inHeap = (mb: number) =>
        Effect.map(runChild([db], 120_000, { script: HEAP_CHILD, nodeArgs: [`--max-old-space-size=${mb}`] }), lastJsonLine)
      const small = yield* inHeap(64)
      expect(small).toMatchObject({ driver: SqliteStore.driverName, readAhead: SqliteStore.driverName === "better-sqlite3" })
      expect((small as { readonly heapLimitMb: number }).heapLimitMb).toBeLessThan(512)
      expect(yield* inHeap(1024)).toMatchObject({ driver: SqliteStore.driverName, readAhead: true })
    }))
})

describe("the store's read-ahead worker", () => {
  it.scopedLive("reads every page of a long log, and gives the same events as the main thread's read", () =>
    Effect.gen(function*() {
      const db = yield* written
      const ahead = yield* readPages(db, true)
      const here = yield* readPages(db, false)
      expect(ahead.failure).toBeUndefined()
      expect(here.failure).toBeUndefined()
      expect(ahead.pages.flat().length).toBe(STEPS + 2)
      expect(ahead.pages).toEqual(here.pages)
      // Every page after the first is asked of the worker once the one before is read; the first too, the worker being ready.
      expect(ahead.readAhead).toBe(ahead.pages.length)
      expect(here.readAhead).toBe(0)
    }))

  it.scopedLive("a store wrapped to time or notify its appends keeps its read-ahead; one with reads of its own has none", () =>
    Effect.gen(function*() {
      const db = yield* written
      // The pages of a verified read through the store as `wrap` wraps it, and how many the worker read.
      const through = (wrap: (store: EventStore.Service) => EventStore.Service) =>
        Effect.gen(function*() {
          const store = wrap(yield* EventStore.EventStore)
          const worker = ReadWorker.aheadOf(store)
          if (worker !== undefined) expect(yield* Effect.promise(() => worker.ready())).toBe(true)
          return yield* countedRead(store)
        }).pipe(Effect.provide(kernelOn(db)))
      const pages = Math.ceil((STEPS + 2) / PAGE)
      const timed = yield* through((store) => ({ ...store, append: (request) => store.append(request) }))
      expect(timed).toEqual({ events: STEPS + 2, readAhead: pages })
      let ownReads = 0
      const traced = yield* through((store) => ({ ...store, readEvents: (...args) => (ownReads++, store.readEvents(...args)) }))
      expect(traced).toEqual({ events: STEPS + 2, readAhead: 0 })
      expect(ownReads).toBe(pages)
    }))

  it.scopedLive("the worker hashes the page ahead while the one before is replayed: given the time, all of it", () =>
    Effect.gen(function*() {
      const db = yield* written
      const pages = yield* Effect.gen(function*() {
        const store = yield* EventStore.EventStore
        expect(yield* Effect.promise(() => ReadWorker.aheadOf(store)!.ready())).toBe(true)
        const next = verifiedPages(store, undefined, yield* store.getRun(tenant.tenantId, "long"), { pageSize: PAGE })
        const first = yield* next
        // The second page was asked for when the first came: the worker read it and hashes it meanwhile.
        const before = ReadWorker.hashedSoFar()
        yield* Effect.sleep("1 second")
        const second = yield* next
        return { first, second, hashed: ReadWorker.hashedSoFar() - before }
      }).pipe(Effect.provide(kernelOn(db)))
      expect(Option.getOrThrow(pages.first).length).toBe(PAGE)
      expect(Option.getOrThrow(pages.second).map((event) => event.seq)).toEqual(Array.from({ length: PAGE }, (_, i) => PAGE + i + 1))
      expect(pages.hashed).toBe(PAGE)
    }))

  it.scopedLive("while the worker starts, pages are read and hashed on the main thread, none sent to the verify worker", () =>
    Effect.gen(function*() {
      const db = yield* written
      // No worker runs: this read starts one, and reads here until the store's connection there is open.
      yield* Effect.promise(ReadWorker.terminateAll)
      expect(yield* Effect.promise(VerifyWorker.ready)).toBe(true)
      const starting = yield* readPages(db, true, { started: false })
      expect(starting.failure).toBeUndefined()
      expect(starting.pages).toEqual((yield* readPages(db, false)).pages)
      expect(starting.hashedByVerifyWorker).toBe(0)
    }))

  it.scopedLive("leaves a row it does not read (an id stored in another form) and every page after it to the main thread", () =>
    Effect.gen(function*() {
      const { db } = yield* workDir
      // Event ids are UUIDs (stored packed) but one: text of 16 characters, stored as its bytes and a 0xff mark.
      const payloads = [
        { _tag: "RunStarted" as const, workflow: TestLog.LongRun.workflow.name, input: { steps: 1_998 }, tenant },
        ...Array.from({ length: 1_998 }, (_, i) => ({ _tag: "StepCompleted" as const, name: "n", value: i }))
      ]
      const events = TestLog.chain("odd", tenant.tenantId, [], payloads, TestLog.T0, (_runId, seq) => seq === 700 ? "sixteen-chars-id" : crypto.randomUUID())
      yield* Effect.provide(Effect.flatMap(EventStore.EventStore, (store) => store.append({ runId: "odd", tenantId: tenant.tenantId, expectedSeq: 0, events, ownerEpoch: 1 })), kernelOn(db))
      const ahead = yield* readPages(db, true, { runId: "odd" })
      const here = yield* readPages(db, false, { runId: "odd" })
      expect(ahead.failure).toBeUndefined()
      expect(ahead.pages.flat().map((e) => e.eventId)).toEqual(events.map((e) => e.eventId))
      expect(ahead.pages.flat()).toEqual(here.pages.flat())
      // The worker read the pages before seq 700 (its page cut there), the main thread the rest.
      expect(ahead.readAhead).toBe(Math.ceil(700 / PAGE))
    }))

  it.scopedLive("fails LogTampered at an event altered in a late page, giving no event of that page", () =>
    Effect.gen(function*() {
      const db = yield* written
      const seq = 2_600
      alter(db, "UPDATE events SET payload = ? WHERE run_id = ? AND seq = ?", JSON.stringify({ _tag: "StepCompleted", name: "n", value: -1 }), "long", seq)
      for (const ahead of [true, false]) {
        const { failure, pages, readAhead } = yield* readPages(db, ahead)
        expect(failure).toMatchObject({ _tag: "LogTampered", runId: "long", seq })
        expect(readAhead > 0).toBe(ahead)
        const given = pages.flat()
        expect(given.length).toBe(Math.floor((seq - 1) / PAGE) * PAGE)
      }
    }))

  it.scopedLive("reads ids and hashes stored as text (an import, a repair) as the main thread reads them, and an upper-cased link breaks", () =>
    Effect.gen(function*() {
      const db = yield* written
      const log = (yield* readPages(db, false)).pages.flat()
      // By hand, as TEXT (the store packs none of these): ten ids, seq 1,500's hash and seq 1,501's prev_hash.
      for (let seq = 1_000; seq < 1_010; seq++) alter(db, "UPDATE events SET event_id = ? WHERE run_id = 'long' AND seq = ?", log[seq - 1]!.eventId, seq)
      alter(db, "UPDATE events SET hash = ? WHERE run_id = 'long' AND seq = 1500", log[1_499]!.hash)
      alter(db, "UPDATE events SET prev_hash = ? WHERE run_id = 'long' AND seq = 1501", log[1_499]!.hash)
      const [ahead, here] = [yield* readPages(db, true), yield* readPages(db, false)]
      expect(ahead.failure).toBeUndefined()
      expect(ahead.pages.flat()).toEqual(log)
      expect(ahead.pages).toEqual(here.pages)
      // The worker read every page (text is one of the forms it reads).
      expect(ahead.readAhead).toBe(ahead.pages.length)
      // A prev_hash stored as the upper-case text of the hash before: not that hash, so the link breaks there.
      alter(db, "UPDATE events SET prev_hash = ? WHERE run_id = 'long' AND seq = 2000", log[1_998]!.hash.toUpperCase())
      for (const on of [true, false]) expect((yield* readPages(db, on)).failure).toMatchObject({ _tag: "LogTampered", seq: 2_000 })
    }))

  it.scopedLive("fails a row that does not decode (a payload that is not JSON) with the error the main thread's read gives", () =>
    Effect.gen(function*() {
      const db = yield* written
      alter(db, "UPDATE events SET payload = 'not json' WHERE run_id = ? AND seq = ?", "long", 2_600)
      const [ahead, here] = [yield* readPages(db, true), yield* readPages(db, false)]
      expect(ahead.failure).toMatchObject({ _tag: "StoreError", operation: "readEvents", reason: expect.stringMatching(/^corrupt row \(run long seq 2600\), column payload: not JSON/) })
      expect(ahead.failure).toEqual(here.failure)
      expect(ahead.pages).toEqual(here.pages)
      expect(ahead.readAhead).toBeGreaterThan(0)
    }))

  it.scopedLive("closing the store closes its connection in the worker first: the whole database is in its file, no WAL left", () =>
    Effect.gen(function*() {
      const db = yield* written
      for (let round = 0; round < 3; round++) {
        // Pages read by the worker, then a commit of another run, then the store closes.
        const read = yield* readPages(db, true, {
          between: () =>
            Effect.runPromise(Effect.provide(Effect.flatMap(EventStore.EventStore, (store) => TestLog.LongRun.write(store, { runId: `more-${round}`, tenant, steps: 10 })), kernelOn(db)))
        })
        expect(read.readAhead).toBeGreaterThan(0)
        expect(fs.existsSync(`${db}-wal`)).toBe(false)
      }
    }))

  it.scopedLive("a worker ended once it opened a store's connection is replaced for the next store", () =>
    Effect.gen(function*() {
      const db = yield* written
      const ready = Effect.flatMap(EventStore.EventStore, (store) => Effect.promise(() => ReadWorker.aheadOf(store)!.ready()))
      // A worker of its own, which answered nothing (not even the store's close) when it ends.
      yield* Effect.promise(ReadWorker.terminateAll)
      const first = yield* Effect.provide(Effect.tap(ready, () => Effect.promise(ReadWorker.terminateAll)), kernelOn(db))
      expect(first).toBe(true)
      expect(yield* Effect.provide(ready, kernelOn(db))).toBe(true)
      expect((yield* readPages(db, true)).readAhead).toBeGreaterThan(0)
    }))

  it.scopedLive("a log cut at a page's end fails truncated having read the empty range once, and a pull after stays failed", () =>
    Effect.gen(function*() {
      const db = yield* written
      alter(db, "DELETE FROM events WHERE run_id = ? AND seq > ?", "long", 2 * PAGE)
      for (const ahead of [true, false]) {
        const pulls = yield* Effect.gen(function*() {
          const store = yield* EventStore.EventStore
          ReadWorker.use(ahead)
          // Reads of the range past the cut, on the main thread (a wrapper of the reads has no read-ahead: counted only without it).
          let pastCut = 0
          const counted = ahead ? store : { ...store, readEvents: (tenantId: string, runId: string, fromSeq?: number, limit?: number) => (fromSeq === 2 * PAGE + 1 && pastCut++, store.readEvents(tenantId, runId, fromSeq, limit)) }
          const next = verifiedPages(counted, undefined, yield* store.getRun(tenant.tenantId, "long"), { pageSize: PAGE })
          const pages = [yield* next, yield* next].map((page) => Option.getOrThrow(page).length)
          const failures = [yield* Effect.flip(next), yield* Effect.flip(next)]
          return { pages, failures, pastCut }
        }).pipe(Effect.ensuring(Effect.sync(() => ReadWorker.use(true))), Effect.provide(kernelOn(db)))
        expect(pulls.pages).toEqual([PAGE, PAGE])
        expect(pulls.failures[0]).toMatchObject({ _tag: "InvalidRunState", runId: "long" })
        expect(pulls.failures[1]).toBe(pulls.failures[0])
        if (!ahead) expect(pulls.pastCut).toBe(1)
      }
    }))

  it.scopedLive("a link altered in a page the worker read: the main thread's check of the links catches it", () =>
    Effect.gen(function*() {
      const db = yield* written
      // The stored prev_hash of seq 1,000 names another hash (its own hash left as it was): the worker's hash over it
      // differs from the stored one, and the link differs from the event before's hash.
      alter(db, "UPDATE events SET prev_hash = zeroblob(32) WHERE run_id = ? AND seq = ?", "long", 1_000)
      for (const ahead of [true, false]) {
        const { failure, readAhead } = yield* readPages(db, ahead)
        expect(failure).toMatchObject({ _tag: "LogTampered", seq: 1_000 })
        expect(readAhead > 0).toBe(ahead)
      }
    }))

  it.scopedLive("hashes a log written with an audit key (HMAC), and refuses it under another key", () =>
    Effect.gen(function*() {
      const { db } = yield* workDir
      yield* writeKeyed(db, "keyed", "the key")
      const keyed = yield* readPages(db, true, { auditKey: "the key", runId: "keyed" })
      expect(keyed.failure).toBeUndefined()
      expect(keyed.pages.flat().length).toBe(702)
      expect(keyed.readAhead).toBe(keyed.pages.length)
      expect(keyed.pages).toEqual((yield* readPages(db, false, { auditKey: "the key", runId: "keyed" })).pages)
      for (const ahead of [true, false]) {
        const other = yield* readPages(db, ahead, { auditKey: "another key", runId: "keyed" })
        expect(other.failure).toMatchObject({ _tag: "LogTampered", seq: 1 })
        expect(other.pages).toEqual([])
      }
    }))

  it.scopedLive("a worker ended mid-read: the read goes on on the main thread, the same events", () =>
    Effect.gen(function*() {
      const db = yield* written
      const here = yield* readPages(db, false)
      const cut = yield* readPages(db, true, { between: ReadWorker.terminateAll })
      expect(cut.failure).toBeUndefined()
      expect(cut.pages).toEqual(here.pages)
      // The worker read the first pages; the pages after it ended were read here until a worker started again.
      expect(cut.readAhead).toBeGreaterThanOrEqual(2)
    }))

  it.scopedLive("a read inside a transaction is never sent to the worker: it sees the transaction's own events", () =>
    Effect.gen(function*() {
      const db = yield* written
      const read = Effect.gen(function*() {
        const store = yield* EventStore.EventStore
        const worker = ReadWorker.aheadOf(store)
        expect(yield* Effect.promise(() => worker!.ready())).toBe(true)
        const sql = yield* SqlClient.SqlClient
        return yield* sql.withTransaction(Effect.gen(function*() {
          // 600 more events, not committed: only this connection sees them.
          const log = yield* store.readEvents(tenant.tenantId, "long", STEPS + 2)
          const more = TestLog.chain("long", tenant.tenantId, [...Array<Event.Event>(STEPS + 1), log[0]!], Array.from({ length: 600 }, () => ({ _tag: "RunResumed" as const, reason: "more" })))
          yield* store.append({ runId: "long", tenantId: tenant.tenantId, expectedSeq: STEPS + 2, events: more, ownerEpoch: 1 })
          return yield* countedRead(store)
        }))
      }).pipe(Effect.provide(kernelOn(db)))
      const { events, readAhead } = yield* read
      expect(events).toBe(STEPS + 2 + 600)
      expect(readAhead).toBe(0)
    }))
})
