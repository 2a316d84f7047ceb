// A plan run killed (SIGKILL, the whole process group) in the middle of a step: `artana run --run-id` with the same
// plan continues it from its log. The completed step is not run again, and the step caught in doubt (a
// non-idempotent shell command: it may or may not have happened) is never repeated silently: the run needs
// reconciliation (exit 8), and the report shows it in doubt.
import { afterAll, describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import * as fs from "node:fs"
import * as path from "node:path"
import { artana, artanaJson, artanaStarted, cleanup, tempDir } from "./helpers.js"

afterAll(cleanup)

const POLICY = `default: deny
tools:
  fs.write: { allow: true, paths: ["workspace/out/**"] }
  shell.run: { allow: true, executables: [sleep], timeout_ms: 60000 }
`

const PLAN = `steps:
  - { id: first, tool: fs.write, args: { path: workspace/out/first.txt, content: "written once" } }
  - { id: slow, tool: shell.run, args: { command: sleep, args: ["30"] } }
  - { id: last, tool: fs.write, args: { path: workspace/out/last.txt, content: "never" } }
`

describe("a plan run killed mid-step", () => {
  it.live("continues from its log with --run-id: done steps are not repeated, the step in doubt is not run again", () =>
    Effect.gen(function*() {
      const cwd = tempDir()
      fs.mkdirSync(path.join(cwd, "workspace/out"), { recursive: true })
      fs.writeFileSync(path.join(cwd, "policy.yaml"), POLICY)
      fs.writeFileSync(path.join(cwd, "plan.yaml"), PLAN)
      const first = path.join(cwd, "workspace/out/first.txt")
      const started = artanaStarted(["run", "plan.yaml", "--policy", "policy.yaml", "--run-id", "crash-1"], { cwd })
      // The first step is done once its file exists; the sleep's request is logged right after, then it sleeps.
      const deadline = Date.now() + 60_000
      while (!fs.existsSync(first) && Date.now() < deadline) yield* Effect.sleep("100 millis")
      expect(fs.existsSync(first)).toBe(true)
      yield* Effect.sleep("2 seconds")
      expect(yield* Effect.promise(() => started.kill())).toBeNull()
      const firstWrittenAt = fs.statSync(first).mtimeMs

      const again = yield* artanaJson(["run", "plan.yaml", "--policy", "policy.yaml", "--run-id", "crash-1"], { cwd })
      expect(again.json).toEqual({ runId: "crash-1", status: "needs_reconciliation" })
      expect(again.code).toBe(8)
      expect(fs.statSync(first).mtimeMs).toBe(firstWrittenAt)
      expect(fs.existsSync(path.join(cwd, "workspace/out/last.txt"))).toBe(false)

      const report = yield* artanaJson(["report", "crash-1"], { cwd })
      expect(report.code).toBe(8)
      expect(report.json).toMatchObject({
        status: "needs_reconciliation",
        steps: [{ id: "first", status: "ok" }, { id: "slow", status: "in_doubt", outputHash: null }, { id: "last", status: "skipped" }]
      })
      // Another plan under the same run id is refused, and writes nothing.
      fs.writeFileSync(path.join(cwd, "other.yaml"), PLAN.replace('"30"', '"1"'))
      const eventCount = Effect.map(artanaJson(["show-run", "crash-1"], { cwd }), (r) => (r.json as { events: ReadonlyArray<unknown> }).events.length)
      const before = yield* eventCount
      const other = yield* artana(["run", "other.yaml", "--policy", "policy.yaml", "--run-id", "crash-1"], { cwd })
      expect(other.code).toBe(6)
      expect(other.stderr).toContain("the plan does not match the log of run crash-1")
      expect(yield* eventCount).toBe(before)
    }), 180_000)
})
