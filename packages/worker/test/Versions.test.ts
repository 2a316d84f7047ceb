// Workflow versions across a rolling deploy (issue 19): two workers of different versions on one SQLite file. A run
// started by the old code is continued only by a worker that has its version; the new code, which cannot replay it,
// never gets it.
import { afterAll, describe, expect, it } from "@effect/vitest"
import { Effect, Fiber, Layer, Schema } from "effect"
import { EventStore, Kernel, TaskQueue, ToolRegistry, Workflow } from "@artana/core"
import { ScriptedModel } from "@artana/core/testing"
import { SqliteStore } from "@artana/store-sqlite"
import { ArtanaSession, Worker } from "@artana/worker"
import { cleanup, eventually, tempDb, tenant } from "./helpers.js"

afterAll(cleanup)

const Decision = Schema.Struct({ approved: Schema.Boolean })

/** Version 1 prepares, then waits for a person; version 2 checks first: it cannot replay a run of version 1. */
const approveV1 = Workflow.make({
  name: "approve",
  version: "1",
  input: Schema.Struct({ amount: Schema.Number }),
  output: Schema.String,
  run: ({ amount }, ctx) =>
    Effect.gen(function*() {
      yield* ctx.step("prepare", Effect.succeed(amount), Schema.Number)
      const { approved } = yield* ctx.pauseForHuman({ reason: `approve ${amount}`, schema: Decision })
      return approved ? "approved by v1" : "rejected by v1"
    })
})
const approveV2 = Workflow.make({
  name: "approve",
  version: "2",
  input: Schema.Struct({ amount: Schema.Number }),
  output: Schema.String,
  run: ({ amount }, ctx) =>
    Effect.gen(function*() {
      yield* ctx.step("check", Effect.succeed(amount < 1000), Schema.Boolean)
      yield* ctx.step("prepare", Effect.succeed(amount), Schema.Number)
      const { approved } = yield* ctx.pauseForHuman({ reason: `approve ${amount}`, schema: Decision })
      return approved ? "approved by v2" : "rejected by v2"
    })
})

/** A deploy: its kernel knows its version of the workflow; the store is the shared file. */
const deploy = (filename: string, workflow: Workflow.Any) => {
  const ports = Layer.mergeAll(Layer.orDie(SqliteStore.layer({ filename })), ScriptedModel.layer([]), ToolRegistry.layer([]))
  return Layer.provideMerge(ArtanaSession.layer, Layer.provideMerge(Kernel.layer({ workflows: [workflow] }), ports))
}

const startWorker = (filename: string, workflow: Workflow.Any, workerId: string) =>
  Effect.forkDaemon(
    Worker.run({ workflows: [workflow], concurrency: 2, pollInterval: "20 millis", leaseSeconds: 30, workerId }).pipe(Effect.provide(deploy(filename, workflow)))
  )

const wait = { timeout: "20 seconds", pollInterval: "10 millis" } as const

describe("Worker.run versions", () => {
  it.live("a rolling deploy: runs of version 1 are continued only by workers of version 1, new tasks by either", () => {
    const filename = tempDb()
    return Effect.gen(function*() {
      const session = yield* ArtanaSession.ArtanaSession
      const store = yield* EventStore.EventStore
      const queue = yield* TaskQueue.TaskQueue
      const old = yield* startWorker(filename, approveV1, "old")
      const a = yield* session.submit({ workflow: approveV1, input: { amount: 10 }, tenant })
      const d = yield* session.submit({ workflow: approveV1, input: { amount: 20 }, tenant })
      for (const id of [a, d]) expect(yield* session.waitForResult(tenant.tenantId, id, wait)).toMatchObject({ status: "paused" })
      expect((yield* queue.get(tenant.tenantId, a)).version).toBe("1")
      expect((yield* store.getRun(tenant.tenantId, `task:${a}`)).version).toBe("1")

      // The new version is deployed beside the old: A, answered, goes back to the old worker, never to the new one.
      const fresh = yield* startWorker(filename, approveV2, "new")
      yield* session.respond(tenant.tenantId, a, { approved: true })
      expect(yield* session.waitForResult(tenant.tenantId, a, wait)).toMatchObject({ status: "completed", output: "approved by v1" })

      // The old workers are stopped. D is answered; then C is submitted and run by the new worker: its claim, after D
      // was due, passed D over (D would come first: it is due earlier).
      yield* Fiber.interrupt(old)
      yield* session.respond(tenant.tenantId, d, { approved: true })
      const c = yield* session.submit({ workflow: approveV2, input: { amount: 30 }, tenant })
      expect(yield* session.waitForResult(tenant.tenantId, c, wait)).toMatchObject({ status: "paused" })
      expect(yield* queue.get(tenant.tenantId, c)).toMatchObject({ version: "2" })
      expect(yield* queue.get(tenant.tenantId, d)).toMatchObject({ status: "queued", version: "1" })
      expect((yield* store.getRun(tenant.tenantId, `task:${d}`)).status).toBe("paused")
      // The operator's count: one run of version 1 still in flight, so version 1 cannot be retired yet.
      const counts = yield* store.versionCounts({ workflow: "approve" })
      expect(counts.map((v) => [v.version, v.inFlight, v.runs])).toEqual([["1", 1, 2], ["2", 1, 1]])

      // A worker of version 1 drains it; then no run of version 1 is in flight.
      const drain = yield* startWorker(filename, approveV1, "drain")
      expect(yield* session.waitForResult(tenant.tenantId, d, wait)).toMatchObject({ status: "completed", output: "approved by v1" })
      yield* session.respond(tenant.tenantId, c, { approved: false })
      expect(yield* session.waitForResult(tenant.tenantId, c, wait)).toMatchObject({ status: "completed", output: "rejected by v2" })
      yield* eventually("version 1 has no run in flight", 10, () =>
        Effect.map(store.versionCounts({ workflow: "approve" }), (now) => now.find((v) => v.version === "1")?.inFlight === 0))
      expect(yield* store.listRuns(tenant.tenantId, { version: "2" })).toHaveLength(1)
      yield* Fiber.interrupt(drain)
      yield* Fiber.interrupt(fresh)
    }).pipe(Effect.provide(deploy(filename, approveV1)))
  }, 60_000)
})
