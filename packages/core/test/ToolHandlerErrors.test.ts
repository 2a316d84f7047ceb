// What a tool's handler that fails, dies, throws or rejects leaves: a `ToolError` with its reason, logged as a
// tool_error (the same error on a replay).
import { describe, expect, it } from "@effect/vitest"
import { Effect, Schema } from "effect"
import { EventStore, Kernel, Tool, Workflow } from "@artana/core"
import { kernelLayer, tenant } from "./fixtures.js"

const failing = (name: string, handler: () => Effect.Effect<number, unknown> | Promise<number>) =>
  Tool.make({ name, description: "fails", parameters: Schema.Struct({}), idempotent: true, handler })

const tools = [
  failing("fails", () => Effect.fail(new Error("card declined"))),
  failing("dies", () => Effect.die(new Error("handler bug"))),
  failing("throws", () => {
    throw new Error("thrown at once")
  }),
  failing("rejects", () => Promise.reject(new Error("promise rejected"))),
  failing("typed", () => Effect.fail({ code: 402 }))
]

const workflow = Workflow.make({
  name: "errors",
  input: Schema.String,
  output: Schema.String,
  run: (name, ctx) => Effect.catchAll(Effect.as(ctx.tool(name, {}), "ok"), (error) => Effect.succeed(`${error._tag}: ${error.message}`))
})

describe("a handler that fails", () => {
  it.effect("fails the call with a ToolError naming its reason, logged as a tool_error; a replay gives the same error", () =>
    Effect.gen(function*() {
      const kernel = yield* Kernel.Kernel
      const store = yield* EventStore.EventStore
      const expected: Record<string, string> = {
        fails: "card declined",
        dies: "handler bug",
        throws: "thrown at once",
        rejects: "promise rejected",
        typed: "{\"code\":402}"
      }
      for (const [name, reason] of Object.entries(expected)) {
        const result = yield* kernel.execute(workflow, { runId: name, tenant, input: name })
        expect(result).toMatchObject({ status: "completed", output: `ToolError: tool "${name}" failed: ${reason}` })
        const log = yield* store.readEvents(tenant.tenantId, name)
        expect(log.map((e) => e.payload).find((p) => p._tag === "ToolFailed")).toEqual({ _tag: "ToolFailed", tool: name, kind: "tool_error", error: reason })
        expect(yield* kernel.replay(workflow, { tenantId: tenant.tenantId, runId: name })).toMatchObject({ output: `ToolError: tool "${name}" failed: ${reason}` })
      }
    }).pipe(Effect.provide(kernelLayer([], tools))))
})
