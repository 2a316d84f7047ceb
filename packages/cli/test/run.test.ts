// `artana run` and `artana replay` with the real sandbox, as child processes on SQLite files: JSON output, exit
// codes, bad input that writes nothing, and replays whose output hashes equal the original's.
import { afterAll, describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import * as fs from "node:fs"
import * as path from "node:path"
import { artana, artanaJson, cleanup, planWorkspace } from "./helpers.js"

afterAll(cleanup)

const POLICY = `default: deny
tools:
  fs.read:  { allow: true, paths: ["workspace/**"] }
  fs.write: { allow: true, paths: ["workspace/out/**"] }
  http.get: { allow: true, domains: ["example.com"] }
  shell.run: { allow: true, executables: [echo, cat, ls], denied_tokens: [--force] }
`

/** A workspace with a policy and a plan; returns its directory. */
const workspace = (plan: string, policy = POLICY) => planWorkspace(plan, policy)

const PLAN = `on_error: continue
steps:
  - { id: notes, tool: fs.read, args: { path: workspace/notes.txt } }
  - { id: shout, tool: shell.run, args: { command: echo, args: [hello] } }
  - { id: peek, tool: fs.read, args: { path: /etc/passwd } }
  - { id: metadata, tool: http.get, args: { url: "http://169.254.169.254/latest/meta-data/" } }
  - { id: save, tool: fs.write, args: { path: workspace/out/summary.txt, content: "one line" } }
`

describe("artana run with the sandbox", () => {
  it.live("runs the plan: JSON { runId, status }, exit 3 for a denial; the report says who was denied and why", () =>
    Effect.gen(function*() {
      const cwd = workspace(PLAN)
      const run = yield* artanaJson(["run", "plan.yaml", "--policy", "policy.yaml", "--run-id", "r1"], { cwd })
      expect(run.json).toEqual({ runId: "r1", status: "completed" })
      expect(run.code).toBe(3)
      expect(fs.readFileSync(path.join(cwd, "workspace/out/summary.txt"), "utf8")).toBe("one line")
      const report = yield* artanaJson(["report", "r1"], { cwd })
      expect(report.json).toMatchObject({
        runId: "r1",
        steps: [
          { id: "notes", tool: "fs.read", decision: "allowed", status: "ok", filesRead: ["workspace/notes.txt"] },
          { id: "shout", tool: "shell.run", decision: "allowed", status: "ok", commands: ["echo hello"] },
          { id: "peek", tool: "fs.read", decision: "denied", status: "denied", reason: expect.stringContaining("outside the allowed paths") },
          { id: "metadata", tool: "http.get", decision: "denied", status: "denied", reason: expect.stringContaining("cloud metadata") },
          { id: "save", tool: "fs.write", decision: "allowed", status: "ok", filesWritten: ["workspace/out/summary.txt"] }
        ],
        summary: { steps: 5, ok: 3, denied: 2, failed: 0 }
      })
    }), 180_000)

  it.live("the report says how each command was contained; an uncontained one (containment: none) is a warning in report and show-run", () =>
    Effect.gen(function*() {
      const plan = "steps:\n  - { id: shout, tool: shell.run, args: { command: echo, args: [hello] } }\n"
      const cwd = workspace(plan)
      expect((yield* artanaJson(["run", "plan.yaml", "--policy", "policy.yaml", "--run-id", "b1"], { cwd })).code).toBe(0)
      const contained = yield* artanaJson(["report", "b1"], { cwd })
      expect(contained.json).toMatchObject({
        steps: [{ id: "shout", containment: { mechanism: "bubblewrap", readOnly: ["workspace"], readWrite: ["workspace/out"], network: false } }]
      })
      expect((yield* artana(["report", "b1"], { cwd })).stdout).not.toContain("uncontained")
      const loose = workspace(plan, POLICY.replace("denied_tokens: [--force] }", "denied_tokens: [--force], containment: none }"))
      expect((yield* artanaJson(["run", "plan.yaml", "--policy", "policy.yaml", "--run-id", "n1"], { cwd: loose })).code).toBe(0)
      expect((yield* artanaJson(["report", "n1"], { cwd: loose })).json).toMatchObject({ steps: [{ id: "shout", containment: { mechanism: "none" } }] })
      expect((yield* artana(["report", "n1"], { cwd: loose })).stdout).toContain("warning: shout ran uncontained")
      expect((yield* artana(["show-run", "n1"], { cwd: loose })).stdout).toContain("ran uncontained: the policy says containment: none")
    }), 180_000)

  it.live("a plan whose steps all pass exits 0; a failing tool exits 4", () =>
    Effect.gen(function*() {
      const ok = workspace("steps:\n  - { tool: fs.read, args: { path: workspace/notes.txt } }\n")
      expect((yield* artanaJson(["run", "plan.yaml", "--policy", "policy.yaml"], { cwd: ok })).code).toBe(0)
      // A file over max_bytes is a denial naming the cap, as a write over it is (not a truncation): exit 3.
      const small = workspace("steps:\n  - { tool: fs.read, args: { path: workspace/notes.txt } }\n", POLICY.replace("paths: [\"workspace/**\"] }", "paths: [\"workspace/**\"], max_bytes: 5 }"))
      const capped = yield* artanaJson(["run", "plan.yaml", "--policy", "policy.yaml", "--run-id", "c1"], { cwd: small })
      expect(capped.code).toBe(3)
      const report = yield* artanaJson(["report", "c1"], { cwd: small })
      expect(report.json).toMatchObject({ summary: { denials: [{ tool: "fs.read", reason: expect.stringContaining("over fs.read's max_bytes (5)") }] } })
      // A command that outlives its timeout is the tool's error: exit 4.
      const slow = workspace("steps:\n  - { tool: shell.run, args: { command: sleep, args: [\"5\"] } }\n", POLICY.replace("executables: [echo, cat, ls]", "executables: [echo, cat, ls, sleep], timeout_ms: 500"))
      const failed = yield* artanaJson(["run", "plan.yaml", "--policy", "policy.yaml", "--run-id", "f1"], { cwd: slow })
      expect(failed.json).toEqual({ runId: "f1", status: "failed" })
      expect(failed.code).toBe(4)
    }), 180_000)

  it.live("replay is bit-exact: no tool runs, and every output hash equals the original's", () =>
    Effect.gen(function*() {
      const cwd = workspace(PLAN)
      yield* artana(["run", "plan.yaml", "--policy", "policy.yaml", "--run-id", "r2"], { cwd })
      const report = yield* artanaJson(["report", "r2"], { cwd })
      const original = (report.json as { readonly steps: ReadonlyArray<{ readonly id: string; readonly outputHash: string }> }).steps
      // What the tools would now return differs: a replay must not care.
      fs.writeFileSync(path.join(cwd, "workspace/notes.txt"), "changed since")
      fs.rmSync(path.join(cwd, "workspace/out/summary.txt"))
      const replay = yield* artanaJson(["replay", "r2"], { cwd })
      expect(replay.code).toBe(0)
      const steps = (replay.json as { readonly matches: boolean; readonly steps: ReadonlyArray<{ readonly id: string; readonly outputHash: string; readonly loggedOutputHash: string }> })
      expect(steps.matches).toBe(true)
      expect(steps.steps.map((s) => [s.id, s.outputHash])).toEqual(original.map((s) => [s.id, s.outputHash]))
      for (const s of steps.steps) expect(s.outputHash).toBe(s.loggedOutputHash)
      expect(fs.existsSync(path.join(cwd, "workspace/out/summary.txt"))).toBe(false)
      // Against a plan that asks for something else, the replay is a mismatch (exit 6).
      fs.writeFileSync(path.join(cwd, "other.yaml"), PLAN.replace("args: [hello]", "args: [bye]"))
      const mismatch = yield* artana(["replay", "r2", "--plan", "other.yaml"], { cwd })
      expect(mismatch.code).toBe(6)
      expect(mismatch.stderr).toContain("shout")
    }), 180_000)

  it.live.each([
    ["malformed plan YAML", "steps:\n  - { tool: fs.read, args: { path: [unclosed }\n", POLICY, "plan.yaml:2:"],
    ["an unknown tool", "steps:\n  - { tool: fs.delete, args: { path: x } }\n", POLICY, "unknown tool \"fs.delete\""],
    ["arguments the tool refuses", "steps:\n  - { tool: fs.read, args: { file: x } }\n", POLICY, "plan.yaml:2:"],
    ["a policy field of the wrong type", "steps: []\n", "tools:\n  fs.read: { allow: maybe }\n", "policy.yaml:2:"],
    ["an unknown policy field", "steps: []\n", "tools:\n  fs.read: { allow: true, path: [\"**\"] }\n", "unknown field \"path\""],
    ["malformed policy YAML", "steps: []\n", "tools: [\n", "policy.yaml:"]
  ])("bad input (%s) is exit 2, says where, and writes nothing", ([_what, plan, policy, message]) =>
    Effect.gen(function*() {
      const cwd = workspace(plan, policy)
      const r = yield* artana(["run", "plan.yaml", "--policy", "policy.yaml", "--run-id", "bad"], { cwd })
      expect(r.code).toBe(2)
      expect(r.stderr).toContain(message)
      expect(fs.existsSync(path.join(cwd, "artana.db"))).toBe(false)
    }), 120_000)

  it.live("a missing policy file or run id is bad input or not found, and writes nothing", () =>
    Effect.gen(function*() {
      const cwd = workspace(PLAN)
      const noPolicy = yield* artana(["run", "plan.yaml", "--policy", "nope.yaml"], { cwd })
      expect(noPolicy.code).toBe(2)
      expect(noPolicy.stderr).toContain("nope.yaml")
      expect(fs.existsSync(path.join(cwd, "artana.db"))).toBe(false)
      const noRun = yield* artana(["replay"], { cwd })
      expect(noRun.code).toBe(2)
    }), 120_000)
})
