// The analyst agent example: offline on the scripted model, and through the real openai SDK against a local
// OpenAI-compatible server playing the same conversation.
import { afterAll, afterEach, describe, expect, it } from "vitest"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { Effect, Layer } from "effect"
import { MemoryStore, SqlMemoryStore } from "@artana/agent"
import { SqliteStore } from "@artana/store-sqlite"
import { FakeOpenAi } from "@artana/model-openai/testing"
import { conversation, filedReports, main } from "../src/analyst.js"

// The example keeps its store for a look after a run; here each run gets a folder of this file's, removed after.
const root = fs.mkdtempSync(path.join(os.tmpdir(), "artana-analyst-test-"))
afterAll(() => fs.rmSync(root, { recursive: true, force: true }))
const store = () => path.join(fs.mkdtempSync(path.join(root, "db-")), "artana.db")

const saved = { key: process.env.OPENAI_API_KEY, url: process.env.OPENAI_BASE_URL, model: process.env.OPENAI_MODEL }
afterEach(() => {
  for (const [name, value] of [["OPENAI_API_KEY", saved.key], ["OPENAI_BASE_URL", saved.url], ["OPENAI_MODEL", saved.model]] as const) {
    if (value === undefined) delete process.env[name]
    else process.env[name] = value
  }
})

const steps = (events: Awaited<ReturnType<typeof main>>["events"]) =>
  events.filter((e) => e.type === "ModelRequested" || e.type === "ToolRequested").map((e) => `${e.type === "ModelRequested" ? "model" : "tool"}@${e.stepKey}`)

describe("analyst example", () => {
  it("offline: memory saved, skills loaded on demand, one compaction, a typed report filed and verified", async () => {
    delete process.env.OPENAI_API_KEY
    delete process.env.OPENAI_BASE_URL
    const lines: Array<string> = []
    const filed = filedReports.length
    const result = await main({ log: (l) => lines.push(l), filename: store() })
    expect(result.status).toBe("completed")
    expect(result.report).toMatchObject({ emeaGrowthPct: 26.9, apacGrowthPct: 5.3 })
    expect(result.turns).toBe(9)
    expect(result.compactions).toBe(1)
    expect(result.memory).toEqual(["The user wants amounts in EUR millions with one decimal."])
    expect(result.verified).toBe(true)
    expect(filedReports.length).toBe(filed + 1)
    expect(steps(result.events)).toEqual([
      "model@turn:0", "tool@turn:0/tool:0",
      "model@turn:1", "tool@turn:1/tool:0", "tool@turn:1/tool:1",
      "model@turn:2", "tool@turn:2/tool:0",
      "model@turn:3", "tool@turn:3/tool:0",
      "model@turn:4", "tool@turn:4/tool:0",
      "model@compaction:0",
      "model@turn:5", "tool@turn:5/tool:0",
      "model@turn:6", "tool@turn:6/tool:0",
      "model@turn:7", "tool@turn:7/tool:0",
      "model@turn:8"
    ])
    // The memory is in the SQLite file, next to the log: a new connection reads it.
    const reopened = await Effect.runPromise(
      Effect.flatMap(MemoryStore.MemoryStore, (m) => m.list({ tenantId: "acme", agentId: "analyst" })).pipe(
        Effect.provide(Layer.orDie(SqlMemoryStore.layer().pipe(Layer.provide(SqliteStore.layerClient({ filename: result.filename })))))
      )
    )
    expect(reopened.map((e) => e.content)).toEqual(result.memory)
    expect(lines.join("\n")).toContain("ScriptedModel (offline")
  })

  it("through the real openai SDK against a local OpenAI-compatible server", async () => {
    const server = await FakeOpenAi.start(conversation.map((t) => ("text" in t ? FakeOpenAi.text(t.text) : FakeOpenAi.toolCalls(t.calls))))
    try {
      delete process.env.OPENAI_API_KEY
      process.env.OPENAI_BASE_URL = server.url
      process.env.OPENAI_MODEL = "gpt-4o-mini"
      const lines: Array<string> = []
      const result = await main({ log: (l) => lines.push(l), filename: store() })
      expect(result.status).toBe("completed")
      expect(result.report?.recommendation).toBe("Shift sales capacity towards EMEA in 2025.")
      expect(lines.join("\n")).toContain("gpt-4o-mini via the openai SDK")
      // The kernel priced every call from the server's usage (no middleware named): the run's spend is not $0.
      expect(lines.join("\n")).toMatch(/completed: \d+ turns, \d+ compaction\(s\), \$0\.\d*[1-9]/)
      expect(server.requests).toHaveLength(conversation.length)
      type Body = { readonly model: string; readonly tools?: ReadonlyArray<{ readonly function: { readonly name: string } }>; readonly messages: ReadonlyArray<{ readonly content?: string | null }> }
      const bodies = server.requests.map((r) => r.body as Body)
      // Progressive skills: the first request offers only the agent's own tools; the skills are listed by name.
      expect(bodies[0]!.tools?.map((t) => t.function.name)).toEqual(["core_memory_append", "core_memory_replace", "core_memory_search", "load_skill"])
      expect(bodies[0]!.messages[0]!.content).toContain("- query_revenue: Quarterly revenue of a region for a year, in EUR.")
      expect(bodies[2]!.tools?.map((t) => t.function.name)).toContain("query_revenue")
      // The summary was asked of the cheap model, with no tools.
      expect(bodies[5]!.tools).toBeUndefined()
      expect(bodies[6]!.messages.map((m) => m.content ?? "").join("\n")).toContain("Past Events Summary:")
    } finally {
      await server.close()
    }
  })
})
