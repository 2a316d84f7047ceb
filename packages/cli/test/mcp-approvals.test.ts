// Approvals of MCP tools written in the policy's mcp: section: a plan step calling such a tool pauses before the
// server sees it; `artana approve` by a named approver runs it once; anyone else may not.
import { afterAll, describe, expect, it } from "@effect/vitest"
import { SqliteStore } from "@artana/store-sqlite"
import { SqlClient } from "@effect/sql"
import { Effect, Layer } from "effect"
import * as fs from "node:fs"
import * as path from "node:path"
import { fileURLToPath } from "node:url"
import { artana, artanaJson, cleanup, tempDir } from "./helpers.js"

afterAll(cleanup)

const mcpDir = fileURLToPath(new URL("../../mcp", import.meta.url))
const server = path.join(mcpDir, "test/fixtures/stdio.ts")

const policy = (calls: string) => `default: deny
mcp:
  servers:
    - name: notes
      command: ${JSON.stringify(process.execPath)}
      args: ["--import", "tsx", ${JSON.stringify(server)}, ${JSON.stringify(calls)}]
      cwd: ${JSON.stringify(mcpDir)}
      tools:
        write_note: { approval: required, approvers: [ann] }
`

const lines = (file: string) => (fs.existsSync(file) ? fs.readFileSync(file, "utf8").trim().split("\n").map((l) => JSON.parse(l)) : [])

describe("MCP tools that need approval, in the CLI", () => {
  it.live("a plan step calling one pauses, the server unaware; only a named approver decides; approved, it runs once", () =>
    Effect.gen(function*() {
      const cwd = tempDir()
      const calls = path.join(cwd, "calls.jsonl")
      fs.writeFileSync(path.join(cwd, "policy.yaml"), policy(calls))
      fs.writeFileSync(path.join(cwd, "plan.yaml"), `steps:
  - id: read
    tool: notes.read_note
    args: { path: a.txt }
  - id: write
    tool: notes.write_note
    args: { path: a.txt, text: hello }
`)
      const run = yield* artanaJson(["run", "plan.yaml", "--policy", "policy.yaml", "--run-id", "m1"], { cwd })
      expect(run.code).toBe(8)
      expect(run.json).toMatchObject({ runId: "m1", status: "paused", approval: { tool: "notes.write_note", stepKey: "step:write" } })
      expect(lines(calls)).toEqual([{ tool: "read_note", args: { path: "a.txt" } }])
      const inbox = yield* artanaJson(["approvals"], { cwd })
      const [pending] = (inbox.json as { approvals: ReadonlyArray<{ approvalId: string; tool: string }> }).approvals
      expect(pending?.tool).toBe("notes.write_note")

      const wrongPerson = yield* artana(["approve", pending!.approvalId, "--approver", "bob"], { cwd })
      expect(wrongPerson.code).toBe(2)
      expect(wrongPerson.stderr).toContain("bob may not decide")
      const approved = yield* artanaJson(["approve", pending!.approvalId, "--approver", "ann"], { cwd })
      expect(approved.json).toMatchObject({ runId: "m1", decision: "approved", approver: "ann", status: "completed" })
      expect(lines(calls)).toEqual([{ tool: "read_note", args: { path: "a.txt" } }, { tool: "write_note", args: { path: "a.txt", text: "hello" } }])
    }), { timeout: 240_000 })

  it.live("with an audit key, a run whose logged policy was rewritten cannot make an approval start a command", () =>
    Effect.gen(function*() {
      const cwd = tempDir()
      const calls = path.join(cwd, "calls.jsonl")
      const marker = path.join(cwd, "started-by-the-log")
      const env = { ARTANA_AUDIT_KEY: "k3y-for-the-mcp-approvals-test" }
      fs.writeFileSync(path.join(cwd, "policy.yaml"), policy(calls))
      fs.writeFileSync(path.join(cwd, "plan.yaml"), "steps:\n  - id: write\n    tool: notes.write_note\n    args: { path: a.txt, text: hello }\n")
      const run = yield* artanaJson(["run", "plan.yaml", "--policy", "policy.yaml", "--run-id", "m2"], { cwd, env })
      expect(run.json).toMatchObject({ runId: "m2", status: "paused" })
      const inbox = yield* artanaJson(["approvals"], { cwd, env })
      const [pending] = (inbox.json as { approvals: ReadonlyArray<{ approvalId: string }> }).approvals
      // Someone who can write to the store, but has not the key, points the logged MCP server at a command of theirs:
      // approving would start it to call the tool. The decision reads the log verified, so it is refused first.
      yield* Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        yield* sql`UPDATE events SET payload = json_set(payload, '$.input.policy.document.mcp.servers[0].command', '/bin/sh', '$.input.policy.document.mcp.servers[0].args', json(${JSON.stringify(["-c", `touch ${marker}`])})) WHERE run_id = 'm2' AND seq = 1`
      }).pipe(Effect.provide(Layer.orDie(SqliteStore.layer({ filename: path.join(cwd, "artana.db") }))))
      const approved = yield* artana(["approve", pending!.approvalId, "--approver", "ann"], { cwd, env })
      expect(fs.existsSync(marker)).toBe(false)
      expect(approved.code).toBe(6)
      expect(approved.stderr).toContain("m2")
      expect(lines(calls)).toEqual([])
    }), { timeout: 240_000 })
})
