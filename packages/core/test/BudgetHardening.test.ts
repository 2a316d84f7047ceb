// Ways around the kernel's budget found in review, each held: unpriced names, provider-reported models, costs and usage, deployment prices, concurrent sub-runs.
import { describe, expect, it } from "@effect/vitest"
import { Chat, EventStore, Kernel, Middleware, ModelPort, Pricing, Tenant, ToolRegistry, Workflow } from "@artana/core"
import { ScriptedModel } from "@artana/core/testing"
import { Effect, Either, Layer, Schema } from "effect"

const tenant = (budgetUsdLimit: number) => Tenant.TenantContext.make({ tenantId: "acme", capabilities: [], budgetUsdLimit })

const scripted = (script: ReadonlyArray<ScriptedModel.Reply>, model: string) =>
  Layer.provideMerge(
    Kernel.layer(),
    Layer.mergeAll(EventStore.layerMemory, ScriptedModel.layer(script, { model }), ToolRegistry.layer([]))
  )

/** A provider whose responses are given (model name, usage, reported cost), as an OpenAI-compatible server could answer. */
const provider = (answers: ReadonlyArray<Partial<ModelPort.ModelResponse>>, requestModel = "gpt-4o-mini") => {
  let calls = 0
  const port = ModelPort.make({
    defaultModel: requestModel,
    generate: (request) =>
      Effect.sync(() => {
        const a = answers[Math.min(calls, answers.length - 1)]!
        if (a === undefined) throw new Error("no answer")
        calls++
        return {
          model: request.model,
          message: { role: "assistant" as const, content: `answer ${calls}` },
          usage: { inputTokens: 1_000, outputTokens: 1_000 },
          ...a
        } as ModelPort.ModelResponse
      })
  })
  return {
    calls: () => calls,
    layer: Layer.provideMerge(Kernel.layer(), Layer.mergeAll(EventStore.layerMemory, Layer.succeed(ModelPort.ModelPort, port), ToolRegistry.layer([])))
  }
}

/** Three model steps in one run. */
const threeCalls = Workflow.make({
  name: "three-calls",
  input: Schema.Null,
  output: Schema.Number,
  run: (_i, ctx) =>
    Effect.gen(function*() {
      for (let i = 0; i < 3; i++) yield* ctx.modelStep({ messages: [Chat.user(`call ${i}`)], maxOutputTokens: 10, key: `m${i}` })
      return 3
    })
})

