// ModelRouter and a streamed ModelFallback over two real SDKs (OpenAI's fake server, Anthropic's), both streaming: the
// model used is logged and priced, and replay calls neither server.
import { describe, expect, it } from "@effect/vitest"
import { Chunk, Effect, Layer, Schema, Stream } from "effect"
import { Chat, EventStore, Kernel, ModelFallback, ModelPort, ModelRouter, Tenant, ToolRegistry, Workflow } from "@artana/core"
import { AnthropicModel } from "@artana/model-anthropic"
import { FakeAnthropic } from "@artana/model-anthropic/testing"
import { OpenAiModel } from "@artana/model-openai"
import { FakeOpenAi } from "@artana/model-openai/testing"

const draftAndReview = Workflow.make({
  name: "draft-and-review",
  input: Schema.String,
  output: Schema.String,
  run: (question, ctx) =>
    Effect.gen(function*() {
      const draft = yield* ctx.chat({ prompt: question, model: "gpt-4o-mini" })
      const review = yield* ctx.chat({ prompt: `Review: ${draft.output}`, model: "claude-haiku-4-5" })
      return `${draft.output} / ${review.output}`
    })
})

const streamed = (server: { readonly requests: ReadonlyArray<{ readonly body: unknown }> }) =>
  server.requests.map((r) => typeof r.body === "object" && r.body !== null && "stream" in r.body && r.body.stream === true)

describe("ModelRouter over OpenAI and Anthropic", () => {
  it.scopedLive("gpt-* goes to OpenAI, claude-* to Anthropic, both streamed; each call logged and priced by its model; replay calls neither", () =>
    Effect.gen(function*() {
      const openai = yield* FakeOpenAi.scoped([FakeOpenAi.text("42", { usage: { promptTokens: 1000, completionTokens: 100 } })])
      const anthropic = yield* FakeAnthropic.scoped([FakeAnthropic.text("looks right", { usage: { inputTokens: 1000, outputTokens: 100 } })])
      const model = ModelRouter.layer({
        "gpt-*": OpenAiModel.layer({ baseURL: openai.url, stream: true }),
        "claude-*": AnthropicModel.layer({ baseURL: anthropic.url, stream: true })
      })
      const store = Layer.succeedContext(yield* Layer.build(EventStore.layerMemory))
      const kernel = yield* Effect.provide(
        Kernel.Kernel,
        Layer.provideMerge(Kernel.layer({ workflows: [draftAndReview] }), Layer.mergeAll(model, store, ToolRegistry.layer([])))
      )
      const tenant = Tenant.TenantContext.make({ tenantId: "acme", capabilities: [], budgetUsdLimit: 1 })
      const result = yield* kernel.execute(draftAndReview, { runId: "r-1", tenant, input: "6 x 7?" })
      expect(result).toEqual({ status: "completed", runId: "r-1", output: "42 / looks right" })
      expect([streamed(openai), streamed(anthropic)]).toEqual([[true], [true]])

      const events = yield* Effect.provide(Effect.flatMap(EventStore.EventStore, (s) => s.readEvents("acme", "r-1")), store)
      const completed = events.flatMap((e) => (e.payload._tag === "ModelCompleted" ? [e.payload] : []))
      expect(completed.map((c) => c.model)).toEqual(["gpt-4o-mini", "claude-haiku-4-5"])
      expect(completed[0]!.costUsd).toBeCloseTo((1000 * 0.15 + 100 * 0.6) / 1e6, 12)
      expect(completed[1]!.costUsd).toBeCloseTo((1000 * 1 + 100 * 5) / 1e6, 12)

      yield* Effect.promise(() => Promise.all([openai.close(), anthropic.close()]))
      expect(yield* kernel.replay(draftAndReview, { tenantId: "acme", runId: "r-1" })).toEqual(result)
      expect([openai.requests.length, anthropic.requests.length]).toEqual([1, 1])
    }))
})

describe("ModelFallback, streamed, over OpenAI then Anthropic", () => {
  it.scopedLive("OpenAI rate-limited before its stream starts: Anthropic's deltas stream, and its reply carries the fallback note", () =>
    Effect.gen(function*() {
      const openai = yield* FakeOpenAi.scoped([FakeOpenAi.error(429, { message: "slow down" })])
      const anthropic = yield* FakeAnthropic.scoped([FakeAnthropic.text("from claude", { pieces: 2 })])
      const model = yield* Effect.provide(ModelPort.ModelPort, ModelFallback.layer([
        OpenAiModel.layer({ baseURL: openai.url, defaultModel: "gpt-4o-mini", stream: true, maxRetries: 0 }),
        AnthropicModel.layer({ baseURL: anthropic.url, defaultModel: "claude-haiku-4-5", stream: true })
      ]))
      const parts = Chunk.toReadonlyArray(yield* Stream.runCollect(model.stream({ model: "gpt-4o-mini", messages: [Chat.user("hi")], tools: [] })))
      expect(parts.flatMap((p) => (p._tag === "TextDelta" ? [p.text] : []))).toEqual(["from c", "laude"])
      const last = parts[parts.length - 1]
      expect(last?._tag === "Finished" && last.response.model).toBe("claude-haiku-4-5")
      expect(last?._tag === "Finished" && last.response.notes).toEqual([
        { source: "fallback", note: "fallback", data: { from: "gpt-4o-mini", to: "claude-haiku-4-5", kind: "rate_limited", reason: expect.stringContaining("slow down") } }
      ])
      expect([streamed(openai), streamed(anthropic)]).toEqual([[true], [true]])
    }))
})
