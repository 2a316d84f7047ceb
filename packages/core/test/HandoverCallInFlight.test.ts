// A live resume whose handover waits while an in-doubt idempotent tool call is made again in another branch, and a third
// branch is cut off: the cut-off branch stops only once the call has ended and its outcome is logged (found by review:
// interrupted at once, it made `Effect.all` interrupt the call mid-way, and the run handed over with the call in doubt).
import { describe, expect, it } from "@effect/vitest"
import { EventStore, Kernel, Tool, Workflow } from "@artana/core"
import { Deferred, type Duration, Effect, Either, Fiber, Schema } from "effect"
import { kernelLayer, tenant } from "./fixtures.js"

describe("cut-off branch interrupted while a tool call is in flight", () => {
  const scenario = (withB: boolean, bSecondHandover = false) => {
    const calls: Array<string> = []
    let hang = true
    const charge = Tool.make({
      name: "charge",
      description: "charges",
      parameters: Schema.Struct({ amount: Schema.Number }),
      idempotent: true,
      handler: ({ amount }) =>
        Effect.suspend(() => {
          calls.push("start")
          return hang ? Effect.never : Effect.as(Effect.sleep("300 millis"), amount).pipe(Effect.tap(() => Effect.sync(() => calls.push("done"))))
        })
    })
    const make = (cDelay: Duration.DurationInput, cLogged: Deferred.Deferred<void> | undefined, withB = true, bSecondHandover = false) =>
      Workflow.make({
        name: "tool-cut",
        input: Schema.Number,
        output: Schema.String,
        run: (generation, ctx) =>
          Effect.gen(function*() {
            if (generation > 0) return `done ${generation}`
            const t = ctx.tool(charge, { amount: 5 }, { key: "t" })
            const a = Effect.gen(function*() {
              yield* ctx.step("a", Effect.succeed(1), Schema.Number, { key: "a" })
              yield* Effect.sleep("50 millis")
              return yield* ctx.continueAsNew(1)
            })
            const c = Effect.gen(function*() {
              yield* Effect.sleep(cDelay)
              yield* ctx.step("c", Effect.succeed(2), Schema.Number, { key: "c" })
              if (cLogged !== undefined) yield* Deferred.succeed(cLogged, undefined)
            })
            const b = Effect.zipRight(Effect.sleep("60 millis"), bSecondHandover ? ctx.continueAsNew(2) : ctx.step("b2", Effect.succeed(3), Schema.Number, { key: "b2" }))
            yield* Effect.all(withB ? [t, a, c, b] : [t, a, c], { concurrency: "unbounded", discard: true })
            return "unreachable"
          })
      })
    return Effect.gen(function*() {
      const kernel = yield* Kernel.Kernel
      const store = yield* EventStore.EventStore
      const cLogged = yield* Deferred.make<void>()
      const fiber = yield* Effect.fork(kernel.execute(make("10 millis", cLogged, withB, bSecondHandover), { runId: "tc", tenant, input: 0 }))
      yield* Deferred.await(cLogged)
      yield* Effect.sleep("10 millis")
      // The process dies: "t" requested, its handler in flight; "a" and "c" logged; a's handover not reached.
      yield* Fiber.interrupt(fiber)
      const before = (yield* store.readEvents(tenant.tenantId, "tc")).map((e) => `${e.type}@${e.stepKey}`)
      expect(before).toEqual(["RunStarted@run", "ToolRequested@t", "StepCompleted@a", "StepCompleted@c"])
      hang = false
      // This time c's plain code is slower (100 ms): a's handover (at 50 ms) waits for it; b (60 ms) is cut off.
      const resumed = yield* Effect.either(Effect.timeoutFail(kernel.execute(make("100 millis", undefined, withB, bSecondHandover), { runId: "tc", tenant, input: 0 }), {
        duration: "5 seconds",
        onTimeout: () => "resume hung"
      }))
      const log = (yield* store.readEvents(tenant.tenantId, "tc")).map((e) => `${e.type}@${e.stepKey}`)
      expect({
        resumed: Either.isRight(resumed) ? resumed.right.status : JSON.stringify(resumed.left),
        calls,
        toolOutcomeLogged: log.some((e) => e.endsWith("@t") && !e.startsWith("ToolRequested")),
        log
      }).toMatchObject({ resumed: "completed", calls: ["start", "start", "done"], toolOutcomeLogged: true })
    }).pipe(Effect.provide(kernelLayer([], [charge], { kernel: { workflows: [] } })))
  }
  it.live("the re-made call's outcome is logged before the handover (cut-off branch b)", () => scenario(true), 20_000)
  it.live("same with b's second continue-as-new (halts' pending -> Effect.interrupt)", () => scenario(true, true), 20_000)
  it.live("control: no cut-off branch", () => scenario(false), 20_000)
})
