// Budgets hold by default over the real openai SDK, with no middleware named: the kernel prices every call.
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { Artana, Chat, Errors, Pricing, Tenant } from "@artana/core"
import { OpenAiModel } from "@artana/model-openai"
import { FakeOpenAi } from "@artana/model-openai/testing"
import { bodyOf } from "./fixtures.js"

const tenant = (budgetUsdLimit: number) => Tenant.TenantContext.make({ tenantId: "acme", capabilities: [], budgetUsdLimit })

describe("the tenant's budget over the openai SDK, no middleware", () => {
  it.scopedLive("a budget of a millionth of a dollar refuses the call before it reaches the server", () =>
    Effect.gen(function*() {
      const server = yield* FakeOpenAi.scoped([FakeOpenAi.text("a long answer", { usage: { promptTokens: 400, completionTokens: 300 } })])
      const artana = Artana.create({ model: OpenAiModel.layer({ baseURL: server.url, defaultModel: "gpt-4o-mini" }) })
      const refused = yield* Effect.flip(Effect.tryPromise({
        try: () => artana.chat({ runId: "tiny", tenant: tenant(0.000001), messages: [Chat.user("hello")] }),
        catch: (e) => e
      }))
      expect(refused).toBeInstanceOf(Errors.BudgetExceeded)
      expect(server.requests).toHaveLength(0)
      const run = yield* Effect.promise(() => artana.getRun({ tenantId: "acme", runId: "tiny" }))
      expect(run.status).toBe("failed")
      yield* Effect.promise(() => artana.close())
    }))

  it.scopedLive("a call's cost comes from the server's usage at the model's price, and the run's row sums it", () =>
    Effect.gen(function*() {
      const server = yield* FakeOpenAi.scoped([FakeOpenAi.text("hi", { usage: { promptTokens: 400, completionTokens: 300 } })])
      const artana = Artana.create({ model: OpenAiModel.layer({ baseURL: server.url, defaultModel: "gpt-4o-mini" }) })
      const result = yield* Effect.promise(() => artana.chat({ runId: "priced", tenant: tenant(1), messages: [Chat.user("hello")] }))
      const expected = (400 * 0.15 + 300 * 0.6) / 1_000_000
      expect(result.status === "completed" && result.costUsd).toBeCloseTo(expected, 12)
      expect((yield* Effect.promise(() => artana.getRun({ tenantId: "acme", runId: "priced" }))).costUsd).toBeCloseTo(expected, 12)
      yield* Effect.promise(() => artana.close())
    }))

  it.scopedLive("the reply cannot cost more than the estimate: the output tokens it assumed go to the server as the cap", () =>
    Effect.gen(function*() {
      const server = yield* FakeOpenAi.scoped([FakeOpenAi.text("hi"), FakeOpenAi.text("hi"), FakeOpenAi.text("hi")])
      const artana = Artana.create({ model: OpenAiModel.layer({ baseURL: server.url, defaultModel: "gpt-4o-mini" }), defaultMaxOutputTokens: 300 })
      yield* Effect.promise(() => artana.chat({ runId: "capped", tenant: tenant(1), messages: [Chat.user("hello")] }))
      expect(bodyOf(server, 0)["max_completion_tokens"]).toBe(300)
      const requested = (yield* Effect.promise(() => artana.readEvents({ tenantId: "acme", runId: "capped" }))).find((e) => e.payload._tag === "ModelRequested")
      expect(requested?.payload).toMatchObject({ maxOutputTokens: 300 })
      // A cap the request sets is the one estimated and sent.
      yield* Effect.promise(() => artana.chat({ runId: "own-cap", tenant: tenant(1), messages: [Chat.user("hello")], maxOutputTokens: 50 }))
      expect(bodyOf(server, 1)["max_completion_tokens"]).toBe(50)
      yield* Effect.promise(() => artana.close())
      // A free model costs nothing whatever its length: no cap is added.
      const free = Artana.create({
        model: OpenAiModel.layer({ baseURL: server.url, defaultModel: "local-llama", prices: { "local-llama": Pricing.free } })
      })
      yield* Effect.promise(() => free.chat({ runId: "free", tenant: tenant(1), messages: [Chat.user("hello")] }))
      expect(bodyOf(server, 2)["max_completion_tokens"]).toBeUndefined()
      yield* Effect.promise(() => free.close())
    }))
})

