import { describe, expect, it } from "@effect/vitest"
import { Kernel, Workflow } from "@artana/core"
import { Effect, Either, Schema } from "effect"
import { kernelLayer, tenant } from "./fixtures.js"

/**
 * Three concurrent branches (explicit keys): "x" is a memoized step that takes 40 ms, "y" a quick step after 10 ms of
 * plain waiting, and the third pauses for a person at 20 ms. The log holds y and the pause; x was cut off. On resume,
 * x is a new step met while y (still behind its 10 ms wait) is unconsumed.
 */
describe("a resumed branch's new step while another branch's logged step is behind a wait", () => {
  it.live("the answered run resumes (no divergence)", () => {
    const wf = Workflow.make({
      name: "resume-wait",
      input: Schema.Null,
      output: Schema.Unknown,
      run: (_i, ctx) =>
        Effect.all([
          ctx.step("x", Effect.as(Effect.sleep("40 millis"), 1), Schema.Number, { key: "x" }),
          Effect.zipRight(Effect.sleep("10 millis"), ctx.step("y", Effect.succeed(2), Schema.Number, { key: "y" })),
          Effect.zipRight(Effect.sleep("20 millis"), ctx.pauseForHuman({ reason: "ok?", schema: Schema.Struct({ ok: Schema.Boolean }), key: "ask" }))
        ], { concurrency: "unbounded" })
    })
    return Effect.gen(function*() {
      const kernel = yield* Kernel.Kernel
      const paused = yield* kernel.execute(wf, { runId: "rw", tenant, input: null })
      expect(paused.status).toBe("paused")
      const resumed = yield* Effect.either(kernel.resume({ tenantId: tenant.tenantId, runId: "rw", response: { ok: true } }))
      expect(Either.isRight(resumed) ? resumed.right : String(resumed.left)).toEqual({ status: "completed", runId: "rw", output: [1, 2, { ok: true }] })
    }).pipe(Effect.provide(kernelLayer([], [], { kernel: { workflows: [wf] } })))
  })
})
