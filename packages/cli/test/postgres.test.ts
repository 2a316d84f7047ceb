// The CLI on PostgreSQL: `--db postgres://...` opens @artana/store-postgres. A fresh database per test, on the
// server the global setup provides (ARTANA_TEST_PG_URL, or a throwaway cluster); under CI=true a missing server
// fails the run.
import { afterAll, describe, expect, it } from "@effect/vitest"
import { Kernel, Middleware, ToolRegistry } from "@artana/core"
import { ScriptedModel } from "@artana/core/testing"
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

  it.live("a server that cannot be reached is exit 7, with the URL's password hidden", () =>
    Effect.gen(function*() {
      const r = yield* artana(["list-runs", "--db", "postgres://app:s3cret@127.0.0.1:1/artana"], { cwd: tempDir() })
      expect(r.code).toBe(7)
      expect(r.stderr).toContain("cannot open the postgres store at postgres://app:***@127.0.0.1:1/artana")
      expect(r.stderr).not.toContain("s3cret")
    }), 60_000)
})
