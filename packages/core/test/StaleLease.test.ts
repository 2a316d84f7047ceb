// a caller whose lease has run out (a worker frozen between its claim of the task and its execution, woken
// after another worker took the task over) must not take the run over from the execution that owns it now, and must
// not send a model call in the run's name.
import { describe, expect, it } from "@effect/vitest"
import { Deferred, Effect, Fiber, Schema, TestClock } from "effect"
import { EventStore, Kernel, type Lease, Tool, Workflow } from "@artana/core"
import { ScriptedModel } from "@artana/core/testing"
import { kernelLayer, tenant } from "./fixtures.js"

const readLog = (runId: string) => Effect.flatMap(EventStore.EventStore, (s) => s.readEvents(tenant.tenantId, runId))
const lease = (expiresAt: number): Lease.Lease => ({ expiresAt: () => expiresAt, signal: new AbortController().signal })

describe("a caller whose lease ran out", () => {
  it.effect("does not claim (fence) a run another execution owns and is driving", () => {
    let runs = 0
    let gate: Deferred.Deferred<void> | undefined
    let entered: Deferred.Deferred<void> | undefined
    const charge = Tool.make({
      name: "charge",
      description: "charges a card (not idempotent)",
      parameters: Schema.Struct({ cents: Schema.Number }),
      handler: ({ cents }) =>
        Effect.gen(function*() {
          runs++
          yield* Deferred.succeed(entered!, undefined)
          yield* Deferred.await(gate!)
          return cents
        })
    })
    const workflow = Workflow.make({ name: "pay", input: Schema.Null, output: Schema.Unknown, run: (_input, ctx) => ctx.tool(charge, { cents: 5 }) })
    return Effect.gen(function*() {
      const kernel = yield* Kernel.Kernel
      gate = yield* Deferred.make<void>()
      entered = yield* Deferred.make<void>()
      yield* TestClock.setTime(10_000)
      // B: the worker that owns the task now, its lease good for a minute, inside the handler.
      const b = yield* Effect.fork(kernel.execute(workflow, { runId: "r", tenant, input: null, lease: lease(70_000) }))
      yield* Deferred.await(entered)
      // A: a worker that claimed the task earlier and froze; its lease ran out at 9 s. It wakes and executes the run.
      const a = yield* Effect.exit(kernel.execute(workflow, { runId: "r", tenant, input: null, lease: lease(9_000) }))
      // B's handler finishes: its outcome must reach the log, the run completes, the charge ran once.
      yield* Deferred.succeed(gate, undefined)
      const bExit = yield* Fiber.await(b)
      const types = (yield* readLog("r")).map((e) => e.type)
      expect(types).toEqual(["RunStarted", "ToolRequested", "ToolCompleted", "RunCompleted"])
      expect(bExit._tag).toBe("Success")
      expect(a._tag).toBe("Failure")
      expect(runs).toBe(1)
    }).pipe(Effect.provide(kernelLayer([], [charge])))
  })

  it.effect("sends no model call", () => {
    const workflow = Workflow.make({
      name: "ask",
      input: Schema.Null,
      output: Schema.String,
      run: (_input, ctx) => Effect.map(ctx.chat({ prompt: "hi" }), (r) => String(r.output))
    })
    return Effect.gen(function*() {
      const kernel = yield* Kernel.Kernel
      const scripted = yield* ScriptedModel.ScriptedModel
      yield* TestClock.setTime(10_000)
      const exit = yield* Effect.exit(kernel.execute(workflow, { runId: "m", tenant, input: null, lease: lease(9_000) }))
      expect(scripted.calls()).toBe(0)
      expect(exit._tag).toBe("Failure")
    }).pipe(Effect.provide(kernelLayer([ScriptedModel.text("hello")], [])))
  })
})
