/**
 * The contract every `TaskQueue` implementation passes: the in-memory queue, SQLite, Postgres. Each test builds
 * a fresh layer (one database per test) and runs under `TestClock`, so leases, schedules and expiry are exact.
 *
 * @example
 * import { TaskQueueSuite } from "@artana/core/testing/suites"
 * TaskQueueSuite.suite("sqlite", () => Layer.orDie(SqliteStore.layer({ filename: tempFile() })))
 *
 * @since 0.1.0
 */
import { describe, expect, it } from "@effect/vitest"
import * as Clock from "effect/Clock"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import type * as Layer from "effect/Layer"
import * as Stream from "effect/Stream"
import * as TestClock from "effect/TestClock"
import * as TestServices from "effect/TestServices"
import { type EnqueueRequest, type Service, type Task, TaskQueue } from "./TaskQueue.js"
import { TenantContext } from "./Tenant.js"
import * as TenantIsolation from "./TenantIsolation.js"

const tenantA = TenantContext.make({ tenantId: "tenant-a", capabilities: ["finance:read"], budgetUsdLimit: 5 })
const tenantB = TenantContext.make({ tenantId: "tenant-b", capabilities: [], budgetUsdLimit: 1 })

const A = tenantA.tenantId

const request = (overrides: Partial<EnqueueRequest> = {}): EnqueueRequest => ({
  workflow: "review",
  input: { document: "contract.pdf", pages: 3, tags: ["a", "b"], nested: { ok: true, none: null } },
  tenant: tenantA,
  ...overrides
})

const SECOND = 1000
const DAY = 24 * 60 * 60 * SECOND

const adjust = (millis: number) => TestClock.adjust(Duration.millis(millis))

/** Registers one of the contract's tests. */
type Test = (title: string, body: (queue: Service) => Effect.Effect<void, unknown>) => void

/** Enqueueing and reading back; another tenant's task id; requests refused. */
const enqueueing = (test: Test): void => {
    test("enqueue stores the task as requested; get and list read it back", (queue) =>
      Effect.gen(function*() {
        const task = yield* queue.enqueue(request({ timeoutSeconds: 30, retry: { maxAttempts: 3, backoffSeconds: 2 } }))
        expect(task).toMatchObject({
          status: "queued",
          workflow: "review",
          tenantId: "tenant-a",
          runId: `task:${task.taskId}`,
          runAt: 0,
          expiresAt: DAY,
          timeoutSeconds: 30,
          retry: { maxAttempts: 3, backoffSeconds: 2 },
          attempts: 0,
          occurrence: 1,
          seriesId: task.taskId
        })
        const read = yield* queue.get(A, task.taskId)
        expect(read).toEqual(task)
        expect(read.tenant).toBeInstanceOf(TenantContext)
        const other = yield* queue.enqueue(request({ tenant: tenantB, workflow: "other" }))
        expect((yield* queue.list(A)).map((t) => t.taskId)).toEqual([task.taskId])
        expect((yield* queue.list(tenantB.tenantId)).map((t) => t.taskId)).toEqual([other.taskId])
        expect((yield* queue.list(A, { workflow: "review", status: "queued" })).map((t) => t.taskId)).toEqual([task.taskId])
        expect(yield* Effect.flip(queue.get(A, "nope"))).toMatchObject({ _tag: "TaskNotFound", taskId: "nope", tenantId: A })
      }))

    test("another tenant's task id behaves exactly like an id that never existed: same errors, zero rows, nothing changed", (queue) =>
      Effect.gen(function*() {
        const B = tenantB.tenantId
        const queued = yield* queue.enqueue(request({ idempotencyKey: "a-key" }))
        const paused = yield* queue.enqueue(request({ workflow: "approval" }))
        yield* queue.claim({ workerId: "w1", limit: 1, leaseSeconds: 60, workflows: ["approval"] })
        yield* queue.finish(paused.taskId, "w1", { _tag: "paused", ticket: "t-1", reason: "approve" })
        const running = yield* queue.enqueue(request({ workflow: "long" }))
        yield* queue.claim({ workerId: "w2", limit: 1, leaseSeconds: 60, workflows: ["long"] })
        const before = yield* Effect.forEach([queued, paused, running], (t) => queue.get(A, t.taskId))

        const never = "never-used-task"
        const sameFailure = <X, E>(id: string, f: (taskId: string) => Effect.Effect<X, E>) =>
          Effect.gen(function*() {
            const theirs = yield* Effect.flip(f(id))
            const none = yield* Effect.flip(f(never))
            expect(TenantIsolation.shape(theirs, id)).toEqual(TenantIsolation.shape(none, never))
            expect(theirs).toMatchObject({ _tag: "TaskNotFound", tenantId: B })
          })
        for (const task of before) {
          yield* sameFailure(task.taskId, (id) => queue.get(B, id))
          yield* sameFailure(task.taskId, (id) => queue.cancel(B, id))
          yield* sameFailure(task.taskId, (id) => queue.respond(B, id, { approved: true }))
        }
        expect(yield* queue.list(B)).toEqual([])
        expect(yield* queue.list(B, { seriesId: paused.taskId })).toEqual([])
        expect(yield* queue.list(B, { status: "paused" })).toEqual([])
        // Nothing of A's changed: no cancel, no response, no wake-up of the paused task.
        expect(yield* Effect.forEach(before, (t) => queue.get(A, t.taskId))).toEqual(before)
        expect(yield* queue.claim({ workerId: "w3", limit: 10, leaseSeconds: 60 })).toMatchObject([{ taskId: queued.taskId }])
        // B's idempotency key space is its own: A's key gives B a new task.
        const theirs = yield* queue.enqueue(request({ tenant: tenantB, idempotencyKey: "a-key" }))
        expect(theirs.taskId).not.toBe(queued.taskId)
        expect((yield* queue.list(B)).map((t) => t.taskId)).toEqual([theirs.taskId])
      }))

    test("a request the queue cannot honour is refused with InvalidTask", (queue) =>
      Effect.gen(function*() {
        expect(yield* Effect.flip(queue.enqueue(request({ repeatIntervalSeconds: 0 })))).toMatchObject({ _tag: "InvalidTask" })
        expect(yield* Effect.flip(queue.enqueue(request({ retry: { maxAttempts: 0 } })))).toMatchObject({ _tag: "InvalidTask" })
        expect(yield* Effect.flip(queue.enqueue(request({ workflow: " " })))).toMatchObject({ _tag: "InvalidTask" })
        expect(yield* queue.list(A)).toEqual([])
      }))

}

