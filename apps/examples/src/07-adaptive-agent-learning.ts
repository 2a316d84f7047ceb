// Agents that learn across runs (`@artana/experience`), on the embedded default (SQLite):
//   run 1: the booking agent calls book_flight with a US date and a long date, both refused, then an ISO date,
//          which works; after its answer it reflects (a model step of its own) and saves the rule it learned;
//   run 2: a new run of the same task for the same tenant: the rule is in its prompt, under
//          [PAST LEARNINGS FOR THIS TASK], and its first call succeeds; the rule is counted as having helped.
// The tool calls and tokens of both runs are printed side by side. Offline it plays a scripted conversation that
// shows the mechanics; with OPENAI_API_KEY (or OPENAI_BASE_URL) a real model has to find the format itself.
//
//   pnpm --filter @artana/examples exec tsx src/07-adaptive-agent-learning.ts
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { fileURLToPath } from "node:url"
import { Effect, Layer, Schema } from "effect"
import { AutonomousAgent, MemoryStore } from "@artana/agent"
import { type Event, EventStore, Kernel, Middleware, Tenant, Tool, ToolRegistry } from "@artana/core"
import { ScriptedModel } from "@artana/core/testing"
import { ExperienceExtension, type ExperienceRule, ExperienceStore, SqlExperienceStore } from "@artana/experience"
import { CapabilityGuard, Pii } from "@artana/middleware"
import { SqliteStore } from "@artana/store-sqlite"
import { chooseModel } from "./model.js"
import { runMain } from "./runMain.js"

const tenant = Tenant.TenantContext.make({ tenantId: "acme-travel", capabilities: [], budgetUsdLimit: 1 })
const TASK = "flight-booking"
const RULE = "book_flight only accepts dates as YYYY-MM-DD (ISO 8601); convert the date before the first call"

/** The booking system: it takes ISO dates only, and its error does not say which format it wants. */
const bookFlight = Tool.make({
  name: "book_flight",
  description: "Books a seat on a flight between two airports (IATA codes) on a date.",
  parameters: Schema.Struct({ from: Schema.String, to: Schema.String, date: Schema.String }),
  success: Schema.Struct({ confirmation: Schema.String }),
  handler: ({ date, from, to }) =>
    /^\d{4}-\d{2}-\d{2}$/.test(date)
      ? Effect.succeed({ confirmation: `${from}-${to}-${date.replaceAll("-", "")}` })
      : Effect.fail(new Error(`the booking system rejected the date "${date}"`))
})

/** What the scripted model plays offline: run 1 (two refused dates, one accepted, reflection), then run 2. */
export const script: ReadonlyArray<ScriptedModel.Reply> = [
  ScriptedModel.toolCall("book_flight", { from: "LHR", to: "JFK", date: "03/15/2026" }),
  ScriptedModel.toolCall("book_flight", { from: "LHR", to: "JFK", date: "March 15, 2026" }),
  ScriptedModel.toolCall("book_flight", { from: "LHR", to: "JFK", date: "2026-03-15" }),
  ScriptedModel.text("Booked LHR to JFK on 2026-03-15, confirmation LHR-JFK-20260315."),
  ScriptedModel.json({ extractedRules: [{ ruleType: "fact", content: RULE }] }),
  ScriptedModel.toolCall("book_flight", { from: "CDG", to: "SFO", date: "2026-04-02" }, {
    expect: (request) => request.messages.some((m) => m.role === "system" && m.content.includes(`FACT: ${RULE}`)) ? undefined : "run 2's prompt should carry the learned rule"
  }),
  ScriptedModel.text("Booked CDG to SFO on 2026-04-02, confirmation CDG-SFO-20260402."),
  ScriptedModel.json({ extractedRules: [{ ruleType: "fact", content: RULE }] })
]

/** One tool call of a run, as its log tells it. */
export interface Call {
  readonly date: string
  readonly ok: boolean
}

export interface RunSummary {
  readonly runId: string
  readonly answer: string
  readonly calls: ReadonlyArray<Call>
  /** Model steps of the agent loop, and the reflection's. */
  readonly modelSteps: number
  readonly reflectionSteps: number
  readonly inputTokens: number
  readonly outputTokens: number
  /** USD, as the kernel priced each model step. */
  readonly costUsd: number
  /** Whether its first model request carried the learned rules. */
  readonly hadRules: boolean
}

