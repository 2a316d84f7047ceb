// A long log's chain checked on a worker thread, a page ahead of the replay (core's `verifyWorker`), against the same
// read checked on the main thread: the same events, tampering caught the same way, before any event of the broken page
// is given, a worker that dies mid-read replaced by the main thread, and a process that ends on its own. The store's
// read-ahead worker (`readWorker`, which reads and hashes pages itself: readAhead.test.ts) is off in these reads, so
// that every page is read here and hashed by the verify worker.
import { afterAll, describe, expect, it } from "@effect/vitest"
import { fileURLToPath } from "node:url"
import { Effect, Option } from "effect"
import { type Event, EventStore, Kernel } from "@artana/core"
import { TestLog } from "@artana/core/testing"
import { SqliteStore } from "@artana/store-sqlite"
import { StoredEvent, storedPayload } from "../../core/src/internal/hash.js"
import { verifiedPages } from "../../core/src/internal/verifiedRead.js"
import * as ReadWorker from "../../core/src/internal/readWorker.js"
import * as VerifyWorker from "../../core/src/internal/verifyWorker.js"
import { killChildren, lastJsonLine, runChild, workDir } from "./helpers.js"
import { kernelOn, writeKeyed, writtenLongRun } from "./longLog.js"
import { tenant } from "./child/workflows.js"

const CHILD = fileURLToPath(new URL("./child/verify-worker.ts", import.meta.url))
const STEPS = 3_000
const PAGE = 256

afterAll(() => {
  killChildren()
  VerifyWorker.use(true)
  return VerifyWorker.shutdown()
})

const written = writtenLongRun(STEPS)

/** Changes the stored payload of the event at `seq` (its JSON still valid, its hash left as it was). */
const tamper = (db: string, seq: number) => {
  const Sqlite = SqliteStore.driver()
  const file = new Sqlite(db)
  file.prepare("UPDATE events SET payload = ? WHERE run_id = ? AND seq = ?").run(JSON.stringify({ _tag: "StepCompleted", name: "n", value: -1 }), "long", seq)
  file.close()
}

/**
 * The pages `verifiedPages` gives for run "long", read to the end or to its failure, in pages of `PAGE` events, with
 * the worker or without; `between` runs after the second page. Through the worker, each page given waits until the
 * worker is done with the page it was sent meanwhile (the next one, read before this one was given), so from the third
 * page on every page is sent to it and hashed there, however busy the machine: without the wait, a page the worker
 * had not taken yet when the next was read left that one on the main thread, and on a loaded machine a whole read
 * could be hashed there (`hashedByWorker` 0, seen under `stress --cpu 4`).
 */
const readPages = (db: string, worker: boolean, between: () => Promise<void> = () => Promise.resolve(), auditKey?: string) =>
  Effect.gen(function*() {
    VerifyWorker.use(worker)
    ReadWorker.use(false)
    if (worker) expect(yield* Effect.promise(VerifyWorker.ready)).toBe(true)
    const store = yield* EventStore.EventStore
    const info = yield* store.getRun(tenant.tenantId, "long")
    const next = verifiedPages(store, auditKey, info, { pageSize: PAGE })
    const pages: Array<ReadonlyArray<Event.Event>> = []
    const before = VerifyWorker.hashedSoFar()
    const failure = yield* Effect.gen(function*() {
      for (;;) {
        const page = yield* next
        if (Option.isNone(page)) return undefined
        pages.push(page.value)
        if (pages.length === 2) yield* Effect.promise(between)
        if (worker) yield* Effect.promise(VerifyWorker.idle)
      }
    }).pipe(Effect.flip, Effect.option, Effect.map(Option.getOrUndefined))
    return { pages, failure, hashedByWorker: VerifyWorker.hashedSoFar() - before }
  }).pipe(Effect.ensuring(Effect.sync(() => (VerifyWorker.use(true), ReadWorker.use(true)))), Effect.provide(kernelOn(db)))