/** Claims, leases and their takeover, release. */
const claiming = (test: Test): void => {
    test("claim leases a due task to one worker; heartbeat extends the lease; finish completes it", (queue) =>
      Effect.gen(function*() {
        const task = yield* queue.enqueue(request())
        const [claimed, ...rest] = yield* queue.claim({ workerId: "w1", limit: 5, leaseSeconds: 10 })
        expect(rest).toEqual([])
        expect(claimed).toMatchObject({ taskId: task.taskId, status: "running", workerId: "w1", leaseExpiresAt: 10 * SECOND })
        expect(yield* queue.claim({ workerId: "w2", limit: 5, leaseSeconds: 10 })).toEqual([])

        yield* adjust(8 * SECOND)
        expect(yield* queue.heartbeat(task.taskId, "w1", 10)).toMatchObject({ leaseExpiresAt: 18 * SECOND })
        yield* adjust(8 * SECOND)
        // 16 s after the claim: the first lease would have expired, the extended one holds.
        expect(yield* queue.claim({ workerId: "w2", limit: 5, leaseSeconds: 10 })).toEqual([])
        expect(yield* Effect.flip(queue.heartbeat(task.taskId, "w2", 10))).toMatchObject({ _tag: "LeaseLost", workerId: "w2" })
        expect(yield* Effect.flip(queue.finish(task.taskId, "w2", { _tag: "completed", output: 1 }))).toMatchObject({ _tag: "LeaseLost" })

        const done = yield* queue.finish(task.taskId, "w1", { _tag: "completed", output: { verdict: "ok" } })
        expect(done).toMatchObject({ status: "completed", outcome: { _tag: "completed", output: { verdict: "ok" } } })
        expect(done.workerId).toBeUndefined()
        expect(yield* queue.get(A, task.taskId)).toEqual(done)
        expect(yield* Effect.flip(queue.heartbeat(task.taskId, "w1", 10))).toMatchObject({ _tag: "LeaseLost" })
        expect(yield* Effect.flip(queue.finish(task.taskId, "w1", { _tag: "failed", errorTag: "X", error: "late" }))).toMatchObject({ _tag: "LeaseLost" })
        expect((yield* queue.get(A, task.taskId)).status).toBe("completed")
      }))

    test("concurrent claimers never get the same task", (queue) =>
      Effect.gen(function*() {
        const tasks = yield* Effect.forEach(Array.from({ length: 30 }, (_, i) => i), (i) => queue.enqueue(request({ input: i })))
        const seen: Array<string> = []
        for (let round = 0; round < 10 && seen.length < tasks.length; round++) {
          const batches = yield* Effect.forEach(
            ["w1", "w2", "w3", "w4", "w5"],
            (workerId) => queue.claim({ workerId, limit: 2, leaseSeconds: 60 }),
            { concurrency: "unbounded" }
          )
          for (const batch of batches) seen.push(...batch.map((t) => t.taskId))
        }
        expect(new Set(seen).size).toBe(seen.length)
        expect([...seen].sort()).toEqual(tasks.map((t) => t.taskId).sort())
        const running = yield* queue.list(A, { status: "running" })
        expect(running).toHaveLength(30)
      }))

    test("a task due in the future is not claimed early", (queue) =>
      Effect.gen(function*() {
        const later = yield* queue.enqueue(request({ runAt: 60 * SECOND }))
        const now = yield* queue.enqueue(request())
        expect((yield* queue.claim({ workerId: "w1", limit: 10, leaseSeconds: 600 })).map((t) => t.taskId)).toEqual([now.taskId])
        yield* adjust(59 * SECOND)
        expect(yield* queue.claim({ workerId: "w1", limit: 10, leaseSeconds: 10 })).toEqual([])
        expect(yield* queue.claim({ workerId: "w1", limit: 10, leaseSeconds: 10, now: 59_999 })).toEqual([])
        yield* adjust(1 * SECOND)
        expect((yield* queue.claim({ workerId: "w1", limit: 10, leaseSeconds: 10 })).map((t) => t.taskId)).toEqual([later.taskId])
      }))

    test("a claim restricted to some workflows leaves the others queued", (queue) =>
      Effect.gen(function*() {
        const review = yield* queue.enqueue(request())
        const other = yield* queue.enqueue(request({ workflow: "other" }))
        expect(yield* queue.claim({ workerId: "w1", limit: 10, leaseSeconds: 10, workflows: [] })).toEqual([])
        expect((yield* queue.claim({ workerId: "w1", limit: 10, leaseSeconds: 10, workflows: ["other", "third"] })).map((t) => t.taskId))
          .toEqual([other.taskId])
        expect(yield* queue.get(A, review.taskId)).toMatchObject({ status: "queued" })
        expect((yield* queue.claim({ workerId: "w2", limit: 10, leaseSeconds: 10 })).map((t) => t.taskId)).toEqual([review.taskId])
      }))

    test("a task whose lease expired is taken over by another worker, with the same run id", (queue) =>
      Effect.gen(function*() {
        const task = yield* queue.enqueue(request())
        yield* queue.claim({ workerId: "w1", limit: 1, leaseSeconds: 10 })
        yield* adjust(10 * SECOND)
        const [taken] = yield* queue.claim({ workerId: "w2", limit: 1, leaseSeconds: 10 })
        expect(taken).toMatchObject({ taskId: task.taskId, workerId: "w2", runId: task.runId, status: "running" })
        expect(yield* Effect.flip(queue.heartbeat(task.taskId, "w1", 10))).toMatchObject({ _tag: "LeaseLost", workerId: "w1" })
        expect(yield* Effect.flip(queue.finish(task.taskId, "w1", { _tag: "completed", output: null }))).toMatchObject({ _tag: "LeaseLost" })
        expect(yield* queue.finish(task.taskId, "w2", { _tag: "completed", output: null })).toMatchObject({ status: "completed" })
      }))

    test("release gives the task back, due now", (queue) =>
      Effect.gen(function*() {
        const task = yield* queue.enqueue(request())
        yield* queue.claim({ workerId: "w1", limit: 1, leaseSeconds: 60 })
        const released = yield* queue.release(task.taskId, "w1")
        expect(released).toMatchObject({ status: "queued" })
        expect(released.workerId).toBeUndefined()
        expect(yield* Effect.flip(queue.release(task.taskId, "w1"))).toMatchObject({ _tag: "LeaseLost" })
        expect((yield* queue.claim({ workerId: "w2", limit: 1, leaseSeconds: 60 })).map((t) => t.workerId)).toEqual(["w2"])
      }))

}

