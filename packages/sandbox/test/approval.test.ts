// `approval: required` in the policy: the sandbox's call waits for a person's decision before it runs, on a real
// SQLite file; the approvers the policy names are the only ones who may decide.
import { describe, expect, it } from "@effect/vitest"
import { Effect, Schema } from "effect"
import { Artana, Tenant, Workflow } from "@artana/core"
import { ScriptedModel } from "@artana/core/testing"
import { Policy, Sandbox } from "@artana/sandbox"
import { SqliteStore } from "@artana/store-sqlite"
import * as fs from "node:fs"
import * as path from "node:path"
import { tempFolder } from "./fixtures.js"

const dir = tempFolder("approval")
fs.mkdirSync(path.join(dir, "workspace/out"), { recursive: true })
const policyFile = path.join(dir, "policy.yaml")
fs.writeFileSync(policyFile, `default: deny
tools:
  fs.read:  { allow: true, paths: ["workspace/**"] }
  fs.write: { allow: true, paths: ["workspace/out/**"], approval: required, approvers: [ops] }
`)

const tenant = Tenant.TenantContext.make({ tenantId: "acme", capabilities: [], budgetUsdLimit: 1 })

const publish = Workflow.make({
  name: "publish",
  input: Schema.Struct({ text: Schema.String }),
  output: Schema.Unknown,
  run: ({ text }, ctx) => ctx.tool("fs.write", { path: "workspace/out/report.txt", content: text })
})

describe("approval: required in the sandbox policy", () => {
  it.effect("fs.write pauses for ops' approval; the file is written once, after it", () =>
    Effect.gen(function*() {
      const loaded = yield* Policy.load(policyFile)
      const layer = Artana.layer({
        store: SqliteStore.layer({ filename: path.join(dir, "artana.db") }),
        model: ScriptedModel.layer([]),
        tools: Sandbox.layer(loaded),
        workflows: [publish]
      })
      const program = Effect.gen(function*() {
        const paused = yield* Artana.run(publish, { runId: "pub-1", tenant, input: { text: "Q3: up" } })
        expect(paused).toMatchObject({ status: "paused", approval: { tool: "fs.write", approvers: ["ops"] } })
        expect(fs.existsSync(path.join(dir, "workspace/out/report.txt"))).toBe(false)
        const approvalId = paused.status === "paused" ? paused.approval!.approvalId : ""
        expect(yield* Effect.flip(Artana.approve({ tenantId: "acme", approvalId, approver: "intern" }))).toMatchObject({ _tag: "ApproverNotAllowed" })
        const done = yield* Artana.approve({ tenantId: "acme", approvalId, approver: "ops", workflow: publish })
        expect(done.status).toBe("completed")
        expect(fs.readFileSync(path.join(dir, "workspace/out/report.txt"), "utf8")).toBe("Q3: up")
        const events = yield* Artana.readEvents({ tenantId: "acme", runId: "pub-1" })
        expect(events.filter((e) => e.type === "ApprovalDecided").map((e) => e.payload)).toEqual([
          { _tag: "ApprovalDecided", approvalId, decision: "approved", approver: "ops" }
        ])
      })
      yield* Effect.provide(program, layer)
    }))

  it("a policy's approval is required or none (absent: none), named with its line when it is neither", () => {
    const parse = (rule: string) => Policy.parse(`default: deny\ntools:\n  fs.read: { allow: true${rule} }\n`, { file: "policy.yaml" })
    const required = parse(", approval: required, approvers: [ops]")
    expect(required._tag === "Right" && required.right.document.tools["fs.read"]).toMatchObject({ approval: "required", approvers: ["ops"] })
    const absent = parse("")
    expect(absent._tag === "Right" && absent.right.document.tools["fs.read"]?.approval).toBeUndefined()
    const maybe = parse(", approval: maybe")
    expect(maybe._tag).toBe("Left")
    if (maybe._tag === "Left") expect(maybe.left.message).toMatch(/^policy\.yaml:3:\d+: tools\.fs\.read\.approval: .*"required"/)
  })
})
