// The handover's own fiber interrupted while it waits (a timeout around continue-as-new): the handover is given up and
// later steps run (found by review: its flag stayed set and every later new step waited forever).
import { describe, expect, it } from "@effect/vitest"
import { Kernel, Workflow } from "@artana/core"
import { Effect, Either, Option, Schema } from "effect"
import { kernelLayer, tenant } from "./fixtures.js"

const w = Workflow.make({
  name: "handover-timeout",
  input: Schema.Number,
  output: Schema.String,
  run: (generation, ctx) =>
    Effect.gen(function*() {
      if (generation > 0) return `done ${generation}`
      const a = Effect.gen(function*() {
        yield* ctx.step("a", Effect.as(Effect.sleep("30 millis"), 3), Schema.Number, { key: "a" })
        yield* Effect.sleep("20 millis")
        // A handover given 10 ms (live it halts at once); if it did not happen, a fallback step.
        const handed = yield* Effect.timeoutOption(ctx.continueAsNew(1), "10 millis")
        if (Option.isNone(handed)) yield* ctx.step("fallback", Effect.succeed(0), Schema.Number, { key: "fallback" })
      })
      const b = Effect.zipRight(Effect.sleep("40 millis"), ctx.step("b", Effect.succeed(3), Schema.Number, { key: "b" }))
      yield* Effect.all([a, b], { concurrency: "unbounded", discard: true })
      return "no handover"
    })
})

describe("a handover interrupted while it waits", () => {
  it.live("replay ends (an answer or NonDeterminism), it does not hang", () =>
    Effect.gen(function*() {
      const kernel = yield* Kernel.Kernel
      const result = yield* kernel.execute(w, { runId: "ht", tenant, input: 0 })
      expect(result).toEqual({ status: "completed", runId: "ht::continued::1", output: "done 1" })
      const replayed = yield* Effect.either(Effect.timeoutFail(kernel.replay(w, { tenantId: tenant.tenantId, runId: "ht" }), {
        duration: "5 seconds",
        onTimeout: () => "replay hung (5 s)"
      }))
      expect(Either.isRight(replayed) ? replayed.right : replayed.left).not.toEqual("replay hung (5 s)")
    }).pipe(Effect.provide(kernelLayer([], []))), 20_000)
})
