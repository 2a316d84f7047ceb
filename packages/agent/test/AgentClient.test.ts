// The Promise facade: the same agent, run and replayed with async/await on SQLite, memory in the same file.
import { describe, expect, it } from "vitest"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { ScriptedModel } from "@artana/core/testing"
import { AgentClient, AutonomousAgent, SqlMemoryStore, SubAgent } from "@artana/agent"
import { SqliteStore } from "@artana/store-sqlite"
import { makeTools, tenant } from "./fixtures.js"

describe("AgentClient", () => {
  it("runs, continues, replays and reads the lineage, with Promises", async () => {
    const dir = mkdtempSync(join(tmpdir(), "artana-agent-client-"))
    const { effects, querySales } = makeTools()
    const researcher = AutonomousAgent.make({ name: "researcher", instructions: "You research.", tools: [querySales] })
    const analyst = AutonomousAgent.make({
      name: "analyst",
      instructions: "You analyse.",
      tools: [SubAgent.asTool({ name: "research", description: "Researches", agent: researcher })]
    })
    const client = AgentClient.create({
      store: SqliteStore.layer({ filename: join(dir, "artana.db") }),
      memory: SqlMemoryStore.layer(),
      model: ScriptedModel.layer([
        ScriptedModel.toolCall("core_memory_append", { content: "Prefers EUR." }),
        ScriptedModel.toolCall("research", { task: "EMEA Q3?" }),
        ScriptedModel.toolCall("query_sales", { region: "EMEA", quarter: "Q3" }),
        ScriptedModel.text("1.2M"),
        ScriptedModel.text("EMEA made EUR 1.2M.")
      ])
    })
    try {
      const result = await client.run(analyst, { runId: "pc-1", tenant, prompt: "EMEA in Q3?" })
      expect(result).toMatchObject({ status: "completed", output: { output: "EMEA made EUR 1.2M.", turns: 3 } })
      expect(await client.run(analyst, { runId: "pc-1", tenant, prompt: "EMEA in Q3?" })).toEqual(result)
      expect(await client.replay(analyst, { tenantId: tenant.tenantId, runId: "pc-1" })).toEqual(result)
      const tree = await client.lineage({ tenantId: tenant.tenantId, runId: "pc-1" })
      expect(tree.children.map((c) => c.run.workflow)).toEqual(["agent:researcher"])
      expect(effects.lines).toHaveLength(1)
      await expect(client.run(analyst, { runId: "pc-2", tenant, prompt: "again" })).rejects.toThrow(/script has 5 replies but call 6 was made/)
    } finally {
      await client.close()
      rmSync(dir, { recursive: true, force: true })
    }
  })
})
