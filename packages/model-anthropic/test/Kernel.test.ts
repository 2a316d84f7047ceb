// Governed runs over the real @anthropic-ai/sdk against a local Anthropic-compatible server: capabilities, the tool
// round trip, structured output, usage and cost in the log, the budget, errors, and replay with no server at all.
import { describe, expect, it } from "@effect/vitest"
import { Effect, Either, Layer, Schema } from "effect"
import { Chat, Errors, EventStore, Kernel, Tenant, Tool, ToolRegistry, Workflow } from "@artana/core"
import { AnthropicModel } from "@artana/model-anthropic"
import { FakeAnthropic } from "@artana/model-anthropic/testing"
import { bodyOf } from "./fixtures.js"

const tenant = (budgetUsdLimit = 1) =>
  Tenant.TenantContext.make({ tenantId: "acme", capabilities: ["finance:read"], budgetUsdLimit })

const Decision = Schema.Struct({ approved: Schema.Boolean, reason: Schema.String })

let balanceCalls = 0
const getBalance = Tool.make({
  name: "get_balance",
  description: "Balance of an account in USD",
  parameters: Schema.Struct({ accountId: Schema.String }),
  success: Schema.Struct({ accountId: Schema.String, balance: Schema.Number }),
  requiresCapability: "finance:read",
  idempotent: true,
  handler: ({ accountId }) => Effect.sync(() => (balanceCalls++, { accountId, balance: 1200 }))
})

let transfers = 0
const transfer = Tool.make({
  name: "transfer",
  description: "Moves money",
  parameters: Schema.Struct({ to: Schema.String, amount: Schema.Number }),
  requiresCapability: "finance:write",
  handler: () => Effect.sync(() => (transfers++, "moved"))
})

/** A workflow that asks whether acc-1 can afford 100, with the tools and the output schema. */
const approve = Workflow.make({
  name: "approve",
  input: Schema.Struct({ amount: Schema.Number }),
  output: Decision,
  run: ({ amount }, ctx) =>
    Effect.map(
      ctx.chat({ prompt: `Can acc-1 afford ${amount}?`, tools: ["get_balance", "transfer"], outputSchema: Decision }),
      (r) => r.output
    )
})

/** A kernel over the real adapter, talking HTTP to `url`, over `store`. */
const kernelLayer = (url: string, store: Layer.Layer<EventStore.EventStore>, options: AnthropicModel.Options = {}) =>
  Layer.provideMerge(
    Kernel.layer({ workflows: [approve] }),
    Layer.mergeAll(
      AnthropicModel.layer({ baseURL: url, defaultModel: "claude-haiku-4-5", retryBaseDelay: "1 millis", ...options }),
      store,
      ToolRegistry.layer([getBalance, transfer])
    )
  )

const eventsOf = (runId: string) => Effect.flatMap(EventStore.EventStore, (s) => s.readEvents("acme", runId))