/** Expiry and timeouts. */
const expiry = (test: Test): void => {
    test("a queued task expires after a day, counted from when it is due", (queue) =>
      Effect.gen(function*() {
        const now = yield* queue.enqueue(request())
        const tomorrow = yield* queue.enqueue(request({ runAt: DAY }))
        yield* adjust(DAY - 1)
        expect(yield* queue.expire()).toBe(0)
        yield* adjust(1)
        expect((yield* queue.claim({ workerId: "w1", limit: 10, leaseSeconds: 10 })).map((t) => t.taskId)).toEqual([tomorrow.taskId])
        expect(yield* queue.get(A, now.taskId)).toMatchObject({ status: "expired" })
        const short = yield* queue.enqueue(request({ expiresAfterSeconds: 5 }))
        yield* adjust(5 * SECOND)
        expect(yield* queue.expire()).toBe(1)
        expect(yield* queue.get(A, short.taskId)).toMatchObject({ status: "expired" })
      }))

    test("a running task past its timeout whose worker is gone fails", (queue) =>
      Effect.gen(function*() {
        const task = yield* queue.enqueue(request({ timeoutSeconds: 30 }))
        const [claimed] = yield* queue.claim({ workerId: "w1", limit: 1, leaseSeconds: 10 })
        expect(claimed?.deadlineAt).toBe(30 * SECOND)
        yield* adjust(15 * SECOND)
        // Taken over after 15 s: the deadline still counts from the first claim.
        const [taken] = yield* queue.claim({ workerId: "w2", limit: 1, leaseSeconds: 10 })
        expect(taken?.deadlineAt).toBe(30 * SECOND)
        yield* adjust(30 * SECOND)
        expect(yield* queue.claim({ workerId: "w3", limit: 1, leaseSeconds: 10 })).toEqual([])
        expect(yield* queue.get(A, task.taskId)).toMatchObject({ status: "failed", outcome: { _tag: "failed", errorTag: "TaskTimeout" } })
      }))

    test("an abandoned task past its deadline is retried under its policy, resuming its run, as a worker's timeout is", (queue) =>
      Effect.gen(function*() {
        const task = yield* queue.enqueue(request({ timeoutSeconds: 30, retry: { maxAttempts: 2, backoffSeconds: 5 } }))
        yield* queue.claim({ workerId: "w1", limit: 1, leaseSeconds: 10 })
        yield* adjust(30 * SECOND)
        expect(yield* queue.expire()).toBe(1)
        const retried = yield* queue.get(A, task.taskId)
        expect(retried).toMatchObject({
          status: "queued",
          attempts: 1,
          runId: task.runId,
          runAt: 35 * SECOND,
          outcome: { _tag: "failed", errorTag: "TaskTimeout", resumable: true }
        })
        expect(retried.workerId).toBeUndefined()
        expect(yield* queue.expire()).toBe(0)
        yield* adjust(5 * SECOND)
        // The retry's deadline counts from its own claim.
        const [again] = yield* queue.claim({ workerId: "w2", limit: 1, leaseSeconds: 10 })
        expect(again).toMatchObject({ taskId: task.taskId, runId: task.runId, deadlineAt: 65 * SECOND })
        yield* adjust(30 * SECOND)
        expect(yield* queue.claim({ workerId: "w3", limit: 1, leaseSeconds: 10 })).toEqual([])
        expect(yield* queue.get(A, task.taskId)).toMatchObject({ status: "failed", attempts: 2 })
      }))

    test("a repeating task goes on after an occurrence that timed out abandoned, or expired unclaimed", (queue) =>
      Effect.gen(function*() {
        const abandoned = yield* queue.enqueue(request({ repeatIntervalSeconds: 60, timeoutSeconds: 30 }))
        yield* queue.claim({ workerId: "w1", limit: 1, leaseSeconds: 10 })
        yield* adjust(30 * SECOND)
        expect(yield* queue.expire()).toBe(1)
        const series = yield* queue.list(A, { seriesId: abandoned.taskId })
        expect(series.map((t) => [t.occurrence, t.status, t.runAt])).toEqual([[2, "queued", 60 * SECOND], [1, "failed", 0]])

        const missed = yield* queue.enqueue(request({ repeatIntervalSeconds: 60, expiresAfterSeconds: 20, runAt: 40 * SECOND }))
        yield* adjust(30 * SECOND)
        // 60 s: the first series' occurrence is due (not stale); the second's, due at 40 s, expired at 60 s.
        expect(yield* queue.expire()).toBe(1)
        const next = yield* queue.list(A, { seriesId: missed.taskId })
        expect(next.map((t) => [t.occurrence, t.status, t.runAt])).toEqual([[2, "queued", 100 * SECOND], [1, "expired", 40 * SECOND]])
        // Expiring again changes nothing: one next occurrence each.
        expect(yield* queue.expire()).toBe(0)
        expect(yield* queue.list(A, { seriesId: missed.taskId })).toHaveLength(2)
      }))
}

