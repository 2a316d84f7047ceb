import { afterAll, afterEach, describe, expect, it } from "vitest"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { FakeOpenAi } from "@artana/model-openai/testing"
import { execFile } from "node:child_process"
import { fileURLToPath } from "node:url"
import { main as crash } from "../src/durable-crash.js"
import { main as quickstart } from "../src/quickstart.js"

// The examples keep their store for a look after a run; here each gets a folder of this file's, removed after.
const root = fs.mkdtempSync(path.join(os.tmpdir(), "artana-examples-test-"))
afterAll(() => fs.rmSync(root, { recursive: true, force: true }))
const store = () => path.join(fs.mkdtempSync(path.join(root, "db-")), "artana.db")

const saved = { key: process.env.OPENAI_API_KEY, url: process.env.OPENAI_BASE_URL, model: process.env.OPENAI_MODEL }
afterEach(() => {
  for (const [name, value] of [["OPENAI_API_KEY", saved.key], ["OPENAI_BASE_URL", saved.url], ["OPENAI_MODEL", saved.model]] as const) {
    if (value === undefined) delete process.env[name]
    else process.env[name] = value
  }
})

// The quick start and the durable crash run their second (and third) process with spawnSync, each one
// `node --import tsx` of the example: a minute each on a busy machine (2 cores, load 10 and more), not the default 30 s.
const CHILDREN_TIMEOUT = 240_000

