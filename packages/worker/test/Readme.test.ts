// The README's path, as written there (a temp file instead of ./artana.db).
import { afterAll, describe, expect, it } from "@effect/vitest"
import { Kernel, Tenant, ToolRegistry, Workflow } from "@artana/core"
import { ScriptedModel } from "@artana/core/testing"
import { SqliteStore } from "@artana/store-sqlite"
import { ArtanaSession, Worker, WorkerLog } from "@artana/worker"
import { Effect, Fiber, Layer, LogLevel, Schema } from "effect"
import { cleanup, tempDb, tempDir } from "./helpers.js"

afterAll(cleanup)

const approve = Workflow.make({
  name: "approve",
  input: Schema.Struct({ amount: Schema.Number }),
  output: Schema.String,
  run: ({ amount }, ctx) => Effect.gen(function*() {
    const { approved } = yield* ctx.pauseForHuman({ reason: `approve ${amount}`, schema: Schema.Struct({ approved: Schema.Boolean }) })
    return approved ? "approved" : "rejected"
  })
})
const workflows = [approve]

describe("README", () => {
  it.live("submit, pause, respond, complete", () => {
    const Live = ArtanaSession.layer.pipe(
      Layer.provideMerge(Kernel.layer({ workflows })),
      Layer.provideMerge(Layer.mergeAll(SqliteStore.layer({ filename: tempDb() }), ScriptedModel.layer([]), ToolRegistry.layer([])))
    )
    const worker = Worker.run({ workflows, concurrency: 4, pollInterval: "20 millis", leaseSeconds: 30 }).pipe(
      Effect.provide(WorkerLog.layer({ directory: tempDir(), consoleLevel: LogLevel.None }))
    )
    const program = Effect.gen(function*() {
      const session = yield* ArtanaSession.ArtanaSession
      const tenant = Tenant.TenantContext.make({ tenantId: "acme", capabilities: [], budgetUsdLimit: 1 })
      const taskId = yield* session.submit({ workflow: approve, input: { amount: 250 }, tenant })
      const paused = yield* session.waitForResult(tenant.tenantId, taskId, { timeout: "1 minute" })
      expect(paused).toMatchObject({ status: "paused", reason: "approve 250" })
      yield* session.respond(tenant.tenantId, taskId, { approved: true })
      return yield* session.waitForResult(tenant.tenantId, taskId, { timeout: "1 minute" })
    })
    return Effect.gen(function*() {
      const fiber = yield* Effect.fork(worker)
      expect(yield* program).toMatchObject({ status: "completed", output: "approved" })
      yield* Fiber.interrupt(fiber)
    }).pipe(Effect.provide(Live))
  })
})
