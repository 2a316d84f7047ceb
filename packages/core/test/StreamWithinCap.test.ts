// A reply within its cap (100 output tokens, what was estimated and held) whose tokens are longer than 4 characters is
// stopped as if it streamed past its hold, though the budget has ten times the room.
import { describe, expect, it } from "@effect/vitest"
import { Chat, EventStore, Kernel, ModelPort, Tenant, ToolRegistry, Workflow } from "@artana/core"
import { Effect, Either, Layer, Schema, Stream } from "effect"

const tenant = Tenant.TenantContext.make({ tenantId: "acme", capabilities: [], budgetUsdLimit: 10 })

const oneCall = Workflow.make({
  name: "one-call",
  input: Schema.Null,
  output: Schema.String,
  run: (_i, ctx) => Effect.map(ctx.modelStep({ messages: [Chat.user("write")], maxOutputTokens: 100, key: "m" }), (r) => String(r.message.content))
})

describe("a streamed reply within its cap", () => {
  it.live("is not stopped: 100 tokens of 6 characters, $1 as estimated, against $10", () =>
    Effect.gen(function*() {
      const words = Array.from({ length: 100 }, () => "words ")
      const port = ModelPort.make({
        defaultModel: "m",
        prices: { m: { input: 0, cachedInput: 0, output: 10_000 } }, // a cent an output token
        generate: () => Effect.die("streamed"),
        stream: (request) =>
          Stream.fromIterable<ModelPort.StreamPart>([
            ...words.map((text): ModelPort.StreamPart => ({ _tag: "TextDelta", text })),
            { _tag: "Finished", response: { model: request.model, message: { role: "assistant", content: words.join("") }, usage: { inputTokens: 0, outputTokens: 100 } } }
          ])
      })
      const layer = Kernel.layer().pipe(
        Layer.provideMerge(Layer.mergeAll(EventStore.layerMemory, Layer.succeed(ModelPort.ModelPort, port), ToolRegistry.layer([])))
      )
      return yield* Effect.gen(function*() {
        const kernel = yield* Kernel.Kernel
        const r = yield* Effect.either(kernel.execute(oneCall, { runId: "r", tenant, input: null }))
        expect(Either.isRight(r) ? r.right.status : `${r.left._tag}: ${r.left.message}`).toBe("completed")
      }).pipe(Effect.provide(layer))
    }))
})