/** Idempotency keys, cancel, human responses. */
const lifecycle = (test: Test): void => {
    test("an idempotency key returns the existing task, per tenant", (queue) =>
      Effect.gen(function*() {
        const first = yield* queue.enqueue(request({ idempotencyKey: "invoice-42" }))
        const again = yield* queue.enqueue(request({ idempotencyKey: "invoice-42", input: "different" }))
        expect(again).toEqual(first)
        const racing = yield* Effect.forEach([1, 2, 3, 4], () => queue.enqueue(request({ idempotencyKey: "race" })), { concurrency: "unbounded" })
        expect(new Set(racing.map((t) => t.taskId)).size).toBe(1)
        const otherTenant = yield* queue.enqueue(request({ idempotencyKey: "invoice-42", tenant: tenantB }))
        expect(otherTenant.taskId).not.toBe(first.taskId)
        expect(yield* queue.list(A)).toHaveLength(2)
      }))

    test("cancel stops a queued, paused or running task; a finished one cannot be cancelled", (queue) =>
      Effect.gen(function*() {
        const queued = yield* queue.enqueue(request())
        expect(yield* queue.cancel(A, queued.taskId)).toMatchObject({ status: "cancelled" })
        expect(yield* queue.claim({ workerId: "w1", limit: 10, leaseSeconds: 10 })).toEqual([])
        expect(yield* Effect.flip(queue.cancel(A, queued.taskId))).toMatchObject({ _tag: "InvalidTaskState", status: "cancelled" })
        expect(yield* Effect.flip(queue.cancel(A, "nope"))).toMatchObject({ _tag: "TaskNotFound" })

        const running = yield* queue.enqueue(request())
        yield* queue.claim({ workerId: "w1", limit: 10, leaseSeconds: 10 })
        yield* queue.cancel(A, running.taskId)
        expect(yield* Effect.flip(queue.heartbeat(running.taskId, "w1", 10))).toMatchObject({ _tag: "LeaseLost" })
        yield* adjust(20 * SECOND)
        expect(yield* queue.claim({ workerId: "w2", limit: 10, leaseSeconds: 10 })).toEqual([])
        expect(yield* queue.get(A, running.taskId)).toMatchObject({ status: "cancelled" })
      }))

    test("a paused task takes a response and is queued again with it", (queue) =>
      Effect.gen(function*() {
        const task = yield* queue.enqueue(request())
        expect(yield* Effect.flip(queue.respond(A, task.taskId, { approved: true }))).toMatchObject({ _tag: "InvalidTaskState", status: "queued" })
        yield* queue.claim({ workerId: "w1", limit: 1, leaseSeconds: 10 })
        const paused = yield* queue.finish(task.taskId, "w1", { _tag: "paused", ticket: "t-1", reason: "approve" })
        expect(paused).toMatchObject({ status: "paused", outcome: { _tag: "paused", ticket: "t-1" } })
        yield* adjust(2 * DAY)
        // A paused task waits for its human, however long: it does not expire.
        expect(yield* queue.expire()).toBe(0)
        const responded = yield* queue.respond(A, task.taskId, { approved: true }, { respondedBy: "ann@acme" })
        expect(responded).toMatchObject({ status: "queued", response: { approved: true }, respondedBy: "ann@acme", runAt: 2 * DAY, runId: task.runId })
        const [claimed] = yield* queue.claim({ workerId: "w2", limit: 1, leaseSeconds: 10 })
        expect(claimed).toMatchObject({ taskId: task.taskId, response: { approved: true }, respondedBy: "ann@acme" })
        const done = yield* queue.finish(task.taskId, "w2", { _tag: "completed", output: "approved" })
        expect(done.response).toBeUndefined()
        expect(done.respondedBy).toBeUndefined()
        const reconcile = yield* queue.enqueue(request())
        yield* queue.claim({ workerId: "w1", limit: 1, leaseSeconds: 10 })
        expect(yield* queue.finish(reconcile.taskId, "w1", { _tag: "needs_reconciliation", stepKey: "tool:1", tool: "transfer" }))
          .toMatchObject({ status: "paused" })
      }))
}

