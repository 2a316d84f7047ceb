// An MCP tool's output schema, enforced from the run's logged tool list: a run resumed with connections that never
// listed the tools (another process, after an approval) still refuses a result that breaks it.
import { describe, expect, it } from "vitest"
import { Effect } from "effect"
import { Kernel } from "@artana/core"
import { ScriptedModel } from "@artana/core/testing"
import * as path from "node:path"
import { callsIn } from "./fixtures/server.js"
import { agent, payloads, stdioServer, tempFolder, tenant, withKernel } from "./helpers.js"

const dir = tempFolder("output")

describe("MCP output schemas", () => {
  it("a resumed run checks structuredContent against the logged output schema: a result that breaks it is ToolFailed", async () => {
    const db = path.join(dir, "output.db")
    const calls = path.join(dir, "calls.jsonl")
    const config = { servers: [stdioServer(calls, { tools: { write_note: { approval: "required" } } })] }
    const call = ScriptedModel.toolCall("notes.write_note", { path: "lie.txt", text: "x" })
    // Listed, logged, and paused before the call: this kernel's connection is the only one that listed the tools.
    const paused = await withKernel({ db, config, script: [call] }, Effect.flatMap(Kernel.Kernel, (k) => k.execute(agent, { runId: "out", tenant: tenant(), input: "go" })))
    expect(paused).toMatchObject({ status: "paused", approval: { tool: "notes.write_note" } })
    expect(callsIn(calls)).toEqual([])

    // Another kernel, new connections (as another process): approved, the call runs with tools rebuilt from the log.
    const resumed = await withKernel({ db, config, script: [ScriptedModel.text("checked")] }, Effect.gen(function*() {
      const kernel = yield* Kernel.Kernel
      const [pending] = yield* kernel.approvals({ tenantId: "acme" })
      yield* kernel.decideApproval({ tenantId: "acme", approvalId: pending!.approvalId, approver: "ann", decision: "approve" })
      const done = yield* kernel.resume({ tenantId: "acme", runId: "out" })
      return { done, events: payloads(yield* kernel.readEvents({ tenantId: "acme", runId: "out" })) }
    }))
    expect(resumed.done).toMatchObject({ status: "completed", output: { answer: "checked" } })
    expect(callsIn(calls)).toEqual([{ tool: "write_note", args: { path: "lie.txt", text: "x" } }])
    expect(resumed.events.some((p) => p._tag === "ToolCompleted")).toBe(false)
    expect(resumed.events.filter((p) => p._tag === "ToolFailed")).toEqual([
      expect.objectContaining({
        tool: "notes.write_note",
        kind: "tool_error",
        error: expect.stringMatching(/breaks the output schema its server listed: structuredContent at \$\.bytes .*may have acted/)
      })
    ])
  })
})
