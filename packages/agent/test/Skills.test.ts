// Progressive skills: the prompt carries names and one-line summaries; load_skill returns the full schema,
// instructions and examples; the tool is offered from the next turn; a call to a tool not loaded is a clear error.
import { describe, expect, it } from "@effect/vitest"
import { Effect, Schema } from "effect"
import { Tool } from "@artana/core"
import { ScriptedModel } from "@artana/core/testing"
import { AutonomousAgent, Skills } from "@artana/agent"
import { agentLayer, eventsOf, makeTools, scripted, systemOf, tenant } from "./fixtures.js"

describe("progressive skills", () => {
  it.effect("names and summaries in the prompt; load_skill; callable from the next turn; not-loaded calls refused", () => {
    const { effects, querySales, sendReport } = makeTools()
    const sales = Skills.make(querySales, {
      instructions: "Quarters are written 2024-Q3. Amounts are EUR.",
      examples: [{ description: "EMEA in Q3", arguments: { region: "EMEA", quarter: "2024-Q3" } }]
    })
    const analyst = AutonomousAgent.make({ name: "analyst", instructions: "You analyse sales.", tools: [sales, sendReport], progressiveSkills: true, memory: false })
    return Effect.gen(function*() {
      const result = yield* analyst.run({ runId: "skills", tenant, prompt: "Report EMEA Q3." })
      expect(result).toMatchObject({ status: "completed", output: { output: "done", turns: 6 } })
      const requests = (yield* ScriptedModel.ScriptedModel).requests()
      const tools = requests.map((r) => r.tools.map((t) => t.name))
      expect(tools).toEqual([
        ["load_skill"],
        ["load_skill"],
        ["load_skill", "query_sales"],
        ["load_skill", "query_sales", "send_report"],
        ["load_skill", "query_sales", "send_report"],
        ["load_skill", "query_sales", "send_report"]
      ])
      const first = systemOf(requests[0]!)
      expect(first).toContain("[SKILLS]")
      expect(first).toContain("Loaded (in your tool list): (none yet)")
      expect(first).toContain("- query_sales: Sales of a region in a quarter, in EUR.")
      expect(first).toContain("- send_report: Sends the report by email (not idempotent: each call sends one email).")
      // No schema, no instructions before loading.
      expect(JSON.stringify(requests[0]!)).not.toContain("2024-Q3")
      // Loaded skills are named; the list describes only the others (here: none left).
      expect(systemOf(requests[3]!)).toContain("Loaded (in your tool list): query_sales, send_report")
      expect(systemOf(requests[3]!)).not.toContain("- query_sales:")
      expect(systemOf(requests[2]!)).toContain("- send_report:")

      const answers = requests.slice(1).map((r) => r.messages.filter((m) => m.role === "tool").at(-1)?.content ?? "")
      // Turn 0: query_sales before loading it: refused with what to do; the handler never ran.
      expect(JSON.parse(answers[0]!)).toEqual({
        error: "SkillNotLoaded",
        message: "\"query_sales\" is a skill that is not loaded yet: call load_skill with {\"name\": \"query_sales\"} first; its tool can be called from the next turn on"
      })
      // Turn 1: load_skill returns (and logs) the full schema, the instructions and the examples.
      const loadedResult = (yield* eventsOf("skills")).find((e) => e.stepKey === "turn:1/tool:0" && e.payload._tag === "ToolCompleted")!.payload
      expect(loadedResult._tag === "ToolCompleted" && loadedResult.result).toEqual({
        name: "query_sales",
        description: querySales.description,
        parameters: querySales.spec.parameters,
        instructions: "Quarters are written 2024-Q3. Amounts are EUR.",
        examples: [{ description: "EMEA in Q3", arguments: { region: "EMEA", quarter: "2024-Q3" } }],
        note: "\"query_sales\" is loaded: call it from your next turn on."
      })
      // The next request offers the tool with that schema and shows its instructions and examples in the skills
      // list; the history keeps only that it was loaded (paying for the rest twice on every turn would undo the point).
      expect(requests[2]!.tools.find((t) => t.name === "query_sales")).toEqual(querySales.spec)
      expect(systemOf(requests[2]!)).toContain(
        "How to use query_sales: Quarters are written 2024-Q3. Amounts are EUR.\n  Example (EMEA in Q3): {\"region\":\"EMEA\",\"quarter\":\"2024-Q3\"}"
      )
      expect(JSON.parse(answers[1]!)).toEqual({ loaded: "query_sales" })
      // Turn 2: load_skill and send_report in one message: the second is not callable yet.
      const turn2 = requests[3]!.messages.filter((m) => m.role === "tool").slice(-2).map((m) => JSON.parse(m.content ?? ""))
      expect(turn2[0]).toEqual({ loaded: "send_report" })
      expect(turn2[1]).toMatchObject({ error: "SkillNotLoaded" })
      // Turn 4: an unknown skill.
      expect(JSON.parse(answers[4]!)).toEqual({ error: "ToolError", message: "tool \"load_skill\" failed: no skill named \"pivot\"; skills: query_sales, send_report" })
      expect(effects.lines).toEqual(["query_sales skills/turn:3/tool:0 EMEA/2024-Q3"])
      // The log records the refused calls as unknown tools, never run.
      const failed = (yield* eventsOf("skills")).flatMap((e) => (e.payload._tag === "ToolFailed" ? [`${e.stepKey} ${e.payload.kind}`] : []))
      expect(failed).toEqual(["turn:0/tool:0 unknown_tool", "turn:2/tool:1 unknown_tool", "turn:4/tool:0 tool_error"])
      expect(yield* analyst.replay({ tenantId: tenant.tenantId, runId: "skills" })).toEqual(result)
    }).pipe(Effect.provide(agentLayer(scripted([
      ScriptedModel.toolCall("query_sales", { region: "EMEA", quarter: "2024-Q3" }),
      ScriptedModel.toolCall("load_skill", { name: "query_sales" }),
      { content: null, toolCalls: [{ name: "load_skill", arguments: { name: "send_report" } }, { name: "send_report", arguments: { to: "cfo", body: "x" } }] },
      ScriptedModel.toolCall("query_sales", { region: "EMEA", quarter: "2024-Q3" }),
      ScriptedModel.toolCall("load_skill", { name: "pivot" }),
      ScriptedModel.text("done")
    ]))))
  })

  it.effect("maxLoaded: loading one more unloads the least recently used (loaded or called); the model is told; replay agrees", () => {
    const { effects, querySales, sendReport } = makeTools()
    const fx = Tool.make({
      name: "lookup_fx",
      description: "Exchange rate between two currencies.",
      parameters: Schema.Struct({ from: Schema.String, to: Schema.String }),
      idempotent: true,
      handler: ({ from, to }) => Effect.sync(() => {
        effects.lines.push(`lookup_fx ${from}/${to}`)
        return 1.08
      })
    })
    const analyst = AutonomousAgent.make({
      name: "analyst",
      instructions: "You analyse sales.",
      tools: [querySales, sendReport, fx],
      progressiveSkills: { maxLoaded: 2 },
      memory: false
    })
    return Effect.gen(function*() {
      const result = yield* analyst.run({ runId: "lru", tenant, prompt: "Report EMEA Q3 in USD." })
      expect(result).toMatchObject({ status: "completed", output: { output: "done", turns: 8 } })
      const requests = (yield* ScriptedModel.ScriptedModel).requests()
      expect(requests.map((r) => r.tools.map((t) => t.name))).toEqual([
        ["load_skill"],
        ["load_skill", "query_sales"],
        ["load_skill", "query_sales", "lookup_fx"],
        // query_sales was called on turn 2, so lookup_fx is the least recently used when send_report is loaded.
        ["load_skill", "query_sales", "lookup_fx"],
        ["load_skill", "query_sales", "send_report"],
        ["load_skill", "query_sales", "send_report"],
        // Loading lookup_fx again unloads query_sales, now the least recently used.
        ["load_skill", "send_report", "lookup_fx"],
        ["load_skill", "send_report", "lookup_fx"]
      ])
      expect(systemOf(requests[4]!)).toContain("Loaded (in your tool list): query_sales, send_report")
      expect(systemOf(requests[4]!)).toContain("- lookup_fx: Exchange rate between two currencies.")
      const answer = requests[5]!.messages.filter((m) => m.role === "tool").at(-1)?.content ?? ""
      expect(JSON.parse(answer)).toEqual({
        error: "SkillNotLoaded",
        message: "\"lookup_fx\" was unloaded to make room for other skills (at most 2 are loaded at once): call load_skill with {\"name\": \"lookup_fx\"} again; its tool can be called from the next turn on"
      })
      expect(effects.lines).toEqual(["query_sales lru/turn:2/tool:0 EMEA/2024-Q3", "lookup_fx EUR/USD"])
      expect(yield* analyst.replay({ tenantId: tenant.tenantId, runId: "lru" })).toEqual(result)
      expect(() => AutonomousAgent.make({ name: "a", instructions: "", progressiveSkills: { maxLoaded: 0 } })).toThrow(
        "progressiveSkills.maxLoaded must be a whole number of at least 1 (or Infinity), not 0"
      )
    }).pipe(Effect.provide(agentLayer(scripted([
      ScriptedModel.toolCall("load_skill", { name: "query_sales" }),
      ScriptedModel.toolCall("load_skill", { name: "lookup_fx" }),
      ScriptedModel.toolCall("query_sales", { region: "EMEA", quarter: "2024-Q3" }),
      ScriptedModel.toolCall("load_skill", { name: "send_report" }),
      ScriptedModel.toolCall("lookup_fx", { from: "EUR", to: "USD" }),
      ScriptedModel.toolCall("load_skill", { name: "lookup_fx" }),
      ScriptedModel.toolCall("lookup_fx", { from: "EUR", to: "USD" }),
      ScriptedModel.text("done")
    ]))))
  })

  it.effect("by default the working set starts at Skills.WORKING_SET and grows when the model loads an unloaded skill again", () => {
    const calls: Array<string> = []
    const tools = Array.from({ length: 8 }, (_, i) =>
      Tool.make({
        name: `t${i + 1}`,
        description: `Tool number ${i + 1}.`,
        parameters: Schema.Struct({}),
        idempotent: true,
        handler: () => Effect.sync(() => calls.push(`t${i + 1}`))
      }))
    const t1 = Skills.make(tools[0]!, { instructions: "Call t1 once per task." })
    const agent = AutonomousAgent.make({ name: "worker", instructions: "You work.", tools: [t1, ...tools.slice(1)], progressiveSkills: true, memory: false })
    const loads = (...names: ReadonlyArray<string>) => ({ content: null, toolCalls: names.map((name) => ({ name: "load_skill", arguments: { name } })) })
    return Effect.gen(function*() {
      expect(Skills.WORKING_SET).toBe(5)
      const result = yield* agent.run({ runId: "working-set", tenant, prompt: "Work." })
      expect(result).toMatchObject({ status: "completed", output: { output: "done", turns: 9 } })
      const requests = (yield* ScriptedModel.ScriptedModel).requests()
      const skills = (n: number) => requests[n]!.tools.map((t) => t.name).filter((name) => name !== "load_skill")
      expect(skills(1)).toEqual(["t1", "t2", "t3", "t4", "t5"])
      // A sixth skill: t1, the least recently used, is unloaded; calling it is refused with what to do.
      expect(skills(2)).toEqual(["t2", "t3", "t4", "t5", "t6"])
      // A skill's instructions are shown while it is loaded, and go with it.
      expect(systemOf(requests[1]!)).toContain("How to use t1: Call t1 once per task.")
      expect(systemOf(requests[2]!)).not.toContain("How to use t1")
      expect(JSON.parse(requests[3]!.messages.at(-1)!.content ?? "")).toMatchObject({ error: "SkillNotLoaded", message: expect.stringContaining("at most 5 are loaded at once") })
      // Loading t1 again: the work needs six at once, the set grows to six and nothing is unloaded.
      expect(skills(4)).toEqual(["t1", "t2", "t3", "t4", "t5", "t6"])
      expect(systemOf(requests[4]!)).toContain("How to use t1: Call t1 once per task.")
      // Two more at six: t2 and t3, the least recently used, are unloaded.
      expect(skills(6)).toEqual(["t1", "t4", "t5", "t6", "t7", "t8"])
      // One answer loading seven skills: the set grows to hold them all.
      expect(skills(7)).toEqual(["t1", "t3", "t4", "t5", "t6", "t7", "t8"])
      expect(calls).toEqual(["t1", "t8"])
      expect(yield* agent.replay({ tenantId: tenant.tenantId, runId: "working-set" })).toEqual(result)
    }).pipe(Effect.provide(agentLayer(scripted([
      loads("t1", "t2", "t3", "t4", "t5"),
      loads("t6"),
      ScriptedModel.toolCall("t1", {}),
      loads("t1"),
      ScriptedModel.toolCall("t1", {}),
      loads("t7", "t8"),
      loads("t3", "t4", "t5", "t6", "t1", "t7", "t8"),
      ScriptedModel.toolCall("t8", {}),
      ScriptedModel.text("done")
    ]))))
  })

  it("summaries are the description's first sentence, at most 120 characters; examples are checked against the schema", () => {
    expect(Skills.summaryOf("Sends email. Retries twice.\nMore.")).toBe("Sends email.")
    expect(Skills.summaryOf("x".repeat(200))).toHaveLength(120)
    const { querySales } = makeTools()
    // @ts-expect-error: the example's arguments are typed as the tool's
    expect(() => Skills.make(querySales, { examples: [{ arguments: { region: 1 } }] })).toThrow(/example 1 of skill "query_sales"/)
  })
})