/** Runs that wait for a signal: the task's wake-ups. */
const signalWaits = (test: Test): void => {
    test("a task whose run waits for a signal: paused, or queued for the wait's deadline; wake makes it due now", (queue) =>
      Effect.gen(function*() {
        const waiting = yield* queue.enqueue(request())
        expect(yield* Effect.flip(queue.wake(A, waiting.taskId))).toMatchObject({ _tag: "InvalidTaskState", status: "queued" })
        yield* queue.claim({ workerId: "w1", limit: 1, leaseSeconds: 10 })
        yield* queue.finish(waiting.taskId, "w1", { _tag: "paused", ticket: "signal:signal:0", reason: "waiting for signal" })
        expect(yield* Effect.flip(queue.wake(tenantB.tenantId, waiting.taskId))).toMatchObject({ _tag: "TaskNotFound" })
        yield* adjust(2 * DAY)
        const woken = yield* queue.wake(A, waiting.taskId)
        expect(woken).toMatchObject({ status: "queued", runAt: 2 * DAY, runId: waiting.runId })
        expect(woken.response).toBeUndefined()
        expect((yield* queue.claim({ workerId: "w2", limit: 1, leaseSeconds: 10 })).map((t) => t.taskId)).toEqual([waiting.taskId])
        yield* queue.finish(waiting.taskId, "w2", { _tag: "completed", output: "decided" })

        // A wait with a deadline: queued for it, claimed only then, unless woken sooner.
        const timed = yield* queue.enqueue(request())
        yield* queue.claim({ workerId: "w1", limit: 1, leaseSeconds: 10 })
        const deadline = 2 * DAY + 60 * SECOND
        const held = yield* queue.finish(timed.taskId, "w1", { _tag: "paused", ticket: "signal:signal:0", reason: "waiting", wakeAt: deadline })
        expect(held).toMatchObject({ status: "queued", runAt: deadline, outcome: { _tag: "paused", wakeAt: deadline } })
        expect(yield* queue.claim({ workerId: "w2", limit: 1, leaseSeconds: 10 })).toEqual([])
        yield* adjust(60 * SECOND)
        expect((yield* queue.claim({ workerId: "w2", limit: 1, leaseSeconds: 10 })).map((t) => t.taskId)).toEqual([timed.taskId])
        yield* queue.finish(timed.taskId, "w2", { _tag: "paused", ticket: "signal:signal:0", reason: "waiting", wakeAt: deadline + DAY })
        expect(yield* queue.wake(A, timed.taskId)).toMatchObject({ status: "queued", runAt: deadline })
        // A task scheduled for later, not waiting for a signal, is not made due by a wake.
        const later = yield* queue.enqueue(request({ runAt: 10 * DAY }))
        expect(yield* Effect.flip(queue.wake(A, later.taskId))).toMatchObject({ _tag: "InvalidTaskState" })
      }))

    test("a wake-up while the task runs is kept for its finish: finished paused, the task is queued at once", (queue) =>
      Effect.gen(function*() {
        const paused = { _tag: "paused", ticket: "signal:signal:0", reason: "waiting for signal" } as const
        const task = yield* queue.enqueue(request())
        yield* queue.claim({ workerId: "w1", limit: 1, leaseSeconds: 10 })
        yield* adjust(SECOND)
        expect(yield* queue.wake(A, task.taskId)).toMatchObject({ status: "running", workerId: "w1", wakePending: true })
        expect(yield* queue.heartbeat(task.taskId, "w1", 10)).toMatchObject({ wakePending: true })
        yield* adjust(SECOND)
        const queued = yield* queue.finish(task.taskId, "w1", paused)
        expect(queued).toMatchObject({ status: "queued", runAt: 2 * SECOND, outcome: paused })
        expect(queued.wakePending).toBeUndefined()
        // Used up: the next execution that pauses stays paused.
        const [again] = yield* queue.claim({ workerId: "w2", limit: 1, leaseSeconds: 10 })
        expect(again?.wakePending).toBeUndefined()
        expect(yield* queue.finish(task.taskId, "w2", paused)).toMatchObject({ status: "paused" })

        // A wait with a deadline is queued now, not at the deadline; a task that completes, or is released, drops it.
        const timed = yield* queue.enqueue(request())
        yield* queue.claim({ workerId: "w1", limit: 1, leaseSeconds: 10 })
        yield* queue.wake(A, timed.taskId)
        expect(yield* queue.finish(timed.taskId, "w1", { ...paused, wakeAt: 10 * DAY })).toMatchObject({ status: "queued", runAt: 2 * SECOND })
        yield* queue.claim({ workerId: "w1", limit: 1, leaseSeconds: 10 })
        yield* queue.wake(A, timed.taskId)
        const released = yield* queue.release(timed.taskId, "w1")
        expect(released.wakePending).toBeUndefined()
        yield* queue.claim({ workerId: "w1", limit: 1, leaseSeconds: 10 })
        yield* queue.wake(A, timed.taskId)
        const completed = yield* queue.finish(timed.taskId, "w1", { _tag: "completed", output: null })
        expect(completed.status).toBe("completed")
        expect(completed.wakePending).toBeUndefined()
        // A call in doubt waits for a person whatever woke the run.
        const doubt = yield* queue.enqueue(request())
        yield* queue.claim({ workerId: "w1", limit: 1, leaseSeconds: 10 })
        yield* queue.wake(A, doubt.taskId)
        expect(yield* queue.finish(doubt.taskId, "w1", { _tag: "needs_reconciliation", stepKey: "tool:0", tool: "charge" })).toMatchObject({ status: "paused" })
        expect(yield* Effect.flip(queue.wake(tenantB.tenantId, doubt.taskId))).toMatchObject({ _tag: "TaskNotFound" })
      }))

}