describe("replies the adapter refused and asked again were billed: the run is charged every one", () => {
  // 1,000,000 prompt and 100,000 completion tokens of gpt-4o-mini: $0.21 a reply.
  const usage = { promptTokens: 1_000_000, completionTokens: 100_000 }
  const REPLY_USD = 0.21

  it.scopedLive("a malformed reply is asked for again only while the budget holds another attempt: the replies made are charged", () =>
    Effect.gen(function*() {
      const bad = FakeOpenAi.toolCall("lookup", "{not json", { usage })
      const server = yield* FakeOpenAi.scoped([bad, bad, bad, FakeOpenAi.text("ok", { usage })])
      const artana = Artana.create({ model: OpenAiModel.layer({ baseURL: server.url, defaultModel: "gpt-4o-mini", retryBaseDelay: "1 millis" }) })
      const result = yield* Effect.either(Effect.tryPromise({
        try: () => artana.chat({ runId: "retried", tenant: tenant(0.3), messages: [Chat.user("hi")], maxOutputTokens: 100_000 }),
        catch: (e) => e
      }))
      // The estimate ($0.06: a short prompt, 100,000 output tokens) is held; the first reply billed $0.21 (the fake
      // server's usage is far past the estimate), and $0.27 still fits $0.30, so it is asked again; after the second,
      // another attempt would not (before, all four were made: $0.84 against $0.30).
      expect(server.requests).toHaveLength(2)
      expect(result).toMatchObject({ left: { _tag: "ModelError", kind: "malformed_tool_call" } })
      expect(String(result._tag === "Left" ? (result.left as Error).message : "")).toContain("another attempt would pass the budget")
      const run = yield* Effect.promise(() => artana.getRun({ tenantId: "acme", runId: "retried" }))
      expect(run.costUsd).toBeCloseTo(2 * REPLY_USD, 9)
      yield* Effect.promise(() => artana.close())
    }))

  it.scopedLive("replies that cost what was estimated: no reply is asked for that the budget cannot hold", () =>
    Effect.gen(function*() {
      // 8 prompt tokens (the chat framing of "hi") and 100 output tokens (the cap) of gpt-4o-mini: $0.0000612 a reply.
      const exact = { promptTokens: 8, completionTokens: 100 }
      const bad = FakeOpenAi.toolCall("lookup", "{not json", { usage: exact })
      const server = yield* FakeOpenAi.scoped([bad, bad, bad, FakeOpenAi.text("ok", { usage: exact })])
      const artana = Artana.create({ model: OpenAiModel.layer({ baseURL: server.url, defaultModel: "gpt-4o-mini", retryBaseDelay: "1 millis" }) })
      // Room for one reply, not two.
      yield* Effect.either(Effect.tryPromise({
        try: () => artana.chat({ runId: "re-asked", tenant: tenant(0.00009), messages: [Chat.user("hi")], maxOutputTokens: 100 }),
        catch: (e) => e
      }))
      const run = yield* Effect.promise(() => artana.getRun({ tenantId: "acme", runId: "re-asked" }))
      // Found by review: every re-ask was made, $0.000245 against $0.00009.
      expect(server.requests).toHaveLength(1)
      expect(run.costUsd).toBeLessThanOrEqual(0.00009)
      yield* Effect.promise(() => artana.close())
    }))

  it.scopedLive("every attempt malformed: the call fails, and every reply is charged", () =>
    Effect.gen(function*() {
      const bad = FakeOpenAi.toolCall("lookup", "{not json", { usage })
      const server = yield* FakeOpenAi.scoped([bad, bad, bad, bad])
      const artana = Artana.create({ model: OpenAiModel.layer({ baseURL: server.url, defaultModel: "gpt-4o-mini", retryBaseDelay: "1 millis" }) })
      const failed = yield* Effect.flip(Effect.tryPromise({
        try: () => artana.chat({ runId: "all-bad", tenant: tenant(5), messages: [Chat.user("hi")], maxOutputTokens: 100_000 }),
        catch: (e) => e
      }))
      expect(failed).toMatchObject({ _tag: "ModelError", kind: "malformed_tool_call" })
      expect(server.requests).toHaveLength(4)
      const run = yield* Effect.promise(() => artana.getRun({ tenantId: "acme", runId: "all-bad" }))
      expect(run.costUsd).toBeCloseTo(4 * REPLY_USD, 9)
      yield* Effect.promise(() => artana.close())
    }))
})
