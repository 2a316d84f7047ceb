import { describe, expect, it } from "@effect/vitest"
import { Errors, EventStore, Kernel, Tool, Workflow } from "@artana/core"
import { Effect, Schema } from "effect"
import { kernelLayer, tenant } from "./fixtures.js"

/** A non-idempotent tool whose call ends in doubt after `ms`. */
const inDoubt = (name: string, ms: number) =>
  Tool.make({
    name,
    description: "sends (not idempotent), and the connection drops",
    parameters: Schema.Struct({}),
    handler: () => Effect.zipRight(Effect.sleep(`${ms} millis`), Effect.fail(new Errors.ToolOutcomeUnknown({ tool: name, reason: "the connection closed" })))
  })

describe("two concurrent branches whose tool calls both end in doubt", () => {
  it.live("the run stops in doubt (it must not hang)", () => {
    const a = inDoubt("a", 10)
    const b = inDoubt("b", 10)
    const wf = Workflow.make({
      name: "two-in-doubt",
      input: Schema.Null,
      output: Schema.Unknown,
      run: (_i, ctx) =>
        Effect.all([ctx.tool(a, {}, { key: "a" }), ctx.tool(b, {}, { key: "b" })], { concurrency: "unbounded" })
    })
    return Effect.gen(function*() {
      const kernel = yield* Kernel.Kernel
      const result = yield* kernel.execute(wf, { runId: "tid", tenant, input: null }).pipe(Effect.timeout("3 seconds"), Effect.either)
      const log = yield* (yield* EventStore.EventStore).readEvents(tenant.tenantId, "tid")
      expect({
        result: result._tag === "Left" ? String(result.left) : result.right.status,
        log: log.map((e) => `${e.stepKey}:${e.payload._tag}`).sort()
      }).toEqual({
        result: "needs_reconciliation",
        log: ["a:ReconciliationRequired", "a:ToolRequested", "b:ReconciliationRequired", "b:ToolRequested", "run:RunStarted"]
      })
    }).pipe(Effect.provide(kernelLayer([], [a, b], { kernel: { workflows: [wf] } })))
  }, 10_000)
})
