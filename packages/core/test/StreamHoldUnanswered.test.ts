// A store's hold for a stream past its estimate is asked for in a fiber of its own (`callHolds.ts`). A store that does
// not answer that request (a PostgreSQL connection that hangs, a SQLite file locked by another process) must not keep
// the run from being interrupted (a shutdown, a lost lease), as the call's first hold's request does not (a store's
// hold lapses on its own). Found by review: the request was uninterruptible and the call's release waited for it.
import { describe, expect, it } from "@effect/vitest"
import { BudgetHolds, Chat, EventStore, Kernel, ModelPort, Tenant, ToolRegistry, Workflow } from "@artana/core"
import { Deferred, Effect, Fiber, Layer, Option, Schema, Scope, Stream } from "effect"

const tenant = Tenant.TenantContext.make({ tenantId: "acme", capabilities: [], budgetUsdLimit: 10 })
const oneCall = Workflow.make({
  name: "one-call",
  input: Schema.Null,
  output: Schema.String,
  run: (_i, ctx) => Effect.map(ctx.modelStep({ messages: [Chat.user("x")], maxOutputTokens: 100, key: "m" }), (r) => String(r.message.content))
})
const token: ModelPort.StreamPart = { _tag: "TextDelta", text: "aaaa" }

/** Holds in memory; a request whose call id matches `hangs` is never answered (`asked` completed when it comes). */
const holdsLayer = (hangs: (callId: string) => boolean, asked: Deferred.Deferred<void>) => {
  const held = new Map<string, number>()
  const service: BudgetHolds.Service = {
    hold: (r) =>
      Effect.suspend((): Effect.Effect<BudgetHolds.HoldResult> => {
        if (hangs(r.callId ?? "")) return Effect.zipRight(Deferred.succeed(asked, undefined), Effect.never)
        let sum = 0
        for (const usd of held.values()) sum += usd
        if (!(sum + r.usd <= r.limitUsd)) return Effect.succeed({ held: false, spentUsd: 0, heldUsd: sum })
        held.set(r.holdId, r.usd)
        return Effect.succeed({ held: true, spentUsd: 0, heldUsd: sum })
      }),
    release: (_tenantId, holdId) => Effect.sync(() => void held.delete(holdId))
  }
  return Layer.succeed(BudgetHolds.BudgetHolds, service)
}

const port = ModelPort.make({
  defaultModel: "m",
  prices: { m: { input: 0, cachedInput: 0, output: 10_000 } }, // a cent an output token
  generate: () => Effect.die("streamed"),
  // A server ignoring the cap of 100 tokens: 150, then its reply.
  stream: (request) =>
    Stream.concat(
      Stream.fromIterable(Array.from({ length: 150 }, () => token)),
      Stream.succeed<ModelPort.StreamPart>({ _tag: "Finished", response: { model: request.model, message: { role: "assistant", content: "aaaa".repeat(150) }, usage: { inputTokens: 0, outputTokens: 150 } } })
    )
})

const interruptAfterAsked = (hangs: (callId: string) => boolean) =>
  Effect.gen(function*() {
    const asked = yield* Deferred.make<void>()
    const layer = Kernel.layer().pipe(
      Layer.provideMerge(Layer.mergeAll(EventStore.layerMemory, Layer.succeed(ModelPort.ModelPort, port), ToolRegistry.layer([]), holdsLayer(hangs, asked)))
    )
    // (Built in the test's scope, not closed: the run the store hangs would hold its closing.)
    const context = yield* Layer.buildWithScope(layer, yield* Scope.make())
    return yield* Effect.gen(function*() {
      const kernel = yield* Kernel.Kernel
      const run = yield* Effect.forkDaemon(Effect.either(kernel.execute(oneCall, { runId: "r", tenant, input: null })))
      yield* Deferred.await(asked)
      yield* Effect.sleep("50 millis")
      // The run has not ended (its store does not answer): interrupting it must end it (within 2 s).
      // (Forked as a daemon: a child fiber that never ends would keep the test from ending.)
      yield* Fiber.interruptFork(run)
      for (let i = 0; i < 40 && Option.isNone(yield* Fiber.poll(run)); i++) yield* Effect.sleep("50 millis")
      return Option.isSome(yield* Fiber.poll(run))
    }).pipe(Effect.provide(context))
  })

describe("a store that does not answer a hold request", () => {
  it.live("control: the call's first hold's request — the run can be interrupted", () =>
    Effect.gen(function*() {
      expect(yield* interruptAfterAsked((callId) => !callId.includes("#"))).toBe(true)
    }), 10_000)

  it.live("a stream's extension request — the run can be interrupted", () =>
    Effect.gen(function*() {
      // (Also: left uninterrupted, the run never ends: its call's release waits for the request.)
      expect(yield* interruptAfterAsked((callId) => callId.includes("#stream"))).toBe(true)
    }), 10_000)
})
