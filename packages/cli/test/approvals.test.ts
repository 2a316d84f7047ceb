// `artana approvals`, `artana approve` and `artana reject` as child processes on SQLite files: a plan step under
// `approval: required` pauses its run; the inbox lists it; an approval (with edited arguments) continues the plan; a
// bad edit, a wrong approver and another tenant write nothing; a rejection fails the step as denied.
import { afterAll, describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import * as fs from "node:fs"
import * as path from "node:path"
import { artana, artanaJson, cleanup, planWorkspace } from "./helpers.js"

afterAll(cleanup)

const POLICY = `default: deny
tools:
  fs.read:  { allow: true, paths: ["workspace/**"] }
  fs.write: { allow: true, paths: ["workspace/out/**"], approval: required, approvers: [ops] }
`

const PLAN = `steps:
  - { id: notes, tool: fs.read, args: { path: workspace/notes.txt } }
  - { id: save, tool: fs.write, args: { path: workspace/out/summary.txt, content: "draft" } }
`

const workspace = () => planWorkspace(PLAN, POLICY)

const summary = (cwd: string) => path.join(cwd, "workspace/out/summary.txt")

interface Pending {
  readonly approvalId: string
  readonly runId: string
  readonly tool: string
  readonly arguments: string
  readonly requestedAt: number
}

/** Runs the plan to its pause and returns the approval it waits for, as the inbox lists it. */
const paused = (cwd: string, runId: string) =>
  Effect.gen(function*() {
    const run = yield* artanaJson(["run", "plan.yaml", "--policy", "policy.yaml", "--run-id", runId], { cwd })
    expect(run.code).toBe(8)
    expect(run.json).toMatchObject({ runId, status: "paused", approval: { tool: "fs.write", stepKey: "step:save" } })
    const inbox = yield* artanaJson(["approvals"], { cwd })
    const approvals: ReadonlyArray<Pending> = (inbox.json as { approvals: ReadonlyArray<Pending> }).approvals
    return approvals.find((a) => a.runId === runId)!
  })

describe("artana approvals, approve, reject", () => {
  it.live("a paused plan step is approved with edited arguments and the plan goes on; bad input writes nothing", () =>
    Effect.gen(function*() {
      const cwd = workspace()
      const pending = yield* paused(cwd, "a1")
      expect(pending).toMatchObject({ tool: "fs.write", arguments: '{"path":"workspace/out/summary.txt","content":"draft"}' })
      expect(fs.existsSync(summary(cwd))).toBe(false)
      const console_ = yield* artana(["approvals"], { cwd })
      expect(console_.stdout).toContain(pending.approvalId)
      expect(console_.stdout).toContain("1 pending approval of tenant default, the longest waiting first")
      expect(console_.stdout).toContain("ops")
      const waiting = yield* artanaJson(["report", "a1"], { cwd })
      expect(waiting.json).toMatchObject({ status: "paused", steps: [{ id: "notes", status: "ok" }, { id: "save", status: "awaiting_approval" }] })

      const before = (yield* artanaJson(["show-run", "a1"], { cwd })).json as { run: { headSeq: number } }
      const badJson = yield* artana(["approve", pending.approvalId, "--approver", "ops", "--args", "{oops"], { cwd })
      expect(badJson.code).toBe(2)
      const badEdit = yield* artana(["approve", pending.approvalId, "--approver", "ops", "--args", '{"path":"workspace/out/summary.txt"}'], { cwd })
      expect(badEdit.code).toBe(2)
      expect(badEdit.stderr).toContain("$.content")
      const wrongPerson = yield* artana(["approve", pending.approvalId, "--approver", "intern"], { cwd })
      expect(wrongPerson.code).toBe(2)
      expect(wrongPerson.stderr).toContain("intern may not decide")
      const otherTenant = yield* artana(["approve", pending.approvalId, "--approver", "ops", "--tenant", "other"], { cwd })
      expect(otherTenant.code).toBe(5)
      expect(otherTenant.stderr).toContain("not found for tenant other")
      const after = (yield* artanaJson(["show-run", "a1"], { cwd })).json as { run: { headSeq: number } }
      expect(after.run.headSeq).toBe(before.run.headSeq)
      expect(fs.existsSync(summary(cwd))).toBe(false)

      const approved = yield* artanaJson(["approve", pending.approvalId, "--approver", "ops", "--args", '{"path":"workspace/out/summary.txt","content":"final"}'], { cwd })
      expect(approved.code).toBe(0)
      expect(approved.json).toMatchObject({ runId: "a1", decision: "approved", approver: "ops", status: "completed" })
      expect(fs.readFileSync(summary(cwd), "utf8")).toBe("final")
      expect((yield* artanaJson(["approvals"], { cwd })).json).toEqual({ tenantId: "default", approvals: [], next: null })
      // A cursor no page printed is bad input.
      expect((yield* artana(["approvals", "--after", "nope"], { cwd })).code).toBe(2)
      const shown = yield* artana(["show-run", "a1"], { cwd })
      expect(shown.stdout).toContain("approved by ops, arguments edited to")
      const again = yield* artana(["approve", pending.approvalId, "--approver", "ops"], { cwd })
      expect(again.code).toBe(8)
      expect(again.stderr).toContain("ops approved it")
      // The run replays exactly from its log.
      expect((yield* artana(["replay", "a1"], { cwd })).code).toBe(0)
    }), 300_000)

  it.live("a rejected step is denied with the reason, the file is never written", () =>
    Effect.gen(function*() {
      const cwd = workspace()
      const pending = yield* paused(cwd, "r1")
      const rejected = yield* artanaJson(["reject", pending.approvalId, "--approver", "ops", "--reason", "not before the audit"], { cwd })
      expect(rejected.json).toMatchObject({ runId: "r1", decision: "rejected", status: "failed" })
      expect(rejected.code).toBe(3)
      expect(fs.existsSync(summary(cwd))).toBe(false)
      const report = yield* artanaJson(["report", "r1"], { cwd })
      expect(report.json).toMatchObject({ steps: [{ id: "notes", status: "ok" }, { id: "save", status: "denied", error: "not before the audit" }] })
    }), 300_000)

  it.live("the inbox's filters select: --run one run, --tool one tool, --older-than the calls asked before a time", () =>
    Effect.gen(function*() {
      const cwd = workspace()
      const first = yield* paused(cwd, "f1")
      const second = yield* paused(cwd, "f2")
      expect(first.requestedAt).toBeLessThan(second.requestedAt)
      const ids = (args: ReadonlyArray<string>) =>
        Effect.map(artanaJson(["approvals", ...args], { cwd }), (r) => (r.json as { approvals: ReadonlyArray<Pending> }).approvals.map((a) => a.runId))
      expect(yield* ids([])).toEqual(["f1", "f2"])
      expect(yield* ids(["--run", "f2"])).toEqual(["f2"])
      expect(yield* ids(["--tool", "fs.write"])).toEqual(["f1", "f2"])
      expect(yield* ids(["--tool", "fs.read"])).toEqual([])
      // Asked before a time between the two: the first only; before the first: none; an age of a day: none. (The CLI
      // turns a time into an age at its start, so the bound moves by the CLI's own start-up: the times are taken half
      // the gap between the two requests away from them, the gap being a whole `artana run` of the plan.)
      const gap = second.requestedAt - first.requestedAt
      expect(yield* ids(["--older-than", new Date(first.requestedAt + gap / 2).toISOString()])).toEqual(["f1"])
      expect(yield* ids(["--older-than", new Date(first.requestedAt - gap / 2).toISOString()])).toEqual([])
      expect(yield* ids(["--older-than", "24h"])).toEqual([])
      expect((yield* artana(["approvals", "--older-than", "soon"], { cwd })).code).toBe(2)
    }), 300_000)
})

