// The README's path, as written there, on the scripted model (instead of OpenAI) and a temp file (instead of
// ./artana.db): skills loaded on demand, a sub-agent, compaction configured, memory on SQLite, a typed answer.
import { describe, expect, it } from "@effect/vitest"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { Effect, Layer, Schema } from "effect"
import { Kernel, Middleware, Tenant, Tool, ToolRegistry } from "@artana/core"
import { ScriptedModel } from "@artana/core/testing"
import { AutonomousAgent, CompactionStrategy, Skills, SqlMemoryStore, SubAgent } from "@artana/agent"
import { SqliteStore } from "@artana/store-sqlite"

const queryRevenue = Tool.make({
  name: "query_revenue",
  description: "Quarterly revenue of a region for a year, in EUR.",
  parameters: Schema.Struct({ region: Schema.String, year: Schema.Int }),
  idempotent: true,
  handler: ({ region, year }) => Effect.succeed({ region, year, quarters: [41.2, 43.9, 47.1, 52.3] })
})

const marketNews = Tool.make({
  name: "market_news",
  description: "Recent news about a market, one line each.",
  parameters: Schema.Struct({ market: Schema.String }),
  idempotent: true,
  handler: ({ market }) => Effect.succeed([`${market}: two competitors raised prices in Q3`])
})

const researcher = AutonomousAgent.make({ name: "researcher", instructions: "You research markets.", tools: [marketNews] })

const analyst = AutonomousAgent.make({
  name: "analyst",
  instructions: "You are a sales analyst. Use figures from the tools only.",
  tools: [
    Skills.make(queryRevenue, { instructions: "Only 2024 is loaded.", examples: [{ arguments: { region: "EMEA", year: 2024 } }] }),
    SubAgent.asTool({ name: "research", description: "Researches a market question", agent: researcher })
  ],
  progressiveSkills: true,
  compaction: CompactionStrategy.make({ triggerAtTokenRatio: 0.7, contextWindow: 128_000, keepRecentMessages: 10, summarizeWithModel: "gpt-4o-mini" }),
  maxTurns: 50
})

const Report = Schema.Struct({ headline: Schema.String, growthPct: Schema.Number })
const tenant = Tenant.TenantContext.make({ tenantId: "acme", capabilities: [], budgetUsdLimit: 2 })

describe("README", () => {
  it.scoped("an analyst with a skill, a sub-agent and memory on SQLite", () =>
    Effect.gen(function*() {
      const dir = yield* Effect.acquireRelease(Effect.sync(() => mkdtempSync(join(tmpdir(), "artana-agent-readme-"))), (d) => Effect.sync(() => rmSync(d, { recursive: true, force: true })))
      const Live = Layer.provideMerge(
        Kernel.layer(),
        Layer.mergeAll(
          ScriptedModel.layer([
            { content: null, toolCalls: [{ name: "load_skill", arguments: { name: "query_revenue" } }, { name: "load_skill", arguments: { name: "research" } }] },
            ScriptedModel.toolCall("query_revenue", { region: "EMEA", year: 2024 }),
            ScriptedModel.toolCall("research", { task: "Why did EMEA grow in 2024?" }),
            ScriptedModel.toolCall("market_news", { market: "EMEA" }),
            ScriptedModel.text("Competitors raised prices in Q3."),
            ScriptedModel.json({ headline: "EMEA grew 27% as competitors raised prices", growthPct: 26.9 })
          ]),
          ToolRegistry.layer([]),
          Middleware.layerEmpty
        )
      ).pipe(Layer.provideMerge(SqlMemoryStore.layer()), Layer.provideMerge(SqliteStore.layer({ filename: join(dir, "artana.db") })))
      const result = yield* analyst.run({ runId: "q3-report", tenant, prompt: "How did EMEA grow in 2024?", outputSchema: Report }).pipe(Effect.provide(Live))
      expect(result).toMatchObject({ status: "completed", output: { output: { growthPct: 26.9 }, turns: 4 } })
      const tree = yield* SubAgent.lineage({ tenantId: "acme", runId: "q3-report" }).pipe(Effect.provide(Live))
      expect(tree.children.map((c) => c.run.runId)).toEqual(["q3-report::sub_agent::q3-report/turn:2/tool:0"])
    }))
})
