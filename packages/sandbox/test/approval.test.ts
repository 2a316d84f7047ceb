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
fs.mkdirSync(path.join(dir, "workspace/out/drafts"), { recursive: true })
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

  it.effect("an approval predicate in code (Sandbox.layer({ approvals })): drafts are written at once, other writes wait", () =>
    Effect.gen(function*() {
      const open = path.join(dir, "open-policy.yaml")
      fs.writeFileSync(open, `default: deny
tools:
  fs.write: { allow: true, paths: ["workspace/out/**"] }
  fs.read:  { allow: true, paths: ["workspace/**"], approval: required }
`)
      const loaded = yield* Policy.load(open)
      const asked: Array<string> = []
      const approvals: Sandbox.Approvals = {
        "fs.write": ({ path: target }) => Effect.sync(() => (asked.push(target), !target.startsWith("workspace/out/drafts/"))),
        // The policy file requires approval of every read: a predicate in code cannot waive it.
        "fs.read": () => Effect.succeed(false)
      }
      const write = (target: string) =>
        Workflow.make({
          name: `write-${target.replace(/\W/g, "-")}`,
          input: Schema.Null,
          output: Schema.Unknown,
          run: (_input, ctx) => ctx.tool("fs.write", { path: target, content: "text" })
        })
      const draft = write("workspace/out/drafts/a.txt")
      const final = write("workspace/out/final.txt")
      const read = Workflow.make({
        name: "read",
        input: Schema.Null,
        output: Schema.Unknown,
        run: (_input, ctx) => ctx.tool("fs.read", { path: "workspace/out/drafts/a.txt" })
      })
      const layer = Artana.layer({
        store: SqliteStore.layer({ filename: path.join(dir, "predicate.db") }),
        model: ScriptedModel.layer([]),
        tools: Sandbox.layer(loaded, { approvals }),
        workflows: [draft, final, read]
      })
      yield* Effect.provide(Effect.gen(function*() {
        expect(yield* Artana.run(draft, { runId: "draft-1", tenant, input: null })).toMatchObject({ status: "completed" })
        expect(fs.readFileSync(path.join(dir, "workspace/out/drafts/a.txt"), "utf8")).toBe("text")
        const paused = yield* Artana.run(final, { runId: "final-1", tenant, input: null })
        expect(paused).toMatchObject({ status: "paused", approval: { tool: "fs.write" } })
        expect(fs.existsSync(path.join(dir, "workspace/out/final.txt"))).toBe(false)
        expect(asked).toEqual(["workspace/out/drafts/a.txt", "workspace/out/final.txt"])
        expect(yield* Artana.run(read, { runId: "read-1", tenant, input: null })).toMatchObject({ status: "paused", approval: { tool: "fs.read" } })
        const approvalId = paused.status === "paused" ? paused.approval!.approvalId : ""
        expect(yield* Artana.approve({ tenantId: "acme", approvalId, approver: "ann", workflow: final })).toMatchObject({ status: "completed" })
        expect(fs.readFileSync(path.join(dir, "workspace/out/final.txt"), "utf8")).toBe("text")
      }), layer)
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
