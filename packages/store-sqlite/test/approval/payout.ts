// The approval tests' workflow, tool and client, shared by the test (../approvals.test.ts) and its child processes
// (./child.ts), which must run the same code or a resumed run would diverge from its log.
import { appendFileSync, existsSync, readFileSync } from "node:fs"
import { Effect, Schema } from "effect"
import { Artana, Tool, Workflow } from "@artana/core"
import { ScriptedModel } from "@artana/core/testing"
import { SqliteStore } from "../../src/index.js"

export const tenant = { tenantId: "acme", capabilities: ["finance:write"], budgetUsdLimit: 1 }

/** One line per handler run: `{ key, args }`. */
export const handlerRuns = (log: string): ReadonlyArray<{ readonly key: string; readonly args: unknown }> =>
  existsSync(log) ? readFileSync(log, "utf8").split("\n").filter((l) => l !== "").map((l) => JSON.parse(l)) : []

/** Transfers of 100 or more wait for alice's or bob's approval. */
export const transferFunds = (log: string) =>
  Tool.make({
    name: "transfer_funds",
    description: "Moves money to an account",
    parameters: Schema.Struct({ to: Schema.String, amount: Schema.Number.pipe(Schema.positive()) }),
    requiresCapability: "finance:write",
    needsApproval: ({ amount }) => Effect.succeed(amount >= 100),
    approvers: ["alice", "bob"],
    handler: (args, ctx) =>
      Effect.sync(() => {
        appendFileSync(log, JSON.stringify({ key: ctx.idempotencyKey, args }) + "\n")
        return { ok: true, ...args }
      })
  })

/** A chat over the transfer tool: the chat loop goes on with the decision. */
export const payout = (log: string) =>
  Workflow.make({
    name: "payout",
    input: Schema.Struct({ prompt: Schema.String }),
    output: Schema.String,
    run: ({ prompt }, ctx) => Effect.map(ctx.chat({ prompt, tools: [transferFunds(log)] }), (r) => r.output)
  })

export const client = (db: string, log: string, script: ReadonlyArray<ScriptedModel.Reply>) =>
  Artana.create({
    store: SqliteStore.layer({ filename: db }),
    model: ScriptedModel.layer(script),
    tools: [transferFunds(log)],
    workflows: [payout(log)]
  })
