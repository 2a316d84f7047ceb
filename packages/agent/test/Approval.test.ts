// An agent whose tool needs approval, on SQLite: its run pauses at the call; a decision (here through the Promise
// client) and a `run` under the same id continue the agent with it: the approved call runs once with the edited
// arguments, or the model reads the rejection and answers without it.
import { describe, expect, it } from "vitest"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { Effect, Schema } from "effect"
import { Tool } from "@artana/core"
import { ScriptedModel } from "@artana/core/testing"
import { AgentClient, AutonomousAgent } from "@artana/agent"
import { SqliteStore } from "@artana/store-sqlite"
import { tenant } from "./fixtures.js"

const refunds = () => {
  const paid: Array<unknown> = []
  const refund = Tool.make({
    name: "refund",
    description: "Refunds an order",
    parameters: Schema.Struct({ order: Schema.String, amount: Schema.Number.pipe(Schema.positive()) }),
    needsApproval: true,
    handler: (args) =>
      Effect.sync(() => {
        paid.push(args)
        return "refunded"
      })
  })
  return { paid, refund, agent: AutonomousAgent.make({ name: "support", instructions: "You help customers.", tools: [refund] }) }
}

const withClient = async (script: ReadonlyArray<ScriptedModel.Reply>, body: (client: AgentClient.Client) => Promise<void>) => {
  const dir = mkdtempSync(join(tmpdir(), "artana-agent-approval-"))
  const client = AgentClient.create({ store: SqliteStore.layer({ filename: join(dir, "artana.db") }), model: ScriptedModel.layer(script) })
  try {
    await body(client)
  } finally {
    await client.close()
    rmSync(dir, { recursive: true, force: true })
  }
}

describe("an agent's tool that needs approval", () => {
  it("pauses the agent; an approval with edited arguments continues it, the call runs once with them", async () => {
    const { paid, refund, agent } = refunds()
    await withClient([ScriptedModel.toolCall("refund", { order: "o-1", amount: 120 }), ScriptedModel.text("Refunded 80")], async (client) => {
      const paused = await client.run(agent, { runId: "s-1", tenant, prompt: "Refund o-1" })
      expect(paused).toMatchObject({ status: "paused", approval: { tool: "refund", arguments: '{"order":"o-1","amount":120}' } })
      const [pending] = await client.approvals({ tenantId: tenant.tenantId })
      expect(pending).toMatchObject({ runId: "s-1", workflow: "agent:support" })
      await expect(client.decide({ tenantId: tenant.tenantId, approvalId: pending!.approvalId, approver: "lead", decision: "approve", arguments: { order: "o-1", amount: -1 }, tool: refund }))
        .rejects.toMatchObject({ _tag: "InvalidToolArguments", path: "$.amount" })
      await client.decide({ tenantId: tenant.tenantId, approvalId: pending!.approvalId, approver: "lead", decision: "approve", arguments: { order: "o-1", amount: 80 }, tool: refund })
      const done = await client.run(agent, { runId: "s-1", tenant, prompt: "Refund o-1" })
      expect(done).toMatchObject({ status: "completed", output: { output: "Refunded 80" } })
      expect(paid).toEqual([{ order: "o-1", amount: 80 }])
      expect(await client.replay(agent, { tenantId: tenant.tenantId, runId: "s-1" })).toEqual(done)
    })
  })

  it("a rejection reaches the agent's model as the call's failure, and the agent goes on", async () => {
    const { paid, agent } = refunds()
    const script = [
      ScriptedModel.toolCall("refund", { order: "o-2", amount: 500 }),
      {
        ...ScriptedModel.text("I cannot refund this order"),
        // The model's next turn ends with the call's failure: the rejection and its reason.
        expect: (request) => {
          const last = request.messages.at(-1)?.content ?? ""
          return last.includes("ApprovalRejected") && last.includes("over the limit") ? undefined : `the last message is not the rejection: ${last}`
        }
      }
    ] satisfies ReadonlyArray<ScriptedModel.Reply>
    await withClient(script, async (client) => {
      const paused = await client.run(agent, { runId: "s-2", tenant, prompt: "Refund o-2" })
      const approvalId = paused.status === "paused" ? paused.approval!.approvalId : ""
      await client.decide({ tenantId: tenant.tenantId, approvalId, approver: "lead", decision: "reject", reason: "over the limit" })
      expect(await client.run(agent, { runId: "s-2", tenant, prompt: "Refund o-2" })).toMatchObject({ status: "completed", output: { output: "I cannot refund this order" } })
      expect(paid).toEqual([])
    })
  })
})
