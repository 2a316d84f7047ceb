// A continue-as-new, replayed, waits for the other branches to consume the steps the log holds first
// (`ReplayCursor.othersConsumed`). Found by review: the branch that consumed the last logged step ran on, past where
// the first run's handover had cut it off, into a step the log never held (a step in flight, a pause, a second
// continue-as-new): replay failed with NonDeterminism, or handed over with the other branch's input. Such a step now
// waits, never answered, until the handover interrupts its branch.
import { describe, expect, it } from "@effect/vitest"
import { Kernel, Workflow } from "@artana/core"
import { type Duration, Effect, Either, Schema } from "effect"
import { kernelLayer, tenant } from "./fixtures.js"

type Ctx = Parameters<Workflow.Workflow<number, string, never>["run"]>[1]

/**
 * Branch "a": a step of 30 ms, `pause` of plain code, then continue-as-new with 1 (at ~50 ms). Beside it, `other`.
 * A generation after the first returns `done <generation>`.
 */
const chain = (name: string, pause: Duration.DurationInput, other: (ctx: Ctx) => Effect.Effect<unknown>) =>
  Workflow.make({
    name,
    input: Schema.Number,
    output: Schema.String,
    run: (generation, ctx) =>
      Effect.gen(function*() {
        if (generation > 0) return `done ${generation}`
        const a = Effect.gen(function*() {
          yield* ctx.step("a", Effect.as(Effect.sleep("30 millis"), 3), Schema.Number, { key: "a" })
          yield* Effect.sleep(pause)
          return yield* ctx.continueAsNew(1)
        })
        yield* Effect.all([a, other(ctx)], { concurrency: "unbounded", discard: true })
        return "unreachable"
      })
  })

/** Runs the chain to its end, then replays it: the same result. */
const replayAgrees = (w: Workflow.Workflow<number, string, never>) =>
  Effect.gen(function*() {
    const kernel = yield* Kernel.Kernel
    const result = yield* kernel.execute(w, { runId: w.name, tenant, input: 0 })
    expect(result).toEqual({ status: "completed", runId: `${w.name}::continued::1`, output: "done 1" })
    const replayed = yield* Effect.either(kernel.replay(w, { tenantId: tenant.tenantId, runId: w.name }))
    expect(Either.isRight(replayed) ? replayed.right : JSON.stringify(replayed.left)).toEqual(result)
  }).pipe(Effect.provide(kernelLayer([], [])))

/** "b" logged at 40 ms, after "a" (30 ms), then `next`: reached on replay while "a"'s handover waits for "b". */
const after40 = (next: (ctx: Ctx) => Effect.Effect<unknown>) => (ctx: Ctx) =>
  Effect.gen(function*() {
    yield* Effect.zipRight(Effect.sleep("40 millis"), ctx.step("b", Effect.succeed(3), Schema.Number, { key: "b" }))
    return yield* next(ctx)
  })

/** A memoized step of 100 ms: in flight at the first run's handover, never logged. */
const inFlight = (ctx: Ctx) => ctx.step("long", Effect.as(Effect.sleep("100 millis"), 4), Schema.Number, { key: "long" })

describe("a handover waiting for other branches", () => {
  it.live("a replay of a chain whose other branch had a step in flight at the handover agrees with it", () =>
    replayAgrees(chain("inflight", "20 millis", after40(inFlight))))

  it.live("the same with no step of the other branch logged after the handing-over branch's", () =>
    replayAgrees(chain("inflight0", "0 millis", (ctx) => Effect.zipRight(ctx.step("b", Effect.succeed(1), Schema.Number, { key: "b" }), inFlight(ctx)))))

  // The other branch would continue as new with 2 at 80 ms (after a durable sleep, over at once on replay).
  it.live("a replay of a chain where another branch would also continue as new hands over with the first input", () =>
    replayAgrees(chain("twohandovers", "20 millis", after40((ctx) => Effect.zipRight(ctx.sleep("40 millis"), ctx.continueAsNew(2))))))

  // The other branch would pause at 80 ms (after a durable sleep, over at once on replay).
  it.live("a replay of a chain where another branch would pause after its logged steps agrees with it", () =>
    replayAgrees(chain("pauserace", "20 millis", after40((ctx) =>
      Effect.zipRight(ctx.sleep("40 millis"), ctx.pauseForHuman({ reason: "ok?", schema: Schema.Struct({ ok: Schema.Boolean }), key: "ask" }))))))
})
