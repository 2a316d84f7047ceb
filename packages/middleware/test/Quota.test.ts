import { describe, expect, it } from "@effect/vitest"
import { Effect, Either, Layer, Schema } from "effect"
import { Chat, EventStore, Kernel, Middleware, Tenant, Tool, ToolRegistry, Workflow } from "@artana/core"
import { ScriptedModel } from "@artana/core/testing"
import { CapabilityGuard, Quota } from "@artana/middleware"

const tenant = (budgetUsdLimit: number, capabilities: ReadonlyArray<string> = []) =>
  Tenant.TenantContext.make({ tenantId: "acme", capabilities, budgetUsdLimit })

const layer = (
  script: ReadonlyArray<ScriptedModel.Reply>,
  chain: ReadonlyArray<Middleware.Interceptor | ReturnType<typeof Quota.middleware>>,
  options: { readonly model?: string; readonly tools?: ReadonlyArray<Tool.Tool>; readonly workflows?: ReadonlyArray<Workflow.Any> } = {}
) => {
  const model = ScriptedModel.layer(script, { model: options.model ?? "gpt-4o-mini" })
  const base = Layer.mergeAll(EventStore.layerMemory, model, ToolRegistry.layer(options.tools ?? []), Middleware.layer(chain).pipe(Layer.provide(model)))
  return Layer.provideMerge(Kernel.layer({ workflows: options.workflows }), base)
}

const usage = (inputTokens: number, outputTokens: number, cachedInputTokens = 0) => ({ usage: { inputTokens, outputTokens, cachedInputTokens } })

describe("Quota", () => {
  it("prices usage from the table, cached input at the cached price, dated snapshots as their family", () => {
    const price = Quota.priceOf("gpt-4o-mini-2024-07-18", { "gpt-4o": { input: 2.5, cachedInput: 1.25, output: 10 }, "gpt-4o-mini": { input: 0.15, cachedInput: 0.075, output: 0.6 } })
    expect(price).toEqual({ input: 0.15, cachedInput: 0.075, output: 0.6 })
    expect(Quota.costOf({ inputTokens: 1_000_000, cachedInputTokens: 400_000, outputTokens: 100_000 }, price!)).toBeCloseTo(0.6 * 0.15 + 0.4 * 0.075 + 0.1 * 0.6, 10)
    expect(Quota.priceOf("gpt-4o-minimal", { "gpt-4o-mini": price! })).toBeUndefined()
  })

  it.effect("sets each call's cost, notes the spend, and the run's row sums it", () =>
    Effect.gen(function*() {
      const kernel = yield* Kernel.Kernel
      const result = yield* kernel.chat({ runId: "spend", tenant: tenant(1), messages: [Chat.user("hi")] })
      expect(result.status).toBe("completed")
      const store = yield* EventStore.EventStore
      const events = yield* store.readEvents("acme", "spend")
      const completed = events.find((e) => e.payload._tag === "ModelCompleted")!.payload
      const expected = (10_000 * 0.15 + 2_000 * 0.6) / 1_000_000
      expect(completed._tag === "ModelCompleted" && completed.costUsd).toBeCloseTo(expected, 12)
      const note = events.find((e) => e.payload._tag === "MiddlewareNote" && e.payload.note === "spend")!.payload
      expect(note).toMatchObject({ middleware: "quota", data: { model: "gpt-4o-mini", inputTokens: 10_000, outputTokens: 2_000 } })
      expect((yield* store.getRun("acme", "spend")).costUsd).toBeCloseTo(expected, 12)
    }).pipe(Effect.provide(layer([ScriptedModel.text("hello", usage(10_000, 2_000))], [Quota.middleware()]))))

  it.effect("refuses a call whose estimate would cross the budget before the model is called", () =>
    Effect.gen(function*() {
      const kernel = yield* Kernel.Kernel
      const scripted = yield* ScriptedModel.ScriptedModel
      // gpt-4o: 1M output tokens estimated cost $10 > $0.05
      const result = yield* Effect.either(kernel.chat({ runId: "pre", tenant: tenant(0.05), messages: [Chat.user("write a novel")], maxOutputTokens: 1_000_000 }))
      expect(Either.isLeft(result) && result.left._tag).toBe("BudgetExceeded")
      expect(scripted.calls()).toBe(0)
      const store = yield* EventStore.EventStore
      const types = (yield* store.readEvents("acme", "pre")).map((e) => e.type)
      expect(types).toContain("BudgetExceeded")
      expect(types.at(-1)).toBe("RunFailed")
    }).pipe(Effect.provide(layer([ScriptedModel.text("never")], [Quota.middleware()], { model: "gpt-4o" }))))

  it.effect("crossing the budget mid-run writes BudgetExceeded and fails the run", () =>
    Effect.gen(function*() {
      const kernel = yield* Kernel.Kernel
      const result = yield* Effect.either(kernel.chat({ runId: "mid", tenant: tenant(0.002), messages: [Chat.user("go")], maxOutputTokens: 100 }))
      expect(Either.isLeft(result) && result.left._tag).toBe("BudgetExceeded")
      const store = yield* EventStore.EventStore
      const run = yield* store.getRun("acme", "mid")
      expect(run.status).toBe("failed")
      expect(run.costUsd).toBeGreaterThan(0.002)
    }).pipe(Effect.provide(layer([
      ScriptedModel.toolCall("missing_tool", {}, usage(1_000, 1_000)),
      ScriptedModel.text("too expensive", usage(5_000, 3_000)),
      ScriptedModel.text("never")
    ], [Quota.middleware()]))))

  it.effect("an unpriced model is refused with a message saying how to price it; a given price works", () =>
    Effect.gen(function*() {
      const kernel = yield* Kernel.Kernel
      const refused = yield* Effect.either(kernel.chat({ runId: "unpriced", tenant: tenant(1), messages: [Chat.user("x")] }))
      expect(Either.isLeft(refused) && refused.left._tag).toBe("PolicyDenied")
      expect(Either.isLeft(refused) && refused.left.message).toContain('prices: { "llama3:8b"')
    }).pipe(Effect.provide(layer([ScriptedModel.text("x")], [Quota.middleware()], { model: "llama3:8b" }))))

  it.effect("unknownModelPrice prices models absent from the table", () =>
    Effect.gen(function*() {
      const kernel = yield* Kernel.Kernel
      yield* kernel.chat({ runId: "priced", tenant: tenant(1), messages: [Chat.user("x")] })
      const run = yield* Effect.flatMap(EventStore.EventStore, (s) => s.getRun("acme", "priced"))
      expect(run.costUsd).toBeCloseTo((1_000_000 * 1 + 1_000_000 * 2) / 1_000_000 / 1000, 12)
    }).pipe(Effect.provide(layer([ScriptedModel.text("x", usage(1_000, 1_000))], [Quota.middleware({ unknownModelPrice: { input: 1, cachedInput: 0.5, output: 2 } })], { model: "llama3:8b" }))))

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
      const store = yield* EventStore.EventStore
      const lineage = yield* store.listRuns("acme", { rootRunId: "root" })
      expect(lineage.map((r) => r.runId).sort()).toEqual(["root", "root::sub_agent::1"])
    }).pipe(Effect.provide(layer([
      ScriptedModel.text("root done", usage(1_000, 1_750)),
      ScriptedModel.text("child done", usage(1_000, 1_000))
    ], [Quota.middleware()])))
  })
})

