// The 07 example: offline on the scripted model, and through the real openai SDK against a local server.
import { afterEach, describe, expect, it } from "vitest"
import { FakeOpenAi } from "@artana/model-openai/testing"
import { main } from "../src/07-adaptive-agent-learning.js"

const saved = { key: process.env.OPENAI_API_KEY, url: process.env.OPENAI_BASE_URL, model: process.env.OPENAI_MODEL }
afterEach(() => {
  for (const [name, value] of [["OPENAI_API_KEY", saved.key], ["OPENAI_BASE_URL", saved.url], ["OPENAI_MODEL", saved.model]] as const) {
    if (value === undefined) delete process.env[name]
    else process.env[name] = value
  }
})

const RULE = "book_flight only accepts dates as YYYY-MM-DD (ISO 8601); convert the date before the first call"

describe("07-adaptive-agent-learning", () => {
  it("run 1 is refused twice and learns the rule; run 2 has it in its prompt and books on the first call", async () => {
    delete process.env.OPENAI_API_KEY
    delete process.env.OPENAI_BASE_URL
    const lines: Array<string> = []
    const result = await main({ log: (l) => lines.push(l) })
    expect(result.live).toBe(false)
    const [first, second] = result.runs
    expect(first!.calls).toEqual([{ date: "03/15/2026", ok: false }, { date: "March 15, 2026", ok: false }, { date: "2026-03-15", ok: true }])
    expect(second!.calls).toEqual([{ date: "2026-04-02", ok: true }])
    expect([first!.hadRules, second!.hadRules]).toEqual([false, true])
    expect([first!.reflectionSteps, second!.reflectionSteps]).toEqual([1, 1])
    expect(second!.inputTokens).toBeLessThan(first!.inputTokens)
    // Learned in run 1; in run 2 it helped (counted once) and was said again (once more).
    expect(result.rules).toMatchObject([{ ruleType: "fact", content: RULE, successCount: 2, failCount: 0 }])
    const output = lines.join("\n")
    expect(output).toContain("ScriptedModel (offline")
    expect(output).toMatch(/book_flight #1\s+03\/15\/2026 {2}refused\s+2026-04-02 {2}ok/)
    expect(output).toMatch(/learned rules in prompt\s+no\s+yes/)
  })

  it("through the real openai SDK: the rule learned in run 1 reaches the server in run 2's request", async () => {
    const server = await FakeOpenAi.start([
      FakeOpenAi.toolCall("book_flight", { from: "LHR", to: "JFK", date: "03/15/2026" }, { usage: { promptTokens: 200, completionTokens: 20 } }),
      FakeOpenAi.toolCall("book_flight", { from: "LHR", to: "JFK", date: "March 15, 2026" }, { usage: { promptTokens: 240, completionTokens: 20 } }),
      FakeOpenAi.toolCall("book_flight", { from: "LHR", to: "JFK", date: "2026-03-15" }, { usage: { promptTokens: 280, completionTokens: 20 } }),
      FakeOpenAi.text("Booked LHR to JFK on 2026-03-15.", { usage: { promptTokens: 320, completionTokens: 15 } }),
      FakeOpenAi.json({ extractedRules: [{ ruleType: "fact", content: RULE }] }, { usage: { promptTokens: 400, completionTokens: 40 } }),
      FakeOpenAi.toolCall("book_flight", { from: "CDG", to: "SFO", date: "2026-04-02" }, { usage: { promptTokens: 230, completionTokens: 20 } }),
      FakeOpenAi.text("Booked CDG to SFO on 2026-04-02.", { usage: { promptTokens: 270, completionTokens: 15 } }),
      FakeOpenAi.json({ extractedRules: [] }, { usage: { promptTokens: 300, completionTokens: 10 } })
    ])
    try {
      delete process.env.OPENAI_API_KEY
      process.env.OPENAI_BASE_URL = server.url
      process.env.OPENAI_MODEL = "gpt-4o-mini"
      const result = await main({ log: () => {} })
      expect(result.live).toBe(true)
      expect(server.requests).toHaveLength(8)
      expect(JSON.stringify(server.requests[0]!.body)).not.toContain("PAST LEARNINGS")
      expect(JSON.stringify(server.requests[5]!.body)).toContain(`[PAST LEARNINGS FOR THIS TASK]\\nFACT: ${RULE}`)
      // The reflection asks for the ReflectionResult JSON Schema and offers no tools.
      const reflection = server.requests[4]!.body as { readonly tools?: unknown; readonly response_format?: unknown }
      expect(reflection.tools).toBeUndefined()
      expect(JSON.stringify(reflection.response_format)).toContain("extractedRules")
      expect(result.runs.map((r) => r.inputTokens)).toEqual([200 + 240 + 280 + 320 + 400, 230 + 270 + 300])
      // Priced by the kernel from the server's usage at gpt-4o-mini's price, with no middleware named.
      expect(result.runs[1]!.costUsd).toBeCloseTo(((230 + 270 + 300) * 0.15 + (20 + 15 + 10) * 0.6) / 1_000_000, 12)
      expect(result.rules).toMatchObject([{ content: RULE, successCount: 1 }])
    } finally {
      await server.close()
    }
  })
})
