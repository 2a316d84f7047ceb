import { describe, expect, it } from "@effect/vitest"
import { Effect, Schema } from "effect"
import { Artana, Chat, Errors, Workflow } from "@artana/core"
import { ScriptedModel } from "@artana/core/testing"

class Declined extends Schema.TaggedError<Declined>()("Declined", { reason: Schema.String, limit: Schema.Number }) {
  override get message() {
    return `declined: ${this.reason}`
  }
}

const acme = { tenantId: "acme", budgetUsdLimit: 1 }
const ref = (runId: string) => ({ tenantId: "acme", runId })

const pay = Workflow.make({
  name: "pay",
  input: Schema.Struct({ amount: Schema.Number }),
  output: Schema.String,
  error: Declined,
  run: ({ amount }, ctx) =>
    Effect.gen(function*() {
      const checked = yield* ctx.step("limit", Effect.succeed(100), Schema.Number)
      if (amount > checked) return yield* new Declined({ reason: `${amount} is over the limit`, limit: checked })
      return "paid"
    })
})

// The same workflow without an error schema: its failure is logged by tag and message only.
const untyped = Workflow.make({
  name: "pay-untyped",
  input: Schema.Struct({ amount: Schema.Number }),
  output: Schema.String,
  run: ({ amount }) => Effect.fail(new Declined({ reason: `${amount} is over the limit`, limit: 100 }))
})

const ask = Workflow.make({
  name: "ask",
  input: Schema.String,
  output: Schema.String,
  run: (prompt, ctx) => Effect.map(ctx.chat({ messages: [Chat.user(prompt)] }), (r) => r.output)
})

const layer = () => Artana.layer({ model: ScriptedModel.layer([ScriptedModel.text("hi")]), workflows: [pay, untyped] })

describe("typed to the end: a workflow's declared error", () => {
  it.effect("RunFailed logs the error encoded; resume (typed or by name) and replay fail with the original Declined", () =>
    Effect.gen(function*() {
      const first = yield* Effect.flip(Artana.run(pay, { runId: "p-1", tenant: acme, input: { amount: 250 } }))
      expect(first).toBeInstanceOf(Declined)
      const events = yield* Artana.readEvents(ref("p-1"))
      expect(events.at(-1)?.payload).toEqual({
        _tag: "RunFailed",
        errorTag: "Declined",
        error: "declined: 250 is over the limit",
        encoded: { _tag: "Declined", reason: "250 is over the limit", limit: 100 }
      })
      // Typed by the workflow: the error channel is Declined | KernelError, so catchTag("Declined") compiles.
      const limit = yield* Artana.resume({ ...ref("p-1"), workflow: pay }).pipe(
        Effect.map(() => -1),
        Effect.catchTag("Declined", (e) => Effect.succeed(e.limit))
      )
      expect(limit).toBe(100)
      const byName = yield* Effect.flip(Artana.resume(ref("p-1")))
      expect(byName).toBeInstanceOf(Declined)
      expect(byName).toEqual(first)
      const replayed = yield* Effect.flip(Artana.replay(pay, ref("p-1")))
      expect(replayed).toBeInstanceOf(Declined)
      expect(replayed).toEqual(first)
      // Resuming a failed run writes nothing.
      expect((yield* Artana.readEvents(ref("p-1"))).length).toBe(events.length)
    }).pipe(Effect.provide(layer())))

  it.effect("without an error schema, a resumed failed run is a RunFailedError with the tag and message", () =>
    Effect.gen(function*() {
      yield* Effect.flip(Artana.run(untyped, { runId: "u-1", tenant: acme, input: { amount: 250 } }))
      const events = yield* Artana.readEvents(ref("u-1"))
      expect(events.at(-1)?.payload).toEqual({ _tag: "RunFailed", errorTag: "Declined", error: "declined: 250 is over the limit" })
      const resumed = yield* Effect.flip(Artana.resume(ref("u-1")))
      expect(resumed).toBeInstanceOf(Errors.RunFailedError)
      expect(resumed).toMatchObject({ errorTag: "Declined", reason: "declined: 250 is over the limit" })
    }).pipe(Effect.provide(layer())))

  it.effect("a run failed by its budget resumes as the same BudgetExceeded, not a RunFailedError", () =>
    Effect.gen(function*() {
      const first = yield* Effect.flip(Artana.run(ask, { runId: "b-1", tenant: { tenantId: "acme", budgetUsdLimit: 0 }, input: "Hi" }))
      expect(first._tag).toBe("BudgetExceeded")
      const resumed = yield* Effect.flip(Artana.resume(ref("b-1")))
      expect(resumed).toBeInstanceOf(Errors.BudgetExceeded)
      expect(resumed).toEqual(first)
    }).pipe(Effect.provide(Artana.layer({ model: ScriptedModel.layer([ScriptedModel.text("hi")]), workflows: [ask] }))))

  it("the Promise client rejects a resumed failed run with the original error", async () => {
    const artana = Artana.create({ model: ScriptedModel.layer([]), workflows: [pay] })
    try {
      await expect(artana.run(pay, { runId: "p-2", tenant: acme, input: { amount: 500 } })).rejects.toBeInstanceOf(Declined)
      const again = await artana.resume({ ...ref("p-2"), workflow: pay }).catch((e: unknown) => e)
      expect(again).toBeInstanceOf(Declined)
      expect(again).toMatchObject({ reason: "500 is over the limit", limit: 100 })
    } finally {
      await artana.close()
    }
  })
})