const summarize = (runId: string, answer: string, events: ReadonlyArray<Event.Event>): RunSummary => {
  const calls: Array<Call> = []
  let modelSteps = 0
  let reflectionSteps = 0
  let inputTokens = 0
  let outputTokens = 0
  let costUsd = 0
  let hadRules: boolean | undefined
  for (const e of events) {
    const p = e.payload
    if (p._tag === "ToolRequested") {
      const args: unknown = JSON.parse(p.arguments)
      calls.push({ date: typeof args === "object" && args !== null && "date" in args ? String(args.date) : "?", ok: false })
    }
    if (p._tag === "ToolCompleted" && calls.length > 0) calls[calls.length - 1] = { ...calls[calls.length - 1]!, ok: true }
    if (p._tag === "ModelRequested" && hadRules === undefined) {
      hadRules = p.messages.some((m) => m.role === "system" && m.content.includes("[PAST LEARNINGS FOR THIS TASK]"))
    }
    if (p._tag === "ModelCompleted") {
      if (e.stepKey.endsWith("_reflection")) reflectionSteps++
      else modelSteps++
      inputTokens += p.usage.inputTokens
      outputTokens += p.usage.outputTokens
      costUsd += p.costUsd
    }
  }
  return { runId, answer, calls, modelSteps, reflectionSteps, inputTokens, outputTokens, costUsd, hadRules: hadRules ?? false }
}

/** The two runs side by side, as an aligned table. */
export const table = (runs: ReadonlyArray<RunSummary>): string => {
  const rows: Array<ReadonlyArray<string>> = [["", ...runs.map((r, i) => `run ${i + 1} (${r.runId})`)]]
  const most = Math.max(...runs.map((r) => r.calls.length))
  for (let i = 0; i < most; i++) {
    rows.push([`book_flight #${i + 1}`, ...runs.map((r) => (r.calls[i] === undefined ? "" : `${r.calls[i]!.date}  ${r.calls[i]!.ok ? "ok" : "refused"}`))])
  }
  rows.push(["learned rules in prompt", ...runs.map((r) => (r.hadRules ? "yes" : "no"))])
  rows.push(["model steps", ...runs.map((r) => `${r.modelSteps} + ${r.reflectionSteps} reflection`)])
  rows.push(["tokens in / out", ...runs.map((r) => `${r.inputTokens} / ${r.outputTokens}`)])
  rows.push(["spend", ...runs.map((r) => `$${r.costUsd.toFixed(6)}`)])
  const widths = rows[0]!.map((_, c) => Math.max(...rows.map((row) => row[c]!.length)))
  return rows.map((row) => row.map((cell, c) => cell.padEnd(widths[c]!)).join("   ").trimEnd()).join("\n")
}

export interface Result {
  readonly runs: ReadonlyArray<RunSummary>
  readonly rules: ReadonlyArray<ExperienceRule.ExperienceRule>
  readonly live: boolean
}

/** Runs both runs on a fresh SQLite file (or `filename`) and prints what happened. */
export const main = async (options: { readonly log?: (line: string) => void; readonly filename?: string } = {}): Promise<Result> => {
  const log = options.log ?? ((line: string) => console.log(line))
  const dir = options.filename === undefined ? mkdtempSync(join(tmpdir(), "artana-adaptive-")) : undefined
  const filename = options.filename ?? join(dir!, "artana.db")
  const model = chooseModel(script)
  log(`model: ${model.label}`)
  log(`store: ${filename}`)

  const sqlite = SqliteStore.layer({ filename })
  const live = Layer.provideMerge(
    Kernel.layer(),
    Layer.mergeAll(sqlite, model.layer, ToolRegistry.layer([]), Middleware.layer([Pii.middleware(), CapabilityGuard.middleware()]), MemoryStore.layerMemory, SqlExperienceStore.layer().pipe(Layer.provide(sqlite)))
  )

  const program = Effect.gen(function*() {
    const experience = yield* ExperienceExtension.extension({ taskCategory: TASK, autoReflect: true })
    const agent = AutonomousAgent.make({
      name: "travel-booker",
      instructions: "You book flights with the book_flight tool, then confirm the booking in one sentence.",
      tools: [bookFlight],
      extensions: [experience],
      memory: false,
      maxTurns: 8
    })
    const events = yield* EventStore.EventStore
    const store = yield* ExperienceStore.ExperienceStore
    const runs: Array<RunSummary> = []
    for (const [runId, prompt] of [["booking-1", "Book a seat from LHR to JFK on March 15, 2026."], ["booking-2", "Book a seat from CDG to SFO on April 2, 2026."]] as const) {
      const result = yield* agent.run({ runId, tenant, prompt })
      const answer = result.status === "completed" ? result.output.output : `(${result.status})`
      runs.push(summarize(runId, answer, yield* events.readEvents(tenant.tenantId, runId)))
      log(`${runId}: ${answer}`)
      const learned = yield* store.getRules(tenant.tenantId, TASK)
      for (const rule of learned) log(`  rule ${rule.ruleType}: ${rule.content} (helped ${rule.successCount}, failed ${rule.failCount})`)
    }
    return { runs, rules: yield* store.getRules(tenant.tenantId, TASK) }
  })

  try {
    const { rules, runs } = await Effect.runPromise(Effect.provide(program, live))
    log("")
    log(table(runs))
    return { runs, rules, live: model.live }
  } finally {
    if (dir !== undefined) rmSync(dir, { recursive: true, force: true })
  }
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  await runMain(main)
}
