// Budgets are the kernel's: every model step is priced and held to the tenant's budget with no middleware named.
import { describe, expect, it } from "@effect/vitest"
import { Chat, EventStore, Kernel, Pricing, Tenant, ToolRegistry, Workflow } from "@artana/core"
import { ScriptedModel } from "@artana/core/testing"
import { Effect, Either, Layer, Schema } from "effect"

const tenant = (budgetUsdLimit: number) => Tenant.TenantContext.make({ tenantId: "acme", capabilities: [], budgetUsdLimit })

const layer = (script: ReadonlyArray<ScriptedModel.Reply>, options: { readonly model?: string; readonly kernel?: Kernel.Options } = {}) =>
  Layer.provideMerge(
    Kernel.layer(options.kernel),
    Layer.mergeAll(EventStore.layerMemory, ScriptedModel.layer(script, { model: options.model ?? "gpt-4o-mini" }), ToolRegistry.layer([]))
  )

const usage = (inputTokens: number, outputTokens: number, cachedInputTokens = 0) => ({ usage: { inputTokens, outputTokens, cachedInputTokens } })

const logOf = (runId: string) => Effect.flatMap(EventStore.EventStore, (s) => s.readEvents("acme", runId))

describe("Pricing", () => {
  it("prices usage from a table, cached input at the cached price, dated snapshots as their family", () => {
    const price = Pricing.priceOf("gpt-4o-mini-2024-07-18", Pricing.builtIn)
    expect(price).toEqual({ input: 0.15, cachedInput: 0.075, output: 0.6 })
    expect(Pricing.costOf({ inputTokens: 1_000_000, cachedInputTokens: 400_000, outputTokens: 100_000 }, price!)).toBeCloseTo(0.6 * 0.15 + 0.4 * 0.075 + 0.1 * 0.6, 10)
    expect(Pricing.priceOf("gpt-4o-minimal", { "gpt-4o-mini": price! })).toBeUndefined()
  })

  it("the deployment's prices win over the adapter's, which win over the built-in table", () => {
    const mine = { input: 9, cachedInput: 9, output: 9 }
    const adapters = { input: 7, cachedInput: 7, output: 7 }
    expect(Pricing.resolver({ prices: { "gpt-4o": mine } }, { "gpt-4o": adapters })("gpt-4o")).toEqual(mine)
    expect(Pricing.resolver({}, { "gpt-4o": adapters })("gpt-4o")).toEqual(adapters)
    expect(Pricing.resolver({}, undefined)("gpt-4o")).toEqual(Pricing.builtIn["gpt-4o"])
    expect(Pricing.resolver({}, undefined)("llama3")).toBeUndefined()
    expect(Pricing.resolver({ unknownModelPrice: mine }, undefined)("llama3")).toEqual(mine)
  })
})

