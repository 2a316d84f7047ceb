// A long agent run continues as new on its own after a compaction, once its log passes `continueAsNewAfterEvents`:
// it ends up a chain of bounded runs, carrying its compacted context, memory and skills, and the answer is right.
import { describe, expect, it } from "@effect/vitest"
import { Effect, Schema } from "effect"
import { Event, EventStore, ModelPort } from "@artana/core"
import { AutonomousAgent, CompactionStrategy, MemoryStore, Skills } from "@artana/agent"
import { agentLayer, eventsOf, isSummaryRequest, makeResponder, makeTools, systemOf, tenant } from "./fixtures.js"

const QUARTERS = 10
const AFTER = 20

/** Turn 0 remembers a fact, turn 1 loads the sales skill, then one query a turn, then the answer. */
const analystModel = () => {
  let turns = 0
  let summaries = 0
  return makeResponder((request) => {
    if (isSummaryRequest(request)) return { content: `summary ${++summaries}: quarters so far are 1.2M each` }
    const turn = turns++
    if (turn === 0) return { toolCalls: [{ name: "core_memory_append", arguments: { content: "The fiscal year starts in April." } }] }
    if (turn === 1) return { toolCalls: [{ name: Skills.LOAD_SKILL, arguments: { name: "query_sales" } }] }
    if (turn < 2 + QUARTERS) return { toolCalls: [{ name: "query_sales", arguments: { region: "EMEA", quarter: `Q${turn - 1}` } }] }
    return { content: `${QUARTERS} quarters, 12M in all` }
  })
}

describe("AutonomousAgent continues as new", () => {
  it.effect("a long run becomes a chain of bounded runs; each successor starts from the compacted context, memory and skills", () => {
    const { effects, querySales } = makeTools()
    const model = analystModel()
    const analyst = AutonomousAgent.make({
      name: "analyst",
      instructions: "You analyse sales.",
      tools: [Skills.make(querySales, { instructions: "Quarters are Q1..Q10." })],
      progressiveSkills: true,
      compaction: CompactionStrategy.make({ triggerAtMessages: 4, keepRecentMessages: 2, summarizeWithModel: "cheap" }),
      continueAsNewAfterEvents: AFTER
    })
    return Effect.gen(function*() {
      const store = yield* EventStore.EventStore
      const result = yield* analyst.run({ runId: "long", tenant, prompt: "Total EMEA sales over ten quarters." })
      expect(result).toMatchObject({ status: "completed", output: { output: `${QUARTERS} quarters, 12M in all`, turns: QUARTERS + 3 } })

      const chain = yield* store.listRuns(tenant.tenantId, { rootRunId: "long" })
      const ids = chain.map((r) => r.runId).sort((a, b) => a.length - b.length || a.localeCompare(b))
      expect(ids.length).toBeGreaterThanOrEqual(3)
      expect(ids).toEqual(ids.map((_, i) => (i === 0 ? "long" : Event.continuedRunId("long", i))))
      expect(result.runId).toBe(ids[ids.length - 1])
      for (const run of chain) expect(run.status).toBe(run.runId === result.runId ? "completed" : "continued")
      // Every tool call ran once across the chain; the fact was remembered once.
      expect(effects.count("query_sales")).toBe(QUARTERS)
      expect(yield* (yield* MemoryStore.MemoryStore).list({ tenantId: tenant.tenantId, agentId: "analyst" })).toHaveLength(1)
      // The output counts the whole chain: every compaction, every model step's usage.
      const summaries = model.requests.filter(isSummaryRequest).length
      expect(result.status === "completed" && result.output.compactions).toBe(summaries)
      const inputTokens = model.requests.reduce((sum, r) => sum + ModelPort.approximateTokens(r.messages), 0)
      expect(result.status === "completed" && result.output.usage).toMatchObject({ inputTokens, outputTokens: 10 * model.requests.length })

      for (const [i, id] of ids.entries()) {
        const events = yield* eventsOf(id)
        // Each run is bounded: it continues at the first compaction past the threshold.
        if (i < ids.length - 1) expect(events.length).toBeLessThanOrEqual(AFTER * 2)
        if (i === 0) continue
        const started = events[0]!.payload
        if (started._tag !== "RunStarted") throw new Error("a run starts with RunStarted")
        const carried = Schema.decodeUnknownSync(AutonomousAgent.Input)(started.input).carried!
        // What the predecessor handed over is its compacted context: its last summary, and only the recent messages.
        const before = yield* eventsOf(ids[i - 1]!)
        const lastSummary = before.filter((e) => e.stepKey.startsWith("compaction:") && e.payload._tag === "ModelCompleted").at(-1)!.payload
        expect(lastSummary._tag === "ModelCompleted" && carried.summary).toBe(lastSummary._tag === "ModelCompleted" ? lastSummary.message.content : "")
        expect(carried.history.length).toBeLessThanOrEqual(3)
        expect(carried.loadedSkills).toEqual(["query_sales"])
        // The successor's first model step is built from it: the summary in place of the folded history, the
        // remembered fact in its [CORE MEMORY], the loaded skill offered.
        const first = events.find((e) => e.payload._tag === "ModelRequested" && e.stepKey.startsWith("turn:"))!.payload
        if (first._tag !== "ModelRequested") throw new Error("a model step")
        expect(first.messages[2]).toEqual({ role: "system", content: `Past Events Summary:\n${carried.summary}` })
        expect(first.messages.slice(3)).toEqual(carried.history)
        expect(systemOf({ ...model.requests[0]!, messages: first.messages })).toContain("The fiscal year starts in April.")
        expect(first.tools).toContain("query_sales")
      }

      // Replaying the first run replays the chain: same result, nothing runs.
      const asked = model.requests.length
      expect(yield* analyst.replay({ tenantId: tenant.tenantId, runId: "long" })).toEqual(result)
      expect(model.requests).toHaveLength(asked)
      expect(effects.count("query_sales")).toBe(QUARTERS)
    }).pipe(Effect.provide(agentLayer(model.layer, { tools: [] })))
  })

  it.effect("continueAsNewAfterEvents: false keeps one run, however long", () => {
    const { querySales } = makeTools()
    const model = analystModel()
    const analyst = AutonomousAgent.make({
      name: "analyst",
      instructions: "You analyse sales.",
      tools: [Skills.make(querySales)],
      progressiveSkills: true,
      compaction: CompactionStrategy.make({ triggerAtMessages: 4, keepRecentMessages: 2, summarizeWithModel: "cheap" }),
      continueAsNewAfterEvents: false
    })
    return Effect.gen(function*() {
      const result = yield* analyst.run({ runId: "one", tenant, prompt: "Total EMEA sales over ten quarters." })
      expect(result).toMatchObject({ status: "completed", runId: "one", output: { turns: QUARTERS + 3 } })
      expect(yield* (yield* EventStore.EventStore).listRuns(tenant.tenantId, { rootRunId: "one" })).toHaveLength(1)
      expect(() => AutonomousAgent.make({ name: "a", instructions: "", continueAsNewAfterEvents: 0 })).toThrow(/at least 1/)
    }).pipe(Effect.provide(agentLayer(model.layer, { tools: [] })))
  })
})