describe("a governed chat over AnthropicModel", () => {
  it.scopedLive("model -> tool -> structured answer: capabilities hold, the log has usage and cost, replay needs no server", () =>
    Effect.gen(function*() {
      balanceCalls = 0
      transfers = 0
      const server = yield* FakeAnthropic.scoped([
        FakeAnthropic.toolCall("get_balance", { accountId: "acc-1" }, { id: "toolu_1", usage: { inputTokens: 400, outputTokens: 30 } }),
        FakeAnthropic.output({ approved: true, reason: "balance 1200" }, { usage: { inputTokens: 500, outputTokens: 20, cacheReadTokens: 1000 } })
      ])
      // One store for the live run and the replay.
      const store = yield* Layer.build(EventStore.layerMemory)
      const storeLayer = Layer.succeedContext(store)
      const done = yield* Effect.gen(function*() {
        const kernel = yield* Kernel.Kernel
        const result = yield* kernel.execute(approve, { runId: "approve-1", tenant: tenant(), input: { amount: 100 } })
        expect(result).toEqual({ status: "completed", runId: "approve-1", output: { approved: true, reason: "balance 1200" } })
        expect(balanceCalls).toBe(1)
        expect(transfers).toBe(0)

        // The tenant lacks finance:write: `transfer` never reached the model.
        const first = bodyOf(server, 0)
        expect((first["tools"] as ReadonlyArray<{ name: string }>).map((t) => t.name)).toEqual(["get_balance", "output"])
        expect(first["tool_choice"]).toEqual({ type: "any" })
        expect(bodyOf(server, 1)["messages"]).toEqual([
          { role: "user", content: [{ type: "text", text: "Can acc-1 afford 100?" }] },
          { role: "assistant", content: [{ type: "tool_use", id: "toolu_1", name: "get_balance", input: { accountId: "acc-1" } }] },
          { role: "user", content: [{ type: "tool_result", tool_use_id: "toolu_1", content: "{\"accountId\":\"acc-1\",\"balance\":1200}" }] }
        ])

        const events = yield* eventsOf("approve-1")
        expect(events.map((e) => e.type)).toEqual([
          "RunStarted", "ModelRequested", "ModelCompleted", "ToolRequested", "ToolCompleted",
          "ModelRequested", "ModelCompleted", "RunCompleted"
        ])
        const completed = events.flatMap((e) => (e.payload._tag === "ModelCompleted" ? [e.payload] : []))
        // claude-haiku-4-5: $1 input, $0.10 cache read, $5 output per million tokens.
        expect(completed[0]).toMatchObject({ model: "claude-haiku-4-5", usage: { inputTokens: 400, outputTokens: 30 } })
        expect(completed[0]!.costUsd).toBeCloseTo((400 * 1 + 30 * 5) / 1e6, 12)
        expect(completed[1]).toMatchObject({
          model: "claude-haiku-4-5",
          message: { role: "assistant", content: "{\"approved\":true,\"reason\":\"balance 1200\"}" },
          usage: { inputTokens: 1500, outputTokens: 20, cachedInputTokens: 1000 }
        })
        expect(completed[1]!.costUsd).toBeCloseTo((500 * 1 + 1000 * 0.1 + 20 * 5) / 1e6, 12)
        const run = yield* (yield* EventStore.EventStore).getRun("acme", "approve-1")
        expect(run.costUsd).toBeCloseTo(completed[0]!.costUsd + completed[1]!.costUsd, 12)
        return result
      }).pipe(Effect.provide(kernelLayer(server.url, storeLayer)))

      // The server is gone: replay answers from the log, runs no tool, calls no model.
      yield* Effect.promise(() => server.close())
      const replayed = yield* Effect.gen(function*() {
        const kernel = yield* Kernel.Kernel
        return yield* kernel.replay(approve, { tenantId: "acme", runId: "approve-1" })
      }).pipe(Effect.provide(kernelLayer(server.url, storeLayer)))
      expect(replayed).toEqual(done)
      expect(balanceCalls).toBe(1)
      expect(server.requests).toHaveLength(2)
    }))

  it.scopedLive("the budget holds with no middleware: refused before the request, or stopped after a reply that costs too much", () =>
    Effect.gen(function*() {
      const server = yield* FakeAnthropic.scoped([
        // claude-opus-4-1 answers (a dated snapshot): 20,000 output tokens at $75 per million is $1.50.
        FakeAnthropic.text("long", { model: "claude-opus-4-1-20250805", usage: { inputTokens: 10, outputTokens: 20_000 } })
      ])
      return yield* Effect.gen(function*() {
        const kernel = yield* Kernel.Kernel
        const tiny = yield* Effect.either(kernel.chat({ runId: "tiny", tenant: tenant(0.000001), prompt: "hello" }))
        expect(Either.isLeft(tiny) && tiny.left).toBeInstanceOf(Errors.BudgetExceeded)
        expect(server.requests).toHaveLength(0)

        const over = yield* Effect.either(kernel.chat({ runId: "over", tenant: tenant(1), prompt: "hello", maxOutputTokens: 100 }))
        expect(Either.isLeft(over) && over.left).toBeInstanceOf(Errors.BudgetExceeded)
        expect(server.requests).toHaveLength(1)
        const completed = (yield* eventsOf("over")).find((e) => e.payload._tag === "ModelCompleted")?.payload
        // The model that answered is logged and priced: opus, not the haiku that was asked for.
        expect(completed).toMatchObject({ model: "claude-opus-4-1-20250805" })
        expect(completed?._tag === "ModelCompleted" && completed.costUsd).toBeCloseTo((10 * 15 + 20_000 * 75) / 1e6, 12)
        expect((yield* eventsOf("over")).map((e) => e.type)).toContain("BudgetExceeded")
      }).pipe(Effect.provide(kernelLayer(server.url, EventStore.layerMemory)))
    }))

  it.scopedLive("a retried 429 is a note in the log; an error no retry fixes fails the run with its kind", () =>
    Effect.gen(function*() {
      const server = yield* FakeAnthropic.scoped([
        FakeAnthropic.error(429, { retryAfter: "0.01" }),
        FakeAnthropic.text("done"),
        FakeAnthropic.error(401, { message: "invalid x-api-key" })
      ])
      return yield* Effect.gen(function*() {
        const kernel = yield* Kernel.Kernel
        const ok = yield* kernel.chat({ runId: "retry-1", tenant: tenant(), messages: [Chat.user("hi")] })
        expect(ok.status === "completed" && ok.output.output).toBe("done")
        const events = yield* eventsOf("retry-1")
        expect(events.map((e) => e.type)).toEqual(["RunStarted", "ModelRequested", "MiddlewareNote", "ModelCompleted", "RunCompleted"])
        expect(events[2]!.payload).toEqual({
          _tag: "MiddlewareNote",
          middleware: "anthropic",
          note: "retry",
          data: { attempt: 1, kind: "rate_limited", delayMs: 10 }
        })

        const failed = yield* Effect.either(kernel.chat({ runId: "auth-1", tenant: tenant(), messages: [Chat.user("hi")] }))
        expect(Either.isLeft(failed) && failed.left).toMatchObject({ _tag: "ModelError", kind: "authentication" })
        expect((yield* eventsOf("auth-1")).find((e) => e.type === "ModelFailed")?.payload).toMatchObject({ kind: "authentication" })
      }).pipe(Effect.provide(kernelLayer(server.url, EventStore.layerMemory)))
    }))
})
