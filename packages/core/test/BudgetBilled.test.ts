// A model call the provider billed is charged to the run and its lineage even when it does not complete: a reply a
// middleware refuses after the call, a reply the port refuses as malformed, a stream broken after output, a stream
// the budget stopped. Each cost is logged (`ModelFailed`, `PolicyDenied` or `BudgetExceeded` carry `costUsd`), so the
// run's cost, its lineage's and a resumed execution's spend all count it. (Found in review: each was charged $0.)
import { describe, expect, it } from "@effect/vitest"
import { Chat, Errors, EventStore, Kernel, Middleware, ModelFallback, ModelPort, Tenant, ToolRegistry, Workflow } from "@artana/core"
import { ScriptedModel } from "@artana/core/testing"
import { Effect, Either, Layer, Schema } from "effect"

const tenant = (budgetUsdLimit: number) => Tenant.TenantContext.make({ tenantId: "acme", capabilities: [], budgetUsdLimit })
// gpt-4o-mini: $0.15 a million input tokens, $0.60 a million output tokens; this usage costs $0.21.
const BIG = { inputTokens: 1_000_000, outputTokens: 100_000 }
const BIG_USD = 0.21

const kernelWith = (port: ModelPort.Service, interceptors: ReadonlyArray<Middleware.Interceptor> = []) =>
  Layer.provideMerge(
    Kernel.layer(),
    Layer.mergeAll(EventStore.layerMemory, Layer.succeed(ModelPort.ModelPort, port), ToolRegistry.layer([]), Middleware.layer(interceptors))
  )

/** Five model calls; a failed one is caught and the next tried (as a workflow that retries would). */
const fiveTries = Workflow.make({
  name: "five-tries",
  input: Schema.Null,
  output: Schema.Number,
  run: (_i, ctx) =>
    Effect.gen(function*() {
      let ok = 0
      for (let i = 0; i < 5; i++) {
        const call = yield* Effect.either(ctx.modelStep({ messages: [Chat.user(`try ${i}`)], maxOutputTokens: 100_000, key: `m${i}` }))
        if (Either.isRight(call)) ok++
      }
      return ok
    })
})

const costOf = (runId: string) => Effect.flatMap(EventStore.EventStore, (store) => Effect.map(store.getRun("acme", runId), (r) => r.costUsd))

describe("a billed model call that does not complete is charged", () => {
  it.effect("a reply a middleware refuses after the call: charged, and the budget stops the retries", () => {
    let calls = 0
    const port = ModelPort.make({
      defaultModel: "gpt-4o-mini",
      generate: (r) => Effect.sync(() => ({ model: r.model, message: { role: "assistant" as const, content: `reply ${++calls}` }, usage: BIG }))
    })
    const moderation: Middleware.Interceptor = { name: "moderation", afterModel: () => Effect.fail(new Errors.PolicyDenied({ tool: "model", reason: "reply failed moderation" })) }
    return Effect.gen(function*() {
      const result = yield* Effect.either((yield* Kernel.Kernel).execute(fiveTries, { runId: "moderated", tenant: tenant(0.25), input: null }))
      // The second call would cross $0.25 by its estimate: refused before it is sent.
      expect(calls).toBe(1)
      expect(result).toMatchObject({ left: { _tag: "BudgetExceeded" } })
      expect(yield* costOf("moderated")).toBeCloseTo(BIG_USD, 9)
      const events = yield* (yield* EventStore.EventStore).readEvents("acme", "moderated")
      expect(events.find((e) => e.payload._tag === "PolicyDenied")?.payload).toMatchObject({ middleware: "moderation", costUsd: BIG_USD })
    }).pipe(Effect.provide(kernelWith(port, [moderation])))
  })

  it.effect("a reply the port refuses as malformed (a tool call without a name): charged by its usage", () => {
    let calls = 0
    const port = ModelPort.make({
      defaultModel: "gpt-4o-mini",
      generate: (r) =>
        Effect.sync(() => ({ model: r.model, message: { role: "assistant" as const, content: "", toolCalls: [{ id: `c${++calls}`, name: "", arguments: "{}" }] }, usage: BIG }))
    })
    return Effect.gen(function*() {
      yield* Effect.either((yield* Kernel.Kernel).execute(fiveTries, { runId: "malformed", tenant: tenant(0.25), input: null }))
      expect(calls).toBe(1)
      expect(yield* costOf("malformed")).toBeCloseTo(BIG_USD, 9)
      const events = yield* (yield* EventStore.EventStore).readEvents("acme", "malformed")
      expect(events.find((e) => e.payload._tag === "ModelFailed")?.payload).toMatchObject({ kind: "malformed_tool_call", costUsd: BIG_USD })
    }).pipe(Effect.provide(kernelWith(port)))
  })

  it.effect("a stream broken after some output: charged its prompt and that output", () => {
    let calls = 0
    const port = ModelPort.make({
      defaultModel: "gpt-4o-mini",
      generate: () => Effect.die("streams only"),
      streamTo: (_r, sink) =>
        Effect.gen(function*() {
          calls++
          for (let i = 0; i < 90; i++) sink([{ _tag: "TextDelta", text: "x".repeat(4000) }])
          return yield* Effect.fail(new Errors.ModelError({ kind: "server_error", reason: "connection reset", retryable: true }))
        })
    })
    return Effect.gen(function*() {
      yield* Effect.either((yield* Kernel.Kernel).execute(fiveTries, { runId: "dropped", tenant: tenant(0.25), input: null }))
      // 90,000 output tokens a call ($0.054 each, and a few prompt tokens): four fit in $0.25, the fifth is refused.
      expect(calls).toBe(4)
      const cost = yield* costOf("dropped")
      expect(cost).toBeGreaterThan(4 * 0.054)
      expect(cost).toBeLessThanOrEqual(0.25)
    }).pipe(Effect.provide(kernelWith(port)))
  })

  it.effect("a stream the budget stopped: its cost is logged, so a sibling sub-run starts from it", () => {
    let calls = 0
    const port = ModelPort.make({
      defaultModel: "gpt-4o-mini",
      generate: () => Effect.die("streams only"),
      streamTo: (r, sink) =>
        Effect.gen(function*() {
          calls++
          let out = 0
          for (let i = 0; i < 200; i++) {
            yield* Effect.yieldNow()
            if (!sink([{ _tag: "TextDelta", text: "x".repeat(4000) }])) return yield* Effect.never
            out += 1000
          }
          return { model: r.model, message: { role: "assistant" as const, content: "done" }, usage: { inputTokens: 10, outputTokens: out } }
        })
    })
    const noop = Workflow.make({ name: "noop", input: Schema.Null, output: Schema.Null, run: () => Effect.succeed(null) })
    const child = Workflow.make({
      name: "child",
      input: Schema.Null,
      output: Schema.Null,
      run: (_i, ctx) => Effect.as(ctx.modelStep({ messages: [Chat.user("write")], maxOutputTokens: 150_000, key: "m" }), null)
    })
    return Effect.gen(function*() {
      const kernel = yield* Kernel.Kernel
      const store = yield* EventStore.EventStore
      const t = tenant(0.1)
      yield* kernel.execute(noop, { runId: "root", tenant: t, input: null })
      const a = yield* Effect.either(kernel.execute(child, { runId: "root::a", tenant: t, input: null, parentRunId: "root" }))
      expect(a).toMatchObject({ left: { _tag: "BudgetExceeded" } })
      const afterA = yield* store.lineageCostUsd("acme", "root")
      expect(afterA).toBeGreaterThan(0.09)
      // The lineage is spent: the sibling's call is refused before it is sent.
      const b = yield* Effect.either(kernel.execute(child, { runId: "root::b", tenant: t, input: null, parentRunId: "root" }))
      expect(b).toMatchObject({ left: { _tag: "BudgetExceeded" } })
      expect(calls).toBe(1)
      expect(yield* store.lineageCostUsd("acme", "root")).toBeCloseTo(afterA, 9)
    }).pipe(Effect.provide(kernelWith(port)))
  })
})

