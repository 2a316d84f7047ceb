// What the durable-step benchmarks share: their tenant and the tool each step calls.
import { Effect, Schema } from "effect"
import { Tenant, Tool } from "@artana/core"

export const tenant = Tenant.TenantContext.make({ tenantId: "bench", capabilities: [], budgetUsdLimit: 1 })

/** An idempotent tool that returns its input: a durable step with no work of its own. */
export const echo = Tool.make({
  name: "echo",
  description: "Returns its input",
  parameters: Schema.Struct({ i: Schema.Number, note: Schema.String }),
  idempotent: true,
  handler: (args) => Effect.succeed({ ok: true, i: args.i })
})

/** `echo`, logged in one commit after its handler (`durability: "one-commit"`). */
export const echoOneCommit = Tool.make({
  name: "echo_one_commit",
  description: "Returns its input",
  parameters: Schema.Struct({ i: Schema.Number, note: Schema.String }),
  idempotent: true,
  durability: "one-commit",
  handler: (args) => Effect.succeed({ ok: true, i: args.i })
})
