// A paused task is continued with the worker's workflow (its pinned version), not whatever the kernel of the worker's
// process registers (a review found a v1 drain worker continuing a v1 run with v2 code).
import { afterAll, describe, expect, it } from "@effect/vitest"
import { Effect, Fiber, Layer, Schema } from "effect"
import { Kernel, TaskQueue, ToolRegistry, Workflow } from "@artana/core"
import { ScriptedModel } from "@artana/core/testing"
import { SqliteStore } from "@artana/store-sqlite"
import { ArtanaSession, Worker } from "@artana/worker"
import { cleanup, tempDb, tenant } from "./helpers.js"

afterAll(cleanup)

const Decision = Schema.Struct({ approved: Schema.Boolean })
const approve = (version: string) =>
  Workflow.make({
    name: "approve",
    version,
    input: Schema.Struct({ amount: Schema.Number }),
    output: Schema.String,
    run: ({ amount }, ctx) =>
      Effect.gen(function*() {
        if (version === "2") yield* ctx.step("check", Effect.succeed(amount < 1000), Schema.Boolean)
        const { approved } = yield* ctx.pauseForHuman({ reason: `approve ${amount}`, schema: Decision })
        return `${approved ? "approved" : "rejected"} by v${version}`
      })
  })
const v1 = approve("1")
const v2 = approve("2")

/** One process: its kernel registers the new code (v2, e.g. for its API), and it also runs a drain worker of v1. */
const deploy = (filename: string, kernelWorkflows: ReadonlyArray<Workflow.Any>) => {
  const ports = Layer.mergeAll(Layer.orDie(SqliteStore.layer({ filename })), ScriptedModel.layer([]), ToolRegistry.layer([]))
  return Layer.provideMerge(ArtanaSession.layer, Layer.provideMerge(Kernel.layer({ workflows: kernelWorkflows }), ports))
}

describe("a worker resumes a paused task with its own workflow", () => {
  it.live("a v1 drain worker in a process whose kernel registers v2 continues a v1 run with v1 code", () => {
    const filename = tempDb()
    return Effect.gen(function*() {
      const session = yield* ArtanaSession.ArtanaSession
      const queue = yield* TaskQueue.TaskQueue
      const worker = yield* Effect.forkDaemon(
        Worker.run({ workflows: [v1], concurrency: 1, pollInterval: "20 millis", workerId: "drain-v1" }).pipe(Effect.provide(deploy(filename, [v2])))
      )
      const t = yield* session.submit({ workflow: v1, input: { amount: 10 }, tenant })
      expect(yield* session.waitForResult(tenant.tenantId, t, { timeout: "20 seconds", pollInterval: "10 millis" })).toMatchObject({ status: "paused" })
      expect((yield* queue.get(tenant.tenantId, t)).version).toBe("1")
      yield* session.respond(tenant.tenantId, t, { approved: true })
      for (let i = 0; i < 1500; i++) {
        const s = (yield* queue.get(tenant.tenantId, t)).status
        if (s === "completed" || s === "failed") break
        yield* Effect.sleep("20 millis")
      }
      const task = yield* queue.get(tenant.tenantId, t)
      yield* Fiber.interrupt(worker)
      expect(task.outcome).toMatchObject({ _tag: "completed", output: "approved by v1" })
    }).pipe(Effect.provide(deploy(filename, [v2])))
  }, 60_000)
})
