// MCP tools over Streamable HTTP, from a server the test runs on 127.0.0.1 with the SDK: a header taken from the
// environment reaches the server and never the log; a tenant sees and calls only the tools its capabilities allow.
import { describe, expect, it } from "vitest"
import { Effect, Either } from "effect"
import { Kernel } from "@artana/core"
import { ScriptedModel } from "@artana/core/testing"
import * as path from "node:path"
import { start } from "./fixtures/http.js"
import { callsIn } from "./fixtures/server.js"
import { agent, payloads, tempFolder, tenant, withKernel } from "./helpers.js"

const dir = tempFolder("http")

describe("MCP tools over Streamable HTTP", () => {
  it("sends headers from the environment, never logs them, and runs the tools like any tool", async () => {
    const calls = path.join(dir, "calls-1.jsonl")
    const server = await start({ callsFile: calls, token: "s3cret-token" })
    try {
      const config = { servers: [{ name: "notes", url: server.url, headers: { Authorization: "Bearer ${NOTES_TOKEN}" } }] }
      const script = [ScriptedModel.toolCall("notes.write_note", { path: "a.txt", text: "hello" }), ScriptedModel.text("written")]
      const out = await withKernel({ db: path.join(dir, "1.db"), config, script, env: { NOTES_TOKEN: "s3cret-token" } }, Effect.gen(function*() {
        const kernel = yield* Kernel.Kernel
        const result = yield* kernel.execute(agent, { runId: "http", tenant: tenant(), input: "go" })
        return { result, events: payloads(yield* kernel.readEvents({ tenantId: "acme", runId: "http" })) }
      }))
      expect(out.result).toMatchObject({ status: "completed", output: { answer: "written" } })
      expect(out.events.find((p) => p._tag === "ToolCompleted")).toEqual({
        _tag: "ToolCompleted",
        tool: "notes.write_note",
        result: { content: [{ type: "text", text: "written" }], structuredContent: { path: "a.txt", bytes: 5 } }
      })
      expect(callsIn(calls)).toEqual([{ tool: "write_note", args: { path: "a.txt", text: "hello" } }])
      expect(server.authorizations.length).toBeGreaterThan(0)
      expect(new Set(server.authorizations)).toEqual(new Set(["Bearer s3cret-token"]))
      expect(JSON.stringify(out.events)).not.toContain("s3cret")
    } finally {
      await server.close()
    }
  })

  it("a missing environment variable fails the listing and names it, without sending anything", async () => {
    const calls = path.join(dir, "calls-2.jsonl")
    const server = await start({ callsFile: calls, token: "t" })
    try {
      const config = { servers: [{ name: "notes", url: server.url, headers: { Authorization: "Bearer ${NOTES_TOKEN}" } }] }
      const result = await withKernel({ db: path.join(dir, "2.db"), config, script: [] }, Effect.gen(function*() {
        const kernel = yield* Kernel.Kernel
        return yield* Effect.either(kernel.execute(agent, { runId: "no-env", tenant: tenant(), input: "go" }))
      }))
      expect(Either.isLeft(result) && result.left).toMatchObject({
        _tag: "McpServerError",
        server: "notes",
        reason: "header Authorization reads the environment variable NOTES_TOKEN, which is not set"
      })
      expect(server.authorizations).toEqual([])
    } finally {
      await server.close()
    }
  })

  it("a call the server refuses over HTTP (403) is a tool error, not a step in doubt: it never ran", async () => {
    const calls = path.join(dir, "calls-4.jsonl")
    const server = await start({ callsFile: calls, token: "t", refuseCalls: true })
    try {
      const config = { servers: [{ name: "notes", url: server.url, headers: { Authorization: "Bearer ${NOTES_TOKEN}" } }] }
      const script = [ScriptedModel.toolCall("notes.write_note", { path: "a.txt", text: "x" }), ScriptedModel.text("refused")]
      const out = await withKernel({ db: path.join(dir, "4.db"), config, script, env: { NOTES_TOKEN: "t" } }, Effect.gen(function*() {
        const kernel = yield* Kernel.Kernel
        const result = yield* kernel.execute(agent, { runId: "refused", tenant: tenant(), input: "go" })
        return { result, events: payloads(yield* kernel.readEvents({ tenantId: "acme", runId: "refused" })) }
      }))
      expect(out.result).toMatchObject({ status: "completed", output: { answer: "refused" } })
      expect(out.events.filter((p) => p._tag === "ToolFailed")).toEqual([
        expect.objectContaining({ tool: "notes.write_note", kind: "tool_error", error: expect.stringContaining("refused the call") })
      ])
      expect(callsIn(calls)).toEqual([])
    } finally {
      await server.close()
    }
  })

  it("strips the tools a tenant lacks the capability for, and denies a call to one without calling the server", async () => {
    const calls = path.join(dir, "calls-3.jsonl")
    const server = await start({ callsFile: calls, token: "t" })
    try {
      const config = {
        servers: [{
          name: "notes",
          url: server.url,
          headers: { Authorization: "Bearer ${NOTES_TOKEN}" },
          capability: "notes:read",
          tools: { write_note: { capability: "notes:write" } }
        }]
      }
      const script = [
        ScriptedModel.toolCall("notes.write_note", { path: "a.txt", text: "sneaky" }),
        ScriptedModel.toolCall("notes.read_note", { path: "a.txt" }),
        ScriptedModel.text("done")
      ]
      const out = await withKernel({ db: path.join(dir, "3.db"), config, script, env: { NOTES_TOKEN: "t" } }, Effect.gen(function*() {
        const kernel = yield* Kernel.Kernel
        const result = yield* kernel.execute(agent, { runId: "caps", tenant: tenant(["notes:read"]), input: "go" })
        const requests = (yield* ScriptedModel.ScriptedModel).requests()
        return { result, requests, events: payloads(yield* kernel.readEvents({ tenantId: "acme", runId: "caps" })) }
      }))
      expect(out.result).toMatchObject({ status: "completed" })
      const offered = out.requests[0]!.tools.map((t) => t.name)
      expect(offered).toContain("notes.read_note")
      expect(offered).not.toContain("notes.write_note")
      expect(out.events.find((p) => p._tag === "PolicyDenied")).toMatchObject({ tool: "notes.write_note", capability: "notes:write" })
      expect(out.events.filter((p) => p._tag === "ToolFailed")).toEqual([expect.objectContaining({ tool: "notes.write_note", kind: "denied" })])
      // The server saw the read, never the write.
      expect(callsIn(calls)).toEqual([{ tool: "read_note", args: { path: "a.txt" } }])
    } finally {
      await server.close()
    }
  })
})
