// Scheduling under a fake clock: a worker polls the queue on TestClock, so what is due when is exact. What the worker
// does at a tick (a claim, a run, its finish) is real work on real fibers: the test waits, in real time, for its
// outcome before it moves the clock again, never for a fixed pause (a busy machine makes any pause too short).
import { afterAll, describe, expect, it } from "@effect/vitest"
import { Chunk, Duration, Effect, Fiber, Layer, TestClock, TestServices } from "effect"
import { EventStore, type Kernel, TaskQueue } from "@artana/core"
import { SqliteStore } from "@artana/store-sqlite"
import { ArtanaSession, Worker } from "@artana/worker"
import { cleanup, eventually, layer, makeWorld, tempDb, tenant, type World } from "./helpers.js"

afterAll(cleanup)

const SECOND = 1000
const MINUTE = 60 * SECOND
const DAY = 24 * 60 * MINUTE

const stores: ReadonlyArray<readonly [string, () => Layer.Layer<EventStore.EventStore | TaskQueue.TaskQueue, unknown>]> = [
  ["memory", () => Layer.merge(EventStore.layerMemory, TaskQueue.layerMemory)],
  ["sqlite", () => SqliteStore.layer({ filename: tempDb() })]
]

const POLL = MINUTE

/** Waits in real time (the worker's work takes real time, whatever the fake clock says) until `check` holds. */
const until = (what: string, check: () => Effect.Effect<boolean, unknown>) => TestServices.provideLive(eventually(what, 60, check))

/**
 * Waits until the worker is parked: it has polled at the fake clock's time (or had no poll due) and sleeps until its
 * next one, a sleep pending within a poll interval. Only then does moving the clock wake it at the next tick.
 */
const parked = Effect.gen(function*() {
  const clock = yield* TestClock.testClock()
  yield* until("the worker sleeps until its next poll", () =>
    Effect.gen(function*() {
      const now = yield* clock.currentTimeMillis
      return Chunk.some(yield* clock.sleeps, (at) => at > now && at <= now + POLL)
    }))
})

/** Moves the fake clock forward `millis`, one poll interval at a time, letting the worker poll at each tick. */
const advance = (millis: number, tick: number) =>
  Effect.gen(function*() {
    for (let moved = 0; moved < millis; moved += tick) {
      yield* TestClock.adjust(Duration.millis(Math.min(tick, millis - moved)))
      yield* parked
    }
  })

/** `waitForResult` in real time (its polling sleeps would otherwise wait on the fake clock). */
const result = (session: ArtanaSession.Service, taskId: string) =>
  TestServices.provideLive(session.waitForResult(tenant.tenantId, taskId, { timeout: "60 seconds", pollInterval: "10 millis" }))

const startWorker = (world: World) =>
  Effect.gen(function*() {
    const fiber = yield* Effect.fork(Worker.run({ workflows: world.workflows, concurrency: 2, pollInterval: Duration.millis(POLL), leaseSeconds: 30 }))
    yield* parked
    return fiber
  })

