// Issue 19's CI recipe, as the README gives it: runs of production exported (`artana export`), imported into a file of
// the CI's (`artana import`, each chain verified), and replayed against the code about to be deployed
// (`artana replay-test --workflows MODULE`): a change runs past it cannot replay fails the build, naming both sides;
// the same change behind `ctx.patched` passes. Real processes on real SQLite files.
import { afterAll, beforeAll, describe, expect, it } from "@effect/vitest"
import { EventStore, Kernel, ToolRegistry } from "@artana/core"
import { ScriptedModel } from "@artana/core/testing"
import { SqliteStore } from "@artana/store-sqlite"
import { Effect, Layer } from "effect"
import * as fs from "node:fs"
import * as path from "node:path"
import { fileURLToPath } from "node:url"
import { loadUserCode } from "../src/internal/versionCommands.js"
import { artana, ARTANA_TSX, cleanup, tempDir, tenant } from "./helpers.js"

afterAll(cleanup)

const fixture = (name: string) => fileURLToPath(new URL(`./fixtures/${name}`, import.meta.url))
// `replay-test` runs under tsx: the application's modules it loads import @artana/core and effect, and get the very
// modules the command runs on, as an application's do from its node_modules (see helpers.ts, ARTANA_TSX).
const acme = tenant("acme")
let dir = ""
let prod = ""

beforeAll(async () => {
  dir = tempDir()
  prod = path.join(dir, "prod.db")
  // Production: version 1 of "approve" ran three runs: two completed (approved, rejected), one paused at its person.
  await Effect.runPromise(Effect.gen(function*() {
    const code = yield* loadUserCode(fixture("approve-v1.mjs"))
    const approve = code.workflows[0]!
    const layer = Layer.provideMerge(
      Kernel.layer({ workflows: code.workflows }),
      Layer.mergeAll(SqliteStore.layer({ filename: prod }), ScriptedModel.layer([]), ToolRegistry.layer([]))
    )
    yield* Effect.gen(function*() {
      const kernel = yield* Kernel.Kernel
      for (const [runId, amount] of [["done-1", 10], ["done-2", 20], ["waiting", 30]] as const) {
        yield* kernel.execute(approve, { runId, tenant: acme, input: { amount } })
      }
      yield* kernel.resume({ tenantId: "acme", runId: "done-1", response: { approved: true } })
      yield* kernel.resume({ tenantId: "acme", runId: "done-2", response: { approved: false } })
      expect((yield* (yield* EventStore.EventStore).getRun("acme", "done-2")).status).toBe("completed")
    }).pipe(Effect.provide(layer))
  }))
})

describe("artana replay-test (with export and import)", () => {
  it.effect("exported runs imported into CI replay against the current code: a change past them fails, the same change behind patched passes", () =>
    Effect.gen(function*() {
      const sample = path.join(dir, "sample")
      fs.mkdirSync(sample)
      const ci = path.join(dir, "ci.db")
      for (const run of ["done-1", "done-2", "waiting"]) {
        const exported = yield* artana(["export", run, "--db", prod, "--tenant", "acme", "--out", path.join(sample, `${run}.jsonl`)], { cwd: dir })
        expect(exported.code).toBe(0)
      }
      const files = ["done-1", "done-2", "waiting"].map((r) => path.join(sample, `${r}.jsonl`))
      const imported = yield* artana(["import", ...files, "--db", ci, "--format", "json"], { cwd: dir })
      expect(imported.stderr).toBe("")
      expect(imported.code).toBe(0)
      expect(JSON.parse(imported.stdout).imported.map((r: { readonly runId: string }) => r.runId)).toEqual(["done-1", "done-2", "waiting"])

      // The code as deployed: every run replays as logged.
      const same = yield* artana(["replay-test", "--db", ci, "--tenant", "acme", "--workflows", fixture("approve-v1.mjs")], { cwd: dir, bin: ARTANA_TSX })
      expect(same.code).toBe(0)
      expect(same.stdout).toContain("3 runs of tenant acme: 3 replayed as logged, 0 diverged")
      expect(same.stdout).toMatch(/RUN\s+WORKFLOW\s+VERSION\s+STATUS\s+REPLAY/)

      // The change: both completed runs diverge (exit 6), each reported with the logged step and the code's.
      const changed = yield* artana(["replay-test", "--db", ci, "--tenant", "acme", "--workflows", fixture("approve-v2.mjs"), "--format", "json"], { cwd: dir, bin: ARTANA_TSX })
      expect(changed.code).toBe(6)
      const report = JSON.parse(changed.stdout)
      expect(report).toMatchObject({ ok: 1, diverged: 2, errors: 0, skipped: 0 })
      const done1 = report.runs.find((r: { readonly runId: string }) => r.runId === "done-1")
      expect(done1).toMatchObject({ result: "diverged", workflow: "approve", version: "1", status: "completed", stepKey: "step:2" })
      expect(done1.recorded).toContain(`step "notify"`)
      expect(done1.now).toContain(`step "audit"`)
      const console = yield* artana(["replay-test", "--db", ci, "--tenant", "acme", "--workflows", fixture("approve-v2.mjs")], { cwd: dir, bin: ARTANA_TSX })
      expect(console.code).toBe(6)
      expect(console.stdout).toContain(`done-1 diverged at step step:2:\n  recorded: step "notify"`)

      // Behind ctx.patched, the change replays every run (the paused one will take the new path when answered).
      const patched = yield* artana(["replay-test", "--db", ci, "--tenant", "acme", "--workflows", fixture("approve-v2-patched.mjs")], { cwd: dir, bin: ARTANA_TSX })
      expect(patched.stdout).toContain("3 replayed as logged, 0 diverged")
      expect(patched.code).toBe(0)

      // The count per version, and list-runs by version.
      const counted = yield* artana(["versions", "--db", ci, "--all-tenants", "--format", "json"], { cwd: dir })
      expect(JSON.parse(counted.stdout).versions).toEqual([{ workflow: "approve", version: "1", runs: 3, inFlight: 1, lastCreatedAt: expect.any(Number) }])
      const listed = yield* artana(["list-runs", "--db", ci, "--tenant", "acme", "--version", "2", "--format", "json"], { cwd: dir })
      expect(JSON.parse(listed.stdout).runs).toEqual([])
    }))

  it.effect("import refuses a file edited after its export, writing nothing; and a run already in the store", () =>
    Effect.gen(function*() {
      const file = path.join(dir, "edited.jsonl")
      expect((yield* artana(["export", "done-1", "--db", prod, "--tenant", "acme", "--out", file], { cwd: dir })).code).toBe(0)
      const ci = path.join(dir, "ci-2.db")
      expect((yield* artana(["import", file, "--db", ci], { cwd: dir })).code).toBe(0)
      const again = yield* artana(["import", file, "--db", ci], { cwd: dir })
      expect(again.code).toBe(2)
      expect(again.stderr).toContain("already in the store")
      fs.writeFileSync(file, fs.readFileSync(file, "utf8").replace(`"approved"`, `"rejected"`))
      const fresh = path.join(dir, "ci-3.db")
      const edited = yield* artana(["import", file, "--db", fresh], { cwd: dir })
      expect(edited.code).toBe(6)
      const runs = yield* artana(["list-runs", "--db", fresh, "--tenant", "acme", "--format", "json"], { cwd: dir })
      expect(JSON.parse(runs.stdout).runs).toEqual([])
    }))
})
