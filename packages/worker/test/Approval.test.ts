// A task whose run waits for a tool call's approval, driven by a worker on SQLite: the task pauses with the approval's
// id; a response alone decides nothing; the decision itself (made anywhere: here the kernel, as `artana approve` does)
// queues the task again, and a worker continues the run with it: the approved call runs once, with no response. A
// decision or a signal that comes while the worker still holds the task is kept for the task's finish (`wakePending`).
import { afterAll, describe, expect, it } from "@effect/vitest"
import { Deferred, Effect, Fiber, Layer, Predicate, Schema } from "effect"
import { Kernel, TaskQueue, Tool, ToolRegistry, Workflow } from "@artana/core"
import { ScriptedModel } from "@artana/core/testing"
import { SqliteStore } from "@artana/store-sqlite"
import { ArtanaSession, Worker } from "@artana/worker"
import { cleanup, eventually, tempDb, tenant } from "./helpers.js"
import { approval } from "./signals/shared.js"

afterAll(cleanup)

const paid: Array<unknown> = []
const payout = Tool.make({
  name: "payout",
  description: "Pays out",
  parameters: Schema.Struct({ amount: Schema.Number }),
  needsApproval: true,
  handler: (args) =>
    Effect.sync(() => {
      paid.push(args)
      return "paid"
    })
})
const pay = Workflow.make({
  name: "pay",
  input: Schema.Struct({ amount: Schema.Number }),
  output: Schema.Unknown,
  run: ({ amount }, ctx) => ctx.tool(payout, { amount })
})

const layer = () => {
  const ports = Layer.mergeAll(SqliteStore.layer({ filename: tempDb() }).pipe(Layer.orDie), ScriptedModel.layer([]), ToolRegistry.layer([payout]))
  return Layer.provideMerge(ArtanaSession.layer, Layer.provideMerge(Kernel.layer({ workflows: [pay] }), ports))
}

describe("a worker's task waiting for an approval", () => {
  it.live("pauses with the approval; the decision alone lets a worker continue the run", () =>
    Effect.gen(function*() {
      const session = yield* ArtanaSession.ArtanaSession
      const worker = yield* Effect.fork(Worker.run({ workflows: [pay], concurrency: 1, pollInterval: "20 millis", leaseSeconds: 30, workerId: "w1" }))
      const wait = (taskId: string) => session.waitForResult(tenant.tenantId, taskId, { timeout: "20 seconds", pollInterval: "20 millis" })
      const taskId = yield* session.submit({ workflow: pay, input: { amount: 70 }, tenant })
      const paused = yield* wait(taskId)
      expect(paused).toMatchObject({ status: "paused", reason: expect.stringContaining('approval of a call to tool "payout"') })
      const approvalId = paused.status === "paused" ? paused.ticket : ""
      // A response is no decision: the task pauses again, the call still waits.
      yield* session.respond(tenant.tenantId, taskId, { approved: true })
      expect(yield* wait(taskId)).toMatchObject({ status: "paused", ticket: approvalId })
      expect(paid).toEqual([])
      // The session's inbox lists the call; its decision (the kernel's, as `artana approve` makes it) is all it takes.
      const inbox = yield* session.approvals({ tenantId: tenant.tenantId })
      expect(inbox.map((a) => [a.approvalId, a.tool, JSON.parse(a.arguments)])).toEqual([[approvalId, "payout", { amount: 70 }]])
      yield* session.decide({ tenantId: tenant.tenantId, approvalId, approver: "ops", decision: "approve", arguments: { amount: 60 } })
      expect(yield* wait(taskId)).toMatchObject({ status: "completed", output: "paid" })
      expect(paid).toEqual([{ amount: 60 }])
      yield* Fiber.interrupt(worker)
    }).pipe(Effect.provide(layer())), 60_000)
})

/**
 * The layer over `workflows`, its queue's first `finish` of a paused task held until `gate` opens (`finishing` says it
 * was reached): the window in which the worker still holds the task while its run waits. With `dies`, the worker goes
 * no further once that finish has committed, as a process killed right then: it never looks for a wake-up itself.
 */
const heldFinishLayer = (
  workflows: ReadonlyArray<Workflow.Any>,
  finishing: Deferred.Deferred<void>,
  gate: Deferred.Deferred<void>,
  dies: boolean
) => {
  const store = SqliteStore.layer({ filename: tempDb() }).pipe(Layer.orDie)
  let held = false
  const queue = Layer.effect(
    TaskQueue.TaskQueue,
    Effect.map(TaskQueue.TaskQueue, (queue): TaskQueue.Service => ({
      ...queue,
      finish: (taskId, workerId, outcome) => {
        if (outcome._tag !== "paused" || held) return queue.finish(taskId, workerId, outcome)
        held = true
        const finish = Effect.zipRight(Effect.zipRight(Deferred.succeed(finishing, undefined), Deferred.await(gate)), queue.finish(taskId, workerId, outcome))
        // The worker's finish is uninterruptible: its death is, so the test can stop it.
        return dies ? Effect.zipRight(finish, Effect.interruptible(Effect.never)) : finish
      }
    }))
  ).pipe(Layer.provide(store))
  const ports = Layer.mergeAll(Layer.provideMerge(queue, store), ScriptedModel.layer([]), ToolRegistry.layer([payout]))
  return Layer.provideMerge(ArtanaSession.layer, Layer.provideMerge(Kernel.layer({ workflows }), ports))
}

