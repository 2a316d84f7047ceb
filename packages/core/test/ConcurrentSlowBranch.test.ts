// A resumed run of concurrent branches, where a step waits for the other branches to consume what the log holds ahead
// of it (`replayCursor.ts` `afterOthers`): a sibling that does more than a second of work outside steps before its
// logged step is waited for (the wait by the clock was bounded at a second, and such a run failed with NonDeterminism
// on every resume), the workflow's main fiber too, and a logged pause met before a sibling's step logged ahead of it.
import { describe, expect, it } from "@effect/vitest"
import { Kernel, Workflow } from "@artana/core"
import { type Duration, Effect, Either, Fiber, Schema } from "effect"
import { kernelLayer, tenant } from "./fixtures.js"

const ask = { reason: "ok?", schema: Schema.Struct({ ok: Schema.Boolean }), key: "ask" }

/**
 * Pauses a run of `code` (its code told it resumes by `resumed`), resumes it with an answer and expects it to complete
 * with `output`.
 */
const pausedThenResumed = (name: string, code: (resumed: boolean) => Workflow.Workflow<null, unknown, never>["run"], output: unknown) => {
  let resumed = false
  const wf = Workflow.make({ name, input: Schema.Null, output: Schema.Unknown, run: (input, ctx) => code(resumed)(input, ctx) })
  return Effect.gen(function*() {
    const kernel = yield* Kernel.Kernel
    expect((yield* kernel.execute(wf, { runId: name, tenant, input: null })).status).toBe("paused")
    resumed = true
    const result = yield* Effect.either(kernel.resume({ tenantId: tenant.tenantId, runId: name, response: { ok: true } }))
    expect(Either.isRight(result) ? result.right : JSON.stringify(result.left)).toEqual({ status: "completed", runId: name, output })
  }).pipe(Effect.provide(kernelLayer([], [], { kernel: { workflows: [wf] } })))
}

/**
 * Three branches: "x", a memoized step of 200 ms; "y", logged after `ySleep`; a pause after `askSleep`. The first run
 * (10 and 20 ms) logs y, then the pause; x is cut off.
 */
const threeBranches = (ySleep: Duration.DurationInput, askSleep: Duration.DurationInput) => (resumed: boolean): Workflow.Workflow<null, unknown, never>["run"] => (_i, ctx) =>
  Effect.all([
    ctx.step("x", Effect.as(Effect.sleep("200 millis"), 1), Schema.Number, { key: "x" }),
    Effect.zipRight(Effect.sleep(resumed ? ySleep : "10 millis"), ctx.step("y", Effect.succeed(2), Schema.Number, { key: "y" })),
    Effect.zipRight(Effect.sleep(resumed ? askSleep : "20 millis"), ctx.pauseForHuman(ask))
  ], { concurrency: "unbounded" })

describe("a resumed run of concurrent branches", () => {
  // On resume, the y branch first works 1.2 s outside any step (plain code: a computation, a call outside the kernel),
  // and the pause's branch 1.3 s.
  it.live("waits for a sibling that works for more than a second before its logged step", () =>
    pausedThenResumed("slow-branch", threeBranches("1200 millis", "1300 millis"), [1, 2, { ok: true }]), 20_000)

  // On resume the pause's branch asks at once and the y branch after 100 ms: an unanswered pause met out of the log's
  // order was NonDeterminism at once.
  it.live("meets a logged pause before a sibling's step logged ahead of it: the pause waits for that step", () =>
    pausedThenResumed("pause-first", threeBranches("100 millis", "0 millis"), [1, 2, { ok: true }]))

  // The main fiber forks a branch whose memoized step "x" takes 200 ms, logs "m" and pauses ("x" is cut off). On
  // resume the main fiber works 50 ms before "m": the branch's new step "x" waits for it.
  it.live("waits for the workflow's main fiber, which does steps beside a branch it forked", () =>
    pausedThenResumed("main-and-branch", (resumed) => (_i, ctx) =>
      Effect.gen(function*() {
        const branch = yield* Effect.fork(ctx.step("x", Effect.as(Effect.sleep("200 millis"), 1), Schema.Number, { key: "x" }))
        yield* Effect.sleep(resumed ? "50 millis" : "10 millis")
        const m = yield* ctx.step("m", Effect.succeed(2), Schema.Number, { key: "m" })
        yield* Effect.sleep("10 millis")
        const answer = yield* ctx.pauseForHuman(ask)
        return [yield* Fiber.join(branch), m, answer]
      }), [1, 2, { ok: true }]))
})