/** Repeating tasks and retry policies. */
const repeatsAndRetries = (test: Test): void => {
    test("a repeating task enqueues its next occurrence exactly once per finish", (queue) =>
      Effect.gen(function*() {
        const first = yield* queue.enqueue(request({ repeatIntervalSeconds: 60 }))
        const runs: Array<Task> = []
        for (let tick = 0; tick < 5; tick++) {
          const claimed = yield* queue.claim({ workerId: "w1", limit: 10, leaseSeconds: 10 })
          expect(claimed).toHaveLength(1)
          const task = claimed[0]!
          runs.push(task)
          yield* queue.finish(task.taskId, "w1", tick === 2 ? { _tag: "failed", errorTag: "Boom", error: "boom" } : { _tag: "completed", output: tick })
          // A finish that comes twice (a retried request) neither succeeds nor schedules twice.
          expect(yield* Effect.flip(queue.finish(task.taskId, "w1", { _tag: "completed", output: tick }))).toMatchObject({ _tag: "LeaseLost" })
          expect(yield* queue.claim({ workerId: "w1", limit: 10, leaseSeconds: 10 })).toEqual([])
          yield* adjust(60 * SECOND)
        }
        expect(runs.map((t) => t.runAt)).toEqual([0, 60, 120, 180, 240].map((s) => s * SECOND))
        expect(runs.map((t) => t.occurrence)).toEqual([1, 2, 3, 4, 5])
        expect(new Set(runs.map((t) => t.runId)).size).toBe(5)
        const series = yield* queue.list(A, { seriesId: first.taskId })
        expect(series).toHaveLength(6)
        expect(series.filter((t) => t.status === "queued").map((t) => t.runAt)).toEqual([300 * SECOND])
        expect(series.filter((t) => t.status === "failed")).toHaveLength(1)
        // Cancelling the pending occurrence ends the series.
        const pending = series.find((t) => t.status === "queued")!
        yield* queue.cancel(A, pending.taskId)
        yield* adjust(600 * SECOND)
        expect(yield* queue.claim({ workerId: "w1", limit: 10, leaseSeconds: 10 })).toEqual([])
      }))

    test("a repeating task that ran late skips the missed ticks", (queue) =>
      Effect.gen(function*() {
        const first = yield* queue.enqueue(request({ repeatIntervalSeconds: 60 }))
        yield* queue.claim({ workerId: "w1", limit: 1, leaseSeconds: 600 })
        yield* adjust(150 * SECOND)
        yield* queue.finish(first.taskId, "w1", { _tag: "completed", output: null })
        const next = (yield* queue.list(A, { seriesId: first.taskId, status: "queued" }))
        expect(next.map((t) => t.runAt)).toEqual([180 * SECOND])
      }))

    test("no retry without a policy; with one, a failure is queued again after a backoff under a new run id (its own when its run did not end)", (queue) =>
      Effect.gen(function*() {
        const plain = yield* queue.enqueue(request())
        yield* queue.claim({ workerId: "w1", limit: 1, leaseSeconds: 10 })
        expect(yield* queue.finish(plain.taskId, "w1", { _tag: "failed", errorTag: "Boom", error: "boom" })).toMatchObject({ status: "failed", attempts: 1 })

        const retried = yield* queue.enqueue(request({ retry: { maxAttempts: 3, backoffSeconds: 5 } }))
        yield* queue.claim({ workerId: "w1", limit: 1, leaseSeconds: 10 })
        const again = yield* queue.finish(retried.taskId, "w1", { _tag: "failed", errorTag: "Boom", error: "first" })
        expect(again).toMatchObject({ status: "queued", attempts: 1, runAt: 5 * SECOND, runId: `task:${retried.taskId}:attempt-2` })
        expect(yield* queue.claim({ workerId: "w1", limit: 1, leaseSeconds: 10 })).toEqual([])
        yield* adjust(5 * SECOND)
        yield* queue.claim({ workerId: "w1", limit: 1, leaseSeconds: 10 })
        const third = yield* queue.finish(retried.taskId, "w1", { _tag: "failed", errorTag: "Boom", error: "second" })
        expect(third).toMatchObject({ status: "queued", attempts: 2, runAt: 15 * SECOND, runId: `task:${retried.taskId}:attempt-3` })
        yield* adjust(10 * SECOND)
        yield* queue.claim({ workerId: "w1", limit: 1, leaseSeconds: 10 })
        expect(yield* queue.finish(retried.taskId, "w1", { _tag: "failed", errorTag: "Boom", error: "third" }))
          .toMatchObject({ status: "failed", attempts: 3, outcome: { error: "third" } })

        // A run that did not end (a timeout, a store error): the retry resumes it, under the same run id.
        const resumed = yield* queue.enqueue(request({ retry: { maxAttempts: 2, backoffSeconds: 5 } }))
        yield* queue.claim({ workerId: "w1", limit: 1, leaseSeconds: 10 })
        expect(yield* queue.finish(resumed.taskId, "w1", { _tag: "failed", errorTag: "TaskTimeout", error: "late", resumable: true }))
          .toMatchObject({ status: "queued", attempts: 1, runId: `task:${resumed.taskId}`, outcome: { resumable: true } })
        // A budget stop is final, whatever the policy.
        const spent = yield* queue.enqueue(request({ retry: { maxAttempts: 5 } }))
        yield* queue.claim({ workerId: "w1", limit: 1, leaseSeconds: 10 })
        expect(yield* queue.finish(spent.taskId, "w1", { _tag: "failed", errorTag: "BudgetExceeded", error: "spent $0.45 of its $0.4 budget" }))
          .toMatchObject({ status: "failed", attempts: 1 })
        // Without a policy a timeout ends the task.
        const late = yield* queue.enqueue(request())
        yield* queue.claim({ workerId: "w1", limit: 1, leaseSeconds: 10 })
        expect(yield* queue.finish(late.taskId, "w1", { _tag: "failed", errorTag: "TaskTimeout", error: "late", resumable: true }))
          .toMatchObject({ status: "failed", attempts: 1 })
      }))

    test("a store error is retried without a policy, resuming the run, ten executions in all", (queue) =>
      Effect.gen(function*() {
        const task = yield* queue.enqueue(request())
        const storeError = { _tag: "failed", errorTag: "StoreError", error: "database is locked", resumable: true } as const
        const waits: Array<number> = []
        for (let attempt = 1; attempt < 10; attempt++) {
          const [claimed] = yield* queue.claim({ workerId: "w1", limit: 1, leaseSeconds: 10 })
          expect(claimed?.taskId).toBe(task.taskId)
          const now = yield* Clock.currentTimeMillis
          const next = yield* queue.finish(task.taskId, "w1", storeError)
          expect(next).toMatchObject({ status: "queued", attempts: attempt, runId: task.runId })
          waits.push((next.runAt - now) / SECOND)
          yield* adjust(next.runAt - now)
        }
        // The default backoff, doubled each time: 1 + 2 + ... + 256 seconds in all.
        expect(waits).toEqual([1, 2, 4, 8, 16, 32, 64, 128, 256])
        yield* queue.claim({ workerId: "w1", limit: 1, leaseSeconds: 10 })
        expect(yield* queue.finish(task.taskId, "w1", storeError)).toMatchObject({ status: "failed", attempts: 10, runId: task.runId })
      }))

}

