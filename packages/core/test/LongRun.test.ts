import { describe, expect, it } from "@effect/vitest"
import { Artana, type Event, EventStore, Kernel, Workflow } from "@artana/core"
import { TestLog } from "@artana/core/testing"
import { Deferred, Effect, Either, Layer, Schema } from "effect"
import { kernelLayer, tenant } from "./fixtures.js"

/** A memory store whose reads are recorded: each call's `fromSeq` and `limit`, and how many events it returned. */
type Reads = Array<{ fromSeq: number | undefined; limit: number | undefined; returned: number }>

const recordedStore = Effect.map(EventStore.makeMemory, (store) => {
  const reads: Reads = []
  const service: EventStore.Service = {
    ...store,
    readEvents: (tenantId, runId, fromSeq, limit) =>
      Effect.tap(store.readEvents(tenantId, runId, fromSeq, limit), (page) => void reads.push({ fromSeq, limit, returned: page.length }))
  }
  return { service, reads }
})

const withRecordedStore = <A, E>(body: (reads: Reads, store: EventStore.Service) => Effect.Effect<A, E, Kernel.Kernel | EventStore.EventStore>) =>
  Effect.flatMap(recordedStore, ({ reads, service }) =>
    body(reads, service).pipe(Effect.provide(kernelLayer([], [], { store: Layer.succeed(EventStore.EventStore, service) }))))

const STEPS = 2_500

