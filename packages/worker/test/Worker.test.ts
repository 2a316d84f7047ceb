import { afterAll, describe, expect, it } from "@effect/vitest"
import { Deferred, Effect, Fiber, Layer, Schema } from "effect"
import { Errors, EventStore, Kernel, TaskQueue, Tenant, Tool, Workflow } from "@artana/core"
import { TenantIsolation } from "@artana/core/testing"
import { SqliteStore } from "@artana/store-sqlite"
import { ArtanaSession, Worker } from "@artana/worker"
import { cleanup, eventually, layer, makeWorld, tempDb, tenant, type World } from "./helpers.js"

afterAll(cleanup)

const stores: ReadonlyArray<readonly [string, () => Layer.Layer<EventStore.EventStore | TaskQueue.TaskQueue, unknown>]> = [
  ["memory", () => Layer.merge(EventStore.layerMemory, TaskQueue.layerMemory)],
  ["sqlite", () => SqliteStore.layer({ filename: tempDb() })]
]

// A lease far longer than any test: a worker loses a task only where a test means it to (a busy machine can starve a
// process for a second; with a short lease it would lose its own task, and run a step again, in any test).
/** The order workflow's side effects, each once, for task `taskId`'s first run (counts by name, sorted). */
const orderedOnce = (taskId: string) =>
  [[`charge:c1:task:${taskId}/tool:0`, 1], ["order:pack", 1], ["order:reserve", 1], ["order:ship", 1]].sort()

const startWorker = (world: World, workerId: string, options: Partial<Worker.Options> = {}) =>
  Effect.fork(Worker.run({ workflows: world.workflows, concurrency: 2, pollInterval: "20 millis", leaseSeconds: 30, workerId, ...options }))

