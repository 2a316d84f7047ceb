// The analyst agent reading files through the example's filesystem MCP server (a real child process on the official
// SDK): offline on the scripted model, and through the real openai SDK against a local OpenAI-compatible server.
import { afterAll, afterEach, describe, expect, it } from "vitest"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { FakeOpenAi } from "@artana/model-openai/testing"
import { conversation, main } from "../src/analyst-mcp.js"

const root = fs.mkdtempSync(path.join(os.tmpdir(), "artana-analyst-mcp-test-"))
afterAll(() => fs.rmSync(root, { recursive: true, force: true }))
const work = () => fs.mkdtempSync(path.join(root, "run-"))

const saved = { key: process.env.OPENAI_API_KEY, url: process.env.OPENAI_BASE_URL, model: process.env.OPENAI_MODEL }
afterEach(() => {
  for (const [name, value] of [["OPENAI_API_KEY", saved.key], ["OPENAI_BASE_URL", saved.url], ["OPENAI_MODEL", saved.model]] as const) {
    if (value === undefined) delete process.env[name]
    else process.env[name] = value
  }
})

describe("analyst over an MCP filesystem server", () => {
  it("offline: lists the server's tools once (logged), reads the files through it, reports; the replay needs no server", async () => {
    delete process.env.OPENAI_API_KEY
    delete process.env.OPENAI_BASE_URL
    const lines: Array<string> = []
    const result = await main({ dir: work(), log: (l) => lines.push(l) })
    expect(result.status).toBe("completed")
    expect(result.report).toEqual({
      headline: "EMEA grew 26.9% over 2024 (EUR 41.2M to 52.3M a quarter); APAC 5.3% (EUR 22.8M to 24.0M).",
      emeaGrowthPct: 26.9,
      apacGrowthPct: 5.3,
      sources: ["sales/emea-2024.csv", "sales/apac-2024.csv"]
    })
    expect(result.verified).toBe(true)
    expect(result.replayedSame).toBe(true)
    const payloads = result.events.map((e) => e.payload)
    const listed = payloads.filter((p) => p._tag === "StepCompleted" && p.name === "mcp.tools")
    expect(listed).toHaveLength(1)
    // The file's text came from the server, through the governed call.
    const reads = payloads.flatMap((p) => (p._tag === "ToolCompleted" && p.tool === "files.read_file" ? [JSON.stringify(p.result)] : []))
    expect(reads).toHaveLength(2)
    expect(reads[0]).toContain("Q4,52300000")
    const requested = payloads.find((p) => p._tag === "ModelRequested")
    expect(requested?._tag === "ModelRequested" && requested.tools).toEqual(["compute_growth", "files.list_files", "files.read_file"])
    expect(lines.join("\n")).toContain("replay without the server: the same result")
    expect(lines.join("\n")).toContain("ScriptedModel (offline")
  }, 120_000)

  it("through the real openai SDK against a local OpenAI-compatible server", async () => {
    const server = await FakeOpenAi.start(conversation.map((t) => ("text" in t ? FakeOpenAi.text(t.text) : FakeOpenAi.toolCalls(t.calls.map((c) => ({ ...c, name: c.name.replace(".", "_") }))))))
    try {
      delete process.env.OPENAI_API_KEY
      process.env.OPENAI_BASE_URL = server.url
      process.env.OPENAI_MODEL = "gpt-4o-mini"
      const result = await main({ dir: work(), log: () => {} })
      expect(result.status).toBe("completed")
      expect(result.report?.apacGrowthPct).toBe(5.3)
      expect(result.replayedSame).toBe(true)
      expect(server.requests).toHaveLength(conversation.length)
      // The MCP tools travel under names the API takes (files.read_file -> files_read_file) and come back as themselves.
      type Body = { readonly tools?: ReadonlyArray<{ readonly function: { readonly name: string } }> }
      expect((server.requests[0]!.body as Body).tools?.map((t) => t.function.name)).toEqual(["compute_growth", "files_list_files", "files_read_file"])
    } finally {
      await server.close()
    }
  }, 120_000)
})
