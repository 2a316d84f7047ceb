// Scheduling under a fake clock: a worker polls the queue on TestClock, so what is due when is exact.
import { afterAll, describe, expect, it } from "@effect/vitest"
import { Duration, Effect, Fiber, Layer, TestClock, TestServices } from "effect"
import { EventStore, type Kernel, TaskQueue } from "@artana/core"
import { SqliteStore } from "@artana/store-sqlite"
import { ArtanaSession, Worker } from "@artana/worker"
import { cleanup, layer, makeWorld, tempDb, tenant, type World } from "./helpers.js"

afterAll(cleanup)

const SECOND = 1000
const MINUTE = 60 * SECOND
const DAY = 24 * 60 * MINUTE

const stores: ReadonlyArray<readonly [string, () => Layer.Layer<EventStore.EventStore | TaskQueue.TaskQueue, unknown>]> = [
  ["memory", () => Layer.merge(EventStore.layerMemory, TaskQueue.layerMemory)],
  ["sqlite", () => SqliteStore.layer({ filename: tempDb() })]
]

/** Lets the worker's fibers finish what the last tick started (they do I/O), in real time. */
const settle = TestServices.provideLive(Effect.sleep(Duration.millis(20)))

/** Moves the fake clock forward `millis`, one poll interval at a time, letting the worker act at each tick. */
const advance = (millis: number, tick: number) =>
  Effect.gen(function*() {
    for (let moved = 0; moved < millis; moved += tick) {
      yield* TestClock.adjust(Duration.millis(Math.min(tick, millis - moved)))
      yield* settle
    }
  })

const POLL = MINUTE

const startWorker = (world: World) =>
  Effect.gen(function*() {
    const fiber = yield* Effect.fork(Worker.run({ workflows: world.workflows, concurrency: 2, pollInterval: Duration.millis(POLL), leaseSeconds: 30 }))
    yield* settle
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
      expect(yield* queue.get(tenant.tenantId, taskId)).toMatchObject({ status: "completed", outcome: { output: { greeting: "hello later" } } })
      expect(world.effects.of("greet:later")).toBe(1)
      yield* Fiber.interrupt(worker)
    }))

  test("a task repeating every minute runs eleven times in ten minutes, each occurrence once", (world) =>
    Effect.gen(function*() {
      const session = yield* ArtanaSession.ArtanaSession
      const taskId = yield* session.submit({ workflow: world.greet, input: { name: "tick" }, tenant, repeatIntervalSeconds: 60 })
      const worker = yield* startWorker(world)
      yield* advance(10 * MINUTE, POLL)
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
      expect(yield* queue.get(tenant.tenantId, orphan.taskId)).toMatchObject({ status: "expired" })
      yield* Fiber.interrupt(worker)
    }))

  test("a task that runs past its timeout fails with TaskTimeout; the worker takes the next one", (world) =>
    Effect.gen(function*() {
      const session = yield* ArtanaSession.ArtanaSession
      const stuck = yield* session.submit({ workflow: world.stuck, input: null, tenant, timeoutSeconds: 30 })
      const worker = yield* startWorker(world)
      yield* advance(29 * SECOND, SECOND)
      expect(yield* session.waitForResult(tenant.tenantId, stuck, { timeout: 0 }).pipe(Effect.flip)).toMatchObject({ _tag: "WaitTimeout", status: "running" })
      yield* advance(2 * SECOND, SECOND)
      expect(yield* session.waitForResult(tenant.tenantId, stuck)).toMatchObject({ status: "failed", errorTag: "TaskTimeout" })
      const next = yield* session.submit({ workflow: world.greet, input: { name: "next" }, tenant })
      yield* advance(POLL, POLL)
      expect(yield* session.waitForResult(tenant.tenantId, next)).toMatchObject({ status: "completed" })
      yield* Fiber.interrupt(worker)
    }))
})
