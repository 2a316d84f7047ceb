// `pnpm --filter @artana/examples exec tsx src/analyst.ts`: an analyst agent on the embedded default (SQLite).
//   - long-term memory: a MemoryStore in the same SQLite file as the log; the agent saves the user's preference
//   - a context builder with progressive skills: the prompt lists six skills by name; the agent loads what it uses
//   - compaction: past ten messages, the oldest are summarized by a cheap model into a Past Events Summary
// Offline it plays a recorded conversation on the scripted model and says so; with OPENAI_API_KEY (or
// OPENAI_BASE_URL for a compatible server) the same agent runs on OpenAI.
import { mkdtempSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { fileURLToPath } from "node:url"
import { Effect, Layer, Schema } from "effect"
import { type Event, EventStore, Kernel, Middleware, Tenant, Tool, ToolRegistry } from "@artana/core"
import { ScriptedModel } from "@artana/core/testing"
import { AutonomousAgent, CompactionStrategy, ContextBuilder, MemoryStore, Skills, SqlMemoryStore } from "@artana/agent"
import { CapabilityGuard, Pii } from "@artana/middleware"
import { SqliteStore } from "@artana/store-sqlite"
import { chooseModel } from "./model.js"
import { runMain } from "./runMain.js"

export const tenant = Tenant.TenantContext.make({ tenantId: "acme", capabilities: ["sales:read"], budgetUsdLimit: 1 })

// --- the data and the tools ----------------------------------------------------------------------------------

/** Quarterly revenue, EUR. */
const REVENUE: Readonly<Record<string, ReadonlyArray<number>>> = {
  EMEA: [41_200_000, 43_900_000, 47_100_000, 52_300_000],
  APAC: [22_800_000, 22_100_000, 23_400_000, 24_000_000],
  AMER: [63_500_000, 64_100_000, 62_900_000, 66_800_000]
}

const Region = Schema.Literal("EMEA", "APAC", "AMER")

const queryRevenue = Tool.make({
  name: "query_revenue",
  description: "Quarterly revenue of a region for a year, in EUR. Returns the four quarters in order.",
  parameters: Schema.Struct({ region: Region, year: Schema.Int }),
  success: Schema.Struct({ region: Schema.String, year: Schema.Number, quarters: Schema.Array(Schema.Number) }),
  requiresCapability: "sales:read",
  idempotent: true,
  handler: ({ region, year }) => Effect.succeed({ region, year, quarters: year === 2024 ? REVENUE[region]! : [] })
})

export const computeGrowth = Tool.make({
  name: "compute_growth",
  description: "Growth between the first and the last of a series of values, in percent.",
  parameters: Schema.Struct({ values: Schema.Array(Schema.Number).pipe(Schema.minItems(2)) }),
  success: Schema.Struct({ growthPct: Schema.Number }),
  idempotent: true,
  handler: ({ values }) => Effect.succeed({ growthPct: Math.round(((values[values.length - 1]! / values[0]!) - 1) * 1000) / 10 })
})

const listRegions = Tool.make({
  name: "list_regions",
  description: "The sales regions and their currencies.",
  parameters: Schema.Struct({}),
  idempotent: true,
  handler: () => Effect.succeed(Object.keys(REVENUE).map((region) => ({ region, currency: "EUR" })))
})

const topCustomers = Tool.make({
  name: "top_customers",
  description: "The largest customers of a region by revenue in a year.",
  parameters: Schema.Struct({ region: Region, year: Schema.Int, limit: Schema.optional(Schema.Int) }),
  requiresCapability: "sales:read",
  idempotent: true,
  handler: ({ region }) => Effect.succeed([{ customer: `${region} Holdings`, revenue: 4_100_000 }])
})

const forecast = Tool.make({
  name: "forecast",
  description: "A naive next-quarter forecast from a series (the last value grown by the average quarterly growth).",
  parameters: Schema.Struct({ values: Schema.Array(Schema.Number).pipe(Schema.minItems(2)) }),
  idempotent: true,
  handler: ({ values }) => {
    const steps = values.slice(1).map((v, i) => v / values[i]!)
    const average = steps.reduce((a, b) => a + b, 0) / steps.length
    return Effect.succeed({ next: Math.round(values[values.length - 1]! * average) })
  }
})

/** Files the report; the demo keeps it in memory (a real one would write to a BI tool). */
export const filedReports: Array<{ readonly title: string; readonly body: string }> = []
const saveReport = Tool.make({
  name: "save_report",
  description: "Files a report in the team's report archive.",
  parameters: Schema.Struct({ title: Schema.String, body: Schema.String }),
  idempotent: true,
  handler: ({ body, title }) => Effect.sync(() => (filedReports.push({ title, body }), { filed: true }))
})

// --- the agent -------------------------------------------------------------------------------------------------

export const AnalystReport = Schema.Struct({
  headline: Schema.String,
  emeaGrowthPct: Schema.Number,
  apacGrowthPct: Schema.Number,
  recommendation: Schema.String
})

/** A section anyone may write: here, what the data covers. */
const dataCatalog = ContextBuilder.text(
  "data_catalog",
  "[DATA CATALOG]\n- revenue: quarterly, by region (EMEA, APAC, AMER), EUR, 2024 complete\n- customers: yearly, by region"
)

export const analyst = AutonomousAgent.make({
  name: "analyst",
  instructions: "You are a sales analyst. Answer with figures from the tools only, never from memory of the world. " +
    "Save the user's lasting preferences to your core memory. File every report you write.",
  tools: [
    Skills.make(queryRevenue, { instructions: "Quarters come in order Q1..Q4. Only 2024 is loaded.", examples: [{ arguments: { region: "EMEA", year: 2024 } }] }),
    Skills.make(computeGrowth, { instructions: "Pass the series in time order; the answer is rounded to 0.1%." }),
    listRegions,
    topCustomers,
    forecast,
    Skills.make(saveReport, { instructions: "Title: '<Topic> — <period>'. Body: three short paragraphs." })
  ],
  progressiveSkills: true,
  sections: [dataCatalog],
  compaction: CompactionStrategy.make({
    triggerAtMessages: 10,
    triggerAtTokenRatio: 0.6,
    contextWindow: 128_000,
    keepRecentMessages: 4,
    summarizeWithModel: "gpt-4o-mini"
  }),
  maxTurns: 20
})

export const TASK = "How did EMEA revenue develop over 2024, compared with APAC? Write and file a short report. " +
  "Note for the future: I always want amounts in EUR millions with one decimal."

// --- the recorded conversation (offline) ----------------------------------------------------------------------

/** One model reply of the recorded conversation: tool calls, or a text answer (the summary, the final JSON). */
export type Turn =
  | { readonly calls: ReadonlyArray<{ readonly name: string; readonly arguments: unknown }> }
  | { readonly text: string }

export const conversation: ReadonlyArray<Turn> = [
  { calls: [{ name: "core_memory_append", arguments: { content: "The user wants amounts in EUR millions with one decimal." } }] },
  { calls: [{ name: "load_skill", arguments: { name: "query_revenue" } }, { name: "load_skill", arguments: { name: "compute_growth" } }] },
  { calls: [{ name: "query_revenue", arguments: { region: "EMEA", year: 2024 } }] },
  { calls: [{ name: "query_revenue", arguments: { region: "APAC", year: 2024 } }] },
  { calls: [{ name: "compute_growth", arguments: { values: REVENUE.EMEA } }] },
  // Eleven messages of history: compaction folds the oldest into a summary (the cheap model's answer).
  { text: "The user wants EUR millions, one decimal (saved to memory). Loaded query_revenue and compute_growth. EMEA 2024: 41.2, 43.9, 47.1, 52.3 (EUR M). APAC 2024: 22.8, 22.1, 23.4, 24.0 (EUR M)." },
  { calls: [{ name: "compute_growth", arguments: { values: REVENUE.APAC } }] },
  { calls: [{ name: "load_skill", arguments: { name: "save_report" } }] },
  {
    calls: [{
      name: "save_report",
      arguments: {
        title: "Regional revenue — 2024",
        body: "EMEA grew from EUR 41.2M in Q1 to EUR 52.3M in Q4 (+26.9%).\n\nAPAC moved from EUR 22.8M to EUR 24.0M (+5.3%).\n\nShift sales capacity towards EMEA in 2025."
      }
    }]
  },
  {
    text: JSON.stringify({
      headline: "EMEA grew 26.9% over 2024 (EUR 41.2M to 52.3M per quarter); APAC 5.3% (EUR 22.8M to 24.0M).",
      emeaGrowthPct: 26.9,
      apacGrowthPct: 5.3,
      recommendation: "Shift sales capacity towards EMEA in 2025."
    })
  }
]

export const script: ReadonlyArray<ScriptedModel.Reply> = conversation.map((t) =>
  "text" in t ? ScriptedModel.text(t.text, { costUsd: 0.0004 }) : { content: null, toolCalls: t.calls, costUsd: 0.0004 }
)

// --- running it ------------------------------------------------------------------------------------------------

/** The governed chain, in order: scrub PII, guard capabilities (the kernel prices every call and holds the budget). */
const governed = Middleware.layer([Pii.middleware(), CapabilityGuard.middleware()])

/** The store (log and memory on one SQLite file), the model, the kernel. */
const layer = (filename: string) =>
  Layer.provideMerge(
    Kernel.layer(),
    Layer.mergeAll(ToolRegistry.layer([]), governed, Layer.orDie(chooseModel(script).layer))
  ).pipe(Layer.provideMerge(SqlMemoryStore.layer()), Layer.provideMerge(SqliteStore.layer({ filename })), Layer.orDie)

export interface AnalystResult {
  readonly runId: string
  readonly filename: string
  readonly status: string
  readonly report: typeof AnalystReport.Type | undefined
  readonly turns: number
  readonly compactions: number
  readonly memory: ReadonlyArray<string>
  readonly verified: boolean
  readonly events: ReadonlyArray<Event.Event>
}

export const main = (options: { readonly filename?: string; readonly log?: (line: string) => void } = {}): Promise<AnalystResult> => {
  const log = options.log ?? ((line: string) => console.log(line))
  const filename = options.filename ?? join(mkdtempSync(join(tmpdir(), "artana-analyst-")), "artana.db")
  const runId = `analyst-${Date.now()}`
  const program = Effect.gen(function*() {
    log("Artana analyst agent")
    log(`  model:      ${chooseModel(script).label}`)
    log(`  store:      ${filename} (the log and the agent's memory, SQLite)`)
    log(`  skills:     progressive (${analyst.options.tools?.length ?? 0} skills listed by name; load_skill gives the rest)`)
    log(`  compaction: past 10 messages (or 60% of the window), keep 4, summaries by gpt-4o-mini`)
    log(`\ntask: ${TASK}\n`)
    const result = yield* analyst.run({ runId, tenant, prompt: TASK, outputSchema: AnalystReport })
    const kernel = yield* Kernel.Kernel
    const store = yield* EventStore.EventStore
    const memory = yield* MemoryStore.MemoryStore
    const events = yield* store.readEvents(tenant.tenantId, runId)
    const verified = (yield* kernel.verify({ tenantId: tenant.tenantId, runId })).ok
    const remembered = (yield* memory.list({ tenantId: tenant.tenantId, agentId: "analyst" })).map((e) => e.content)
    for (const e of events) {
      const p = e.payload
      const detail = p._tag === "ModelCompleted"
        ? (p.message.toolCalls ?? []).map((c) => `${c.name}(${c.arguments.slice(0, 60)})`).join(", ") || (p.message.content ?? "").slice(0, 90)
        : p._tag === "ToolCompleted"
        ? JSON.stringify(p.result).slice(0, 90)
        : ""
      if (p._tag === "ModelCompleted" || p._tag === "ToolCompleted") log(`  ${e.stepKey.padEnd(16)} ${detail}`)
    }
    const completed = result.status === "completed" ? result.output : undefined
    log(`\n${result.status}: ${completed?.turns ?? 0} turns, ${completed?.compactions ?? 0} compaction(s), $${(completed?.costUsd ?? 0).toFixed(6)}`)
    if (completed !== undefined) log(`report: ${completed.output.headline}\n        ${completed.output.recommendation}`)
    log(`memory: ${remembered.join(" | ")}`)
    log(`verify: ${verified ? "hash chain intact" : "BROKEN"}, ${events.length} events`)
    return {
      runId,
      filename,
      status: result.status,
      report: completed?.output,
      turns: completed?.turns ?? 0,
      compactions: completed?.compactions ?? 0,
      memory: remembered,
      verified,
      events
    } satisfies AnalystResult
  })
  return Effect.runPromise(program.pipe(Effect.provide(layer(filename))))
}

const isMain = process.argv[1] !== undefined && fileURLToPath(import.meta.url) === process.argv[1]
if (isMain) await runMain(main)
