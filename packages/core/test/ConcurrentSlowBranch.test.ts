// A resumed run of concurrent branches, where a branch's new step waits for the others to consume what the log still
// holds (`replayCursor.ts` `afterOthers`): a sibling that does more than a second of work outside steps before its
// logged step is waited for (the wait by the clock was bounded at a second, and such a run failed with NonDeterminism
// on every resume).
import { describe, expect, it } from "@effect/vitest"
import { Kernel, Workflow } from "@artana/core"
import { Effect, Either, Fiber, Schema } from "effect"
import { kernelLayer, tenant } from "./fixtures.js"

const ask = { reason: "ok?", schema: Schema.Struct({ ok: Schema.Boolean }), key: "ask" }

describe("a resumed run of concurrent branches", () => {
  it.live("waits for a sibling that works for more than a second before its logged step", () => {
    // First run: "y" is logged at 10 ms, the pause at 20 ms, "x" (a memoized step of 200 ms) is cut off. On resume, the
    // y branch first works 1.2 s outside any step (plain code: a computation, a call outside the kernel), and the
    // pause's branch 1.3 s (an unanswered pause is met in the log's order).
    let resumed = false
    const wf = Workflow.make({
      name: "slow-branch",
      input: Schema.Null,
      output: Schema.Unknown,
      run: (_i, ctx) =>
        Effect.all([
          ctx.step("x", Effect.as(Effect.sleep("200 millis"), 1), Schema.Number, { key: "x" }),
          Effect.zipRight(Effect.sleep(resumed ? "1200 millis" : "10 millis"), ctx.step("y", Effect.succeed(2), Schema.Number, { key: "y" })),
          Effect.zipRight(Effect.sleep(resumed ? "1300 millis" : "20 millis"), ctx.pauseForHuman(ask))
        ], { concurrency: "unbounded" })
    })
    return Effect.gen(function*() {
      const kernel = yield* Kernel.Kernel
      expect((yield* kernel.execute(wf, { runId: "sb", tenant, input: null })).status).toBe("paused")
      resumed = true
      const result = yield* Effect.either(kernel.resume({ tenantId: tenant.tenantId, runId: "sb", response: { ok: true } }))
      expect(Either.isRight(result) ? result.right : JSON.stringify(result.left)).toEqual({ status: "completed", runId: "sb", output: [1, 2, { ok: true }] })
    }).pipe(Effect.provide(kernelLayer([], [], { kernel: { workflows: [wf] } })))
  }, 20_000)

  it.live("waits for the workflow's main fiber, which does steps beside a branch it forked", () => {
    // First run: the main fiber forks a branch whose memoized step "x" takes 200 ms, logs "m" at 10 ms and pauses at
    // 20 ms ("x" is cut off). On resume the main fiber works 50 ms before "m": the branch's new step "x" waits for it.
    let resumed = false
    const wf = Workflow.make({
      name: "main-and-branch",
      input: Schema.Null,
      output: Schema.Unknown,
      run: (_i, ctx) =>
        Effect.gen(function*() {
          const branch = yield* Effect.fork(ctx.step("x", Effect.as(Effect.sleep("200 millis"), 1), Schema.Number, { key: "x" }))
          yield* Effect.sleep(resumed ? "50 millis" : "10 millis")
          const m = yield* ctx.step("m", Effect.succeed(2), Schema.Number, { key: "m" })
          yield* Effect.sleep("10 millis")
          const answer = yield* ctx.pauseForHuman(ask)
          return [yield* Fiber.join(branch), m, answer]
        })
    })
    return Effect.gen(function*() {
      const kernel = yield* Kernel.Kernel
      expect((yield* kernel.execute(wf, { runId: "mb", tenant, input: null })).status).toBe("paused")
      resumed = true
      const result = yield* Effect.either(kernel.resume({ tenantId: tenant.tenantId, runId: "mb", response: { ok: true } }))
      expect(Either.isRight(result) ? result.right : JSON.stringify(result.left)).toEqual({ status: "completed", runId: "mb", output: [1, 2, { ok: true }] })
    }).pipe(Effect.provide(kernelLayer([], [], { kernel: { workflows: [wf] } })))
  })
})
