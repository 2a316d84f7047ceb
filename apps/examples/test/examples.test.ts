import { describe, expect, it } from "vitest"
import { main as crash } from "../src/durable-crash.js"
import { main as quickstart } from "../src/quickstart.js"

describe("examples", () => {
  it("quick start: pauses in one process, resumes in another, verifies", async () => {
    const lines: Array<string> = []
    const result = await quickstart({ log: (l) => lines.push(l) })
    expect(result.status).toBe("completed")
    expect(result.output).toContain("approved by ann@acme.example")
    expect(result.verified).toBe(true)
    expect(result.events.map((e) => e.type)).toEqual([
      "RunStarted", "ModelRequested", "ModelCompleted", "ToolRequested", "ToolCompleted",
      "ModelRequested", "ModelCompleted", "PauseRequested", "HumanResponded", "RunCompleted"
    ])
    // The capability the tenant lacks kept transfer_funds out of the model's view.
    const requested = result.events.find((e) => e.payload._tag === "ModelRequested")!.payload
    expect(requested._tag === "ModelRequested" && requested.tools).toEqual(["get_balance"])
    expect(lines.join("\n")).toContain("ScriptedModel (offline")
  })

  it("durable crash: a SIGKILLed run resumes in a new process and each side effect happens once", async () => {
    const { lines, outcome } = await crash({ log: () => {} })
    expect(outcome.result.status).toBe("completed")
    expect(outcome.verified).toBe(true)
    expect(lines).toHaveLength(3)
    expect(new Set(lines).size).toBe(3)
    expect(lines[1]).toMatch(/^churn: 2\.1% \[nightly-report-1\/tool:2\]$/)
  })
})
