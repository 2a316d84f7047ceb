// A replay ends as the log says the run ended, or it is NonDeterminism: the same output, or the same failure.
import { describe, expect, it } from "@effect/vitest"
import { Effect, Layer, Schema } from "effect"
import { Artana, Workflow } from "@artana/core"
import { ScriptedModel } from "@artana/core/testing"

class Declined extends Schema.TaggedError<Declined>()("Declined", { limit: Schema.Number }) {}

const acme = { tenantId: "acme", budgetUsdLimit: 1 }
const ref = (runId: string) => ({ tenantId: "acme", runId })

// The code as deployed: `limit` decides; the same workflow name with another limit is the code changed under a run.
const pay = (limit: number) =>
  Workflow.make({
    name: "pay",
    input: Schema.Struct({ amount: Schema.Number }),
    output: Schema.String,
    error: Declined,
    run: ({ amount }, ctx) =>
      Effect.gen(function*() {
        const checked = yield* ctx.step("checked", Effect.succeed(amount), Schema.Number)
        if (checked > limit) return yield* new Declined({ limit })
        return `paid ${checked}`
      })
  })

const layer = Artana.layer({ model: ScriptedModel.layer([]) })

describe("a replay ends as the logged run ended", () => {
  it.effect("a failed run replays as the same failure; code that now completes it, or fails it otherwise, is NonDeterminism", () =>
    Effect.gen(function*() {
      expect(yield* Effect.flip(Artana.run(pay(100), { runId: "f-1", tenant: acme, input: { amount: 250 } }))).toMatchObject({ _tag: "Declined", limit: 100 })
      expect(yield* Effect.flip(Artana.replay(pay(100), ref("f-1")))).toMatchObject({ _tag: "Declined", limit: 100 })
      // The limit was raised since: the code completes where the log failed.
      const completes = yield* Effect.flip(Artana.replay(pay(1000), ref("f-1")))
      expect(completes).toMatchObject({ _tag: "NonDeterminism", actual: `output "paid 250"` })
      expect(completes.message).toContain("failure Declined")
      // Lowered the other way: it still fails, but with another error than the logged one.
      const otherwise = yield* Effect.flip(Artana.replay(pay(200), ref("f-1")))
      expect(otherwise).toMatchObject({ _tag: "NonDeterminism" })
      expect(otherwise.message).toContain(`"limit":200`)
    }).pipe(Effect.provide(layer)))

  it.effect("a completed run whose code now fails is NonDeterminism, not the new failure", () =>
    Effect.gen(function*() {
      expect(yield* Artana.run(pay(1000), { runId: "c-1", tenant: acme, input: { amount: 250 } })).toMatchObject({ status: "completed", output: "paid 250" })
      const fails = yield* Effect.flip(Artana.replay(pay(100), ref("c-1")))
      expect(fails).toMatchObject({ _tag: "NonDeterminism", expected: `output "paid 250"` })
    }).pipe(Effect.provide(Layer.fresh(layer))))
})
