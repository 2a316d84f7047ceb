// Compaction: the oldest messages folded into one `Past Events Summary` system message by a model step of its own
// key; tool calls never separated from their results; the prompt kept under the token bound; replay exact.
import { describe, expect, it } from "@effect/vitest"
import { Effect, Either, Schema } from "effect"
import { Chat, ModelPort, Tool } from "@artana/core"
import { ScriptedModel } from "@artana/core/testing"
import { AutonomousAgent, CompactionStrategy } from "@artana/agent"
import { agentLayer, isSummaryRequest, makeResponder, makeTools, scripted, stepsOf, tenant } from "./fixtures.js"

const summaryReply = (text: string): ScriptedModel.Reply =>
  ScriptedModel.text(text, { expect: (r) => (r.model === "cheap" && r.tools.length === 0 ? undefined : `expected a summary request, got model ${r.model}`) })

const sales = (quarter: string) => ScriptedModel.toolCall("query_sales", { region: "EMEA", quarter })

/** The prompt of a request as the agent counts it: its messages and its tools' specs. */
const promptTokens = (request: ModelPort.ModelRequest) =>
  ModelPort.approximateTokens([...request.messages, Chat.system(JSON.stringify(request.tools))])

describe("CompactionStrategy", () => {
  it.effect("past the message trigger, the oldest groups become one Past Events Summary, by a model step keyed compaction:<n>", () => {
    const { effects, querySales } = makeTools()
    const analyst = AutonomousAgent.make({
      name: "analyst",
      instructions: "You analyse sales.",
      tools: [querySales],
      memory: false,
      compaction: CompactionStrategy.make({ triggerAtMessages: 4, keepRecentMessages: 2, summarizeWithModel: "cheap" })
    })
    return Effect.gen(function*() {
      const result = yield* analyst.run({ runId: "c-1", tenant, prompt: "Sales of EMEA over 2024." })
      expect(result).toMatchObject({ status: "completed", output: { output: "done", turns: 5, compactions: 1 } })
      const requests = (yield* ScriptedModel.ScriptedModel).requests()
      const summary = requests[3]!
      expect(summary).toMatchObject({ model: "cheap", tools: [], maxOutputTokens: 800 })
      const asked = summary.messages[1]!.content ?? ""
      expect(asked).toContain("The agent's task:\nSales of EMEA over 2024.")
      expect(asked).toContain("Summary so far:\n(none yet)")
      expect(asked).toContain('assistant: call query_sales({"region":"EMEA","quarter":"Q1"})')
      expect(asked).toContain('tool query_sales result: {"region":"EMEA","quarter":"Q2","revenue":1200000}')
      expect(asked).not.toContain("Q3")
      // The next step: the task, the summary in place of the four oldest messages, the last tool call with its result.
      expect(requests[4]!.messages.slice(1).map((m) => m.role === "system" ? m.content : m.role)).toEqual([
        "user", "Past Events Summary:\nQ1 and Q2 were 1.2M each.", "assistant", "tool"
      ])
      expect(effects.lines).toHaveLength(4)
      const steps = yield* stepsOf("c-1")
      expect(steps.filter((s) => s.startsWith("ModelRequested"))).toEqual([
        "ModelRequested@turn:0", "ModelRequested@turn:1", "ModelRequested@turn:2", "ModelRequested@compaction:0",
        "ModelRequested@turn:3", "ModelRequested@turn:4"
      ])
      // Replay reproduces the compaction: same summary request, from the log.
      expect(yield* analyst.replay({ tenantId: tenant.tenantId, runId: "c-1" })).toEqual(result)
    }).pipe(Effect.provide(agentLayer(scripted([
      sales("Q1"), sales("Q2"), sales("Q3"),
      summaryReply("Q1 and Q2 were 1.2M each."),
      sales("Q4"),
      ScriptedModel.text("done")
    ]), { tools: [] })))
  })

  it("cut points never separate a tool call from its results", () => {
    const call = (id: string) => ({ id, name: "t", arguments: "{}" })
    const history: ReadonlyArray<Chat.ChatMessage> = [
      Chat.assistant(null, [call("a"), call("b")]),
      { role: "tool", toolCallId: "a", name: "t", content: "1" },
      { role: "tool", toolCallId: "b", name: "t", content: "2" },
      Chat.user("Your answer did not match"),
      Chat.assistant(null, [call("c")]),
      { role: "tool", toolCallId: "c", name: "t", content: "3" }
    ]
    expect(CompactionStrategy.boundaries(history)).toEqual([0, 3, 4, 6])
    expect([0, 1, 2, 3, 4, 5, 6].map((keep) => CompactionStrategy.cutIndex(history, keep))).toEqual([6, 4, 4, 3, 0, 0, 0])
  })

  it("refuses strategies that cannot work", () => {
    expect(() => CompactionStrategy.make({ summarizeWithModel: "m", keepRecentMessages: 4 })).toThrow(/give triggerAtMessages/)
    expect(() => CompactionStrategy.make({ triggerAtMessages: 4, summarizeWithModel: "m", keepRecentMessages: 4 })).toThrow(/must be more than/)
    expect(() => CompactionStrategy.make({ triggerAtTokenRatio: 1.5, summarizeWithModel: "m", keepRecentMessages: 4 })).toThrow(/\(0, 1\]/)
    expect(CompactionStrategy.make({ triggerAtTokenRatio: 0.5, contextWindow: 3000, summarizeWithModel: "m", keepRecentMessages: 4 }).boundTokens).toBe(1500)
  })

  it.effect("a token bound: every prompt stays under it (keeping fewer messages when needed); summaries fold into the next", () => {
    // Tool results of ~1,000 characters: a few fill the bound.
    const big = Tool.make({
      name: "query_detail",
      description: "Detailed sales notes of a quarter.",
      parameters: Schema.Struct({ region: Schema.String, quarter: Schema.String }),
      idempotent: true,
      handler: ({ quarter }) => Effect.succeed({ quarter, notes: "x".repeat(1000) })
    })
    const model = makeResponder((request, n) => {
      if (isSummaryRequest(request)) return { content: `summary ${n}: ${"s".repeat(300)}` }
      const turn = request.messages.filter((m) => m.role === "assistant").length
      return n >= 40 ? { content: "done" } : { toolCalls: [{ name: "query_detail", arguments: { region: "EMEA", quarter: `Q${turn}` } }] }
    })
    const strategy = CompactionStrategy.make({ triggerAtTokenRatio: 0.5, contextWindow: 3000, summarizeWithModel: "cheap", keepRecentMessages: 6 })
    const analyst = AutonomousAgent.make({ name: "analyst", instructions: "You analyse sales.", tools: [big], memory: false, compaction: strategy, maxTurns: 100 })
    return Effect.gen(function*() {
      const result = yield* analyst.run({ runId: "c-2", tenant, prompt: "Detail every quarter." })
      expect(result.status).toBe("completed")
      const loopRequests = model.requests.filter((r) => !isSummaryRequest(r))
      const summaries = model.requests.filter(isSummaryRequest)
      expect(summaries.length).toBeGreaterThan(5)
      const largest = Math.max(...loopRequests.map(promptTokens))
      expect(largest).toBeLessThanOrEqual(strategy.boundTokens!)
      // Without compaction the prompt would have grown far past the bound.
      expect(loopRequests.at(-1)!.messages.length).toBeLessThan(12)
      // Each summary folds the previous one in.
      expect(summaries[1]!.messages[1]!.content).toMatch(/Summary so far:\nsummary \d+: s{300}/)
      expect(yield* analyst.replay({ tenantId: tenant.tenantId, runId: "c-2" })).toEqual(result)
    }).pipe(Effect.provide(agentLayer(model.layer)))
  })

  it.effect("a prompt that cannot fit even with everything folded fails with ContextOverflow", () => {
    const model = makeResponder(() => ({ content: "summary" }))
    const analyst = AutonomousAgent.make({
      name: "analyst",
      instructions: "y".repeat(8000),
      memory: false,
      compaction: CompactionStrategy.make({ triggerAtTokenRatio: 0.5, contextWindow: 3000, summarizeWithModel: "cheap", keepRecentMessages: 2 })
    })
    return Effect.gen(function*() {
      const result = yield* Effect.either(analyst.run({ runId: "c-3", tenant, prompt: "x" }))
      expect(Either.isLeft(result) && result.left).toMatchObject({ _tag: "ContextOverflow", boundTokens: 1500 })
      expect(model.requests).toHaveLength(0)
    }).pipe(Effect.provide(agentLayer(model.layer)))
  })
})