/** A call model a refuses (billed $2) and model b answers ($1), under `budgetUsdLimit`: its outcome and the run's cost. */
const passedOver = (budgetUsdLimit: number) => {
  const refused = new Errors.ModelError({ kind: "refusal", reason: "refused", retryable: false, usage: { inputTokens: 0, outputTokens: 1_000_000 } })
  const first = ScriptedModel.make([{ error: refused }], { model: "a", prices: { a: { input: 0, cachedInput: 0, output: 2 } } })
  const second = ScriptedModel.make([ScriptedModel.text("b answers", { usage: { inputTokens: 0, outputTokens: 1_000_000 } })], {
    model: "b",
    prices: { b: { input: 0, cachedInput: 0, output: 1 } }
  })
  const port = ModelFallback.make([first.port, second.port], { on: ["refusal"] })
  const layer = Layer.provideMerge(Kernel.layer(), Layer.mergeAll(EventStore.layerMemory, Layer.succeed(ModelPort.ModelPort, port), ToolRegistry.layer([])))
  return Effect.gen(function*() {
    const kernel = yield* Kernel.Kernel
    const tenant = Tenant.TenantContext.make({ tenantId: "acme", capabilities: [], budgetUsdLimit })
    const result = yield* Effect.either(kernel.chat({ runId: "passed-over", tenant, messages: [Chat.user("hi")], maxOutputTokens: 1_000_000 }))
    const run = yield* (yield* EventStore.EventStore).getRun("acme", "passed-over")
    return { result, costUsd: run.costUsd }
  }).pipe(Effect.provide(layer))
}

describe("a model a fallback passed over after it billed", () => {
  it.effect("its refused reply is charged at its own price, with the answer of the model that took over", () =>
    Effect.gen(function*() {
      const { costUsd, result } = yield* passedOver(100)
      expect(result._tag).toBe("Right")
      // $1 for b's answer, $2 for a's refused reply.
      expect(costUsd).toBe(3)
    }))

  it.effect("the call is checked at both models' prices: refused before either is asked when both do not fit", () =>
    Effect.gen(function*() {
      // At the dearest model alone the estimate was $2, within $2.5, and the call was charged $3 (found by review).
      const { costUsd, result } = yield* passedOver(2.5)
      expect(Either.isLeft(result) && result.left._tag).toBe("BudgetExceeded")
      expect(costUsd).toBe(0)
    }))
})
