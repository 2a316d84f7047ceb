import { describe, expect, it } from "vitest"
import { Schema } from "effect"
import { Artana, Chat, Tool } from "@artana/core"
import { ScriptedModel } from "@artana/core/testing"
import { tenant } from "./fixtures.js"

describe("Artana (Promise facade)", () => {
  it("registers a tool with a capability, chats with a tenant and an output schema, pauses and resumes", async () => {
    let balanceCalls = 0
    const getBalance = Tool.make({
      name: "get_balance",
      description: "Balance of an account",
      parameters: Schema.Struct({ accountId: Schema.String }),
      requiresCapability: "finance:read",
      idempotent: true,
      handler: async ({ accountId }) => {
        balanceCalls++
        return { accountId, balance: 50 }
      }
    })
    const Decision = Schema.Struct({ approved: Schema.Boolean, reason: Schema.String })
    const transfer = Artana.workflow({
      name: "transfer",
      input: Schema.Struct({ amount: Schema.Number }),
      output: Schema.String,
      run: async ({ amount }, ctx) => {
        const decision = await ctx.chat({ messages: [Chat.user(`Approve ${amount}?`)], outputSchema: Decision })
        if (!decision.output.approved) {
          const human = await ctx.pauseForHuman({ reason: decision.output.reason, schema: Schema.Struct({ approve: Schema.Boolean }) })
          if (!human.approve) return "rejected by a human"
        }
        return "transferred"
      }
    })
    const artana = Artana.create({
      model: ScriptedModel.layer([
        ScriptedModel.toolCall("get_balance", { accountId: "acc-1" }),
        ScriptedModel.json({ approved: false, reason: "balance 50 < 100" })
      ]),
      tools: [getBalance],
      workflows: [transfer]
    })
    try {
      const paused = await artana.run(transfer, { runId: "p-1", tenant, input: { amount: 100 } })
      expect(paused).toMatchObject({ status: "paused", reason: "balance 50 < 100" })
      await expect(artana.resume({ tenantId: tenant.tenantId, runId: "p-1", response: { approve: "maybe" } })).rejects.toMatchObject({
        _tag: "InvalidHumanResponse"
      })
      const done = await artana.resume({ tenantId: tenant.tenantId, runId: "p-1", response: { approve: true } })
      expect(done).toEqual({ status: "completed", runId: "p-1", output: "transferred" })
      expect(balanceCalls).toBe(1)
      expect((await artana.verify({ tenantId: tenant.tenantId, runId: "p-1" })).ok).toBe(true)
      const runs = await artana.listRuns(tenant.tenantId)
      expect(runs.map((r) => [r.runId, r.status])).toEqual([["p-1", "completed"]])
      await expect(artana.getRun({ tenantId: "other", runId: "p-1" })).rejects.toMatchObject({ _tag: "RunNotFound" })
    } finally {
      await artana.close()
    }
  })
})
