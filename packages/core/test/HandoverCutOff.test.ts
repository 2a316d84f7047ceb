// While a replayed handover waits for the other branches (`ReplayCursor.othersConsumed`), a branch that reaches a
// second continue-as-new is cut off; once the run hands over it is interrupted, however the code combines its branches
// (found by review: parked forever, it hung a replay under `Effect.race` or an unjoined fork).
import { describe, expect, it } from "@effect/vitest"
import { Kernel, Workflow } from "@artana/core"
import { Effect, Either, Schema } from "effect"
import { kernelLayer, tenant } from "./fixtures.js"

type Ctx = Parameters<Workflow.Workflow<number, string, never>["run"]>[1]

const mk = (name: string, body: (ctx: Ctx) => Effect.Effect<unknown>) =>
  Workflow.make({
    name,
    input: Schema.Number,
    output: Schema.String,
    run: (generation, ctx) =>
      Effect.gen(function*() {
        if (generation > 0) return `done ${generation}`
        yield* body(ctx)
        return "unreachable"
      })
  })

/** Branch "a": step of 30 ms, plain 20 ms, continue-as-new with 1 (at ~50 ms). */
const branchA = (ctx: Ctx) =>
  Effect.gen(function*() {
    yield* ctx.step("a", Effect.as(Effect.sleep("30 millis"), 3), Schema.Number, { key: "a" })
    yield* Effect.sleep("20 millis")
    return yield* ctx.continueAsNew(1)
  })

/** Branch "b": plain 40 ms, step "b", durable sleep 40 ms (instant on replay), continue-as-new with 2. */
const branchB = (ctx: Ctx) =>
  Effect.gen(function*() {
    yield* Effect.sleep("40 millis")
    yield* ctx.step("b", Effect.succeed(3), Schema.Number, { key: "b" })
    yield* ctx.sleep("40 millis")
    return yield* ctx.continueAsNew(2)
  })

const replayAgrees = (w: Workflow.Workflow<number, string, never>) =>
  Effect.gen(function*() {
    const kernel = yield* Kernel.Kernel
    const result = yield* kernel.execute(w, { runId: w.name, tenant, input: 0 })
    expect(result).toEqual({ status: "completed", runId: `${w.name}::continued::1`, output: "done 1" })
    const replayed = yield* Effect.either(Effect.timeoutFail(kernel.replay(w, { tenantId: tenant.tenantId, runId: w.name }), {
      duration: "5 seconds",
      onTimeout: () => "replay hung (5 s)"
    }))
    expect(Either.isRight(replayed) ? replayed.right : JSON.stringify(replayed.left)).toEqual(result)
  }).pipe(Effect.provide(kernelLayer([], [])))

describe("parked second handover", () => {
  it.live("race: the other branch's second continue-as-new parks forever once the first handed over", () =>
    replayAgrees(mk("race2", (ctx) => Effect.race(branchA(ctx), branchB(ctx)))), 20_000)

  it.live("fork not joined: main's second continue-as-new parks forever", () =>
    replayAgrees(mk("fork2", (ctx) =>
      Effect.gen(function*() {
        yield* Effect.fork(branchA(ctx))
        yield* branchB(ctx)
      }))), 20_000)

  it.live("control: Effect.all (as in ConcurrentHandoverRace)", () =>
    replayAgrees(mk("all2", (ctx) => Effect.all([branchA(ctx), branchB(ctx)], { concurrency: "unbounded", discard: true }))), 20_000)
})

