import { describe, expect, it } from "@effect/vitest"
import { EventStore, Kernel, Tool, Workflow } from "@artana/core"
import { Effect, Either, Layer, Schema } from "effect"
import { kernelLayer, tenant } from "./fixtures.js"

/**
 * The memory store with latency: a batch holding a `ToolRequested` is written at once and acknowledged 20 ms later;
 * a read of the log answers 50 ms after it is asked.
 */
const slowStore = Layer.effect(
  EventStore.EventStore,
  Effect.map(EventStore.EventStore, (store): EventStore.Service => ({
    ...store,
    append: (request) =>
      Effect.tap(store.append(request), () =>
        request.events.some((e) => e.payload._tag === "ToolRequested") ? Effect.sleep("20 millis") : Effect.void),
    readEvents: (...args: Parameters<EventStore.Service["readEvents"]>) => Effect.tap(store.readEvents(...args), () => Effect.sleep("50 millis"))
  }))
).pipe(Layer.provideMerge(EventStore.layerMemory))

describe("a sibling's batch acknowledged while a refused batch's catch-up reads the log", () => {
  it.live("the run completes (not stopped as if another process had written)", () => {
    const email = Tool.make({
      name: "email",
      description: "sends an email",
      parameters: Schema.Struct({ to: Schema.String }),
      handler: () => Effect.succeed("sent")
    })
    const wf = Workflow.make({
      name: "catch-up-race",
      input: Schema.Null,
      output: Schema.Unknown,
      run: (_i, ctx) =>
        Effect.all([
          Effect.zipRight(Effect.sleep("5 millis"), ctx.tool(email, { to: "bob" }, { key: "email" })),
          Effect.zipRight(Effect.sleep("10 millis"), ctx.step("s", Effect.succeed(1), Schema.Number, { key: "s" }))
        ], { concurrency: "unbounded" })
    })
    return Effect.gen(function*() {
      const kernel = yield* Kernel.Kernel
      const r = yield* Effect.either(kernel.execute(wf, { runId: "cur", tenant, input: null }))
      expect(Either.isRight(r) ? r.right : `${r.left._tag}: ${r.left.message}`).toEqual({ status: "completed", runId: "cur", output: ["sent", 1] })
    }).pipe(Effect.provide(kernelLayer([], [email], { store: slowStore, kernel: { workflows: [wf] } })))
  })
})
