// A live resume: a branch's new step waits while a handover waits, and is interrupted once the run hands over, under
// `Effect.race` too (found by review: nothing interrupted it and the resume hung).
import { describe, expect, it } from "@effect/vitest"
import { Kernel, Workflow } from "@artana/core"
import { Effect, Either, Schema } from "effect"
import { kernelLayer, tenant } from "./fixtures.js"

type Ctx = Parameters<Workflow.Workflow<number, string, never>["run"]>[1]

/** Branch "a": step of 30 ms, plain 20 ms, continue-as-new with 1. */
const branchA = (ctx: Ctx) =>
  Effect.gen(function*() {
    yield* ctx.step("a", Effect.as(Effect.sleep("30 millis"), 3), Schema.Number, { key: "a" })
    yield* Effect.sleep("20 millis")
    return yield* ctx.continueAsNew(1)
  })

/** Branch "b": plain 40 ms, step "b", a pause (the first execution pauses at ~40 ms), then a new step. */
const branchB = (ctx: Ctx) =>
  Effect.gen(function*() {
    yield* Effect.sleep("40 millis")
    yield* ctx.step("b", Effect.succeed(3), Schema.Number, { key: "b" })
    yield* ctx.pauseForHuman({ reason: "ok?", schema: Schema.Struct({ ok: Schema.Boolean }), key: "ask" })
    return yield* ctx.step("after", Effect.succeed(5), Schema.Number, { key: "after" })
  })

const mk = (name: string, combine: (a: Effect.Effect<never>, b: Effect.Effect<number>) => Effect.Effect<unknown>) =>
  Workflow.make({
    name,
    input: Schema.Number,
    output: Schema.String,
    run: (generation, ctx) =>
      Effect.gen(function*() {
        if (generation > 0) return `done ${generation}`
        yield* combine(branchA(ctx), branchB(ctx))
        return "unreachable"
      })
  })

const resumes = (w: Workflow.Workflow<number, string, never>) =>
  Effect.gen(function*() {
    const kernel = yield* Kernel.Kernel
    const first = yield* kernel.execute(w, { runId: w.name, tenant, input: 0 })
    expect(first.status).toEqual("paused")
    const resumed = yield* Effect.either(Effect.timeoutFail(kernel.resume({ tenantId: tenant.tenantId, runId: w.name, response: { ok: true } }), {
      duration: "5 seconds",
      onTimeout: () => "resume hung (5 s)"
    }))
    expect(Either.isRight(resumed) ? resumed.right.status : JSON.stringify(resumed.left)).toEqual("completed")
  }).pipe(Effect.provide(kernelLayer([], [], { kernel: { workflows: [w] } })))

describe("live resume with a handover wait", () => {
  it.live("race: the resumed run hands over", () => resumes(mk("rrace", (a, b) => Effect.race(a, b))), 20_000)
  it.live("Effect.all: the resumed run hands over (control)", () =>
    resumes(mk("rall", (a, b) => Effect.all([a, b], { concurrency: "unbounded", discard: true }))), 20_000)
})