describe.each(stores)("Worker on %s", (_name, makeStore) => {
  const test = (title: string, body: (world: World) => Effect.Effect<void, unknown, ArtanaSession.ArtanaSession | TaskQueue.TaskQueue | EventStore.EventStore | Kernel.Kernel>) =>
    it.live(title, () => {
      const world = makeWorld()
      return Effect.provide(body(world), layer(world, makeStore()))
    })

  test("runs submitted workflows to completion, each step once", (world) =>
    Effect.gen(function*() {
      const session = yield* ArtanaSession.ArtanaSession
      const names = ["ada", "bob", "cy", "dee", "eve", "fay"]
      const ids = yield* Effect.forEach(names, (name) => session.submit({ workflow: world.greet, input: { name }, tenant }))
      const worker = yield* startWorker(world, "w1", { concurrency: 3 })
      const results = yield* Effect.forEach(ids, (id) => session.waitForResult(tenant.tenantId, id, { timeout: "10 seconds", pollInterval: "10 millis" }))
      expect(results.map((r) => r.status === "completed" ? r.output : r)).toEqual(names.map((name) => ({ greeting: `hello ${name}` })))
      for (const name of names) expect(world.effects.of(`greet:${name}`)).toBe(1)
      expect(results.map((r) => r.runId)).toEqual(ids.map((id) => `task:${id}`))
      yield* Fiber.interrupt(worker)
      expect((yield* session.list(tenant.tenantId, { status: "completed" })).length).toBe(6)
    }))

  test("a run whose step waits on another run in doubt is paused, and the session names the run and step to settle", (world) =>
    Effect.gen(function*() {
      // A tool that delegates to a run (as a sub-agent does) which is waiting for a person at `send`.
      const delegate = Tool.make({
        name: "delegate",
        description: "Runs a child",
        parameters: Schema.Struct({}),
        handler: () => Effect.fail(new Errors.WaitingOnRun({ runId: "child-1", stepKey: "tool:0", tool: "send" }))
      })
      const parent = Workflow.make({ name: "parent", input: Schema.Null, output: Schema.Unknown, run: (_i, ctx) => ctx.tool(delegate, {}) })
      const session = yield* ArtanaSession.ArtanaSession
      const worker = yield* startWorker(world, "w1", { workflows: [...world.workflows, parent] })
      const taskId = yield* session.submit({ workflow: parent, input: null, tenant })
      const waiting = yield* session.waitForResult(tenant.tenantId, taskId, { timeout: "10 seconds", pollInterval: "10 millis" })
      expect(waiting).toMatchObject({ status: "paused", ticket: "tool:0" })
      expect(waiting.status === "paused" && waiting.reason).toContain(`"send" at step tool:0 of run child-1 in doubt`)
      yield* Fiber.interrupt(worker)
    }))

  test("a task answered while its paused execution's last bookkeeping still runs is run at once, not left claimed", (world) =>
    Effect.gen(function*() {
      // After a task's outcome is recorded, its worker still checks the paused run for signals (`Kernel.wake`); held
      // here, so the response lands then, deterministically. The poll it wakes claims the task for this worker.
      const gate = yield* Deferred.make<void>()
      const gated = Layer.effect(
        Kernel.Kernel,
        Effect.map(Kernel.Kernel, (k): Kernel.Service => ({ ...k, wake: (run) => Effect.zipRight(Deferred.await(gate), k.wake(run)) }))
      )
      const session = yield* ArtanaSession.ArtanaSession
      const queue = yield* TaskQueue.TaskQueue
      // No polling within the test (an hour) and a lease longer than it: only the wake-ups run tasks.
      const worker = yield* Effect.fork(
        Effect.provide(Worker.run({ workflows: world.workflows, concurrency: 2, pollInterval: "1 hour", leaseSeconds: 600, workerId: "w1" }), gated)
      )
      const wait = { timeout: "20 seconds", pollInterval: "10 millis" } as const
      const taskId = yield* session.submit({ workflow: world.approve, input: { amount: 7 }, tenant })
      expect(yield* session.waitForResult(tenant.tenantId, taskId, wait)).toMatchObject({ status: "paused" })
      yield* session.respond(tenant.tenantId, taskId, { approved: true })
      yield* eventually("the worker claimed the answered task", 20, () => Effect.map(queue.get(tenant.tenantId, taskId), (t) => t.status === "running"))
      yield* Deferred.succeed(gate, undefined)
      // Skipped as the execution already under way, it stayed claimed by this worker, unrun, until its lease expired.
      expect(yield* session.waitForResult(tenant.tenantId, taskId, wait)).toMatchObject({ status: "completed", output: "approved" })
      expect(world.effects.of("approve:prepare")).toBe(1)
      expect(world.effects.of("approve:apply:true")).toBe(1)
      yield* Fiber.interrupt(worker)
    }))

  test("a paused run is resumed when the human responds", (world) =>
    Effect.gen(function*() {
      const session = yield* ArtanaSession.ArtanaSession
      const worker = yield* startWorker(world, "w1")
      const taskId = yield* session.submit({ workflow: world.approve, input: { amount: 250 }, tenant })
      const paused = yield* session.waitForResult(tenant.tenantId, taskId, { timeout: "10 seconds", pollInterval: "10 millis" })
      expect(paused).toMatchObject({ status: "paused", reason: "approve 250" })
      // A response the pause's schema refuses leaves the task paused, saying why; the next one is taken.
      yield* session.respond(tenant.tenantId, taskId, { approved: "yes" })
      const refused = yield* session.waitForResult(tenant.tenantId, taskId, { timeout: "10 seconds", pollInterval: "10 millis" })
      expect(refused).toMatchObject({ status: "paused", reason: expect.stringContaining("is invalid") })
      // Naming the person: the run's log records who responded, as an approval records its approver.
      yield* session.respond(tenant.tenantId, taskId, { approved: true }, { respondedBy: "ann@acme" })
      const done = yield* session.waitForResult(tenant.tenantId, taskId, { timeout: "10 seconds", pollInterval: "10 millis" })
      expect(done).toMatchObject({ status: "completed", output: "approved" })
      expect(world.effects.of("approve:prepare")).toBe(1)
      expect(world.effects.of("approve:apply:true")).toBe(1)
      const events = yield* (yield* EventStore.EventStore).readEvents(tenant.tenantId, `task:${taskId}`)
      const responses = events.flatMap((e) => e.payload._tag === "HumanResponded" ? [e.payload] : [])
      expect(responses).toEqual([expect.objectContaining({ payload: { approved: true }, respondedBy: "ann@acme" })])
      // The task no longer holds the response nor its responder.
      expect(yield* (yield* TaskQueue.TaskQueue).get(tenant.tenantId, taskId)).not.toHaveProperty("respondedBy")
      expect(yield* Effect.flip(session.respond(tenant.tenantId, taskId, { approved: false }))).toMatchObject({ _tag: "InvalidTaskState", status: "completed" })
      yield* Fiber.interrupt(worker)
    }))

  test("as another tenant, wait, cancel, respond and list act on nothing: a task id of A's is one that never existed", (world) =>
    Effect.gen(function*() {
      const session = yield* ArtanaSession.ArtanaSession
      const worker = yield* startWorker(world, "w1")
      const other = Tenant.TenantContext.make({ tenantId: "globex", capabilities: ["billing"], budgetUsdLimit: 1 })
      const paused = yield* session.submit({ workflow: world.approve, input: { amount: 250 }, tenant })
      const later = yield* session.submit({ workflow: world.greet, input: { name: "later" }, tenant, runAt: Date.now() + 60_000 })
      expect(yield* session.waitForResult(tenant.tenantId, paused, { timeout: "10 seconds", pollInterval: "10 millis" })).toMatchObject({ status: "paused" })

      const sameFailure = <A, E>(id: string, f: (taskId: string) => Effect.Effect<A, E>) =>
        Effect.gen(function*() {
          const theirs = yield* Effect.flip(f(id))
          const none = yield* Effect.flip(f("never-used-task"))
          expect(TenantIsolation.shape(theirs, id)).toEqual(TenantIsolation.shape(none, "never-used-task"))
          expect(theirs).toMatchObject({ _tag: "TaskNotFound", tenantId: "globex" })
        })
      for (const id of [paused, later]) {
        yield* sameFailure(id, (taskId) => session.waitForResult(other.tenantId, taskId, { timeout: "1 second", pollInterval: "10 millis" }))
        yield* sameFailure(id, (taskId) => session.cancel(other.tenantId, taskId))
        yield* sameFailure(id, (taskId) => session.respond(other.tenantId, taskId, { approved: true }))
      }
      expect(yield* session.list(other.tenantId)).toEqual([])
      expect(yield* session.list(other.tenantId, { seriesId: paused })).toEqual([])

      // A's tasks are as A left them, and go on as A decides.
      const mine = new Map((yield* session.list(tenant.tenantId)).map((t) => [t.taskId, t.status]))
      expect(mine).toEqual(new Map([[later, "queued"], [paused, "paused"]]))
      yield* session.respond(tenant.tenantId, paused, { approved: true })
      expect(yield* session.waitForResult(tenant.tenantId, paused, { timeout: "10 seconds", pollInterval: "10 millis" }))
        .toMatchObject({ status: "completed", output: "approved" })
      yield* session.cancel(tenant.tenantId, later)
      expect(yield* session.waitForResult(tenant.tenantId, later)).toMatchObject({ status: "cancelled" })
      yield* Fiber.interrupt(worker)
    }))

  test("a failing workflow and a timeout fail their tasks; a retry policy retries; unknown workflows are left to others", (world) =>
    Effect.gen(function*() {
      const session = yield* ArtanaSession.ArtanaSession
      const queue = yield* TaskQueue.TaskQueue
      const worker = yield* startWorker(world, "w1", { concurrency: 4 })
      const boom = yield* session.submit({ workflow: world.boom, input: null, tenant })
      const stuck = yield* session.submit({ workflow: world.stuck, input: null, tenant, timeoutSeconds: 0.3 })
      const unknown = yield* queue.enqueue({ workflow: "nope", input: null, tenant })
      const retried = yield* session.submit({ workflow: world.boom, input: null, tenant, retry: { maxAttempts: 2, backoffSeconds: 0.05 } })
      const wait = (id: string) => session.waitForResult(tenant.tenantId, id, { timeout: "10 seconds", pollInterval: "10 millis" })
      expect(yield* wait(boom)).toMatchObject({ status: "failed", errorTag: "Error", error: "the ledger is closed" })
      expect(yield* wait(stuck)).toMatchObject({ status: "failed", errorTag: "TaskTimeout" })
      expect(yield* queue.get(tenant.tenantId, unknown.taskId)).toMatchObject({ status: "queued" })
      expect(yield* wait(retried)).toMatchObject({ status: "failed", runId: `task:${retried}:attempt-2` })
      expect(yield* queue.get(tenant.tenantId, retried)).toMatchObject({ attempts: 2 })
      yield* Fiber.interrupt(worker)
    }))

  test("a retry after a timeout resumes the run: its completed steps are not run again", (world) =>
    Effect.gen(function*() {
      const session = yield* ArtanaSession.ArtanaSession
      const queue = yield* TaskQueue.TaskQueue
      const store = yield* EventStore.EventStore
      const worker = yield* startWorker(world, "w1")
      // Charges, reserves, then waits at the gate past its timeout: the first attempt times out there.
      const taskId = yield* session.submit({
        workflow: world.order,
        input: { customer: "c1" },
        tenant,
        timeoutSeconds: 0.3,
        retry: { maxAttempts: 2, backoffSeconds: 0.5 }
      })
      yield* eventually("the first attempt timed out", 10, () =>
        Effect.map(queue.get(tenant.tenantId, taskId), (task) => task.attempts === 1 && task.outcome?._tag === "failed"))
      expect(yield* queue.get(tenant.tenantId, taskId)).toMatchObject({
        status: "queued",
        runId: `task:${taskId}`,
        outcome: { _tag: "failed", errorTag: "TaskTimeout", resumable: true }
      })
      world.gate.open()
      expect(yield* session.waitForResult(tenant.tenantId, taskId, { timeout: "10 seconds", pollInterval: "10 millis" }))
        .toMatchObject({ status: "completed", output: "shipped to c1", runId: `task:${taskId}` })
      // The charge and the reservation ran once, in the first attempt; the second resumed the run after them.
      expect([...world.effects.counts.entries()].sort()).toEqual(orderedOnce(taskId))
      const events = yield* store.readEvents("acme", `task:${taskId}`)
      expect(events.filter((e) => e.type === "RunResumed")).toHaveLength(1)
      expect(yield* Effect.flip(store.getRun("acme", `task:${taskId}:attempt-2`))).toMatchObject({ _tag: "RunNotFound" })
      yield* Fiber.interrupt(worker)
    }))

  test("cancel and waitForResult's timeout", (world) =>
    Effect.gen(function*() {
      const session = yield* ArtanaSession.ArtanaSession
      const later = yield* session.submit({ workflow: world.greet, input: { name: "zed" }, tenant, runAt: Date.now() + 60_000 })
      expect(yield* Effect.flip(session.waitForResult(tenant.tenantId, later, { timeout: "50 millis", pollInterval: "10 millis" })))
        .toMatchObject({ _tag: "WaitTimeout", status: "queued" })
      yield* session.cancel(tenant.tenantId, later)
      expect(yield* session.waitForResult(tenant.tenantId, later)).toMatchObject({ status: "cancelled" })
      const again = yield* session.submit({ workflow: world.greet, input: { name: "zed" }, tenant, idempotencyKey: "k", runAt: Date.now() + 60_000 })
      expect(yield* session.submit({ workflow: world.greet, input: { name: "other" }, tenant, idempotencyKey: "k" })).toBe(again)
    }))

  test("interrupting a worker releases its task; the next worker resumes the run from its log", (world) =>
    Effect.gen(function*() {
      const session = yield* ArtanaSession.ArtanaSession
      const queue = yield* TaskQueue.TaskQueue
      const store = yield* EventStore.EventStore
      const taskId = yield* session.submit({ workflow: world.order, input: { customer: "c1" }, tenant })
      const first = yield* startWorker(world, "w1")
      yield* eventually("the run waits at the gate", 10, () => world.gate.isWaiting())
      yield* Fiber.interrupt(first)
      const released = yield* queue.get(tenant.tenantId, taskId)
      expect(released).toMatchObject({ status: "queued" })
      expect(released.workerId).toBeUndefined()

      world.gate.open()
      const second = yield* startWorker(world, "w2")
      expect(yield* session.waitForResult(tenant.tenantId, taskId, { timeout: "10 seconds", pollInterval: "10 millis" }))
        .toMatchObject({ status: "completed", output: "shipped to c1" })
      expect([...world.effects.counts.entries()].sort()).toEqual(orderedOnce(taskId))
      const events = yield* store.readEvents("acme", `task:${taskId}`)
      expect(events.filter((e) => e.type === "RunResumed")).toHaveLength(1)
      yield* Fiber.interrupt(second)
    }))

  test("a worker that stops heartbeating loses its task; another takes it over and resumes the run", (world) =>
    Effect.gen(function*() {
      const session = yield* ArtanaSession.ArtanaSession
      const queue = yield* TaskQueue.TaskQueue
      const taskId = yield* session.submit({ workflow: world.order, input: { customer: "c2" }, tenant })
      // A worker process that hangs and then dies: no heartbeat, nothing released (a release it tries, when its write
      // is refused or when the test stops it, never comes back, and the test can still stop it).
      const never = Effect.interruptible(Effect.never)
      const hung: TaskQueue.Service = { ...queue, heartbeat: () => never, release: () => never }
      const first = yield* startWorker(world, "w1", { leaseSeconds: 0.5, concurrency: 1 }).pipe(Effect.provideService(TaskQueue.TaskQueue, hung))
      yield* eventually("the run waits at the gate", 10, () => world.gate.isWaiting())
      // w2's lease is long: were it to lapse too, w1 could take the task back and run a step a third time.
      const second = yield* startWorker(world, "w2")
      yield* eventually("w2 holds the task", 10, () => Effect.map(queue.get(tenant.tenantId, taskId), (t) => t.workerId === "w2"))
      // The gate opens once w2 owns the run (its RunResumed is durable). Before that, w1 was still the run's writer: a
      // step it finished then is recorded, and one it began then may run again under w2 (a step is at least once).
      const store = yield* EventStore.EventStore
      yield* eventually("w2 resumed the run", 10, () =>
        Effect.map(store.readEvents("acme", `task:${taskId}`), (events) => events.some((e) => e.type === "RunResumed")))
      world.gate.open()
      expect(yield* session.waitForResult(tenant.tenantId, taskId, { timeout: "10 seconds", pollInterval: "10 millis" }))
        .toMatchObject({ status: "completed", output: "shipped to c2" })
      // w1 woke up at the gate too, but its step could not be written: the run has one writer.
      expect(world.effects.of(`charge:c2:task:${taskId}/tool:0`)).toBe(1)
      expect(world.effects.of("order:reserve")).toBe(1)
      expect(world.effects.of("order:ship")).toBe(1)
      const events = yield* store.readEvents("acme", `task:${taskId}`)
      expect(events.filter((e) => e.type === "RunResumed")).toHaveLength(1)
      expect(events.flatMap((e) => e.payload._tag === "StepCompleted" ? [e.payload.name] : [])).toEqual(["reserve", "pack", "ship"])
      expect(events.filter((e) => e.type === "ToolCompleted")).toHaveLength(1)
      yield* Effect.all([Fiber.interrupt(first), Fiber.interrupt(second)], { concurrency: "unbounded" })
      expect(yield* queue.get(tenant.tenantId, taskId)).toMatchObject({ status: "completed" })
    }))

  test("cancelling a running task stops its execution at the next heartbeat and frees the worker", (world) =>
    Effect.gen(function*() {
      const session = yield* ArtanaSession.ArtanaSession
      const blocked = yield* session.submit({ workflow: world.order, input: { customer: "c3" }, tenant })
      const worker = yield* startWorker(world, "w1", { concurrency: 1, heartbeatInterval: "100 millis" })
      yield* eventually("the run waits at the gate", 10, () => world.gate.isWaiting())
      yield* session.cancel(tenant.tenantId, blocked)
      // With one slot, the next task runs only once the cancelled execution has stopped.
      const next = yield* session.submit({ workflow: world.greet, input: { name: "after" }, tenant })
      expect(yield* session.waitForResult(tenant.tenantId, next, { timeout: "10 seconds", pollInterval: "10 millis" })).toMatchObject({ status: "completed" })
      expect(yield* session.waitForResult(tenant.tenantId, blocked)).toMatchObject({ status: "cancelled" })
      world.gate.open()
      yield* Effect.sleep("50 millis")
      expect(world.effects.of("order:pack")).toBe(0)
      yield* Fiber.interrupt(worker)
    }))

  test("a repeating task runs again every interval, one occurrence at a time", (world) =>
    Effect.gen(function*() {
      const session = yield* ArtanaSession.ArtanaSession
      const taskId = yield* session.submit({ workflow: world.greet, input: { name: "tick" }, tenant, repeatIntervalSeconds: 0.2 })
      const worker = yield* startWorker(world, "w1")
      yield* eventually("three occurrences completed", 10, () =>
        Effect.map(session.list(tenant.tenantId, { seriesId: taskId, status: "completed" }), (done) => done.length >= 3))
      yield* Fiber.interrupt(worker)
      const series = yield* session.list(tenant.tenantId, { seriesId: taskId })
      const occurrences = series.map((t) => t.occurrence).sort((a, b) => a - b)
      expect(occurrences).toEqual(occurrences.map((_, i) => i + 1))
      expect(series.filter((t) => t.status === "queued" || t.status === "running")).toHaveLength(1)
      const runAts = series.map((t) => t.runAt).sort((a, b) => a - b)
      for (let i = 1; i < runAts.length; i++) expect((runAts[i]! - runAts[0]!) % 200).toBe(0)
    }))
})

