// MCP tools from a real server process (the SDK's stdio transport) governed by a real kernel on SQLite: discovery
// logged once per run, arguments validated before any call, results and errors logged, a server that dies mid-call
// leaving the step in doubt, a hanging one timing out, and a replay that needs no server.
import { describe, expect, it, vi } from "vitest"
import { Effect, Either } from "effect"
import { Kernel, Tenant } from "@artana/core"
import { ScriptedModel } from "@artana/core/testing"
import * as fs from "node:fs"
import * as path from "node:path"
import { callsIn } from "./fixtures/server.js"
import { agent, payloads, stdioServer, tempFolder, tenant, withKernel } from "./helpers.js"

const dir = tempFolder("stdio")
let n = 0
const fresh = () => {
  n += 1
  return { db: path.join(dir, `run-${n}.db`), calls: path.join(dir, `calls-${n}.jsonl`) }
}

const run = (setup: Parameters<typeof withKernel>[0], runId: string) =>
  withKernel(setup, Effect.gen(function*() {
    const kernel = yield* Kernel.Kernel
    const result = yield* Effect.either(kernel.execute(agent, { runId, tenant: tenant(), input: "go" }))
    const events = yield* kernel.readEvents({ tenantId: "acme", runId })
    const requests = (yield* ScriptedModel.ScriptedModel).requests()
    return { result, events: payloads(events), requests }
  }))

