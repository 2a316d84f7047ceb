// The tools and tenant of the by-hand step scripts (opCount.mjs, stepCpu.mjs): an idempotent echo, two-phase (the
// default) and with durability "one-commit". Plain JS on the built dist.
import { Effect, Schema } from "effect"
import { Tenant, Tool } from "@artana/core"

export const tenant = Tenant.TenantContext.make({ tenantId: "bench", capabilities: [], budgetUsdLimit: 1 })
const make = (name, durability) =>
  Tool.make({
    name,
    description: "Returns its input",
    parameters: Schema.Struct({ i: Schema.Number, note: Schema.String }),
    idempotent: true,
    ...(durability === undefined ? {} : { durability }),
    handler: (args) => Effect.succeed({ ok: true, i: args.i })
  })
/** By kind: `tool` (two-phase) and `tool_one_commit`. */
export const tools = { tool: make("echo"), tool_one_commit: make("echo_one_commit", "one-commit") }
