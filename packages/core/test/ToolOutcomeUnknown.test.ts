// A handler that cannot know whether its call acted (the server it called went away mid-call) is never logged as
// failed: a non-idempotent call is in doubt, as after a crash; an idempotent one fails, safe to repeat.
import { describe, expect, it } from "@effect/vitest"
import { Effect, Schema } from "effect"
import { Errors, EventStore, Kernel, Tool, Workflow } from "@artana/core"
import { kernelLayer, tenant } from "./fixtures.js"

const vanishing = (idempotent: boolean) =>
  Tool.make({
    name: "send",
    description: "Sends through a server that goes away mid-call",
    parameters: Schema.Struct({}),
    idempotent,
    handler: () => Effect.fail(new Errors.ToolOutcomeUnknown({ tool: "send", reason: "the connection closed" }))
  })

const workflow = (tool: Tool.Tool) =>
  Workflow.make({
    name: "send-once",
    input: Schema.Null,
    output: Schema.String,
    run: (_, ctx) => Effect.map(Effect.either(ctx.tool(tool, {})), (r) => (r._tag === "Left" ? r.left._tag : "sent"))
  })

const types = (runId: string) =>
  Effect.flatMap(EventStore.EventStore, (s) => Effect.map(s.readEvents(tenant.tenantId, runId), (es) => es.map((e) => e.type)))

describe("ToolOutcomeUnknown", () => {
  it.effect("puts a non-idempotent call in doubt: needs_reconciliation, no ToolFailed", () => {
    const tool = vanishing(false)
    return Effect.gen(function*() {
      const kernel = yield* Kernel.Kernel
      const result = yield* kernel.execute(workflow(tool), { runId: "doubt", tenant, input: null })
      expect(result).toMatchObject({ status: "needs_reconciliation", tool: "send", stepKey: "tool:0" })
      expect(yield* types("doubt")).toEqual(["RunStarted", "ToolRequested", "ReconciliationRequired"])
    }).pipe(Effect.provide(kernelLayer([], [tool])))
  })

  it.effect("fails an idempotent call as a tool error, saying the outcome is unknown", () => {
    const tool = vanishing(true)
    return Effect.gen(function*() {
      const kernel = yield* Kernel.Kernel
      const result = yield* kernel.execute(workflow(tool), { runId: "retry", tenant, input: null })
      expect(result).toMatchObject({ status: "completed", output: "ToolError" })
      const events = yield* Effect.flatMap(EventStore.EventStore, (s) => s.readEvents(tenant.tenantId, "retry"))
      expect(events.map((e) => e.payload).find((p) => p._tag === "ToolFailed")).toMatchObject({
        kind: "tool_error",
        error: "tool send: the outcome of the call is unknown (the connection closed); it may or may not have acted"
      })
    }).pipe(Effect.provide(kernelLayer([], [tool])))
  })
})