describe.each(stores)("scheduling on %s, with a fake clock", (_name, makeStore) => {
  const test = (title: string, body: (world: World) => Effect.Effect<void, unknown, ArtanaSession.ArtanaSession | TaskQueue.TaskQueue | Kernel.Kernel>) =>
    it.effect(title, () => {
      const world = makeWorld()
      return Effect.provide(body(world), layer(world, makeStore()))
    })

  test("a task due in an hour is not claimed a poll before the hour; it runs at the first poll after", (world) =>
    Effect.gen(function*() {
      const session = yield* ArtanaSession.ArtanaSession
      const queue = yield* TaskQueue.TaskQueue
      const taskId = yield* session.submit({ workflow: world.greet, input: { name: "later" }, tenant, runAt: 60 * MINUTE })
      const worker = yield* startWorker(world)
      yield* advance(60 * MINUTE - POLL, POLL)
      expect(yield* queue.get(tenant.tenantId, taskId)).toMatchObject({ status: "queued" })
      expect(world.effects.of("greet:later")).toBe(0)
      yield* advance(POLL, POLL)
      expect(yield* result(session, taskId)).toMatchObject({ status: "completed", output: { greeting: "hello later" } })
      expect(yield* queue.get(tenant.tenantId, taskId)).toMatchObject({ runAt: 60 * MINUTE })
      expect(world.effects.of("greet:later")).toBe(1)
      yield* Fiber.interrupt(worker)
    }))

  test("a task repeating every minute runs eleven times in ten minutes, each occurrence once", (world) =>
    Effect.gen(function*() {
      const session = yield* ArtanaSession.ArtanaSession
      const taskId = yield* session.submit({ workflow: world.greet, input: { name: "tick" }, tenant, repeatIntervalSeconds: 60 })
      const completed = (n: number) =>
        until(`occurrence ${n} completed`, () =>
          Effect.map(session.list(tenant.tenantId, { seriesId: taskId, status: "completed" }), (done) => done.length >= n))
      const worker = yield* startWorker(world)
      yield* completed(1)
      // Each minute's tick runs the occurrence due then; the next tick comes once it has completed.
      for (let minute = 1; minute <= 10; minute++) {
        yield* TestClock.adjust(Duration.millis(POLL))
        yield* completed(minute + 1)
      }
      yield* Fiber.interrupt(worker)
      const series = yield* session.list(tenant.tenantId, { seriesId: taskId })
      const done = series.filter((t) => t.status === "completed").sort((a, b) => a.occurrence - b.occurrence)
      expect(done.map((t) => t.occurrence)).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11])
      expect(done.map((t) => t.runAt)).toEqual(done.map((_, i) => i * MINUTE))
      expect(series.filter((t) => t.status === "queued").map((t) => [t.occurrence, t.runAt])).toEqual([[12, 11 * MINUTE]])
      // One execution per occurrence: each occurrence is a run of its own.
      expect(world.effects.of("greet:tick")).toBe(11)
      expect(new Set(done.map((t) => t.runId)).size).toBe(11)
    }))

  test("a queued task no worker runs expires after a day", (world) =>
    Effect.gen(function*() {
      const queue = yield* TaskQueue.TaskQueue
      const orphan = yield* queue.enqueue({ workflow: "nobody-runs-this", input: null, tenant })
      yield* TestClock.adjust(Duration.millis(DAY - 2 * POLL))
      const worker = yield* startWorker(world)
      yield* advance(2 * POLL - 1, POLL)
      expect(yield* queue.get(tenant.tenantId, orphan.taskId)).toMatchObject({ status: "queued" })
      yield* advance(POLL, POLL)
      yield* until("the orphan expired", () => Effect.map(queue.get(tenant.tenantId, orphan.taskId), (t) => t.status === "expired"))
      yield* Fiber.interrupt(worker)
    }))

  test("a task that runs past its timeout fails with TaskTimeout; the worker takes the next one", (world) =>
    Effect.gen(function*() {
      const session = yield* ArtanaSession.ArtanaSession
      const queue = yield* TaskQueue.TaskQueue
      const stuck = yield* session.submit({ workflow: world.stuck, input: null, tenant, timeoutSeconds: 30 })
      const worker = yield* startWorker(world)
      // Claimed at 0: its deadline is 30 s on the fake clock.
      yield* until("the worker claimed the task", () => Effect.map(queue.get(tenant.tenantId, stuck), (t) => t.status === "running"))
      yield* advance(29 * SECOND, SECOND)
      expect(yield* session.waitForResult(tenant.tenantId, stuck, { timeout: 0 }).pipe(Effect.flip)).toMatchObject({ _tag: "WaitTimeout", status: "running" })
      yield* advance(2 * SECOND, SECOND)
      expect(yield* result(session, stuck)).toMatchObject({ status: "failed", errorTag: "TaskTimeout" })
      const next = yield* session.submit({ workflow: world.greet, input: { name: "next" }, tenant })
      yield* advance(POLL, POLL)
      expect(yield* result(session, next)).toMatchObject({ status: "completed" })
      yield* Fiber.interrupt(worker)
    }))
})
