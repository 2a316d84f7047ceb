import { describe, expect, it } from "@effect/vitest"
import { EventStore, Kernel, Tool, Workflow } from "@artana/core"
import { Effect, Either, Layer, Schema } from "effect"
import { kernelLayer, tenant } from "./fixtures.js"

/** The memory store, whose acknowledgement of a batch holding a `ToolRequested` takes 100 ms (it is written at once). */
const slowAckStore = Layer.effect(
  EventStore.EventStore,
  Effect.map(EventStore.EventStore, (store): EventStore.Service => ({
    ...store,
    append: (request) =>
      Effect.tap(store.append(request), () =>
        request.events.some((e) => e.payload._tag === "ToolRequested") ? Effect.sleep("100 millis") : Effect.void)
  }))
).pipe(Layer.provideMerge(EventStore.layerMemory))

describe("a pause while a sibling's ToolRequested is written but not yet acknowledged", () => {
  it.live("no crash happened: the call is made once and the answered run completes (not a call in doubt)", () => {
    const sent: Array<string> = []
    const email = Tool.make({
      name: "email",
      description: "sends an email (not idempotent)",
      parameters: Schema.Struct({ to: Schema.String }),
      handler: ({ to }) => Effect.sync(() => (sent.push(to), "sent"))
    })
    const wf = Workflow.make({
      name: "pause-ack-window",
      input: Schema.Null,
      output: Schema.Unknown,
      run: (_i, ctx) =>
        Effect.all([
          Effect.zipRight(Effect.sleep("5 millis"), ctx.tool(email, { to: "bob" }, { key: "email" })),
          Effect.zipRight(Effect.sleep("15 millis"), ctx.pauseForHuman({ reason: "ok?", schema: Schema.Struct({ ok: Schema.Boolean }), key: "ask" }))
        ], { concurrency: "unbounded" })
    })
    return Effect.gen(function*() {
      const kernel = yield* Kernel.Kernel
      const paused = yield* kernel.execute(wf, { runId: "paw", tenant, input: null })
      const log = yield* (yield* EventStore.EventStore).readEvents(tenant.tenantId, "paw")
      const resumed = yield* Effect.either(kernel.resume({ tenantId: tenant.tenantId, runId: "paw", response: { ok: true } }))
      expect({
        paused: paused.status,
        log: log.map((e) => `${e.stepKey}:${e.payload._tag}`).sort(),
        resumed: Either.isRight(resumed) ? resumed.right : String(resumed.left),
        sent
      }).toEqual({
        paused: "paused",
        log: ["ask:PauseRequested", "email:ToolCompleted", "email:ToolRequested", "run:RunStarted"],
        resumed: { status: "completed", runId: "paw", output: ["sent", { ok: true }] },
        sent: ["bob"]
      })
    }).pipe(Effect.provide(kernelLayer([], [email], { store: slowAckStore, kernel: { workflows: [wf] } })))
  })
})
