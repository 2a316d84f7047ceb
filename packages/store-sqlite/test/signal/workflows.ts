// The workflow and layer the signal tests' processes share (the children import @artana/core's build, the tests its
// sources: both run this code).
import { Duration, Effect, Layer, Schema } from "effect"
import { Kernel, Middleware, Tenant, ToolRegistry, Workflow } from "@artana/core"
import { ScriptedModel } from "@artana/core/testing"
import { SqliteStore } from "../../src/index.js"

export const tenant = Tenant.TenantContext.make({ tenantId: "acme", capabilities: [], budgetUsdLimit: 1 })

export const Decision = Schema.Struct({ approve: Schema.Boolean, by: Schema.String })

/** Waits for a "decision" (after a pause for a person when `pauseFirst`), with a timeout when given. */
export const waiter = Workflow.make({
  name: "waiter",
  input: Schema.Struct({ pauseFirst: Schema.Boolean, timeoutMillis: Schema.optional(Schema.Number) }),
  output: Schema.String,
  run: (input, ctx) =>
    Effect.gen(function*() {
      if (input.pauseFirst) yield* ctx.pauseForHuman({ reason: "look first" })
      const decision = yield* ctx.waitForSignal("decision", Decision, input.timeoutMillis === undefined ? {} : { timeout: input.timeoutMillis }).pipe(
        Effect.catchTag("SignalTimeout", () => Effect.succeed({ approve: false, by: "timeout" })),
        Effect.catchTag("InvalidSignalPayload", (e) => Effect.succeed({ approve: false, by: `invalid: ${e.reason}` }))
      )
      return `${decision.approve ? "approved" : "declined"} by ${decision.by}`
    })
})

/**
 * The kernel over a SQLite file; a waiting execution reads its log for signals every `poll` (default 50 ms), and holds
 * the run for `hold` (default: it never pauses).
 */
export const layer = (filename: string, hold: Duration.DurationInput = Duration.infinity, poll: Duration.DurationInput = "50 millis"): Layer.Layer<Kernel.Kernel, unknown> =>
  Layer.provideMerge(
    Kernel.layer({ workflows: [waiter], signalPollInterval: poll, signalWaitHold: hold }),
    Layer.mergeAll(SqliteStore.layer({ filename }), ScriptedModel.layer([]), ToolRegistry.layer([]), Middleware.layer([]))
  )
