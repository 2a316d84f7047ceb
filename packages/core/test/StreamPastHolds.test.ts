// a reply streamed past its estimate (a server ignoring the cap) is stopped only against the spend and the holds
// that existed when its own hold was taken. A sibling call of the lineage that took its hold afterwards was granted room
// on the premise that this call stays within its estimate; the stream eats that room and the lineage spends past its
// budget.
import { describe, expect, it } from "@effect/vitest"
import { Chat, EventStore, Kernel, ModelPort, Tenant, ToolRegistry, Workflow } from "@artana/core"
import { Deferred, Effect, Either, Fiber, Layer, Schema, Stream } from "effect"

/** Room for two calls of at most 100 output tokens ($1 each), and a half. */
const tenant = Tenant.TenantContext.make({ tenantId: "acme", capabilities: [], budgetUsdLimit: 2.5 })

const rootWorkflow = Workflow.make({ name: "root", input: Schema.Null, output: Schema.Null, run: () => Effect.succeed(null) })
const oneCall = Workflow.make({
  name: "one-call",
  input: Schema.String,
  output: Schema.String,
  run: (prompt, ctx) => Effect.map(ctx.modelStep({ messages: [Chat.user(prompt)], maxOutputTokens: 100, key: "m" }), (r) => String(r.message.content))
})

describe("a stream past its cap, beside a sibling that took its hold later", () => {
  it.live("the lineage never spends past its budget", () =>
    Effect.gen(function*() {
      const firstDelta = yield* Deferred.make<void>()
      const siblingDone = yield* Deferred.make<void>()
      const reply = (model: string, content: string, outputTokens: number) => ({
        model,
        message: { role: "assistant" as const, content },
        usage: { inputTokens: 0, outputTokens }
      })
      const port = ModelPort.make({
        defaultModel: "m",
        prices: { m: { input: 0, cachedInput: 0, output: 10_000 } }, // a cent an output token
        generate: (request) => Effect.succeed(reply(request.model, "ok", 100)),
        stream: (request) =>
          request.messages[0]?.content === "x"
            // X: a server that ignores the cap of 100 tokens: one character, then (after the sibling ran) 2000 more, one a delta.
            ? Stream.concat(
              Stream.succeed<ModelPort.StreamPart>({ _tag: "TextDelta", text: "a" }),
              Stream.concat(
                Stream.fromEffect(Effect.zipRight(Deferred.succeed(firstDelta, undefined), Deferred.await(siblingDone))).pipe(Stream.drain),
                Stream.fromIterable<ModelPort.StreamPart>([
                  ...Array.from({ length: 2000 }, (): ModelPort.StreamPart => ({ _tag: "TextDelta", text: "a" })),
                  { _tag: "Finished", response: reply(request.model, "a".repeat(2001), 501) }
                ])
              )
            )
            : Stream.succeed<ModelPort.StreamPart>({ _tag: "Finished", response: reply(request.model, "ok", 100) })
      })
      const layer = Kernel.layer().pipe(
        Layer.provideMerge(Layer.mergeAll(EventStore.layerMemory, Layer.succeed(ModelPort.ModelPort, port), ToolRegistry.layer([])))
      )
      return yield* Effect.gen(function*() {
        const kernel = yield* Kernel.Kernel
        const store = yield* EventStore.EventStore
        yield* kernel.execute(rootWorkflow, { runId: "root", tenant, input: null })
        // X holds $1 (its estimate) and streams.
        const x = yield* Effect.fork(Effect.either(kernel.execute(oneCall, { runId: "root::x", tenant, input: "x", parentRunId: "root" })))
        yield* Deferred.await(firstDelta)
        // Y holds $1 beside X's $1 (2 <= 2.5) and is charged $1: X may spend no more than the $1 held for it.
        const y = yield* Effect.either(kernel.execute(oneCall, { runId: "root::y", tenant, input: "y", parentRunId: "root" }))
        yield* Deferred.succeed(siblingDone, undefined)
        const xr = yield* Fiber.join(x)
        const lineage = yield* store.listRuns("acme", { rootRunId: "root" })
        const spent = lineage.reduce((sum, r) => sum + r.costUsd, 0)
        expect(spent).toBeLessThanOrEqual(tenant.budgetUsdLimit)
        // Y completed within its hold; X was stopped at its own.
        expect(Either.isRight(y) && y.right.status).toBe("completed")
        expect(Either.isLeft(xr) && xr.left._tag).toBe("BudgetExceeded")
      }).pipe(Effect.provide(layer))
    }))
})
