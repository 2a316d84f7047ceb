// ModelFallback over two real SDKs: OpenAI first (its fake server), Anthropic second (this package's). The model that
// answered is logged and priced, the fallback is a note in the log, and replay calls neither server.
import { describe, expect, it } from "@effect/vitest"
import { Effect, Either, Layer, Schema } from "effect"
import { Errors, EventStore, Kernel, ModelFallback, type ModelPort, Tenant, Tool, ToolRegistry, Workflow } from "@artana/core"
import { AnthropicModel } from "@artana/model-anthropic"
import { FakeAnthropic } from "@artana/model-anthropic/testing"
import { OpenAiModel } from "@artana/model-openai"
import { FakeOpenAi } from "@artana/model-openai/testing"
import { bodyOf } from "./fixtures.js"

const tenant = (budgetUsdLimit = 1) => Tenant.TenantContext.make({ tenantId: "acme", capabilities: [], budgetUsdLimit })

const Decision = Schema.Struct({ approved: Schema.Boolean })

let lookups = 0
const lookup = Tool.make({
  name: "lookup",
  description: "Looks a customer up",
  parameters: Schema.Struct({ id: Schema.String }),
  idempotent: true,
  handler: ({ id }) => Effect.sync(() => (lookups++, { id, vip: true }))
})

const decide = Workflow.make({
  name: "decide",
  input: Schema.Struct({ id: Schema.String }),
  output: Decision,
  run: ({ id }, ctx) =>
    Effect.map(ctx.chat({ prompt: `Approve customer ${id}?`, tools: ["lookup"], outputSchema: Decision }), (r) => r.output)
})

const fallbackLayer = (openAiUrl: string, anthropicUrl: string, options: ModelFallback.Options = {}) =>
  ModelFallback.layer([
    OpenAiModel.layer({ baseURL: openAiUrl, defaultModel: "gpt-4o-mini", maxRetries: 1, retryBaseDelay: "1 millis" }),
    AnthropicModel.layer({ baseURL: anthropicUrl, defaultModel: "claude-haiku-4-5", retryBaseDelay: "1 millis" })
  ], options)

const kernelLayer = (model: Layer.Layer<ModelPort.ModelPort>, store: Layer.Layer<EventStore.EventStore>) =>
  Layer.provideMerge(Kernel.layer({ workflows: [decide] }), Layer.mergeAll(model, store, ToolRegistry.layer([lookup])))

const eventsOf = (runId: string) => Effect.flatMap(EventStore.EventStore, (s) => s.readEvents("acme", runId))

