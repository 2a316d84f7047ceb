// A continue-as-new chain as the read commands show it: list-runs marks continued runs, show-run names a run's
// predecessor and successor. Real child processes against a SQLite file written in-process through the kernel.
import { afterAll, beforeAll, describe, expect, it } from "@effect/vitest"
import { Kernel, Workflow } from "@artana/core"
import type { Event } from "@artana/core"
import { Effect, Schema } from "effect"
import * as path from "node:path"
import { artana, artanaJson, cleanup, echo, sqliteKernel, tempDir, tenant } from "./helpers.js"

afterAll(cleanup)

/** Three runs: `pages` continues as `pages::continued::1`, which continues as `pages::continued::2`. */
const pages = Workflow.make({
  name: "pages",
  input: Schema.Number,
  output: Schema.Number,
  run: (page, ctx) =>
    Effect.gen(function*() {
      yield* ctx.tool(echo, { text: `page ${page}` })
      return page < 2 ? yield* ctx.continueAsNew(page + 1) : page
    })
})

let dir = ""
let db = ""

beforeAll(async () => {
  dir = tempDir()
  db = path.join(dir, "runs.db")
  await Effect.runPromise(
    Effect.flatMap(Kernel.Kernel, (k) => k.execute(pages, { runId: "pages", tenant: tenant("acme"), input: 0 })).pipe(Effect.provide(sqliteKernel(db)))
  )
}, 60_000)

describe("a continue-as-new chain in the read commands", () => {
  it.live("list-runs marks continued runs and filters by --status continued", () =>
    Effect.gen(function*() {
      const table = yield* artana(["list-runs", "--db", db, "--tenant", "acme"], { cwd: dir })
      expect(table.code).toBe(0)
      expect(table.stdout).toMatch(/^pages\s+pages\s+↪ continued\s/m)
      expect(table.stdout).toMatch(/^pages::continued::2\s+pages\s+✓ completed\s/m)
      expect(table.stdout).toContain("↪ continued: the run went on as a new run of its chain")
      const continued = yield* artanaJson(["list-runs", "--db", db, "--tenant", "acme", "--status", "continued"], { cwd: dir })
      expect((continued.json as { runs: ReadonlyArray<Event.RunInfo> }).runs.map((r) => r.runId).sort()).toEqual(["pages", "pages::continued::1"])
    }))

  it.live("show-run names the run's predecessor and successor", () =>
    Effect.gen(function*() {
      const middle = yield* artana(["show-run", "pages::continued::1", "--db", db, "--tenant", "acme"], { cwd: dir })
      expect(middle.code).toBe(0)
      expect(middle.stdout).toContain("continues pages   (run 2 of chain pages)")
      expect(middle.stdout).toContain("continued as pages::continued::2   artana show-run pages::continued::2")
      expect(middle.stdout).toMatch(/RunStarted\s+pages \(continues run pages\)/)
      expect(middle.stdout).toMatch(/RunContinued\s+continued as run pages::continued::2 with 2/)
      const first = yield* artanaJson(["show-run", "pages", "--db", db, "--tenant", "acme"], { cwd: dir })
      expect(first.json).toMatchObject({ run: { runId: "pages", status: "continued" }, continuedAs: "pages::continued::1" })
      expect(first.json).not.toHaveProperty("continuedFrom")
      const last = yield* artanaJson(["show-run", "pages::continued::2", "--db", db, "--tenant", "acme"], { cwd: dir })
      expect(last.json).toMatchObject({ run: { status: "completed", rootRunId: "pages" }, continuedFrom: { runId: "pages::continued::1", chainRunId: "pages", generation: 2 } })
      expect(last.json).not.toHaveProperty("continuedAs")
    }))

  it.live("a signal to a continued run goes to the chain's last run; show-run shows a signal carried over", () => {
    /** The first run takes "first" and continues as new; its successor takes "later", then waits for "last". */
    const inbox = Workflow.make({
      name: "inbox",
      input: Schema.Number,
      output: Schema.String,
      run: (generation, ctx) =>
        Effect.gen(function*() {
          if (generation === 0) {
            yield* Effect.orDie(ctx.waitForSignal("first", Schema.String))
            return yield* ctx.continueAsNew(1)
          }
          const later = yield* Effect.orDie(ctx.waitForSignal("later", Schema.String))
          return `${later} ${yield* Effect.orDie(ctx.waitForSignal("last", Schema.String))}`
        })
    })
    const inProcess = <A, E>(f: (kernel: Kernel.Service) => Effect.Effect<A, E>) => Effect.provide(Effect.flatMap(Kernel.Kernel, f), sqliteKernel(db))
    return Effect.gen(function*() {
      expect(yield* inProcess((k) => k.execute(inbox, { runId: "inbox", tenant: tenant("acme"), input: 0 }))).toMatchObject({ status: "paused" })
      for (const name of ["later", "first"]) {
        expect((yield* artana(["signal", "inbox", name, "--payload", JSON.stringify(name), "--db", db, "--tenant", "acme"], { cwd: dir })).code).toBe(0)
      }
      // The first run takes "first" and continues; its successor takes the "later" it was handed, and waits.
      expect(yield* inProcess((k) => k.resume({ tenantId: "acme", runId: "inbox", workflow: inbox }))).toMatchObject({ status: "paused", runId: "inbox::continued::1" })
      const shown = yield* artana(["show-run", "inbox::continued::1", "--db", db, "--tenant", "acme"], { cwd: dir })
      expect(shown.stdout).toMatch(/SignalSent\s+later \(carried from run inbox seq 4\): "later"/)
      const sent = yield* artanaJson(["signal", "inbox", "last", "--payload", "\"done\"", "--db", db, "--tenant", "acme"], { cwd: dir })
      expect(sent.json).toMatchObject({ runId: "inbox::continued::1", name: "last", duplicate: false })
      expect(yield* inProcess((k) => k.resume({ tenantId: "acme", runId: "inbox", workflow: inbox }))).toMatchObject({ status: "completed", output: "later done" })
    })
  })
})
