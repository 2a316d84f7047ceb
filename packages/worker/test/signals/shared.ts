// The workflow and layer the signal tests' worker and sender processes share.
import { Effect, Layer, Schema } from "effect"
import { Kernel, type TaskQueue, Tenant, ToolRegistry, Workflow } from "@artana/core"
import { ScriptedModel } from "@artana/core/testing"
import { SqliteStore } from "@artana/store-sqlite"

export const tenant = Tenant.TenantContext.make({ tenantId: "acme", capabilities: [], budgetUsdLimit: 1 })

/** Waits for a "decision" (paused while it waits: the kernel's default), with a timeout when the input gives one. */
export const approval = Workflow.make({
  name: "approval",
  input: Schema.Struct({ timeoutMillis: Schema.optional(Schema.Number) }),
  output: Schema.String,
  run: (input, ctx) =>
    Effect.gen(function*() {
      const decision = yield* ctx.waitForSignal("decision", Schema.Struct({ by: Schema.String }), input.timeoutMillis === undefined ? {} : { timeout: input.timeoutMillis }).pipe(
        Effect.catchTag("SignalTimeout", () => Effect.succeed({ by: "nobody (timeout)" })),
        Effect.orDie
      )
      return `decided by ${decision.by}`
    })
})

/** The kernel over the file, with its task queue (so `signal` wakes the task of a paused run). */
export const live = (filename: string): Layer.Layer<Kernel.Kernel | TaskQueue.TaskQueue, unknown> =>
  Layer.provideMerge(
    Kernel.layer({ workflows: [approval] }),
    Layer.mergeAll(SqliteStore.layer({ filename, busyTimeout: "30 seconds" }), ScriptedModel.layer([]), ToolRegistry.layer([]))
  )
