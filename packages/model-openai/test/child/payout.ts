// The streamed-approval crash test's workflow and tool, shared by the test (../LiveApprovalCrash.test.ts) and its
// child process (./approval-child.ts): both must run the same code, or the resumed run would diverge from its log.
import { appendFileSync, existsSync, readFileSync } from "node:fs"
import { Effect, Schema } from "effect"
import { Tenant, Tool, Workflow } from "@artana/core"

export const tenant = Tenant.TenantContext.make({ tenantId: "acme", capabilities: ["finance:write"], budgetUsdLimit: 1 })

/** One line per handler run: the arguments it ran with. */
export const handlerRuns = (log: string): ReadonlyArray<unknown> =>
  existsSync(log) ? readFileSync(log, "utf8").split("\n").filter((l) => l !== "").map((l) => JSON.parse(l)) : []

/** Moves money: every call waits for a person's yes. */
export const transferFunds = (log: string) =>
  Tool.make({
    name: "transfer_funds",
    description: "Moves money between two accounts",
    parameters: Schema.Struct({ from: Schema.String, to: Schema.String, amountUsd: Schema.Number }),
    requiresCapability: "finance:write",
    needsApproval: true,
    handler: (args) =>
      Effect.sync(() => {
        appendFileSync(log, JSON.stringify(args) + "\n")
        return { ok: true }
      })
  })

/** A chat over the transfer tool: its first turn streams text and the call, then waits for the approval. */
export const payout = (log: string) =>
  Workflow.make({
    name: "payout",
    input: Schema.String,
    output: Schema.String,
    run: (prompt, ctx) => Effect.map(ctx.chat({ prompt, tools: [transferFunds(log)] }), (r) => r.output)
  })
