// A handover that waits while another branch halts the execution (NeedsReconciliation): the step the handover cut off
// stops with the execution (found by review: the handover given up, the step was looked up again and ran after the halt,
// in an unjoined fork).
import { describe, expect, it } from "@effect/vitest"
import { EventStore, Kernel, Tool, Workflow } from "@artana/core"
import { Deferred, Effect, Either, Fiber, Schema } from "effect"
import { kernelLayer, tenant } from "./fixtures.js"

describe("given-up handover after another branch's halt", () => {
  it.live("no step runs after the execution halted", () => {
    let hang = true
    let bRuns = 0
    const charge = Tool.make({
      name: "charge",
      description: "charges",
      parameters: Schema.Struct({ amount: Schema.Number }),
      handler: ({ amount }) => (hang ? Effect.never : Effect.succeed(amount))
    })
    const make = (delay: string, cLogged: Deferred.Deferred<void> | undefined) =>
      Workflow.make({
        name: "gu-halt",
        input: Schema.Number,
        output: Schema.String,
        run: (generation, ctx) =>
          Effect.gen(function*() {
            if (generation > 0) return `done ${generation}`
            const t = Effect.zipRight(Effect.sleep(delay === "slow" ? "80 millis" : "5 millis"), ctx.tool(charge, { amount: 5 }, { key: "t" }))
            const a = Effect.gen(function*() {
              yield* ctx.step("a", Effect.succeed(1), Schema.Number, { key: "a" })
              yield* Effect.sleep("50 millis")
              return yield* ctx.continueAsNew(1)
            })
            const c = Effect.gen(function*() {
              yield* Effect.sleep(delay === "slow" ? "10 millis" : "10 millis")
              yield* ctx.step("c", Effect.succeed(2), Schema.Number, { key: "c" })
              if (cLogged !== undefined) yield* Deferred.succeed(cLogged, undefined)
            })
            const b = Effect.zipRight(Effect.sleep("60 millis"), ctx.step("b2", Effect.sync(() => (bRuns++, 3)), Schema.Number, { key: "b2" }))
            yield* Effect.fork(b)
            yield* Effect.all([t, a, c], { concurrency: "unbounded", discard: true })
            return "unreachable"
          })
      })
    return Effect.gen(function*() {
      const kernel = yield* Kernel.Kernel
      const store = yield* EventStore.EventStore
      const cLogged = yield* Deferred.make<void>()
      const fiber = yield* Effect.fork(kernel.execute(make("fast", cLogged), { runId: "guh", tenant, input: 0 }))
      yield* Deferred.await(cLogged)
      yield* Effect.sleep("10 millis")
      yield* Fiber.interrupt(fiber)
      expect((yield* store.readEvents(tenant.tenantId, "guh")).map((e) => `${e.type}@${e.stepKey}`)).toEqual(["RunStarted@run", "StepCompleted@a", "ToolRequested@t", "StepCompleted@c"])
      hang = false
      const resumed = yield* Effect.either(Effect.timeoutFail(kernel.execute(make("slow", undefined), { runId: "guh", tenant, input: 0 }), {
        duration: "5 seconds",
        onTimeout: () => "resume hung"
      }))
      yield* Effect.sleep("100 millis")
      const log = (yield* store.readEvents(tenant.tenantId, "guh")).map((e) => `${e.type}@${e.stepKey}`)
      expect({ resumed: Either.isRight(resumed) ? resumed.right.status : JSON.stringify(resumed.left), bRuns, log }).toEqual({
        resumed: "needs_reconciliation",
        bRuns: 0,
        log: ["RunStarted@run", "StepCompleted@a", "ToolRequested@t", "StepCompleted@c", "RunResumed@run", "ReconciliationRequired@t"]
      })
    }).pipe(Effect.provide(kernelLayer([], [charge])))
  }, 20_000)
})
