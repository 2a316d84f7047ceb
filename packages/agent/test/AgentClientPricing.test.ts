// The agent client prices models as the kernel's options do: a local model is priced in code, not refused.
import { describe, expect, it } from "vitest"
import { EventStore, Pricing } from "@artana/core"
import { ScriptedModel } from "@artana/core/testing"
import { AgentClient, AutonomousAgent } from "@artana/agent"
import { tenant } from "./fixtures.js"

describe("AgentClient and prices", () => {
  const agent = AutonomousAgent.make({ name: "local", instructions: "Answer.", memory: false })
  const local = () => ScriptedModel.layer([ScriptedModel.text("42")], { model: "llama3:8b", prices: {} })

  it("a model no table prices is refused before the request (BudgetUnpriced)", async () => {
    const client = AgentClient.create({ store: EventStore.layerMemory, model: local() })
    try {
      await expect(client.run(agent, { runId: "unpriced", tenant, prompt: "6*7?" })).rejects.toMatchObject({ _tag: "BudgetUnpriced", model: "llama3:8b" })
    } finally {
      await client.close()
    }
  })

  it("priced through AgentClient.create, as the BudgetUnpriced message says, it runs", async () => {
    const client = AgentClient.create({ store: EventStore.layerMemory, model: local(), prices: { "llama3:8b": Pricing.free } })
    try {
      expect(await client.run(agent, { runId: "local-1", tenant, prompt: "6*7?" })).toMatchObject({ status: "completed" })
    } finally {
      await client.close()
    }
  })
})
