// The seed's transfer scenario: a tool behind a capability, a typed decision from the model, a human in the loop.
import { Schema } from "effect"
import { Artana, Chat, Tenant, Tool, type Workflow } from "@artana/core"
import { ScriptedModel } from "@artana/core/testing"

export const tenant = Tenant.TenantContext.make({ tenantId: "acme", capabilities: ["finance:read"], budgetUsdLimit: 1 })

export const TransferDecision = Schema.Struct({
  approved: Schema.Boolean,
  reason: Schema.String
})

export const HumanApproval = Schema.Struct({
  approve: Schema.Boolean,
  approver: Schema.String
})

const balances: Record<string, number> = { "acc-1": 1200, "acc-2": 80 }

export const getBalance = Tool.make({
  name: "get_balance",
  description: "Current balance of an account, in USD",
  parameters: Schema.Struct({ accountId: Schema.String }),
  success: Schema.Struct({ accountId: Schema.String, balanceUsd: Schema.Number }),
  requiresCapability: "finance:read",
  idempotent: true,
  handler: async ({ accountId }) => ({ accountId, balanceUsd: balances[accountId] ?? 0 })
})

/** Moves money; needs a capability the demo tenant lacks, so the model never sees it. */
export const transferFunds = Tool.make({
  name: "transfer_funds",
  description: "Moves money between two accounts",
  parameters: Schema.Struct({ from: Schema.String, to: Schema.String, amountUsd: Schema.Number }),
  requiresCapability: "finance:write",
  handler: async () => ({ ok: true })
})

export const transfer: Workflow.Workflow<{ readonly from: string; readonly to: string; readonly amountUsd: number }, string, unknown> = Artana.workflow({
  name: "transfer",
  input: Schema.Struct({ from: Schema.String, to: Schema.String, amountUsd: Schema.Number }),
  output: Schema.String,
  run: async ({ amountUsd, from, to }, ctx) => {
    const decision = await ctx.chat({
      messages: [
        Chat.system("You approve transfers only when the source account can cover them. Answer as TransferDecision JSON."),
        Chat.user(`Transfer $${amountUsd} from ${from} to ${to}? Requested by jane.doe@example.com, +1 (415) 555-0132.`)
      ],
      outputSchema: TransferDecision
    })
    if (!decision.output.approved) {
      const human = await ctx.pauseForHuman({ reason: `model declined: ${decision.output.reason}`, schema: HumanApproval })
      if (!human.approve) return `transfer of $${amountUsd} rejected by ${human.approver}`
      return `transfer of $${amountUsd} from ${from} to ${to} approved by ${human.approver} (model had declined)`
    }
    return `transfer of $${amountUsd} from ${from} to ${to} approved by the model`
  }
})

/** What the scripted model answers offline: it checks the balance, then declines. */
export const script: ReadonlyArray<ScriptedModel.Reply> = [
  ScriptedModel.toolCall("get_balance", { accountId: "acc-1" }, { usage: { inputTokens: 120, outputTokens: 18 }, costUsd: 0.0004 }),
  ScriptedModel.json(
    { approved: false, reason: "acc-1 holds $1200, less than $5000" },
    { usage: { inputTokens: 160, outputTokens: 24 }, costUsd: 0.0005 }
  )
]
