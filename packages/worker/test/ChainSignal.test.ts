// A signal sent to a worker-driven chain's last run (as the core README says) wakes its task: the successor's run id
// names the task too (a review found the task never woken).
import { afterAll, describe, expect, it } from "@effect/vitest"
import { Effect, Either, Fiber, Layer, Schema } from "effect"
import { EventStore, Kernel, TaskQueue, ToolRegistry, Workflow } from "@artana/core"
import { ScriptedModel } from "@artana/core/testing"
import { SqliteStore } from "@artana/store-sqlite"
import { ArtanaSession, Worker } from "@artana/worker"
import { cleanup, tempDb, tenant } from "./helpers.js"

afterAll(cleanup)

/** Generation 0 continues as new; generation 1 waits for a "go" signal. */
const relay = Workflow.make({
  name: "relay",
  input: Schema.Number,
  output: Schema.String,
  run: (n, ctx) => (n === 0 ? ctx.continueAsNew(1) : Effect.orDie(ctx.waitForSignal("go", Schema.String)))
})

const deploy = (filename: string) => {
  const ports = Layer.mergeAll(Layer.orDie(SqliteStore.layer({ filename })), ScriptedModel.layer([]), ToolRegistry.layer([]))
  return Layer.provideMerge(ArtanaSession.layer, Layer.provideMerge(Kernel.layer({ workflows: [relay] }), ports))
}

describe("a signal to a worker-driven continue-as-new chain", () => {
  it.live("sent to the chain (its first run's id), goes to its last run and wakes the task so a worker finishes the run", () => {
    const filename = tempDb()
    return Effect.gen(function*() {
      const session = yield* ArtanaSession.ArtanaSession
      const kernel = yield* Kernel.Kernel
      const queue = yield* TaskQueue.TaskQueue
      const store = yield* EventStore.EventStore
      const worker = yield* Effect.forkDaemon(Worker.run({ workflows: [relay], concurrency: 1, pollInterval: "20 millis", workerId: "w" }).pipe(Effect.provide(deploy(filename))))
      const t = yield* session.submit({ workflow: relay, input: 0, tenant })
      expect(yield* session.waitForResult(tenant.tenantId, t, { timeout: "20 seconds", pollInterval: "10 millis" })).toMatchObject({ status: "paused" })
      const last = `task:${t}::continued::1`
      expect((yield* store.getRun(tenant.tenantId, last)).status).toBe("paused")
      // Sent to the chain's first run, the signal goes to its last run, whose task is woken.
      const receipt = yield* kernel.signal({ tenantId: tenant.tenantId, runId: `task:${t}`, name: "go", payload: "x" })
      expect(receipt.runId).toBe(last)
      // Give the worker up to 30 seconds to take the woken task over.
      for (let i = 0; i < 1500 && (yield* queue.get(tenant.tenantId, t)).status !== "completed"; i++) yield* Effect.sleep("20 millis")
      const result = yield* Effect.either(session.waitForResult(tenant.tenantId, t, { timeout: "1 second", pollInterval: "10 millis" }))
      yield* Fiber.interrupt(worker)
      expect(Either.isRight(result) && result.right).toMatchObject({ status: "completed", output: "x" })
    }).pipe(Effect.provide(deploy(filename)))
  }, 60_000)
})
