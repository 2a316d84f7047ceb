// One port over several, chosen by the model a call names: the log keeps the model used, the budget prices it, and a
// replay reads the log.
import { describe, expect, it } from "@effect/vitest"
import { Chunk, Effect, Layer, Schema, Stream } from "effect"
import { Chat, EventStore, Kernel, ModelPort, ModelRouter, Tenant, ToolRegistry, Workflow } from "@artana/core"
import { ScriptedModel } from "@artana/core/testing"

const request = (model: string) => ({ model, messages: [Chat.user("hi")], tools: [] })

const claudePrice = { input: 3, cachedInput: 0.3, output: 15 }
const gptPrice = { input: 0.15, cachedInput: 0.075, output: 0.6 }

describe("ModelRouter.make", () => {
  it.effect("an exact name wins over a prefix, a longer prefix over a shorter one, * last; no route is a bad request", () =>
    Effect.gen(function*() {
      expect(ModelRouter.routeOf(["gpt-*", "gpt-4o", "gpt-4o-*", "*"], "gpt-4o")).toBe("gpt-4o")
      expect(ModelRouter.routeOf(["gpt-*", "gpt-4o", "gpt-4o-*", "*"], "gpt-4o-mini")).toBe("gpt-4o-*")
      expect(ModelRouter.routeOf(["gpt-*", "*"], "llama3.2")).toBe("*")
      expect(ModelRouter.routeOf(["gpt-*"], "llama3.2")).toBeUndefined()

      const anthropic = ScriptedModel.make([ScriptedModel.text("from claude", { deltas: ["from ", "claude"] })], { model: "claude-haiku-4-5", prices: { "claude-haiku-4-5": claudePrice } })
      const openai = ScriptedModel.make([ScriptedModel.text("from gpt")], { model: "gpt-4o-mini", prices: { "gpt-4o-mini": gptPrice } })
      const model = ModelRouter.make({ "claude-*": anthropic.port, "gpt-*": openai.port })
      expect(model.defaultModel).toBe("claude-haiku-4-5")
      expect(model.prices).toEqual({ "claude-haiku-4-5": claudePrice, "gpt-4o-mini": gptPrice })

      const streamed = Chunk.toReadonlyArray(yield* Stream.runCollect(model.stream(request("claude-sonnet-4-5"))))
      expect(streamed.flatMap((p) => (p._tag === "TextDelta" ? [p.text] : []))).toEqual(["from ", "claude"])
      const finished = streamed[streamed.length - 1]
      expect(finished?._tag === "Finished" && finished.response.notes).toEqual([
        { source: "router", note: "routed", data: { model: "claude-sonnet-4-5", route: "claude-*" } }
      ])
      // The request goes to the port unchanged: the model it names is the one the port is asked for.
      expect(anthropic.inspector.requests()[0]!.model).toBe("claude-sonnet-4-5")
      expect((yield* model.generate(request("gpt-4o"))).message.content).toBe("from gpt")

      const unrouted = yield* Effect.flip(model.generate(request("llama3.2")))
      expect(unrouted).toMatchObject({ _tag: "ModelError", kind: "bad_request", retryable: false })
      expect(unrouted.reason).toContain(`no model route serves "llama3.2"; the routes are "claude-*", "gpt-*"`)
      expect(anthropic.inspector.calls() + openai.inspector.calls()).toBe(2)
    }))
})

const twoModels = Workflow.make({
  name: "two-models",
  input: Schema.String,
  output: Schema.String,
  run: (question, ctx) =>
    Effect.gen(function*() {
      const draft = yield* ctx.chat({ prompt: question, model: "gpt-4o-mini" })
      const review = yield* ctx.chat({ prompt: `Review: ${draft.output}`, model: "claude-haiku-4-5" })
      return `${draft.output} / ${review.output}`
    })
})

describe("ModelRouter in the kernel", () => {
  it.scoped("each call goes to its model's port; the log names the model used, the budget prices it, replay calls no port", () =>
    Effect.gen(function*() {
      const anthropic = ScriptedModel.make([
        ScriptedModel.text("looks right", { usage: { inputTokens: 1000, outputTokens: 100 }, deltas: 3 })
      ], { model: "claude-haiku-4-5", prices: { "claude-haiku-4-5": claudePrice } })
      const openai = ScriptedModel.make([
        ScriptedModel.text("42", { usage: { inputTokens: 1000, outputTokens: 100 } })
      ], { model: "gpt-4o-mini", prices: { "gpt-4o-mini": gptPrice } })
      const store = Layer.succeedContext(yield* Layer.build(EventStore.layerMemory))
      const kernelLayer = Layer.provideMerge(
        Kernel.layer({ workflows: [twoModels] }),
        Layer.mergeAll(ModelRouter.layer({ "claude-*": Layer.succeed(ModelPort.ModelPort, anthropic.port), "gpt-*": Layer.succeed(ModelPort.ModelPort, openai.port) }), store, ToolRegistry.layer([]))
      )
      const tenant = Tenant.TenantContext.make({ tenantId: "acme", capabilities: [], budgetUsdLimit: 1 })
      const kernel = yield* Effect.provide(Kernel.Kernel, kernelLayer)
      const result = yield* kernel.execute(twoModels, { runId: "routed", tenant, input: "6 x 7?" })
      expect(result).toEqual({ status: "completed", runId: "routed", output: "42 / looks right" })

      const events = yield* Effect.provide(Effect.flatMap(EventStore.EventStore, (s) => s.readEvents("acme", "routed")), store)
      const completed = events.flatMap((e) => (e.payload._tag === "ModelCompleted" ? [e.payload] : []))
      expect(completed.map((c) => c.model)).toEqual(["gpt-4o-mini", "claude-haiku-4-5"])
      // Each priced by its own model: 1000 in / 100 out.
      expect(completed[0]!.costUsd).toBeCloseTo((1000 * 0.15 + 100 * 0.6) / 1e6, 12)
      expect(completed[1]!.costUsd).toBeCloseTo((1000 * 3 + 100 * 15) / 1e6, 12)
      const routed = events.flatMap((e) => (e.payload._tag === "MiddlewareNote" && e.payload.note === "routed" ? [e.payload.data] : []))
      expect(routed).toEqual([{ model: "gpt-4o-mini", route: "gpt-*" }, { model: "claude-haiku-4-5", route: "claude-*" }])

      const replayed = yield* kernel.replay(twoModels, { tenantId: "acme", runId: "routed" })
      expect(replayed).toEqual(result)
      expect([openai.inspector.calls(), anthropic.inspector.calls()]).toEqual([1, 1])
    }))
})
