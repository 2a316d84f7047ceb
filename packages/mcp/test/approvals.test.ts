// Approvals configured in the MCP config (per server, per tool): a call waits for a person's decision before it
// reaches the server, only the named approvers may decide, and an approved call runs once.
import { describe, expect, it } from "vitest"
import { Effect, Either } from "effect"
import { Errors, Kernel } from "@artana/core"
import { ScriptedModel } from "@artana/core/testing"
import { McpConfig } from "@artana/mcp"
import * as path from "node:path"
import { callsIn } from "./fixtures/server.js"
import { agent, payloads, stdioServer, tempFolder, tenant, withKernel } from "./helpers.js"

const dir = tempFolder("approvals")

describe("MCP tools that need approval", () => {
  it("a tool with approval: required pauses before the server sees it; only its approvers decide; approved, it runs once", async () => {
    const db = path.join(dir, "approve.db")
    const calls = path.join(dir, "approve-calls.jsonl")
    const config = { servers: [stdioServer(calls, { tools: { write_note: { approval: "required", approvers: ["ann"] } } })] }
    const script = [
      ScriptedModel.toolCall("notes.read_note", { path: "todo.txt" }),
      ScriptedModel.toolCall("notes.write_note", { path: "todo.txt", text: "done" }),
      ScriptedModel.text("noted")
    ]
    const outcome = await withKernel({ db, config, script }, Effect.gen(function*() {
      const kernel = yield* Kernel.Kernel
      const paused = yield* kernel.execute(agent, { runId: "ap-1", tenant: tenant(), input: "go" })
      // The read needs no approval and ran; the write waits, and the server has not seen it.
      const seenWhilePaused = callsIn(calls)
      const [pending, ...others] = yield* kernel.approvals({ tenantId: "acme" })
      const refused = yield* Effect.either(kernel.decideApproval({ tenantId: "acme", approvalId: pending!.approvalId, approver: "bob", decision: "approve" }))
      yield* kernel.decideApproval({ tenantId: "acme", approvalId: pending!.approvalId, approver: "ann", decision: "approve" })
      const done = yield* kernel.resume({ tenantId: "acme", runId: "ap-1" })
      const events = payloads(yield* kernel.readEvents({ tenantId: "acme", runId: "ap-1" }))
      return { paused, seenWhilePaused, pending, others, refused, done, events }
    }))
    expect(outcome.paused).toMatchObject({ status: "paused", approval: { tool: "notes.write_note", approvers: ["ann"] } })
    expect(outcome.seenWhilePaused).toEqual([{ tool: "read_note", args: { path: "todo.txt" } }])
    expect(outcome.pending).toMatchObject({ runId: "ap-1", tool: "notes.write_note", approvers: ["ann"] })
    expect(outcome.others).toEqual([])
    expect(Either.isLeft(outcome.refused) && outcome.refused.left).toBeInstanceOf(Errors.ApproverNotAllowed)
    expect(outcome.done).toMatchObject({ status: "completed", output: { answer: "noted" } })
    expect(callsIn(calls)).toEqual([
      { tool: "read_note", args: { path: "todo.txt" } },
      { tool: "write_note", args: { path: "todo.txt", text: "done" } }
    ])
    const decided = outcome.events.filter((p) => p._tag === "ApprovalRequested" || p._tag === "ApprovalDecided").map((p) => p._tag)
    expect(decided).toEqual(["ApprovalRequested", "ApprovalDecided"])
  }, 300_000)

  it("a server's approval covers its tools; a tool's rule overrides it", async () => {
    const db = path.join(dir, "server.db")
    const calls = path.join(dir, "server-calls.jsonl")
    const config = { servers: [stdioServer(calls, { approval: "required", tools: { read_note: { approval: "none" } } })] }
    const script = [ScriptedModel.toolCall("notes.read_note", { path: "a.txt" }), ScriptedModel.toolCall("notes.write_note", { path: "a.txt", text: "x" })]
    const paused = await withKernel({ db, config, script }, Effect.flatMap(Kernel.Kernel, (k) => k.execute(agent, { runId: "ap-2", tenant: tenant(), input: "go" })))
    expect(paused).toMatchObject({ status: "paused", approval: { tool: "notes.write_note" } })
    expect(callsIn(calls)).toEqual([{ tool: "read_note", args: { path: "a.txt" } }])
  }, 300_000)

  it("the policy YAML takes approval and approvers, and names the line of a bad value", () => {
    const ok = McpConfig.fromPolicy([
      "mcp:",
      "  servers:",
      "    - name: files",
      "      command: node",
      "      approval: required",
      "      approvers: [ann, ops]",
      "      tools:",
      "        read_file: { approval: none }"
    ].join("\n"), "policy.yaml")
    const config = Either.getOrThrow(ok)!
    expect(McpConfig.approvalOf(config.servers[0]!, "write_file")).toEqual({ needsApproval: true, approvers: ["ann", "ops"] })
    expect(McpConfig.approvalOf(config.servers[0]!, "read_file")).toEqual({ needsApproval: false, approvers: ["ann", "ops"] })
    const bad = McpConfig.fromPolicy(["mcp:", "  servers:", "    - name: files", "      command: node", "      approval: always"].join("\n"), "policy.yaml")
    expect(Either.isLeft(bad) && bad.left).toMatchObject({ _tag: "InvalidMcpConfig", file: "policy.yaml", line: 5 })
  })
})