/** Reads a page back as the worker reads it: every event's id, step key, type and stored payload, in order. */
const readBack = (page: ReturnType<typeof VerifyWorker.pageOf>, events: ReadonlyArray<Event.Event>) => {
  let chunk = 0
  let start = 0
  for (let n = 0; n < events.length; n++) {
    if (chunk + 1 < page.firsts.length && n === page.firsts[chunk + 1]) {
      chunk++
      start = 0
    }
    const text = page.texts[chunk]!
    const at = n * 4
    const event = events[n]!
    expect([
      text.slice(start, page.ends[at]),
      text.slice(page.ends[at], page.ends[at + 1]),
      text.slice(page.ends[at + 1], page.ends[at + 2]),
      text.slice(page.ends[at + 2], page.ends[at + 3])
    ]).toEqual([event.eventId, event.stepKey, event.type, storedPayload(event)])
    start = page.ends[at + 3]!
  }
  expect(chunk).toBe(page.texts.length - 1)
  expect(page.hashes).toBe(events.map((e) => e.hash).join(""))
}

describe("the verified read's chain check on a worker thread", () => {
  it.scopedLive("gives the same events as the check on the main thread, the worker hashing most of them", () =>
    Effect.gen(function*() {
      const db = yield* written
      const onWorker = yield* readPages(db, true)
      const inline = yield* readPages(db, false)
      expect(onWorker.failure).toBeUndefined()
      expect(inline.failure).toBeUndefined()
      expect(onWorker.pages.flat().length).toBe(STEPS + 2)
      expect(onWorker.pages).toEqual(inline.pages)
      // The worker hashed events of this read; without it, none.
      expect(onWorker.hashedByWorker).toBeGreaterThan(0)
      expect(inline.hashedByWorker).toBe(0)
    }))

  it.scopedLive("fails LogTampered at an event altered in a late page, and gives no event of that page", () =>
    Effect.gen(function*() {
      const db = yield* written
      const seq = 2_600
      tamper(db, seq)
      for (const worker of [true, false]) {
        const { failure, hashedByWorker, pages } = yield* readPages(db, worker)
        expect(failure).toMatchObject({ _tag: "LogTampered", runId: "long", seq })
        // The worker checked the pages before it (and found the altered event's hash wrong), or was not asked.
        expect(hashedByWorker > 0).toBe(worker)
        // Pages of 256: the altered event is in the page from 2,561; every page before it was given, none after.
        const given = pages.flat()
        expect(given.length).toBe(Math.floor((seq - 1) / PAGE) * PAGE)
        expect(given.every((event) => event.seq < seq)).toBe(true)
      }
      // The kernel's replay and its verify say the same.
      const replayed = yield* Effect.flatMap(Kernel.Kernel, (kernel) => Effect.flip(kernel.replay(TestLog.LongRun.workflow, { tenantId: tenant.tenantId, runId: "long" }))).pipe(
        Effect.provide(kernelOn(db))
      )
      expect(replayed).toMatchObject({ _tag: "LogTampered", seq })
    }))

  it.scopedLive("a break in a page is reported before a read error in the page read ahead of it, as without the worker", () =>
    Effect.gen(function*() {
      const db = yield* written
      // An altered event at 300 (second page), and a row at 600 (third page, the one read ahead) that is not JSON.
      tamper(db, 300)
      const Sqlite = SqliteStore.driver()
      const file = new Sqlite(db)
      file.prepare("UPDATE events SET payload = 'not json' WHERE run_id = ? AND seq = ?").run("long", 600)
      file.close()
      for (const worker of [true, false]) {
        const { failure, pages } = yield* readPages(db, worker)
        expect(failure).toMatchObject({ _tag: "LogTampered", seq: 300 })
        expect(pages.flat().length).toBe(PAGE)
      }
    }))

  it.scopedLive("a worker terminated mid-read: the read goes on, checked on the main thread, and still catches tampering", () =>
    Effect.gen(function*() {
      const db = yield* written
      const whole = yield* readPages(db, false)
      const cut = yield* readPages(db, true, VerifyWorker.shutdown)
      expect(cut.failure).toBeUndefined()
      expect(cut.pages).toEqual(whole.pages)
      tamper(db, STEPS)
      const tampered = yield* readPages(db, true, VerifyWorker.shutdown)
      expect(tampered.failure).toMatchObject({ _tag: "LogTampered", seq: STEPS })
      // The next long read starts a worker again.
      const again = yield* readPages(db, true)
      expect(again.failure).toMatchObject({ _tag: "LogTampered", seq: STEPS })
      expect(again.hashedByWorker).toBeGreaterThan(0)
    }))

  it.scopedLive("checks a log written with an audit key (HMAC) on the worker, and refuses it under another key", () =>
    Effect.gen(function*() {
      const { db } = yield* workDir
      yield* writeKeyed(db, "long", "the key")
      const keyed = yield* readPages(db, true, undefined, "the key")
      expect(keyed.failure).toBeUndefined()
      expect(keyed.pages.flat().length).toBe(702)
      expect(keyed.hashedByWorker).toBeGreaterThan(0)
      expect(keyed.pages).toEqual((yield* readPages(db, false, undefined, "the key")).pages)
      for (const worker of [true, false]) {
        const other = yield* readPages(db, worker, undefined, "another key")
        expect(other.failure).toMatchObject({ _tag: "LogTampered", seq: 1 })
        expect(other.pages).toEqual([])
      }
    }))

  it.scopedLive("a process that replays a long log through the workers ends on its own", () =>
    Effect.gen(function*() {
      const db = yield* written
      // The child replays the run with the verify worker ready and then with the store's read-ahead worker ready,
      // prints what it got, and returns from its module: no exit call. A worker keeping it alive would leave it running
      // until the timeout fails the test.
      const output = lastJsonLine(yield* runChild([db, "long"], 300_000, { script: CHILD }))
      expect(output).toMatchObject({ status: "paused", runId: "long" })
      expect((output as { hashedByWorker: number }).hashedByWorker).toBeGreaterThan(0)
      expect((output as { readAheadPages: number }).readAheadPages).toBeGreaterThan(0)
    }))

  it.scopedLive("sends a page's events to the worker in texts of at most ~32K characters, each field where the page says", () =>
    Effect.gen(function*() {
      const db = yield* written
      const events = yield* Effect.provide(Effect.flatMap(EventStore.EventStore, (store) => store.readEvents(tenant.tenantId, "long")), kernelOn(db))
      const page = VerifyWorker.pageOf(events, "0".repeat(64), "long", tenant.tenantId)
      // Several texts (the whole page's fields joined were ~500 KB, in V8's large-object space), each small.
      expect(page.texts.length).toBeGreaterThan(4)
      const longest = Math.max(...events.map((e) => e.eventId.length + e.stepKey.length + e.type.length + storedPayload(e).length))
      for (const text of page.texts) expect(text.length).toBeLessThanOrEqual(32_768 + longest)
      readBack(page, events)
    }))

  it("keeps each event's fields with its own text when an event's fields are all empty or one is longer than a text", () => {
    // Not events a store writes (an empty type fails Verify's own checks): the hand-off must still never pair an
    // event with another one's fields, which would let the worker vouch for content it was not given.
    const event = (n: number, fields: string, payload: string) =>
      new StoredEvent(fields, "long", tenant.tenantId, n, n, fields, fields, { _tag: "RunResumed", reason: "test" }, "0".repeat(64), "1".repeat(64), payload)
    const events = [event(1, "", ""), event(2, "b", "{}"), event(3, "c", "x".repeat(40_000)), event(4, "d", "{}"), event(5, "", ""), event(6, "f", "{}")]
    const page = VerifyWorker.pageOf(events, "0".repeat(64), "long", tenant.tenantId)
    expect(page.firsts.length).toBe(page.texts.length)
    readBack(page, events)
  })
})
