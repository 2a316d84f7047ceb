import { describe, expect, it } from "@effect/vitest"
import { Chunk, Effect, Stream } from "effect"
import { Chat, Errors, ModelFallback, ModelPort, Pricing } from "@artana/core"
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
