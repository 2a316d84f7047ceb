// A worker's lease as its tool handlers see it: `ctx.signal` fires when a heartbeat finds the task taken over, so a
// handler that is running can stop; and `ctx.fence` grows with each worker that takes the run over.
import { describe, expect, it } from "@effect/vitest"
import { Effect, Fiber, Layer, Schema } from "effect"
import { EventStore, Kernel, TaskQueue, Tool, ToolRegistry, Workflow } from "@artana/core"
import { ScriptedModel } from "@artana/core/testing"
import { Worker } from "@artana/worker"
import { eventually, tenant } from "./helpers.js"

describe("a worker's lease, in the handler's context", () => {
  it.live("the handler's signal fires when a heartbeat finds the task taken over; the handler stops", () => {
    const seen: Array<{ readonly fence: number; readonly reason: unknown }> = []
    const watch = Tool.make({
      name: "watch",
      description: "works until its worker loses the task",
      parameters: Schema.Struct({}),
      idempotent: true,
      handler: (_args, ctx) =>
        new Promise<string>((resolve) => {
          seen.push({ fence: ctx.fence, reason: undefined })
          ctx.signal.addEventListener("abort", () => {
            seen.push({ fence: ctx.fence, reason: ctx.signal.reason })
            resolve("stopped")
          })
        })
    })
    const workflow = Workflow.make({ name: "watch", input: Schema.Null, output: Schema.String, run: (_input, ctx) => ctx.tool(watch, {}) })
    const ports = Layer.mergeAll(EventStore.layerMemory, TaskQueue.layerMemory, ScriptedModel.layer([]), ToolRegistry.layer([watch]))
    return Effect.gen(function*() {
      const queue = yield* TaskQueue.TaskQueue
      const task = yield* queue.enqueue({ workflow: "watch", input: null, tenant })
      const worker = yield* Effect.fork(Worker.run({ workflows: [workflow], concurrency: 1, pollInterval: "20 millis", leaseSeconds: 30, heartbeatInterval: "50 millis", workerId: "w1" }))
      yield* eventually("the handler runs", 10, () => seen.length === 1)
      // Another worker takes the task over (as if w1's lease had expired: a minute from now); w1's next heartbeat finds
      // it lost. (w1's lease is long, so a busy machine cannot make it run out here first, for another reason.)
      const [taken] = yield* queue.claim({ workerId: "w2", limit: 1, leaseSeconds: 30, now: Date.now() + 60_000 })
      expect(taken?.taskId).toBe(task.taskId)
      yield* eventually("the handler learnt it", 10, () => seen.length === 2)
      expect(seen[0]!.fence).toBe(1)
      expect(seen[1]!.reason).toEqual(expect.stringContaining(`worker w1 no longer holds task ${task.taskId}`))
      yield* Fiber.interrupt(worker)
      // w1 let the task go without finishing it: it is w2's.
      expect(yield* queue.get(task.tenantId, task.taskId)).toMatchObject({ status: "running", workerId: "w2" })
    }).pipe(Effect.provide(Layer.provideMerge(Kernel.layer({ workflows: [workflow] }), ports)))
  })
})
