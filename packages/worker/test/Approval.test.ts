// A task whose run waits for a tool call's approval, driven by a worker on SQLite: the task pauses with the approval's
// id; a response alone decides nothing; the decision itself (made anywhere: here the kernel, as `artana approve` does)
// queues the task again, and a worker continues the run with it: the approved call runs once, with no response.
import { afterAll, describe, expect, it } from "@effect/vitest"
import { Deferred, Effect, Fiber, Layer, Predicate, Schema } from "effect"
import { Kernel, TaskQueue, Tool, ToolRegistry, Workflow } from "@artana/core"
import { ScriptedModel } from "@artana/core/testing"
import { SqliteStore } from "@artana/store-sqlite"
import { ArtanaSession, Worker } from "@artana/worker"
import { cleanup, eventually, tempDb, tenant } from "./helpers.js"

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
 * The layer, its queue's first `finish` of a paused task held until `gate` opens (`finishing` says it was reached):
 * the window in which the worker still holds the task while its run waits for the approval.
 */
const heldFinishLayer = (finishing: Deferred.Deferred<void>, gate: Deferred.Deferred<void>) => {
  const store = SqliteStore.layer({ filename: tempDb() }).pipe(Layer.orDie)
  let held = false
  const queue = Layer.effect(
    TaskQueue.TaskQueue,
    Effect.map(TaskQueue.TaskQueue, (queue): TaskQueue.Service => ({
      ...queue,
      finish: (taskId, workerId, outcome) => {
        if (outcome._tag !== "paused" || held) return queue.finish(taskId, workerId, outcome)
        held = true
        return Effect.zipRight(Effect.zipRight(Deferred.succeed(finishing, undefined), Deferred.await(gate)), queue.finish(taskId, workerId, outcome))
      }
    }))
  ).pipe(Layer.provide(store))
  const ports = Layer.mergeAll(Layer.provideMerge(queue, store), ScriptedModel.layer([]), ToolRegistry.layer([payout]))
  return Layer.provideMerge(ArtanaSession.layer, Layer.provideMerge(Kernel.layer({ workflows: [pay] }), ports))
}

describe("an approval decided while the worker still holds the task", () => {
  it.live("is not lost: once the worker has finished the task paused, the task is queued again and the run goes on", () =>
    Effect.gen(function*() {
      const finishing = yield* Deferred.make<void>()
      const gate = yield* Deferred.make<void>()
      yield* Effect.gen(function*() {
        const session = yield* ArtanaSession.ArtanaSession
        const queue = yield* TaskQueue.TaskQueue
        const worker = yield* Effect.fork(Worker.run({ workflows: [pay], concurrency: 1, pollInterval: "20 millis", leaseSeconds: 30, workerId: "w1" }))
        const taskId = yield* session.submit({ workflow: pay, input: { amount: 80 }, tenant })
        // The run paused for the approval; its worker has not finished the task yet (still running).
        yield* Deferred.await(finishing)
        expect(yield* queue.get(tenant.tenantId, taskId)).toMatchObject({ status: "running" })
        const [pending] = yield* session.approvals({ tenantId: tenant.tenantId })
        yield* session.decide({ tenantId: tenant.tenantId, approvalId: pending!.approvalId, approver: "ops", decision: "approve" })
        yield* Deferred.succeed(gate, undefined)
        yield* eventually("the task completed", 20, () => Effect.map(queue.get(tenant.tenantId, taskId), (task) => task.status === "completed"))
        expect(paid.filter((p) => Predicate.hasProperty(p, "amount") && p.amount === 80)).toHaveLength(1)
        yield* Fiber.interrupt(worker)
      }).pipe(Effect.provide(heldFinishLayer(finishing, gate)))
    }), 60_000)
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