/** Listeners woken by the changes that make work. */
const wakeups = (test: Test): void => {
    test("enqueue, release, respond and finish wake the queue's listeners; claim and heartbeat do not", (queue) =>
      Effect.gen(function*() {
        const pull = yield* Stream.toPull(queue.wakeups)
        /**
         * Whether a wake-up comes within `millis` of real time (the stream coalesces them). A wake-up that should come
         * gets a generous window (a notification crosses a database server, which may be busy); one that should not
         * gets a short one.
         */
        const wokenWithin = (millis: number) =>
          TestServices.provideLive(Effect.map(Effect.either(Effect.timeout(pull, Duration.millis(millis))), (r) => r._tag === "Right"))
        const woken = wokenWithin(5_000)
        const quiet = Effect.map(wokenWithin(300), (w) => !w)
        // The stream subscribes once it is first pulled (on Postgres it also starts listening on a connection, and
        // what is notified before that is not delivered): enqueue until a wake-up comes through, which proves it
        // listens, then let every straggler of the warm-up arrive (on a loaded server a notice can take longer than
        // an attempt's wait, so several may be on their way): until a second passes without one.
        let listening = false
        for (let attempt = 0; attempt < 30 && !listening; attempt++) {
          yield* queue.enqueue(request({ workflow: "warm-up" }))
          listening = yield* wokenWithin(500)
        }
        expect(listening).toBe(true)
        for (let straggler = 0; straggler < 30 && (yield* wokenWithin(1_000)); straggler++) {
          // drained
        }
        const task = yield* queue.enqueue(request())
        expect(yield* woken).toBe(true)
        yield* queue.claim({ workerId: "w1", limit: 1, leaseSeconds: 10, workflows: ["review"] })
        yield* queue.heartbeat(task.taskId, "w1", 10)
        expect(yield* quiet).toBe(true)
        yield* queue.release(task.taskId, "w1")
        expect(yield* woken).toBe(true)
        yield* queue.claim({ workerId: "w1", limit: 1, leaseSeconds: 10, workflows: ["review"] })
        yield* queue.finish(task.taskId, "w1", { _tag: "paused", ticket: "t", reason: "r" })
        expect(yield* woken).toBe(true)
        yield* queue.respond(A, task.taskId, { ok: true })
        expect(yield* woken).toBe(true)
      }).pipe(Effect.scoped))
}