describe("long runs", () => {
  it.effect("a run paused after 2,500 steps resumes reading its log a page at a time, and completes", () =>
    withRecordedStore((reads, store) =>
      Effect.gen(function*() {
        yield* TestLog.LongRun.write(store, { runId: "long", tenant, steps: STEPS, batch: 700 })
        const kernel = yield* Kernel.Kernel
        reads.length = 0
        const done = yield* kernel.resume({ tenantId: tenant.tenantId, runId: "long", workflow: TestLog.LongRun.workflow, response: "ok" })
        expect(done).toEqual({ status: "completed", runId: "long", output: { sum: TestLog.LongRun.sumOf(STEPS), response: "ok" } })
        // No read took the whole log: every one was a page.
        expect(reads.length).toBeGreaterThan(2)
        for (const read of reads) {
          expect(read.limit).toBeDefined()
          expect(read.limit).toBeLessThanOrEqual(EventStore.DEFAULT_PAGE_SIZE)
        }
        // The log holds the whole run, and verifies.
        expect((yield* kernel.verify({ tenantId: tenant.tenantId, runId: "long" })).ok).toBe(true)
        const replayed = yield* kernel.replay(TestLog.LongRun.workflow, { tenantId: tenant.tenantId, runId: "long" })
        expect(replayed.status).toBe("completed")
      })))

  it.effect("a replay reads pages bounded by bytes: long pages of short events, short pages of long ones", () => {
    const long = "x".repeat(20_000)
    const heavy = Workflow.make({
      name: "heavy",
      input: Schema.Null,
      output: Schema.Number,
      run: (_i, ctx) =>
        Effect.gen(function*() {
          for (let i = 0; i < 400; i++) yield* ctx.step("big", Effect.succeed(long), Schema.String)
          return 400
        })
    })
    return withRecordedStore((reads, store) =>
      Effect.gen(function*() {
        const kernel = yield* Kernel.Kernel
        // The pages a replay reads: from its first event on, one read after another.
        const pagesOf = (replayed: () => Effect.Effect<unknown, unknown>) =>
          Effect.gen(function*() {
            reads.length = 0
            yield* Effect.orDie(replayed())
            const first = reads.findIndex((read) => read.fromSeq === 1)
            return reads.slice(first).filter((read) => read.limit !== undefined && read.limit > 1)
          })
        yield* TestLog.LongRun.write(store, { runId: "short", tenant, steps: STEPS })
        yield* kernel.resume({ tenantId: tenant.tenantId, runId: "short", workflow: TestLog.LongRun.workflow, response: "ok" })
        const short = yield* pagesOf(() => kernel.replay(TestLog.LongRun.workflow, { tenantId: tenant.tenantId, runId: "short" }))
        // A first page of 256 events, then pages of 512 (the short events' bytes are far below the budget).
        expect(short[0]?.limit).toBe(256)
        expect(short.length).toBeGreaterThan(2)
        expect(short.slice(1).map((read) => read.limit)).toEqual(short.slice(1).map(() => 512))
        yield* kernel.execute(heavy, { runId: "heavy", tenant, input: null })
        const heavyPages = yield* pagesOf(() => kernel.replay(heavy, { tenantId: tenant.tenantId, runId: "heavy" }))
        // Events of ~20 KB: after the first page, about 1 MB of them a page (52), and the whole log read.
        for (const read of heavyPages.slice(1)) expect(read.limit).toBeLessThanOrEqual(60)
        expect(heavyPages.reduce((n, read) => n + read.returned, 0)).toBeGreaterThanOrEqual(400)
      }))
  })

  it.effect("a completed run's output is read from its head event: one event read, whatever the run's length", () =>
    withRecordedStore((reads, store) =>
      Effect.gen(function*() {
        yield* TestLog.LongRun.write(store, { runId: "long", tenant, steps: STEPS })
        const kernel = yield* Kernel.Kernel
        const done = yield* kernel.resume({ tenantId: tenant.tenantId, runId: "long", workflow: TestLog.LongRun.workflow, response: 7 })
        reads.length = 0
        const again = yield* kernel.execute(TestLog.LongRun.workflow, { runId: "long", tenant, input: { steps: STEPS } })
        expect(again).toEqual(done)
        expect(reads.reduce((n, r) => n + r.returned, 0)).toBe(1)
        // A paused run's ticket likewise.
        yield* TestLog.LongRun.write(store, { runId: "paused", tenant, steps: STEPS })
        reads.length = 0
        const paused = yield* kernel.execute(TestLog.LongRun.workflow, { runId: "paused", tenant, input: { steps: STEPS } })
        expect(paused).toEqual({ status: "paused", runId: "paused", ticket: "paused-ticket", reason: "approve the sum" })
        expect(reads.reduce((n, r) => n + r.returned, 0)).toBe(1)
      })))

  it.effect("a failed run's typed error is read from its head event too: one event read, on execute and on resume", () => {
    class Overdrawn extends Schema.TaggedError<Overdrawn>()("Overdrawn", { balance: Schema.Number }) {}
    const drain = Workflow.make({
      name: "drain",
      input: Schema.Struct({ steps: Schema.Number }),
      output: Schema.Number,
      error: Overdrawn,
      run: ({ steps }, ctx) =>
        Effect.gen(function*() {
          let balance = 0
          for (let i = 0; i < steps; i++) balance -= yield* ctx.step(`debit-${i}`, Effect.succeed(1), Schema.Number)
          return yield* new Overdrawn({ balance })
        })
    })
    return withRecordedStore((reads) =>
      Effect.gen(function*() {
        const kernel = yield* Kernel.Kernel
        const input = { runId: "drained", tenant, input: { steps: 600 } }
        const first = yield* Effect.flip(kernel.execute(drain, input))
        expect(first).toEqual(new Overdrawn({ balance: -600 }))
        reads.length = 0
        expect(yield* Effect.flip(kernel.execute(drain, input))).toEqual(first)
        expect(reads.reduce((n, r) => n + r.returned, 0)).toBe(1)
        reads.length = 0
        expect(yield* Effect.flip(kernel.resume({ tenantId: tenant.tenantId, runId: "drained", workflow: drain }))).toEqual(first)
        expect(reads.reduce((n, r) => n + r.returned, 0)).toBe(1)
      }))
  })

  it.effect("Artana.status of a long run reads the one event that set its status: its pause, its end", () =>
    withRecordedStore((reads, store) =>
      Effect.gen(function*() {
        const ref = { tenantId: tenant.tenantId, runId: "long" }
        yield* TestLog.LongRun.write(store, { runId: "long", tenant, steps: STEPS })
        reads.length = 0
        expect(yield* Artana.status(ref)).toEqual({ status: "paused", runId: "long", ticket: "long-ticket", reason: "approve the sum" })
        expect(reads.reduce((n, r) => n + r.returned, 0)).toBe(1)
        yield* (yield* Kernel.Kernel).resume({ ...ref, workflow: TestLog.LongRun.workflow, response: "yes" })
        reads.length = 0
        expect(yield* Artana.status(ref)).toEqual({ status: "completed", runId: "long", output: { sum: TestLog.LongRun.sumOf(STEPS), response: "yes" } })
        expect(reads.reduce((n, r) => n + r.returned, 0)).toBe(1)
      })))

  it.effect("Artana.status of a paused run reads back past what was logged after its pause, verified on the way: an altered event there is LogTampered", () => {
    let forged: number | undefined
    const forging = Effect.map(recordedStore, ({ reads, service }) => ({
      reads,
      service: {
        ...service,
        // An event altered in the store: its content no longer hashes to its hash.
        readEvents: (tenantId: string, runId: string, fromSeq?: number, limit?: number) =>
          Effect.map(service.readEvents(tenantId, runId, fromSeq, limit), (page) => page.map((e): Event.Event => (e.seq === forged ? { ...e, stepKey: "forged" } : e)))
      } satisfies EventStore.Service
    }))
    return Effect.flatMap(forging, ({ reads, service }) =>
      Effect.gen(function*() {
        const ref = { tenantId: tenant.tenantId, runId: "noted" }
        yield* TestLog.LongRun.write(service, { runId: "noted", tenant, steps: STEPS })
        // Notes logged after the pause (as a middleware or a signal may log them): the pause is no longer the head.
        const log = yield* service.readEvents(tenant.tenantId, "noted")
        const note: Event.EventPayload = { _tag: "MiddlewareNote", middleware: "audit", note: "seen", data: null }
        const after = TestLog.chain("noted", tenant.tenantId, log, [note, note, note])
        yield* service.append({ runId: "noted", tenantId: tenant.tenantId, expectedSeq: log.length, events: after })
        reads.length = 0
        expect(yield* Artana.status(ref)).toEqual({ status: "paused", runId: "noted", ticket: "noted-ticket", reason: "approve the sum" })
        // The notes and the pause: not the log before it.
        expect(reads.reduce((n, r) => n + r.returned, 0)).toBeLessThanOrEqual(4 + 100)
        forged = log.length + 2
        expect(yield* Effect.flip(Artana.status(ref))).toMatchObject({ _tag: "LogTampered", runId: "noted", seq: log.length + 2 })
      }).pipe(Effect.provide(kernelLayer([], [], { store: Layer.succeed(EventStore.EventStore, service) }))))
  })

  it.live("steps run concurrently under explicit keys, logged out of order across a page boundary, replay", () => {
    // RunStarted, then 998 steps (seq 2..999): the concurrent pair is logged at seq 1000 and 1001, across the first page.
    const fanOut = Workflow.make({
      name: "fan-out-long",
      input: Schema.Null,
      output: Schema.Array(Schema.Number),
      run: (_i, ctx) =>
        Effect.gen(function*() {
          for (let i = 0; i < 998; i++) yield* ctx.step("n", Effect.succeed(i), Schema.Number)
          const first = yield* Deferred.make<void>()
          return yield* Effect.all([
            // Asked for first, finished second: it waits until the other one ran.
            ctx.step("late", Effect.as(Deferred.await(first), 1), Schema.Number, { key: "late" }),
            ctx.step("early", Effect.as(Deferred.succeed(first, undefined), 2), Schema.Number, { key: "early" })
          ], { concurrency: "unbounded" })
        })
    })
    return Effect.gen(function*() {
      const kernel = yield* Kernel.Kernel
      const done = yield* kernel.execute(fanOut, { runId: "fan", tenant, input: null })
      expect(done).toEqual({ status: "completed", runId: "fan", output: [1, 2] })
      const store = yield* EventStore.EventStore
      expect((yield* store.readEvents(tenant.tenantId, "fan", 1000, 2)).map((e) => e.stepKey)).toEqual(["early", "late"])
      const replayed = yield* Effect.either(kernel.replay(fanOut, { tenantId: tenant.tenantId, runId: "fan" }))
      expect(Either.isRight(replayed) ? replayed.right : `${replayed.left._tag}: ${replayed.left.message}`).toEqual(done)
    }).pipe(Effect.provide(kernelLayer([], [])))
  })

  it.effect("a step key used twice is NonDeterminism, and nothing is written under it twice", () => {
    const twice = Workflow.make({
      name: "twice",
      input: Schema.Null,
      output: Schema.Number,
      run: (_i, ctx) =>
        Effect.gen(function*() {
          const a = yield* ctx.step("a", Effect.succeed(1), Schema.Number, { key: "same" })
          const b = yield* ctx.step("b", Effect.succeed(2), Schema.Number, { key: "same" })
          return a + b
        })
    })
    return Effect.gen(function*() {
      const kernel = yield* Kernel.Kernel
      const failed = yield* Effect.flip(kernel.execute(twice, { runId: "twice", tenant, input: null }))
      expect(failed).toMatchObject({ _tag: "NonDeterminism", stepKey: "same" })
      const log = yield* (yield* EventStore.EventStore).readEvents(tenant.tenantId, "twice")
      expect(log.filter((e) => e.stepKey === "same")).toHaveLength(1)
    }).pipe(Effect.provide(kernelLayer([], [])))
  })
})
