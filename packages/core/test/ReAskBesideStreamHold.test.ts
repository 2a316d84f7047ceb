// On a store's holds, a re-ask made while the stream's extension request is in flight. The
// extension (past its hold by a token: one estimate ahead) is written, and the store's answer is on its way when the
// reply is refused (malformed, billed) and the adapter asks to retry: the re-ask counts what is held for the call
// without the extension (not settled yet) and asks for another attempt's room beside it, which the budget refuses,
// though the extension already holds that room for this very call. The call fails "another attempt would pass the
// budget" with $2.02 of $2.50 held for it, all but the re-ask's own (found by review). The re-ask now waits for the
// stream's request to be answered.
import { describe, expect, it } from "@effect/vitest"
import { BudgetHolds, Chat, EventStore, Kernel, ModelPort, ModelTransport, Tenant, ToolRegistry, Workflow } from "@artana/core"
import { Effect, Either, Layer, Schema } from "effect"

const tenant = Tenant.TenantContext.make({ tenantId: "acme", capabilities: [], budgetUsdLimit: 2.5 })
const oneCall = Workflow.make({
  name: "one-call",
  input: Schema.Null,
  output: Schema.String,
  run: (_i, ctx) => Effect.map(ctx.modelStep({ messages: [Chat.user("x")], maxOutputTokens: 100, key: "m" }), (r) => String(r.message.content))
})

describe("a billed re-ask while the stream's extension is being answered", () => {
  it.live("the re-ask counts the room the extension holds for the call: the call completes", () =>
    Effect.gen(function*() {
      const held = new Map<string, number>()
      const asked: Array<string> = []
      const holds: BudgetHolds.Service = {
        hold: (r) =>
          Effect.suspend(() => {
            let sum = 0
            for (const usd of held.values()) sum += usd
            const ok = sum + r.usd <= r.limitUsd
            if (ok) held.set(r.holdId, r.usd)
            asked.push(`${r.callId} ${r.usd.toFixed(2)} ${ok ? "held" : "refused"}`)
            const result = { held: ok, spentUsd: 0, heldUsd: sum }
            // The stream's request is written at once; its answer takes 100 ms to come back (a round trip).
            return r.callId?.includes("#stream") === true ? Effect.as(Effect.sleep("100 millis"), result) : Effect.succeed(result)
          }),
        release: (_t, holdId) => Effect.sync(() => void held.delete(holdId))
      }
      let attempts = 0
      const policy = ModelTransport.retryPolicy("fake", { maxRetries: 3, retryBaseDelay: "1 millis" })
      const port = ModelPort.make({
        defaultModel: "m",
        prices: { m: { input: 0, cachedInput: 0, output: 10_000 } }, // a cent an output token
        generate: () => Effect.die("streamed"),
        // First attempt: 101 tokens (a server past the cap by one), refused as malformed and billed; then 100 tokens.
        streamTo: (request, sink) =>
          Effect.map(
            Effect.mapError(
              ModelTransport.retrying(
                Effect.suspend(() => {
                  attempts++
                  const n = attempts === 1 ? 101 : 100
                  sink(Array.from({ length: n }, () => ({ _tag: "TextDelta" as const, text: "aaaa" })))
                  return attempts === 1
                    ? Effect.fail(ModelTransport.billedFailure(ModelTransport.failure("malformed_tool_call", "a tool call without a name", true), { inputTokens: 0, outputTokens: 101 }))
                    : Effect.succeed("aaaa".repeat(100))
                }),
                policy
              ),
              (f) => f.error
            ),
            ({ billed, value }) => ({
              model: request.model,
              message: { role: "assistant" as const, content: value },
              usage: billed === undefined ? { inputTokens: 0, outputTokens: 100 } : ModelTransport.addUsage(billed, { inputTokens: 0, outputTokens: 100 })
            })
          )
      })
      const layer = Kernel.layer().pipe(
        Layer.provideMerge(Layer.mergeAll(EventStore.layerMemory, Layer.succeed(ModelPort.ModelPort, port), ToolRegistry.layer([]), Layer.succeed(BudgetHolds.BudgetHolds, holds)))
      )
      const r = yield* Effect.either(Effect.provide(Effect.flatMap(Kernel.Kernel, (k) => k.execute(oneCall, { runId: "r", tenant, input: null })), layer))
      // $1.01 billed and $1 for the second attempt: within the $2.50.
      expect({ result: Either.isRight(r) ? r.right.status : `${r.left._tag}: ${r.left.message}`, attempts, asked }).toMatchObject({ result: "completed", attempts: 2 })
      expect(held.size).toBe(0)
    }))
})
