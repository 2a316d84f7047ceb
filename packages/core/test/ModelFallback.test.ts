import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { Chat, Errors, ModelFallback, Pricing } from "@artana/core"
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
})