describe("the kernel's budget, with no middleware", () => {
  it.effect("prices each call from its usage, and the run's row sums it", () =>
    Effect.gen(function*() {
      const kernel = yield* Kernel.Kernel
      const result = yield* kernel.chat({ runId: "spend", tenant: tenant(1), messages: [Chat.user("hi")] })
      expect(result.status).toBe("completed")
      const completed = (yield* logOf("spend")).find((e) => e.payload._tag === "ModelCompleted")!.payload
      const expected = (10_000 * 0.15 + 2_000 * 0.6) / 1_000_000
      expect(completed._tag === "ModelCompleted" && completed.costUsd).toBeCloseTo(expected, 12)
      expect(result.status === "completed" && result.output.costUsd).toBeCloseTo(expected, 12)
      expect((yield* (yield* EventStore.EventStore).getRun("acme", "spend")).costUsd).toBeCloseTo(expected, 12)
    }).pipe(Effect.provide(layer([ScriptedModel.text("hello", usage(10_000, 2_000))]))))

  it.effect("a budget of a millionth of a dollar stops the run before the model is called", () =>
    Effect.gen(function*() {
      const kernel = yield* Kernel.Kernel
      const scripted = yield* ScriptedModel.ScriptedModel
      const result = yield* Effect.either(kernel.chat({ runId: "tiny", tenant: tenant(0.000001), messages: [Chat.user("hello")] }))
      expect(Either.isLeft(result) && result.left._tag).toBe("BudgetExceeded")
      expect(scripted.calls()).toBe(0)
      const log = yield* logOf("tiny")
      expect(log.map((e) => e.type)).toEqual(["RunStarted", "ModelRequested", "MiddlewareNote", "BudgetExceeded", "RunFailed"])
      expect(log[2]!.payload).toMatchObject({ middleware: "kernel", note: "estimate_over_budget", data: { model: "gpt-4o-mini" } })
    }).pipe(Effect.provide(layer([ScriptedModel.text("never")]))))

  it.effect("crossing the budget mid-run writes BudgetExceeded and fails the run", () =>
    Effect.gen(function*() {
      const kernel = yield* Kernel.Kernel
      const result = yield* Effect.either(kernel.chat({ runId: "mid", tenant: tenant(0.002), messages: [Chat.user("go")], maxOutputTokens: 100 }))
      expect(Either.isLeft(result) && result.left._tag).toBe("BudgetExceeded")
      const run = yield* (yield* EventStore.EventStore).getRun("acme", "mid")
      expect(run.status).toBe("failed")
      expect(run.costUsd).toBeGreaterThan(0.002)
    }).pipe(Effect.provide(layer([
      ScriptedModel.toolCall("missing_tool", {}, usage(1_000, 1_000)),
      ScriptedModel.text("too expensive", usage(5_000, 3_000)),
      ScriptedModel.text("never")
    ]))))

  it.effect("an unpriced model is refused before the request with BudgetUnpriced, saying how to price it; replay agrees", () => {
    const ask = Workflow.make({
      name: "ask",
      input: Schema.Null,
      output: Schema.String,
      run: (_i, ctx) => Effect.map(ctx.chat({ messages: [Chat.user("x")] }), (r) => r.output)
    })
    return Effect.gen(function*() {
      const kernel = yield* Kernel.Kernel
      const scripted = yield* ScriptedModel.ScriptedModel
      const refused = yield* Effect.flip(kernel.execute(ask, { runId: "unpriced", tenant: tenant(1), input: null }))
      expect(refused._tag).toBe("BudgetUnpriced")
      expect(refused.message).toContain('prices: { "llama3:8b"')
      expect(scripted.calls()).toBe(0)
      expect((yield* logOf("unpriced")).map((e) => e.type)).toEqual(["RunStarted", "ModelRequested", "ModelFailed", "RunFailed"])
      const replayed = yield* Effect.flip(kernel.replay(ask, { tenantId: "acme", runId: "unpriced" }))
      expect(replayed._tag).toBe("BudgetUnpriced")
    }).pipe(Effect.provide(layer([ScriptedModel.text("x")], { model: "llama3:8b" })))
  })

  it.effect("a price in the kernel's options, or unknownModelPrice, prices a model no table knows", () =>
    Effect.gen(function*() {
      const kernel = yield* Kernel.Kernel
      yield* kernel.chat({ runId: "priced", tenant: tenant(1), messages: [Chat.user("x")] })
      const run = yield* (yield* EventStore.EventStore).getRun("acme", "priced")
      expect(run.costUsd).toBeCloseTo((1_000 * 1 + 1_000 * 2) / 1_000_000, 12)
    }).pipe(Effect.provide(layer([ScriptedModel.text("x", usage(1_000, 1_000))], { model: "llama3:8b", kernel: { unknownModelPrice: { input: 1, cachedInput: 0.5, output: 2 } } }))))

  it.effect("a cost the adapter reports is used as it is", () =>
    Effect.gen(function*() {
      const kernel = yield* Kernel.Kernel
      yield* kernel.chat({ runId: "reported", tenant: tenant(1), messages: [Chat.user("x")] })
      expect((yield* (yield* EventStore.EventStore).getRun("acme", "reported")).costUsd).toBe(0.0123)
    }).pipe(Effect.provide(layer([ScriptedModel.text("x", { ...usage(1_000, 1_000), costUsd: 0.0123 })]))))

  it.effect("turning the budget off is explicit: nothing is refused and every model step notes it", () =>
    Effect.gen(function*() {
      const kernel = yield* Kernel.Kernel
      const result = yield* kernel.chat({ runId: "off", tenant: tenant(0), messages: [Chat.user("x")] })
      expect(result.status).toBe("completed")
      const notes = (yield* logOf("off")).filter((e) => e.payload._tag === "MiddlewareNote").map((e) => e.payload)
      expect(notes).toMatchObject([{ middleware: "kernel", note: "budget_not_enforced", data: { limitUsd: 0 } }])
    }).pipe(Effect.provide(layer([ScriptedModel.text("x")], { model: "llama3:8b", kernel: { enforceBudget: false } }))))

  it.effect("sub-runs draw on the root run's budget", () => {
    const child = Workflow.make({
      name: "child",
      input: Schema.Null,
      output: Schema.String,
      run: (_i, ctx) => Effect.map(ctx.chat({ messages: [Chat.user("child")], maxOutputTokens: 10 }), (r) => r.output)
    })
    return Effect.gen(function*() {
      const kernel = yield* Kernel.Kernel
      const t = tenant(0.0015)
      // The root spends ~$0.0012 of $0.0015 (1000 in + 1750 out at gpt-4o-mini prices).
      yield* kernel.chat({ runId: "root", tenant: t, messages: [Chat.user("root")], maxOutputTokens: 10 })
      const result = yield* Effect.either(kernel.execute(child, { runId: "root::sub_agent::1", tenant: t, input: null, parentRunId: "root" }))
      expect(Either.isLeft(result) && result.left._tag).toBe("BudgetExceeded")
      const lineage = yield* (yield* EventStore.EventStore).listRuns("acme", { rootRunId: "root" })
      expect(lineage.map((r) => r.runId).sort()).toEqual(["root", "root::sub_agent::1"])
    }).pipe(Effect.provide(layer([
      ScriptedModel.text("root done", usage(1_000, 1_750)),
      ScriptedModel.text("child done", usage(1_000, 1_000))
    ])))
  })
})
