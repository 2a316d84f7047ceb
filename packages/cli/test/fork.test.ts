// `artana fork`: a child process running the real command against a SQLite file the test drives through the kernel:
// the fork's log written, its id and the commands to go on printed, show-run naming where it came from; bad input and
// another tenant's run write nothing.
import { afterAll, describe, expect, it } from "@effect/vitest"
import { Kernel, Workflow } from "@artana/core"
import { Effect, Schema } from "effect"
import * as path from "node:path"
import { artana, cleanup, sqliteKernel, tempDir, tenant } from "./helpers.js"

afterAll(cleanup)

/** Three memoized steps; the output adds them up. */
const add = Workflow.make({
  name: "add",
  input: Schema.Null,
  output: Schema.Number,
  run: (_input, ctx) =>
    Effect.gen(function*() {
      const a = yield* ctx.step("a", Effect.succeed(1), Schema.Number, { key: "a" })
      const b = yield* ctx.step("b", Effect.succeed(2), Schema.Number, { key: "b" })
      const c = yield* ctx.step("c", Effect.succeed(3), Schema.Number, { key: "c" })
      return a + b + c
    })
})

const inKernel = <A, E>(db: string, f: (kernel: Kernel.Service) => Effect.Effect<A, E>) =>
  Effect.flatMap(Kernel.Kernel, f).pipe(Effect.provide(sqliteKernel(db)))

describe("artana fork", () => {
  it.live("writes the fork, prints its id and how to go on; show-run names where it came from; bad input writes nothing", () =>
    Effect.gen(function*() {
      const dir = tempDir()
      const db = path.join(dir, "runs.db")
      const where = ["--db", db, "--tenant", "acme"]
      expect(yield* inKernel(db, (k) => k.execute(add, { runId: "sum", tenant: tenant("acme"), input: null }))).toMatchObject({ output: 6 })

      for (const bad of [["--at", "2", "--step", "b"], [], ["--step", "b", "--set", "b=nope"], ["--step", "b", "--set", "nokey"]]) {
        const refused = yield* artana(["fork", "sum", ...bad, ...where], { cwd: dir })
        expect([bad, refused.code]).toEqual([bad, 2])
      }
      const otherTenant = yield* artana(["fork", "sum", "--at", "2", "--db", db, "--tenant", "globex"], { cwd: dir })
      expect(otherTenant.code).toBe(5)

      // Through step b, whose value becomes 20: the fork ends at seq 3 (RunStarted, a, b).
      const forked = yield* artana(["fork", "sum", "--step", "b", "--set", "b=20", ...where, "--format", "json"], { cwd: dir })
      expect(forked.code).toBe(0)
      const doc = JSON.parse(forked.stdout)
      expect(doc).toMatchObject({ forkedFrom: { runId: "sum", seq: 3, overridden: ["b"] }, created: true, workflow: "add" })
      expect(doc.showRun).toBe(`artana show-run ${doc.runId} --tenant acme --db ${db}`)
      const again = yield* artana(["fork", "sum", "--step", "b", "--set", "b=20", ...where], { cwd: dir })
      expect(again.stdout).toContain(`fork exists: run sum at seq 3 → ${doc.runId}`)

      const shown = yield* artana(["show-run", doc.runId, ...where], { cwd: dir })
      expect(shown.code).toBe(0)
      expect(shown.stdout).toContain("forked from sum at seq 3 (replaced: b)")
      const json = yield* artana(["show-run", doc.runId, ...where, "--format", "json"], { cwd: dir })
      expect(JSON.parse(json.stdout)).toMatchObject({ forkedFrom: { runId: "sum", seq: 3 }, chain: { ok: true } })

      // A cut-back point is said so; then the application drives the fork on: step c runs live on b = 20.
      const cut = yield* artana(["fork", "sum", "--at", "9", ...where], { cwd: dir })
      expect(cut.stdout).toContain("at seq 4 (cut back from 9 to the step boundary before it)")
      expect(yield* inKernel(db, (k) => k.resume({ tenantId: "acme", runId: doc.runId, workflow: add }))).toEqual({ status: "completed", runId: doc.runId, output: 24 })
      expect(yield* inKernel(db, (k) => k.verify({ tenantId: "acme", runId: "sum" }))).toMatchObject({ ok: true })
    }), 180_000)
})