describe("examples", () => {
  it("quick start: pauses in one process, resumes in another, verifies", async () => {
    delete process.env.OPENAI_API_KEY
    delete process.env.OPENAI_BASE_URL
    const lines: Array<string> = []
    const filename = store()
    const result = await quickstart({ log: (l) => lines.push(l), filename })
    expect(result.status).toBe("completed")
    expect(result.output).toContain("approved by ann@acme.example")
    expect(result.verified).toBe(true)
    // The last line is the command that inspects the run.
    expect(lines[lines.length - 1]).toBe(`  artana show-run ${result.runId} --tenant acme --db '${filename}'`)
    expect(result.events.map((e) => e.type).filter((t) => t !== "MiddlewareNote")).toEqual([
      "RunStarted", "ModelRequested", "ModelCompleted", "ToolRequested", "ToolCompleted",
      "ModelRequested", "ModelCompleted", "PauseRequested", "HumanResponded", "RunCompleted"
    ])
    // The capability the tenant lacks kept transfer_funds out of the model's view.
    const requested = result.events.find((e) => e.payload._tag === "ModelRequested")!.payload
    expect(requested._tag === "ModelRequested" && requested.tools).toEqual(["get_balance"])
    expect(lines.join("\n")).toContain("ScriptedModel (offline")
  }, CHILDREN_TIMEOUT)

  it("quick start through the real openai SDK against a local OpenAI-compatible server: governed and typed", async () => {
    const server = await FakeOpenAi.start([
      FakeOpenAi.toolCall("get_balance", { accountId: "acc-1" }, { usage: { promptTokens: 180, completionTokens: 20 } }),
      FakeOpenAi.json({ approved: false, reason: "acc-1 holds $1200, less than $5000" }, { usage: { promptTokens: 240, completionTokens: 30 } })
    ])
    try {
      delete process.env.OPENAI_API_KEY
      process.env.OPENAI_BASE_URL = server.url
      process.env.OPENAI_MODEL = "gpt-4o-mini"
      const lines: Array<string> = []
      const result = await quickstart({ log: (l) => lines.push(l), filename: store() })
      expect(result.status).toBe("completed")
      expect(result.output).toContain("approved by ann@acme.example")
      expect(lines.join("\n")).toContain("gpt-4o-mini via the openai SDK")
      // Two model calls reached the server over HTTP; the transfer tool (finance:write) was never offered.
      expect(server.requests).toHaveLength(2)
      const body = JSON.stringify(server.requests[0]!.body)
      expect(body).toContain("get_balance")
      expect(body).not.toContain("transfer_funds")
      // PII never left the process: the server saw placeholders, and so does the log.
      expect(body).not.toContain("jane.doe@example.com")
      expect(body).toContain("<EMAIL_1>")
      expect(body).toContain("<PHONE_1>")
      expect(JSON.stringify(server.requests[1]!.body)).toContain("json_schema")
      const notes = result.events.flatMap((e) => (e.payload._tag === "MiddlewareNote" ? [`${e.payload.middleware}:${e.payload.note}`] : []))
      expect(notes).toContain("pii:scrubbed")
      const completed = result.events.flatMap((e) => (e.payload._tag === "ModelCompleted" ? [e.payload.costUsd] : []))
      expect(completed[0]).toBeCloseTo((180 * 0.15 + 20 * 0.6) / 1_000_000, 12)
    } finally {
      await server.close()
    }
  }, CHILDREN_TIMEOUT)

  it("quick start when the model approves (a real model may): the run completes with no human, no error; it ends with the show-run command", async () => {
    const server = await FakeOpenAi.start([
      FakeOpenAi.toolCall("get_balance", { accountId: "acc-1" }),
      FakeOpenAi.json({ approved: true, reason: "a one-off transfer the customer asked for" })
    ])
    try {
      delete process.env.OPENAI_API_KEY
      process.env.OPENAI_BASE_URL = server.url
      const lines: Array<string> = []
      const filename = store()
      const result = await quickstart({ log: (l) => lines.push(l), filename })
      expect(result.status).toBe("completed")
      expect(result.output).toBe("transfer of $5000 from acc-1 to acc-2 approved by the model")
      expect(result.verified).toBe(true)
      expect(result.events.map((e) => e.type)).not.toContain("PauseRequested")
      expect(result.inspect).toBe(`artana show-run ${result.runId} --tenant acme --db '${filename}'`)
      expect(lines[lines.length - 1]).toBe(`  ${result.inspect}`)
    } finally {
      await server.close()
    }
  })

  it("an example that fails prints the typed error's message, not a stack (the stack with DEBUG), and exits 1", async () => {
    const server = await FakeOpenAi.start([
      FakeOpenAi.error(401, { message: "Incorrect API key provided: sk-bad" }),
      FakeOpenAi.error(401, { message: "Incorrect API key provided: sk-bad" })
    ])
    const run = (env: Record<string, string>) =>
      new Promise<{ code: number | null; stderr: string }>((resolve) => {
        execFile(
          process.execPath,
          ["--import", "tsx", "src/quickstart.ts"],
          { cwd: fileURLToPath(new URL("..", import.meta.url)), env: { ...process.env, TMPDIR: root, OPENAI_BASE_URL: server.url, OPENAI_API_KEY: "sk-bad", DEBUG: "", ...env }, timeout: 120_000 },
          (error, _stdout, stderr) => resolve({ code: error === null ? 0 : typeof error.code === "number" ? error.code : null, stderr })
        )
      })
    try {
      const plain = await run({})
      expect(plain.code).toBe(1)
      expect(plain.stderr).toMatch(/^error: ModelError: model call failed \(authentication\): .* rejected the API key \(401 Incorrect API key provided: sk-bad\); check OPENAI_API_KEY/)
      expect(plain.stderr).not.toMatch(/^\s+at /m)
      expect(plain.stderr.trim().split("\n")).toHaveLength(2)
      const debug = await run({ DEBUG: "1" })
      expect(debug.code).toBe(1)
      expect(debug.stderr).toMatch(/^\s+at /m)
    } finally {
      await server.close()
    }
  }, 240_000)

  it("durable crash: a SIGKILLed run resumes in a new process and each side effect happens once", async () => {
    const { lines, outcome } = await crash({ log: () => {}, dir: fs.mkdtempSync(path.join(root, "crash-")) })
    expect(outcome.result.status).toBe("completed")
    expect(outcome.verified).toBe(true)
    expect(lines).toHaveLength(3)
    expect(new Set(lines).size).toBe(3)
    expect(lines[1]).toMatch(/^churn: 2\.1% \[nightly-report-1\/tool:2\]$/)
  }, CHILDREN_TIMEOUT)
})