const startWorker = (workflows: ReadonlyArray<Workflow.Any>, workerId: string) =>
  Effect.fork(Worker.run({ workflows, concurrency: 1, pollInterval: "20 millis", leaseSeconds: 30, workerId }))

/**
 * A run paused while its worker still holds the task, woken then by `wake` (an approval decided, a signal sent); the
 * worker's finish is held meanwhile, and with `dies` that worker goes no further after it, so a second worker (`w2`,
 * started after the finish) must take the task; the task must complete.
 */
const wokenWhileHeld = (
  workflows: ReadonlyArray<Workflow.Any>,
  workflow: Workflow.Any,
  input: unknown,
  wake: (taskId: string) => Effect.Effect<void, unknown, ArtanaSession.ArtanaSession | Kernel.Kernel>,
  dies: boolean
) =>
  Effect.gen(function*() {
    const finishing = yield* Deferred.make<void>()
    const gate = yield* Deferred.make<void>()
    yield* Effect.gen(function*() {
      const session = yield* ArtanaSession.ArtanaSession
      const queue = yield* TaskQueue.TaskQueue
      const first = yield* startWorker(workflows, "w1")
      const taskId = yield* session.submit({ workflow, input, tenant })
      // The run paused; its worker has not finished the task yet (still running).
      yield* Deferred.await(finishing)
      expect(yield* queue.get(tenant.tenantId, taskId)).toMatchObject({ status: "running" })
      yield* wake(taskId)
      yield* Deferred.succeed(gate, undefined)
      const second = dies ? yield* startWorker(workflows, "w2") : undefined
      yield* eventually("the task completed", 20, () => Effect.map(queue.get(tenant.tenantId, taskId), (task) => task.status === "completed"))
      yield* Fiber.interrupt(first)
      if (second !== undefined) yield* Fiber.interrupt(second)
    }).pipe(Effect.provide(heldFinishLayer(workflows, finishing, gate, dies)))
  })

const decideThe = (amount: number) => (_taskId: string) =>
  Effect.gen(function*() {
    const session = yield* ArtanaSession.ArtanaSession
    const pending = (yield* session.approvals({ tenantId: tenant.tenantId })).find((a) => JSON.parse(a.arguments).amount === amount)
    yield* session.decide({ tenantId: tenant.tenantId, approvalId: pending!.approvalId, approver: "ops", decision: "approve" })
  })

const sendDecision = (taskId: string) =>
  Effect.flatMap(Kernel.Kernel, (kernel) =>
    kernel.signal({ tenantId: tenant.tenantId, runId: TaskQueue.runIdOf(taskId), name: "decision", payload: { by: "ops" } }))

describe("a wake-up while the worker still holds the task", () => {
  it.live("an approval decided then is not lost: once the worker has finished the task paused, the run goes on", () =>
    Effect.gen(function*() {
      yield* wokenWhileHeld([pay], pay, { amount: 80 }, decideThe(80), false)
      expect(paid.filter((p) => Predicate.hasProperty(p, "amount") && p.amount === 80)).toHaveLength(1)
    }), 60_000)

  it.live("an approval decided then is not lost when the worker dies right after finishing the task paused", () =>
    Effect.gen(function*() {
      yield* wokenWhileHeld([pay], pay, { amount: 90 }, decideThe(90), true)
      expect(paid.filter((p) => Predicate.hasProperty(p, "amount") && p.amount === 90)).toHaveLength(1)
    }), 60_000)

  it.live("a signal sent then is not lost when the worker dies right after finishing the task paused", () =>
    wokenWhileHeld([approval], approval, {}, sendDecision, true), 60_000)
})

describe("a session without a kernel", () => {
  it.effect("submits, and says what it needs to decide approvals", () =>
    Effect.gen(function*() {
      const session = yield* ArtanaSession.ArtanaSession
      const taskId = yield* session.submit({ workflow: pay, input: { amount: 1 }, tenant })
      expect(taskId).not.toBe("")
      const error = yield* Effect.flip(session.approvals({ tenantId: tenant.tenantId }))
      expect(error._tag).toBe("ApprovalsUnavailable")
      expect(error.message).toContain("provide Kernel.layer")
    }).pipe(Effect.provide(Layer.provideMerge(ArtanaSession.layer, SqliteStore.layer({ filename: tempDb() }).pipe(Layer.orDie)))), 30_000)
})
