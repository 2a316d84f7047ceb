// A task whose run waits for a tool call's approval, driven by a worker on SQLite: the task pauses with the approval's
// id; a response alone decides nothing; after the decision, a response queues the task again and a worker continues
// the run with it: the approved call runs once.
import { afterAll, describe, expect, it } from "@effect/vitest"
import { Effect, Fiber, Layer, Schema } from "effect"
import { Kernel, Tool, ToolRegistry, Workflow } from "@artana/core"
import { ScriptedModel } from "@artana/core/testing"
import { SqliteStore } from "@artana/store-sqlite"
import { ArtanaSession, Worker } from "@artana/worker"
import { cleanup, tempDb, tenant } from "./helpers.js"

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
  it.live("pauses with the approval; after the decision, a response lets a worker continue the run", () =>
    Effect.gen(function*() {
      const session = yield* ArtanaSession.ArtanaSession
      const kernel = yield* Kernel.Kernel
      const worker = yield* Effect.fork(Worker.run({ workflows: [pay], concurrency: 1, pollInterval: "20 millis", leaseSeconds: 5, workerId: "w1" }))
      const wait = (taskId: string) => session.waitForResult(tenant.tenantId, taskId, { timeout: "20 seconds", pollInterval: "20 millis" })
      const taskId = yield* session.submit({ workflow: pay, input: { amount: 70 }, tenant })
      const paused = yield* wait(taskId)
      expect(paused).toMatchObject({ status: "paused", reason: expect.stringContaining('approval of a call to tool "payout"') })
      const approvalId = paused.status === "paused" ? paused.ticket : ""
      // A response is no decision: the task pauses again, the call still waits.
      yield* session.respond(tenant.tenantId, taskId, { approved: true })
      expect(yield* wait(taskId)).toMatchObject({ status: "paused", ticket: approvalId })
      expect(paid).toEqual([])
      yield* kernel.decideApproval({ tenantId: tenant.tenantId, approvalId, approver: "ops", decision: "approve", arguments: { amount: 60 } })
      yield* session.respond(tenant.tenantId, taskId, null)
      expect(yield* wait(taskId)).toMatchObject({ status: "completed", output: "paid" })
      expect(paid).toEqual([{ amount: 60 }])
      yield* Fiber.interrupt(worker)
    }).pipe(Effect.provide(layer())), 60_000)
})
