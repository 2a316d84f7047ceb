// `ctx.patched` and a signal wait during a handover wait, on a live resume, then a replay of it: they agree.
import { describe, expect, it } from "@effect/vitest"
import { Kernel, Workflow } from "@artana/core"
import { Effect, Either, Schema } from "effect"
import { kernelLayer, tenant } from "./fixtures.js"

const w = Workflow.make({
  name: "pp",
  input: Schema.Number,
  output: Schema.String,
  run: (generation, ctx) =>
    Effect.gen(function*() {
      if (generation > 0) return `done ${generation}`
      const a = Effect.gen(function*() {
        yield* ctx.step("a", Effect.as(Effect.sleep("30 millis"), 3), Schema.Number, { key: "a" })
        yield* Effect.sleep("20 millis")
        return yield* ctx.continueAsNew(1)
      })
      const b = Effect.gen(function*() {
        yield* Effect.sleep("40 millis")
        yield* ctx.step("b", Effect.succeed(3), Schema.Number, { key: "b" })
        yield* ctx.pauseForHuman({ reason: "ok?", schema: Schema.Struct({ ok: Schema.Boolean }), key: "ask" })
        const p = yield* ctx.patched("p1")
        yield* ctx.waitForSignal("sig", Schema.Number, { key: "sig" })
        return p
      })
      yield* Effect.all([a, b], { concurrency: "unbounded", discard: true })
      return "unreachable"
    })
})

describe("patched + signal wait during a handover wait", () => {
  it.live("resume then replay agree", () =>
    Effect.gen(function*() {
      const kernel = yield* Kernel.Kernel
      const first = yield* kernel.execute(w, { runId: "pp", tenant, input: 0 })
      expect(first.status).toEqual("paused")
      const resumed = yield* Effect.timeout(kernel.resume({ tenantId: tenant.tenantId, runId: "pp", response: { ok: true } }), "5 seconds")
      expect(resumed).toEqual({ status: "completed", runId: "pp::continued::1", output: "done 1" })
      const replayed = yield* Effect.either(Effect.timeout(kernel.replay(w, { tenantId: tenant.tenantId, runId: "pp" }), "5 seconds"))
      expect(Either.isRight(replayed) ? replayed.right : JSON.stringify(replayed.left)).toEqual(resumed)
    }).pipe(Effect.provide(kernelLayer([], [], { kernel: { workflows: [w] } }))), 20_000)
})
