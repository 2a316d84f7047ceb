// A server that ignores a small cap (1 token) and streams 20,000 tokens, with room in the budget: the stream asks for
// more room as it passes what it holds, as much again as it holds each time, so a few times in all (found by review:
// it asked for one more estimate each time, 10,000 requests here, each a fiber, a read of the lineage's spend and a
// hold every later check of the lineage sums).
import { describe, expect, it } from "@effect/vitest"
import { BudgetHolds, Chat, EventStore, Kernel, ModelPort, Tenant, ToolRegistry, Workflow } from "@artana/core"
import { Effect, Layer, Schema, Stream } from "effect"

const tenant = Tenant.TenantContext.make({ tenantId: "acme", capabilities: [], budgetUsdLimit: 1000 })
const TOKENS = 20_000
const smallCap = Workflow.make({
  name: "small-cap",
  input: Schema.Null,
  output: Schema.Number,
  run: (_i, ctx) => Effect.map(ctx.modelStep({ messages: [Chat.user("x")], maxOutputTokens: 1, key: "m" }), (r) => String(r.message.content).length)
})
const port = ModelPort.make({
  defaultModel: "m",
  prices: { m: { input: 0, cachedInput: 0, output: 10_000 } }, // a cent a token
  generate: () => Effect.die("streamed"),
  stream: (request) =>
    Stream.concat(
      Stream.fromIterable(Array.from({ length: TOKENS }, (): ModelPort.StreamPart => ({ _tag: "TextDelta", text: "aaaa" }))).pipe(Stream.rechunk(1)),
      Stream.succeed<ModelPort.StreamPart>({ _tag: "Finished", response: { model: request.model, message: { role: "assistant", content: "aaaa".repeat(TOKENS) }, usage: { inputTokens: 0, outputTokens: TOKENS } } })
    )
})

describe("a stream far past a small cap", () => {
  it.live("asks for room a few times, not once a token", () =>
    Effect.gen(function*() {
      // Holds in memory, answered at once, counted.
      const held = new Map<string, number>()
      let streamRequests = 0
      const holds: BudgetHolds.Service = {
        hold: (r) =>
          Effect.sync(() => {
            if (r.callId?.includes("#stream") === true) streamRequests++
            let sum = 0
            for (const usd of held.values()) sum += usd
            const ok = sum + r.usd <= r.limitUsd
            if (ok) held.set(r.holdId, r.usd)
            return { held: ok, spentUsd: 0, heldUsd: sum }
          }),
        release: (_t, holdId) => Effect.sync(() => void held.delete(holdId))
      }
      const layer = Kernel.layer().pipe(
        Layer.provideMerge(Layer.mergeAll(EventStore.layerMemory, Layer.succeed(ModelPort.ModelPort, port), ToolRegistry.layer([]), Layer.succeed(BudgetHolds.BudgetHolds, holds)))
      )
      const result = yield* Effect.provide(Effect.flatMap(Kernel.Kernel, (k) => k.execute(smallCap, { runId: "r", tenant, input: null })), layer)
      expect(result.status).toBe("completed")
      // From a cent held to $200: doubling, about 15 requests.
      expect(streamRequests).toBeGreaterThan(0)
      expect(streamRequests).toBeLessThanOrEqual(20)
      expect(held.size).toBe(0)
    }), 60_000)
})