describe("budget, hardened", () => {
  it.effect("a model named like an Object.prototype member ('constructor') is unpriced: BudgetUnpriced, not free", () =>
    Effect.gen(function*() {
      const kernel = yield* Kernel.Kernel
      const result = yield* Effect.either(kernel.chat({ runId: "proto", tenant: tenant(0.000001), messages: [Chat.user("hi")] }))
      expect(Either.isLeft(result) && result.left._tag).toBe("BudgetUnpriced")
    }).pipe(Effect.provide(scripted([ScriptedModel.text("spent", { usage: { inputTokens: 1_000_000, outputTokens: 1_000_000 } })], "constructor"))))

  it("Pricing.priceOf does not return Object.prototype members as prices", () => {
    for (const name of ["constructor", "toString", "__proto__", "hasOwnProperty", "valueOf"]) {
      expect(Pricing.priceOf(name, Pricing.builtIn), name).toBeUndefined()
    }
  })

  it("a distinct, pricier model is not priced as the cheaper family its name starts with (o1-pro is not o1)", () => {
    // o1-pro: $150 / $600 per million; o3-pro $20 / $80; gpt-5-pro $15 / $120. The prefix rule prices them as o1, o3, gpt-5.
    for (const name of ["o1-pro", "o3-pro", "gpt-5-pro", "o3-deep-research"]) {
      const price = Pricing.priceOf(name, Pricing.builtIn)
      const family = Pricing.builtIn[name.split("-pro")[0]!.replace("-deep-research", "")]
      expect(price === undefined || price !== family, `${name} priced as ${JSON.stringify(price)}`).toBe(true)
    }
  })

  it.effect("a response naming its model 'constructor' (provider-controlled) makes the cost NaN and switches the budget off", () => {
    // Every answer claims 1M input + 1M output tokens: $0.75 at gpt-4o-mini (the requested model), far over $0.01.
    const p = provider([{ model: "constructor", usage: { inputTokens: 1_000_000, outputTokens: 1_000_000 } }])
    return Effect.gen(function*() {
      const kernel = yield* Kernel.Kernel
      const result = yield* Effect.either(kernel.execute(threeCalls, { runId: "nan-lineage", tenant: tenant(0.01), input: null }))
      const run = yield* (yield* EventStore.EventStore).getRun("acme", "nan-lineage")
      expect({ calls: p.calls(), costUsd: run.costUsd, outcome: Either.isLeft(result) ? result.left._tag : result.right.status })
        .toEqual({ calls: 1, costUsd: expect.any(Number), outcome: "BudgetExceeded" })
      expect(Number.isFinite(run.costUsd)).toBe(true)
    }).pipe(Effect.provide(p.layer))
  })

  it.effect("a negative cost reported by the adapter is no cost: the run fails at once (BudgetUnpriced), nothing refunded", () => {
    // First answer reports -$100; the next two would report $1 each against a $0.005 budget.
    const p = provider([{ costUsd: -100 }, { costUsd: 1 }, { costUsd: 1 }])
    return Effect.gen(function*() {
      const kernel = yield* Kernel.Kernel
      const result = yield* Effect.either(kernel.execute(threeCalls, { runId: "neg", tenant: tenant(0.005), input: null }))
      expect({ calls: p.calls(), outcome: Either.isLeft(result) ? result.left._tag : result.right.status })
        .toEqual({ calls: 1, outcome: "BudgetUnpriced" })
    }).pipe(Effect.provide(p.layer))
  })

  it.effect("negative token usage reported by a provider does not refund the budget", () => {
    const p = provider([{ usage: { inputTokens: -100_000_000, outputTokens: 10 } }])
    return Effect.gen(function*() {
      const kernel = yield* Kernel.Kernel
      yield* Effect.either(kernel.chat({ runId: "negusage", tenant: tenant(0.005), messages: [Chat.user("hi")], maxOutputTokens: 10 }))
      const run = yield* (yield* EventStore.EventStore).getRun("acme", "negusage")
      expect(run.costUsd).toBeGreaterThanOrEqual(0)
    }).pipe(Effect.provide(p.layer))
  })

  it.effect("a NaN cost reported by the adapter is no cost: the run fails at once (BudgetUnpriced), the budget stays on", () => {
    const p = provider([{ costUsd: Number.NaN }, { costUsd: 1 }, { costUsd: 1 }])
    return Effect.gen(function*() {
      const kernel = yield* Kernel.Kernel
      const result = yield* Effect.either(kernel.execute(threeCalls, { runId: "nan-cost", tenant: tenant(0.005), input: null }))
      expect({ calls: p.calls(), outcome: Either.isLeft(result) ? result.left._tag : result.right.status })
        .toEqual({ calls: 1, outcome: "BudgetUnpriced" })
    }).pipe(Effect.provide(p.layer))
  })

  it.live("concurrent sub-runs of one root each see the lineage's spend as it was when they started, and together spend past it", () => {
    let calls = 0
    const port = ModelPort.make({
      defaultModel: "gpt-4o-mini",
      // A real provider takes time: the calls of concurrent runs overlap.
      generate: (request) =>
        Effect.as(Effect.sleep("20 millis"), {
          model: request.model,
          message: { role: "assistant" as const, content: `answer ${++calls}` },
          usage: { inputTokens: 100, outputTokens: 100 },
          costUsd: 0.004
        })
    })
    const layer = Layer.provideMerge(Kernel.layer(), Layer.mergeAll(EventStore.layerMemory, Layer.succeed(ModelPort.ModelPort, port), ToolRegistry.layer([])))
    return Effect.gen(function*() {
      const kernel = yield* Kernel.Kernel
      const t = tenant(0.01)
      yield* kernel.chat({ runId: "root", tenant: t, messages: [Chat.user("root")], maxOutputTokens: 10 })
      const children = yield* Effect.forEach([1, 2, 3, 4], (i) =>
        Effect.either(kernel.execute(threeCalls, { runId: `root::sub_agent::${i}`, tenant: t, input: null, parentRunId: "root" })), { concurrency: "unbounded" })
      const lineage = yield* (yield* EventStore.EventStore).listRuns("acme", { rootRunId: "root" })
      const spent = lineage.reduce((sum, r) => sum + r.costUsd, 0)
      // The budget may be crossed by at most the calls in flight when it was reached, never by several times itself.
      expect({ spent: Number(spent.toFixed(3)), refused: children.filter(Either.isLeft).length }).toEqual({ spent: expect.any(Number), refused: 4 })
      expect(spent).toBeLessThanOrEqual(0.01 + 4 * 0.004)
    }).pipe(Effect.provide(layer))
  })

  it.effect("a deployment price that is not a number (parseFloat of an unset variable) is refused, not a budget switched off", () => {
    const nan = Number.parseFloat(process.env["REVIEW_UNSET_PRICE"] ?? "")
    const layer = Layer.provideMerge(
      Kernel.layer({ prices: { "gpt-4o-mini": { input: nan, cachedInput: nan, output: nan } } }),
      Layer.mergeAll(EventStore.layerMemory, ScriptedModel.layer([
        ScriptedModel.text("a", { usage: { inputTokens: 1_000_000, outputTokens: 1_000_000 } }),
        ScriptedModel.text("b", { usage: { inputTokens: 1_000_000, outputTokens: 1_000_000 } }),
        ScriptedModel.text("c", { usage: { inputTokens: 1_000_000, outputTokens: 1_000_000 } })
      ], { model: "gpt-4o-mini" }), ToolRegistry.layer([]))
    )
    return Effect.gen(function*() {
      const built = yield* Effect.either(Layer.build(layer).pipe(Effect.scoped))
      if (Either.isLeft(built)) return // refused at construction: fine
      const result = yield* Effect.either(Effect.provide(
        Effect.flatMap(Kernel.Kernel, (kernel) => kernel.execute(threeCalls, { runId: "nan-price", tenant: tenant(0.01), input: null })),
        layer
      ))
      // Three calls of 1M + 1M tokens (~$0.75 each at the real price) against a $0.01 budget.
      expect(Either.isLeft(result) ? result.left._tag : result.right.status).not.toBe("completed")
    })
  })

  // Held: the price is resolved on the request as the middleware left it.
  it.effect("(held) a middleware that rewrites the request's model to an unpriced one gets BudgetUnpriced, and the model is not called", () => {
    const swap: Middleware.Interceptor = { name: "swap", beforeModel: (request) => Effect.succeed({ ...request, model: "llama3:70b" }) }
    const layer = Layer.provideMerge(
      Kernel.layer(),
      Layer.mergeAll(EventStore.layerMemory, ScriptedModel.layer([ScriptedModel.text("x")], { model: "gpt-4o-mini" }), ToolRegistry.layer([]), Middleware.layer([swap]))
    )
    return Effect.gen(function*() {
      const kernel = yield* Kernel.Kernel
      const r = yield* Effect.either(kernel.execute(threeCalls, { runId: "swap", tenant: tenant(1), input: null }))
      expect(Either.isLeft(r) && r.left._tag).toBe("BudgetUnpriced")
      expect((yield* ScriptedModel.ScriptedModel).calls()).toBe(0)
    }).pipe(Effect.provide(layer))
  })
})