describe("CapabilityGuard", () => {
  const wire = Tool.make({
    name: "bank.wire",
    description: "Wires money",
    parameters: Schema.Struct({ amount: Schema.Number }),
    handler: () => Effect.succeed("wired")
  })
  let calls = 0
  const lookup = Tool.make({
    name: "lookup",
    description: "Looks up",
    parameters: Schema.Struct({}),
    handler: () => Effect.sync(() => (calls++, "found"))
  })

  it.effect("strips tools the tenant lacks under its rules, notes it, and denies a call anyway", () =>
    Effect.gen(function*() {
      const kernel = yield* Kernel.Kernel
      const scripted = yield* ScriptedModel.ScriptedModel
      yield* kernel.chat({ runId: "guard", tenant: tenant(1, ["search"]), messages: [Chat.user("wire 5")] })
      expect(scripted.requests()[0]!.tools.map((t) => t.name)).toEqual(["lookup"])
      const store = yield* EventStore.EventStore
      const events = yield* store.readEvents("acme", "guard")
      const stripped = events.find((e) => e.payload._tag === "MiddlewareNote" && e.payload.note === "tools_stripped")!.payload
      expect(stripped).toMatchObject({ data: { tools: ["bank.wire"] } })
      const denied = events.find((e) => e.payload._tag === "PolicyDenied")!.payload
      expect(denied).toMatchObject({ tool: "bank.wire", middleware: "capability-guard" })
      expect(events.some((e) => e.payload._tag === "ToolCompleted" && e.payload.tool === "bank.wire")).toBe(false)
      expect(calls).toBe(1)
    }).pipe(Effect.provide(layer([
      { content: null, toolCalls: [{ name: "bank.wire", arguments: { amount: 5 } }, { name: "lookup", arguments: {} }] },
      ScriptedModel.text("could not wire")
    ], [CapabilityGuard.middleware({ require: { "bank.*": "finance:write", lookup: "search" } })], { tools: [wire, lookup], model: "gpt-4o-mini" }))))
})
