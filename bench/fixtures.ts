// What the durable-step benchmarks share: their tenant and the tool each step calls.
import { Effect, Schema } from "effect"
import { Tenant, Tool, Workflow } from "@artana/core"

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

/** A workflow of `n` durable steps, each a call of `tool` (by default `echo`): the benchmarks' unit of durability. */
export const stepsWorkflow = (name: string, tool: typeof echo = echo) =>
  Workflow.make({
    name,
    input: Schema.Struct({ n: Schema.Number }),
    output: Schema.Number,
    run: ({ n }, ctx) =>
      Effect.gen(function*() {
        for (let i = 0; i < n; i++) yield* ctx.tool(tool, { i, note: "a durable step of the benchmark" })
        return n
      })
  })
