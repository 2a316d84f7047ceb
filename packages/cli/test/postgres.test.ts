// The CLI on PostgreSQL: `--db postgres://...` opens @artana/store-postgres. A fresh database per test, on the
// server the global setup provides (ARTANA_TEST_PG_URL, or a throwaway cluster); under CI=true a missing server
// fails the run.
import { afterAll, describe, expect, it } from "@effect/vitest"
import { EventStore, Kernel, Middleware, ToolRegistry } from "@artana/core"
import { ScriptedModel, TestLog } from "@artana/core/testing"
import { Plan, PlanRunner } from "@artana/cli"
import { PostgresStore } from "@artana/store-postgres"
import { PgTest } from "@artana/store-postgres/testing"
import { Effect, Either, Layer } from "effect"
import { inject } from "vitest"
import { artana, artanaJson, boom, cleanup, denySecret, echo, secret, tempDir, tenant } from "./helpers.js"

afterAll(cleanup)

const pg = PgTest.server(inject("artanaPg"))

const pgKernel = (url: string) =>
  Layer.provideMerge(
    Kernel.layer(),
    Layer.mergeAll(PostgresStore.layer({ url }), ScriptedModel.layer([]), ToolRegistry.layer([echo, boom, secret]), Middleware.layer([denySecret]))
  )

describe.skipIf(pg.url === undefined)(`artana on PostgreSQL (${pg.description})`, () => {
  it.live("report, list-runs, show-run and verify read a PostgreSQL database given as --db postgres://", () =>
    Effect.gen(function*() {
      const url = yield* PgTest.freshDatabase(pg.url!)
      const plan = Either.getOrThrow(Plan.parse("on_error: continue\nsteps:\n  - { id: a, tool: echo, args: { text: x } }\n  - { id: b, tool: secret }\n", { file: "plan.yaml" }))
      yield* PlanRunner.run({ runId: "pg-plan", tenant: tenant("acme"), input: { plan } }).pipe(Effect.provide(pgKernel(url)))
      const cwd = tempDir()
      const report = yield* artanaJson(["report", "pg-plan", "--db", url, "--tenant", "acme"], { cwd })
      expect(report.code).toBe(3)
      expect(report.json).toMatchObject({ runId: "pg-plan", status: "completed", steps: [{ id: "a", status: "ok" }, { id: "b", status: "denied", decision: "denied" }] })
      const list = yield* artanaJson(["list-runs", "--tenant", "acme"], { cwd, env: { ARTANA_DB: url } })
      expect(list.json).toMatchObject({ runs: [{ runId: "pg-plan", workflow: "artana.plan" }] })
      const verify = yield* artana(["verify", "pg-plan", "--db", url, "--tenant", "acme"], { cwd })
      expect(verify.code).toBe(0)
      const missing = yield* artana(["show-run", "nope", "--db", url, "--tenant", "acme"], { cwd })
      expect(missing.code).toBe(5)
    }).pipe(Effect.scoped), 120_000)

  it.live("list-runs pages a PostgreSQL store with --after, under --status, --workflow and --since/--until, and show-run pages its events", () =>
    Effect.gen(function*() {
      const url = yield* PgTest.freshDatabase(pg.url!)
      const acme = tenant("acme")
      // Five runs a day apart, two of them in one millisecond (the run id orders those on PostgreSQL).
      yield* Effect.gen(function*() {
        const store = yield* EventStore.EventStore
        for (const [runId, day, workflow] of [["d0", 0, "alpha"], ["d1", 1, "beta"], ["d2-a", 2, "alpha"], ["d2-b", 2, "alpha"], ["d3", 3, "beta"]] as const) {
          const events = TestLog.chain(runId, "acme", [], [{ _tag: "RunStarted", workflow, input: null, tenant: acme }, { _tag: "StepCompleted", name: "one", value: 1 }, { _tag: "RunCompleted", output: null }], TestLog.T0 + day * 86_400_000)
          yield* store.append({ runId, tenantId: "acme", expectedSeq: 0, events })
        }
      }).pipe(Effect.provide(PostgresStore.layer({ url })))
      const cwd = tempDir()
      const walk = (filters: ReadonlyArray<string>) =>
        Effect.gen(function*() {
          const pages: Array<ReadonlyArray<string>> = []
          let after: string | null = null
          do {
            const page = yield* artanaJson(["list-runs", "--db", url, "--tenant", "acme", "--limit", "2", ...filters, ...(after === null ? [] : ["--after", after])], { cwd })
            expect(page.code).toBe(0)
            const listed = page.json as { runs: ReadonlyArray<{ runId: string }>; next: string | null }
            pages.push(listed.runs.map((r) => r.runId))
            after = listed.next
          } while (after !== null && pages.length < 10)
          return pages
        })
      expect(yield* walk([])).toEqual([["d3", "d2-a"], ["d2-b", "d1"], ["d0"]])
      expect(yield* walk(["--workflow", "alpha"])).toEqual([["d2-a", "d2-b"], ["d0"]])
      expect(yield* walk(["--status", "completed", "--since", String(TestLog.T0 + 86_400_000), "--until", String(TestLog.T0 + 3 * 86_400_000)])).toEqual([["d2-a", "d2-b"], ["d1"]])
      const page = yield* artanaJson(["show-run", "d1", "--db", url, "--tenant", "acme", "--from", "2", "--limit", "1"], { cwd })
      expect(page.json).toMatchObject({ chain: { ok: true }, next: 3, omitted: null, events: [{ seq: 2, type: "StepCompleted" }] })
    }).pipe(Effect.scoped), 180_000)

  it.live("a server that cannot be reached is exit 7, with the URL's password hidden", () =>
    Effect.gen(function*() {
      const r = yield* artana(["list-runs", "--db", "postgres://app:s3cret@127.0.0.1:1/artana"], { cwd: tempDir() })
      expect(r.code).toBe(7)
      expect(r.stderr).toContain("cannot open the postgres store at postgres://app:***@127.0.0.1:1/artana")
      expect(r.stderr).not.toContain("s3cret")
    }), 60_000)
})
