import { describe, expect, it } from "@effect/vitest"
import { Chunk, Effect, Either, Layer, Schema, Stream } from "effect"
import { Chat, Errors, EventStore, Kernel, ModelFallback, ModelPort, ModelRouter, Pricing, Tenant, ToolRegistry, Workflow } from "@artana/core"
import { ScriptedModel } from "@artana/core/testing"

const fail = (kind: Errors.ModelError["kind"]): ScriptedModel.Reply => ({ error: new Errors.ModelError({ kind, reason: `${kind} here`, retryable: true }) })

const request = { model: "first-model", messages: [Chat.user("hi")], tools: [] }

describe("ModelFallback.make", () => {
  it.effect("by default falls back on rate limits and outages, each later model asked with its own default model", () =>
    Effect.gen(function*() {
      const first = ScriptedModel.make([fail("connection"), fail("refusal")], { model: "first-model" })
      const second = ScriptedModel.make([fail("timeout")], { model: "second-model" })
      const third = ScriptedModel.make([ScriptedModel.text("third answers")], { model: "third-model" })
      const model = ModelFallback.make([first.port, second.port, third.port])
      const response = yield* model.generate(request)
      expect(response.model).toBe("third-model")
      expect(response.message.content).toBe("third answers")
      expect(second.inspector.requests()[0]!.model).toBe("second-model")
      expect(response.notes).toEqual([
        { source: "fallback", note: "fallback", data: { from: "first-model", to: "second-model", kind: "connection", reason: "connection here" } },
        { source: "fallback", note: "fallback", data: { from: "second-model", to: "third-model", kind: "timeout", reason: "timeout here" } }
      ])
      // A refusal is not an outage: no fallback.
      const refused = yield* Effect.flip(model.generate(request))
      expect(refused.kind).toBe("refusal")
      expect(second.inspector.calls()).toBe(1)
    }))

  it.effect("`on` chooses the kinds; the port's prices are all its models', the first's winning", () =>
    Effect.gen(function*() {
      const mine = { input: 1, cachedInput: 1, output: 1 }
      const first = ScriptedModel.make([fail("rate_limited")], { model: "a", prices: { a: mine, shared: mine } })
      const second = ScriptedModel.make([], { model: "b", prices: { b: Pricing.free, shared: Pricing.free } })
      const model = ModelFallback.make([first.port, second.port], { on: ["server_error"] })
      expect(model.defaultModel).toBe("a")
      expect(model.prices).toEqual({ a: mine, b: Pricing.free, shared: mine })
      const error = yield* Effect.flip(model.generate({ ...request, model: "a" }))
      expect(error.kind).toBe("rate_limited")
      expect(second.inspector.calls()).toBe(0)
    }))

  it.effect("streamed: a failure before the first delta falls back; the stream then is the next model's, with the note", () =>
    Effect.gen(function*() {
      const first = ScriptedModel.make([fail("rate_limited")], { model: "first-model" })
      const second = ScriptedModel.make([ScriptedModel.text("second answers", { deltas: ["second ", "answers"] })], { model: "second-model" })
      const model = ModelFallback.make([first.port, second.port])
      const parts = Chunk.toReadonlyArray(yield* Stream.runCollect(model.stream(request)))
      expect(parts.flatMap((p) => (p._tag === "TextDelta" ? [p.text] : []))).toEqual(["second ", "answers"])
      const finished = parts[parts.length - 1]
      expect(finished?._tag === "Finished" && finished.response.model).toBe("second-model")
      expect(finished?._tag === "Finished" && finished.response.notes).toEqual([
        { source: "fallback", note: "fallback", data: { from: "first-model", to: "second-model", kind: "rate_limited", reason: "rate_limited here" } }
      ])
      expect(second.inspector.requests()[0]!.model).toBe("second-model")
    }))

  it.effect("streamed: after the first delta a failure is the call's; no other model is asked", () =>
    Effect.gen(function*() {
      const broken = ModelPort.make({
        defaultModel: "first-model",
        generate: () => Effect.die("not used"),
        stream: () =>
          Stream.concat(
            Stream.make<[ModelPort.StreamPart]>({ _tag: "TextDelta", text: "half an ans" }),
            Stream.fail(new Errors.ModelError({ kind: "connection", reason: "connection reset", retryable: true }))
          )
      })
      const second = ScriptedModel.make([], { model: "second-model" })
      const model = ModelFallback.make([broken, second.port])
      const seen: Array<ModelPort.StreamPart> = []
      const error = yield* Effect.flip(Stream.runForEach(model.stream(request), (p) => Effect.sync(() => void seen.push(p))))
      expect(seen).toEqual([{ _tag: "TextDelta", text: "half an ans" }])
      expect(error.kind).toBe("connection")
      expect(error.reason).toBe("connection reset")
      expect(second.inspector.calls()).toBe(0)
    }))
})