/** Workflow versions (issue 19): a task is pinned by its first claim; only claimers that accept its version continue it. */
const versions = (test: Test): void => {
  test("a claim pins the task to the claimer's start version; after it, only claimers accepting that version take it over", (queue) =>
    Effect.gen(function*() {
      const v1 = [{ workflow: "review", start: "1", accepts: ["1"] }]
      const v2 = [{ workflow: "review", start: "2", accepts: ["2"] }]
      const old = yield* queue.enqueue(request())
      const [claimed] = yield* queue.claim({ workerId: "old", limit: 1, leaseSeconds: 10, versions: v1 })
      expect(claimed).toMatchObject({ taskId: old.taskId, version: "1" })
      // The old worker dies; its lease expires. A new worker does not take the task over; an old one does.
      yield* adjust(10 * SECOND)
      const fresh = yield* queue.enqueue(request())
      const taken = yield* queue.claim({ workerId: "new", limit: 10, leaseSeconds: 10, versions: v2 })
      expect(taken.map((t) => [t.taskId, t.version])).toEqual([[fresh.taskId, "2"]])
      expect(yield* queue.get(A, old.taskId)).toMatchObject({ status: "running", workerId: "old", version: "1" })
      const [again] = yield* queue.claim({ workerId: "old-2", limit: 10, leaseSeconds: 10, versions: v1 })
      expect(again).toMatchObject({ taskId: old.taskId, workerId: "old-2", version: "1" })
      // Released (a paused task answered, a shutdown), it stays pinned; a claimer accepting both versions takes it.
      yield* queue.release(old.taskId, "old-2")
      expect(yield* queue.claim({ workerId: "new", limit: 10, leaseSeconds: 10, versions: v2 })).toEqual([])
      const both = [{ workflow: "review", start: "2", accepts: ["1", "2"] }]
      const [bridged] = yield* queue.claim({ workerId: "bridge", limit: 10, leaseSeconds: 10, versions: both })
      expect(bridged).toMatchObject({ taskId: old.taskId, version: "1" })
      // A workflow a claimer lists no versions for is claimed whatever its version, and stays unpinned.
      const other = yield* queue.enqueue(request({ workflow: "other" }))
      const [any] = yield* queue.claim({ workerId: "new", limit: 10, leaseSeconds: 10, versions: v2 })
      expect(any).toMatchObject({ taskId: other.taskId })
      expect(any!.version).toBeUndefined()
    }))
}

/**
 * Registers the contract tests for the queue that `makeLayer` builds. `makeLayer` is called once per test.
 */
export const suite = (name: string, makeLayer: () => Layer.Layer<TaskQueue, unknown>): void => {
  const test: Test = (title, body) => it.effect(title, () => Effect.provide(Effect.flatMap(TaskQueue, body), makeLayer()))

  describe(`TaskQueue contract: ${name}`, () => {
    enqueueing(test)
    claiming(test)
    expiry(test)
    lifecycle(test)
    signalWaits(test)
    repeatsAndRetries(test)
    wakeups(test)
    versions(test)
  })
}
