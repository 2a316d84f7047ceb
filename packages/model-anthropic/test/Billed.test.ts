// A reply the adapter refuses (the model declined) was answered and billed: the run is charged what it reported.
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { Artana, Chat, Tenant } from "@artana/core"
import { AnthropicModel } from "@artana/model-anthropic"
import { FakeAnthropic } from "@artana/model-anthropic/testing"

const tenant = Tenant.TenantContext.make({ tenantId: "acme", capabilities: [], budgetUsdLimit: 1 })

describe("a refused reply over the @anthropic-ai/sdk", () => {
  it.scopedLive("fails the call, and the run is charged the refusal's usage", () =>
    Effect.gen(function*() {
      const server = yield* FakeAnthropic.scoped([FakeAnthropic.refusal("I can't help with that.")])
      const artana = Artana.create({ model: AnthropicModel.layer({ baseURL: server.url, defaultModel: "claude-haiku-4-5", retryBaseDelay: "1 millis" }) })
      const failed = yield* Effect.flip(Effect.tryPromise({
        try: () => artana.chat({ runId: "declined", tenant, messages: [Chat.user("hi")], maxOutputTokens: 100 }),
        catch: (e) => e
      }))
      expect(failed).toMatchObject({ _tag: "ModelError", kind: "refusal" })
      // The fake's usage (10 input, 5 output tokens) at claude-haiku-4-5's $1 and $5 a million.
      const run = yield* Effect.promise(() => artana.getRun({ tenantId: "acme", runId: "declined" }))
      expect(run.costUsd).toBeCloseTo((10 * 1 + 5 * 5) / 1e6, 12)
      yield* Effect.promise(() => artana.close())
    }))
})