describe("the kernel's budget with a fallback", () => {
  // $1 a million tokens in and out for the first model, $100 for the second: a call of 1,000 prompt tokens capped at
  // 1,000 output tokens is estimated at $0.002 by the first's price and $0.20 by the second's.
  const cheap = { input: 1, cachedInput: 1, output: 1 }
  const dear = { input: 100, cachedInput: 100, output: 100 }
  const tenant = (budgetUsdLimit: number) => Tenant.TenantContext.make({ tenantId: "acme", capabilities: [], budgetUsdLimit })
  const oneCall = Workflow.make({
    name: "one-call",
    input: Schema.Null,
    output: Schema.String,
    run: (_i, ctx) => Effect.map(ctx.modelStep({ messages: [Chat.user("x".repeat(4_000))], maxOutputTokens: 1_000, key: "m" }), (r) => r.message.content ?? "")
  })
  const kernelOver = (port: ModelPort.Service) =>
    Layer.provideMerge(Kernel.layer(), Layer.mergeAll(EventStore.layerMemory, Layer.succeed(ModelPort.ModelPort, port), ToolRegistry.layer([])))
  const usage = { inputTokens: 1_000, outputTokens: 1_000 }

  it.effect("a call a pricier later model may answer is estimated at that model's price: refused before any model is asked", () => {
    const first = ScriptedModel.make([fail("rate_limited")], { model: "cheap-model", prices: { "cheap-model": cheap } })
    const second = ScriptedModel.make([ScriptedModel.text("dear answer", { usage })], { model: "dear-model", prices: { "dear-model": dear } })
    return Effect.gen(function*() {
      const result = yield* Effect.either((yield* Kernel.Kernel).execute(oneCall, { runId: "r", tenant: tenant(0.05), input: null }))
      expect(result).toMatchObject({ left: { _tag: "BudgetExceeded" } })
      expect(first.inspector.calls() + second.inspector.calls()).toBe(0)
      const run = yield* (yield* EventStore.EventStore).getRun("acme", "r")
      expect(run.costUsd).toBe(0)
      const events = yield* (yield* EventStore.EventStore).readEvents("acme", "r")
      const note = events.flatMap((e) => (e.payload._tag === "MiddlewareNote" && e.payload.note === "estimate_over_budget" ? [e.payload.data] : []))[0]
      expect(note).toMatchObject({ model: "cheap-model" })
      expect(Number((note as Record<string, unknown>)["estimateUsd"])).toBeGreaterThan(0.05)
    }).pipe(Effect.provide(kernelOver(ModelFallback.make([first.port, second.port]))))
  })

  it.effect("within the dearest model's estimate: the cheap model answers and is charged its own price; a router passes the fallback's models on", () => {
    const first = ScriptedModel.make([ScriptedModel.text("cheap answer", { usage })], { model: "cheap-model", prices: { "cheap-model": cheap } })
    const second = ScriptedModel.make([], { model: "dear-model", prices: { "dear-model": dear } })
    const fallback = ModelFallback.make([first.port, second.port])
    const router = ModelRouter.make({ "cheap-*": fallback })
    expect(router.answeredBy?.("cheap-model")).toEqual(["cheap-model", "dear-model"])
    expect(router.answeredBy?.("other")).toEqual(["other"])
    return Effect.gen(function*() {
      const answer = yield* (yield* Kernel.Kernel).execute(oneCall, { runId: "r", tenant: tenant(0.5), input: null })
      expect(answer).toMatchObject({ status: "completed", output: "cheap answer" })
      const run = yield* (yield* EventStore.EventStore).getRun("acme", "r")
      expect(run.costUsd).toBeCloseTo(0.002, 9)
    }).pipe(Effect.provide(kernelOver(router)))
  })
  it.effect("a stream is stopped at the price of the model streaming: a cheap model past its cap, within the budget at its own price, goes on (found in review)", () => {
    // 250 output tokens streamed (past the 10-token cap, as a server may): $0.00025 at the cheap model's price.
    const first = ScriptedModel.make([ScriptedModel.text("word ".repeat(200), { deltas: 100, usage: { inputTokens: 5, outputTokens: 250 } })], { model: "cheap-model", prices: { "cheap-model": cheap } })
    const second = ScriptedModel.make([], { model: "dear-model", prices: { "dear-model": dear } })
    const port = ModelFallback.make([first.port, second.port])
    const layer = Layer.provideMerge(Kernel.layer({ defaultMaxOutputTokens: 10 }), Layer.mergeAll(EventStore.layerMemory, Layer.succeed(ModelPort.ModelPort, port), ToolRegistry.layer([])))
    return Effect.gen(function*() {
      const kernel = yield* Kernel.Kernel
      const result = yield* Effect.either(kernel.chat({ runId: "s", tenant: tenant(0.002), messages: [Chat.user("hi")] }))
      const run = yield* (yield* EventStore.EventStore).getRun("acme", "s")
      // Only the cheap model answered: it is charged its own price, $0.000255 at most.
      expect(second.inspector.calls()).toBe(0)
      expect(run.costUsd).toBeLessThan(0.0003)
      expect(Either.isRight(result)).toBe(true)
    }).pipe(Effect.provide(layer))
  })
})