/**
 * `store` whose first claim of a task's run taken over (the append holding its `RunResumed`) is beaten by another
 * writer: the same events are written first, as by an older worker still driving the run, so the claim's own append
 * finds a head it did not read, written by someone else, and the execution stops (`SequenceConflict`).
 */
const staleTwin = (store: Layer.Layer<EventStore.EventStore | TaskQueue.TaskQueue, unknown>) => {
  let raced = false
  const racing = Layer.effect(
    EventStore.EventStore,
    Effect.map(EventStore.EventStore, (inner): EventStore.Service => ({
      ...inner,
      append: (request) => {
        if (raced || !request.events.some((e) => e.type === "RunResumed")) return inner.append(request)
        raced = true
        return Effect.zipRight(inner.append(request), inner.append(request))
      }
    }))
  ).pipe(Layer.provide(store))
  // One store (a layer is built once per provide): the racing view replaces its EventStore.
  return Layer.merge(store, racing)
}

describe.each(stores)("Worker on %s, its claim of a run beaten by an older writer", (_name, makeStore) => {
  it.live("hands its task back: the task is claimed again at once and its run resumed, not left held until the lease ends", () => {
    const world = makeWorld()
    return Effect.gen(function*() {
      const session = yield* ArtanaSession.ArtanaSession
      const store = yield* EventStore.EventStore
      const taskId = yield* session.submit({ workflow: world.order, input: { customer: "c1" }, tenant })
      const first = yield* startWorker(world, "w1")
      yield* eventually("the run waits at the gate", 10, () => world.gate.isWaiting())
      yield* Fiber.interrupt(first)
      world.gate.open()
      // A lease of an hour: a task left held by the worker that stopped could not complete within the test.
      const second = yield* startWorker(world, "w2", { leaseSeconds: 3600 })
      expect(yield* session.waitForResult(tenant.tenantId, taskId, { timeout: "30 seconds", pollInterval: "10 millis" }))
        .toMatchObject({ status: "completed", output: "shipped to c1" })
      expect([...world.effects.counts.entries()].sort()).toEqual(orderedOnce(taskId))
      const events = yield* store.readEvents("acme", `task:${taskId}`)
      // The twin's claim, then the one that went on.
      expect(events.filter((e) => e.type === "RunResumed")).toHaveLength(2)
      yield* Fiber.interrupt(second)
    }).pipe(Effect.provide(layer(world, staleTwin(makeStore()))))
  }, 60_000)
})