describe("MCP tools over stdio", () => {
  it("lists the server's tools once, logged, offers them namespaced and validated, and logs the call's result", async () => {
    const { db, calls } = fresh()
    const script = [
      ScriptedModel.toolCall("notes.read_note", { path: "todo.txt" }),
      ScriptedModel.toolCall("notes.read_note", { path: "done.txt" }),
      ScriptedModel.text("two notes read")
    ]
    const { result, events, requests } = await run({ db, config: { servers: [stdioServer(calls)] }, script }, "discover")
    expect(Either.getOrThrow(result)).toMatchObject({ status: "completed", output: { answer: "two notes read", withheld: ["notes.broken"] } })

    // What the model saw: every usable tool, named by server, with the server's description and schema (closed).
    const offered = requests[0]!.tools.map((t) => t.name)
    expect(offered).toEqual(["notes.read_note", "notes.write_note", "notes.fail", "notes.hang", "notes.die", "notes.picture"])
    expect(requests[0]!.tools[0]).toEqual({
      name: "notes.read_note",
      description: "Reads a note by its path",
      parameters: { type: "object", properties: { path: { type: "string", minLength: 1 } }, required: ["path"], additionalProperties: false }
    })

    // The list is one step of the run, logged with every decision: a schema no validator compiles is withheld.
    const steps = events.filter((p) => p._tag === "StepCompleted")
    expect(steps).toHaveLength(1)
    expect(steps[0]).toMatchObject({ name: "mcp.tools" })
    const logged = JSON.stringify(steps[0])
    expect(logged).toContain("Reads a note by its path")
    expect(logged).toMatch(/"decision":"withheld","reason":"its input schema cannot be validated/)

    expect(events.filter((p) => p._tag === "ToolCompleted")).toEqual([
      { _tag: "ToolCompleted", tool: "notes.read_note", result: { content: [{ type: "text", text: "contents of todo.txt" }] } },
      { _tag: "ToolCompleted", tool: "notes.read_note", result: { content: [{ type: "text", text: "contents of done.txt" }] } }
    ])
    expect(callsIn(calls)).toEqual([{ tool: "read_note", args: { path: "todo.txt" } }, { tool: "read_note", args: { path: "done.txt" } }])
    // One process for the run (listing and both calls), ended with the layer.
    expect(fs.readFileSync(`${calls}.starts`, "utf8").trim().split("\n")).toHaveLength(1)
  })

  it("refuses arguments the tool's schema refuses, without a call: the server never sees them", async () => {
    const { db, calls } = fresh()
    const script = [
      ScriptedModel.toolCall("notes.write_note", { path: "a.txt", text: "hi", copies: 7 }),
      ScriptedModel.toolCall("notes.write_note", { path: "a.txt", text: "hi", sudo: true }),
      ScriptedModel.toolCall("notes.write_note", { text: "hi" }),
      ScriptedModel.text("gave up")
    ]
    const { result, events } = await run({ db, config: { servers: [stdioServer(calls)] }, script }, "invalid")
    expect(Either.getOrThrow(result)).toMatchObject({ status: "completed" })
    const failed = events.filter((p) => p._tag === "ToolFailed")
    expect(failed).toEqual([
      expect.objectContaining({ tool: "notes.write_note", kind: "invalid_arguments", path: "$.copies" }),
      expect.objectContaining({ tool: "notes.write_note", kind: "invalid_arguments", path: "$.sudo" }),
      expect.objectContaining({ tool: "notes.write_note", kind: "invalid_arguments", path: "$.path" })
    ])
    expect(callsIn(calls)).toEqual([])
  })

  it("logs an isError result as ToolFailed with the server's message, and images as references", async () => {
    const { db, calls } = fresh()
    const images = path.join(dir, "images")
    const script = [ScriptedModel.toolCall("notes.fail", {}), ScriptedModel.toolCall("notes.picture", {}), ScriptedModel.text("ok")]
    const { events } = await run({ db, config: { servers: [stdioServer(calls)] }, script, options: { saveBinariesTo: images } }, "errors")
    expect(events.filter((p) => p._tag === "ToolFailed")).toEqual([{ _tag: "ToolFailed", tool: "notes.fail", kind: "tool_error", error: "disk full" }])
    const picture = events.find((p) => p._tag === "ToolCompleted")
    expect(picture).toEqual({
      _tag: "ToolCompleted",
      tool: "notes.picture",
      result: {
        content: [
          { type: "text", text: "a dot" },
          { type: "image", mimeType: "image/png", sha256: expect.stringMatching(/^[0-9a-f]{64}$/), bytes: 70 }
        ]
      }
    })
    // The log holds the reference, never the bytes; the bytes are in the folder, by their hash.
    expect(JSON.stringify(events)).not.toContain("iVBORw0KGgo")
    const sha = JSON.stringify(picture).match(/"sha256":"([0-9a-f]{64})"/)![1]
    expect(fs.readdirSync(images)).toEqual([`${sha}.png`])
  })

  it("an idempotent tool whose server hangs hits the tool's timeout: a plain timeout, safe to repeat", async () => {
    const { db, calls } = fresh()
    const config = { servers: [stdioServer(calls, { tools: { hang: { timeout_ms: 1500, idempotent: true } } })] }
    const script = [ScriptedModel.toolCall("notes.hang", {}), ScriptedModel.text("moved on")]
    const { result, events } = await run({ db, config, script }, "hang")
    expect(Either.getOrThrow(result)).toMatchObject({ status: "completed", output: { answer: "moved on" } })
    expect(events.filter((p) => p._tag === "ToolFailed")).toEqual([expect.objectContaining({ tool: "notes.hang", kind: "timeout" })])
  })

  it("a non-idempotent tool whose server hangs past its timeout leaves its step in doubt: the request was sent", async () => {
    const { db, calls } = fresh()
    const config = { servers: [stdioServer(calls, { tools: { hang: { timeout_ms: 1500 } } })] }
    const script = [ScriptedModel.toolCall("notes.hang", {}), ScriptedModel.text("moved on")]
    const { result, events } = await run({ db, config, script }, "hang-in-doubt")
    expect(Either.getOrThrow(result)).toMatchObject({ status: "needs_reconciliation", tool: "notes.hang" })
    expect(events.map((p) => p._tag).slice(-2)).toEqual(["ToolRequested", "ReconciliationRequired"])
    expect(events.some((p) => p._tag === "ToolFailed")).toBe(false)
    expect(callsIn(calls)).toEqual([{ tool: "hang", args: {} }])
  })

  it("a server killed mid-call leaves a non-idempotent step in doubt: reconciliation, never a silent failure", async () => {
    const { db, calls } = fresh()
    const config = { servers: [stdioServer(calls)] }
    const script = [ScriptedModel.toolCall("notes.die", {}), ScriptedModel.text("after the crash")]
    const first = await run({ db, config, script }, "crash")
    expect(Either.getOrThrow(first.result)).toMatchObject({ status: "needs_reconciliation", tool: "notes.die" })
    expect(first.events.map((p) => p._tag).slice(-3)).toEqual(["ModelCompleted", "ToolRequested", "ReconciliationRequired"])
    expect(first.events.some((p) => p._tag === "ToolFailed")).toBe(false)
    expect(callsIn(calls)).toEqual([{ tool: "die", args: {} }])

    // A person settles it; the run goes on from its log (the tool list too: no listing, no new call).
    const resumed = await withKernel({ db, config, script: [ScriptedModel.text("after the crash")] }, Effect.gen(function*() {
      const kernel = yield* Kernel.Kernel
      const info = Either.getOrThrow(first.result)
      if (info.status !== "needs_reconciliation") throw new Error("expected a step in doubt")
      yield* kernel.reconcile({ tenantId: "acme", runId: "crash", stepKey: info.stepKey, outcome: { ok: false, error: "checked: nothing happened" }, force: true })
      return yield* kernel.resume({ tenantId: "acme", runId: "crash", workflow: agent })
    }))
    expect(resumed).toMatchObject({ status: "completed", output: { answer: "after the crash" } })
    expect(callsIn(calls)).toEqual([{ tool: "die", args: {} }])
  })

  it("an idempotent tool whose server died fails as a tool error, safe to repeat", async () => {
    const { db, calls } = fresh()
    const config = { servers: [stdioServer(calls, { tools: { die: { idempotent: true } } })] }
    const script = [ScriptedModel.toolCall("notes.die", {}), ScriptedModel.toolCall("notes.read_note", { path: "x" }), ScriptedModel.text("done")]
    const { result, events } = await run({ db, config, script }, "crash-idempotent")
    expect(Either.getOrThrow(result)).toMatchObject({ status: "completed" })
    expect(events.filter((p) => p._tag === "ToolFailed")).toEqual([
      expect.objectContaining({ tool: "notes.die", kind: "tool_error", error: expect.stringContaining("went away during the call") })
    ])
    // The next call started the server again.
    expect(events.filter((p) => p._tag === "ToolCompleted")).toHaveLength(1)
    expect(fs.readFileSync(`${calls}.starts`, "utf8").trim().split("\n")).toHaveLength(2)
  })

  it("replays a run from its log with no server: none is started, the same tools are offered", async () => {
    const { db, calls } = fresh()
    const script = [ScriptedModel.toolCall("notes.write_note", { path: "a.txt", text: "hello" }), ScriptedModel.text("written")]
    const live = await run({ db, config: { servers: [stdioServer(calls)] }, script }, "replayed")
    expect(Either.getOrThrow(live.result)).toMatchObject({ status: "completed", output: { answer: "written" } })
    expect(live.events.find((p) => p._tag === "ToolCompleted")).toMatchObject({ result: { structuredContent: { path: "a.txt", bytes: 5 } } })

    // The same server name, with a command that does not exist: a replay asks no server.
    const gone = { servers: [{ name: "notes", command: path.join(dir, "no-such-server") }] }
    const replayed = await withKernel({ db, config: gone, script }, Effect.gen(function*() {
      const kernel = yield* Kernel.Kernel
      return yield* kernel.replay(agent, { tenantId: "acme", runId: "replayed" })
    }))
    expect(replayed).toMatchObject({ status: "completed", output: { answer: "written", withheld: ["notes.broken"] } })
    expect(fs.readFileSync(`${calls}.starts`, "utf8").trim().split("\n")).toHaveLength(1)
    expect(callsIn(calls)).toHaveLength(1)
  })

  describe("sessions: each tenant its own connection unless the server is shared", () => {
    const globex = Tenant.TenantContext.make({ tenantId: "globex", capabilities: ["mcp:notes"], budgetUsdLimit: 1 })
    const starts = (calls: string) => fs.readFileSync(`${calls}.starts`, "utf8").trim().split("\n")
    const alive = (pid: string) => {
      try {
        process.kill(Number(pid), 0)
        return true
      } catch {
        return false
      }
    }
    /** Runs of two tenants in one kernel, each listing the tools and reading a note; then `program`. */
    const twoTenants = (calls: string, over: Record<string, unknown>, program: Effect.Effect<void, unknown, Kernel.Kernel> = Effect.void) => {
      // A third run's replies, for a program that runs one more.
      const script = [1, 2, 3].flatMap(() => [ScriptedModel.toolCall("notes.read_note", { path: "x" }), ScriptedModel.text("read")])
      return withKernel({ db: fresh().db, config: { servers: [stdioServer(calls, over)] }, script }, Effect.gen(function*() {
        const kernel = yield* Kernel.Kernel
        for (const [runId, who] of [["of-acme", tenant()], ["of-globex", globex]] as const) {
          expect(yield* kernel.execute(agent, { runId, tenant: who, input: "go" })).toMatchObject({ status: "completed" })
        }
        yield* program
      }))
    }

    it("by default (per_tenant) a stdio server is started once per tenant: two tenants never share its process", async () => {
      const { calls } = fresh()
      await twoTenants(calls, {})
      expect(starts(calls)).toHaveLength(2)
      expect(callsIn(calls)).toEqual([{ tool: "read_note", args: { path: "x" } }, { tool: "read_note", args: { path: "x" } }])
    })

    it("sessions: shared starts one process for every tenant", async () => {
      const { calls } = fresh()
      await twoTenants(calls, { sessions: "shared" })
      expect(starts(calls)).toHaveLength(1)
    })

    it("a tenant's connection idle for idle_timeout_ms is closed (its process ended) and made again on the next use", async () => {
      const { calls } = fresh()
      await twoTenants(calls, { idle_timeout_ms: 100 }, Effect.gen(function*() {
        // Both processes end once idle, while the kernel (and its servers' layer) is still up.
        yield* Effect.promise(() => vi.waitFor(() => expect(starts(calls).filter(alive)).toEqual([]), { timeout: 60_000, interval: 50 }))
        const kernel = yield* Kernel.Kernel
        expect(yield* kernel.execute(agent, { runId: "of-acme-later", tenant: tenant(), input: "go" })).toMatchObject({ status: "completed" })
      }))
      expect(starts(calls)).toHaveLength(3)
      expect(callsIn(calls)).toHaveLength(3)
    })
  })
})