describe("ModelFallback: OpenAI, then Anthropic", () => {
  it.scopedLive("a rate-limited primary hands each call on; the log names and prices the model that answered; replay calls neither", () =>
    Effect.gen(function*() {
      lookups = 0
      const openAiScript = [
        // Call 1: rate limited twice (one retry), so Anthropic answers with a tool call.
        FakeOpenAi.error(429, { message: "slow down" }),
        FakeOpenAi.error(429, { message: "slow down" }),
        // Call 2: OpenAI answers (a conversation can move between providers).
        FakeOpenAi.json({ approved: true }, { usage: { promptTokens: 100, completionTokens: 10 } })
      ]
      // Closed before the replay, and by the scope (a second close of FakeOpenAi rejects: ignored).
      const openai = yield* Effect.acquireRelease(
        Effect.promise(() => FakeOpenAi.start(openAiScript)),
        (server) => Effect.promise(() => server.close().catch(() => undefined))
      )
      const anthropic = yield* FakeAnthropic.scoped([
        FakeAnthropic.toolCall("lookup", { id: "c-7" }, { id: "toolu_1", usage: { inputTokens: 1000, outputTokens: 100 } })
      ])
      const store = Layer.succeedContext(yield* Layer.build(EventStore.layerMemory))
      const done = yield* Effect.gen(function*() {
        const kernel = yield* Kernel.Kernel
        const result = yield* kernel.execute(decide, { runId: "fb-1", tenant: tenant(), input: { id: "c-7" } })
        expect(result).toEqual({ status: "completed", runId: "fb-1", output: { approved: true } })
        expect(lookups).toBe(1)
        expect(openai.requests).toHaveLength(3)
        expect(anthropic.requests).toHaveLength(1)
        // The secondary got its own model, the tools and the answer tool.
        expect(bodyOf(anthropic, 0)).toMatchObject({ model: "claude-haiku-4-5", tool_choice: { type: "any" } })
        expect(JSON.stringify(bodyOf(openai, 2)["messages"])).toContain("toolu_1")

        const events = yield* eventsOf("fb-1")
        const requested = events.flatMap((e) => (e.payload._tag === "ModelRequested" ? [e.payload.model] : []))
        const completed = events.flatMap((e) => (e.payload._tag === "ModelCompleted" ? [e.payload] : []))
        expect(requested).toEqual(["gpt-4o-mini", "gpt-4o-mini"])
        expect(completed.map((c) => c.model)).toEqual(["claude-haiku-4-5", "gpt-4o-mini"])
        // Priced by the model that answered: claude-haiku-4-5 ($1 / $5), then gpt-4o-mini ($0.15 / $0.60).
        expect(completed[0]!.costUsd).toBeCloseTo((1000 * 1 + 100 * 5) / 1e6, 12)
        expect(completed[1]!.costUsd).toBeCloseTo((100 * 0.15 + 10 * 0.6) / 1e6, 12)
        const notes = events.flatMap((e) => (e.payload._tag === "MiddlewareNote" ? [e.payload] : []))
        // The failed model's own retries are in the reason (its notes went with its failure).
        expect(notes).toEqual([
          {
            _tag: "MiddlewareNote",
            middleware: "fallback",
            note: "fallback",
            data: { from: "gpt-4o-mini", to: "claude-haiku-4-5", kind: "rate_limited", reason: expect.stringMatching(/slow down.*gave up after 2 attempts/) }
          }
        ])
        return result
      }).pipe(Effect.provide(kernelLayer(fallbackLayer(openai.url, anthropic.url), store)))

      yield* Effect.promise(() => Promise.all([openai.close(), anthropic.close()]))
      const replayed = yield* Effect.flatMap(Kernel.Kernel, (kernel) => kernel.replay(decide, { tenantId: "acme", runId: "fb-1" })).pipe(
        Effect.provide(kernelLayer(fallbackLayer(openai.url, anthropic.url), store))
      )
      expect(replayed).toEqual(done)
      expect(lookups).toBe(1)
      expect(openai.requests).toHaveLength(3)
      expect(anthropic.requests).toHaveLength(1)
    }))

  it.scopedLive("a failure not listed in `on` fails at once; the last model's failure names the ones before it", () =>
    Effect.gen(function*() {
      const openai = yield* FakeOpenAi.scoped([
        FakeOpenAi.error(401, { message: "Incorrect API key" }),
        FakeOpenAi.error(503, { message: "down" }),
        FakeOpenAi.error(503, { message: "down" })
      ])
      const anthropic = yield* FakeAnthropic.scoped([FakeAnthropic.error(529, { message: "Overloaded" }), FakeAnthropic.error(529), FakeAnthropic.error(529), FakeAnthropic.error(529)])
      return yield* Effect.gen(function*() {
        const kernel = yield* Kernel.Kernel
        const auth = yield* Effect.either(kernel.chat({ runId: "auth", tenant: tenant(), prompt: "hi" }))
        expect(Either.isLeft(auth) && auth.left).toMatchObject({ _tag: "ModelError", kind: "authentication" })
        expect(anthropic.requests).toHaveLength(0)

        const down = yield* Effect.either(kernel.chat({ runId: "down", tenant: tenant(), prompt: "hi" }))
        expect(Either.isLeft(down) && down.left).toMatchObject({ _tag: "ModelError", kind: "server_error" })
        expect(Either.isLeft(down) && down.left instanceof Errors.ModelError && down.left.reason).toContain(
          "after falling back from \"gpt-4o-mini\" (server_error)"
        )
        expect(anthropic.requests).toHaveLength(4)
        expect((yield* eventsOf("down")).find((e) => e.type === "ModelFailed")?.payload).toMatchObject({ kind: "server_error" })
      }).pipe(Effect.provide(kernelLayer(fallbackLayer(openai.url, anthropic.url, { on: ["unavailable"] }), EventStore.layerMemory)))
    }))

  it.scopedLive("the budget prices the model that answered: a pricier secondary stops the run after its reply", () =>
    Effect.gen(function*() {
      const openai = yield* FakeOpenAi.scoped([FakeOpenAi.error(500), FakeOpenAi.error(500)])
      // claude-opus-4-1 answers: 20,000 output tokens at $75 per million is $1.50, over the $1 budget.
      const anthropic = yield* FakeAnthropic.scoped([FakeAnthropic.text("long", { usage: { inputTokens: 10, outputTokens: 20_000 } })])
      const model = ModelFallback.layer([
        OpenAiModel.layer({ baseURL: openai.url, defaultModel: "gpt-4o-mini", maxRetries: 1, retryBaseDelay: "1 millis" }),
        AnthropicModel.layer({ baseURL: anthropic.url, defaultModel: "claude-opus-4-1" })
      ])
      return yield* Effect.gen(function*() {
        const kernel = yield* Kernel.Kernel
        const over = yield* Effect.either(kernel.chat({ runId: "pricey", tenant: tenant(1), prompt: "hi", maxOutputTokens: 100 }))
        expect(Either.isLeft(over) && over.left).toBeInstanceOf(Errors.BudgetExceeded)
        const events = yield* eventsOf("pricey")
        const completed = events.find((e) => e.payload._tag === "ModelCompleted")?.payload
        expect(completed).toMatchObject({ model: "claude-opus-4-1" })
        expect(completed?._tag === "ModelCompleted" && completed.costUsd).toBeCloseTo((10 * 15 + 20_000 * 75) / 1e6, 12)
        expect(events.map((e) => e.type)).toContain("BudgetExceeded")
      }).pipe(Effect.provide(kernelLayer(model, EventStore.layerMemory)))
    }))
})
