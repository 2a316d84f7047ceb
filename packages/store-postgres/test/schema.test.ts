// The schema guard on PostgreSQL (a database from a newer Artana, or changed by hand, is refused on open, before
// anything is written) and read-only stores (no migration, no write).
import { describe, expect, it } from "@effect/vitest"
import { inject } from "vitest"
import { Context, Effect, Layer } from "effect"
import { EventStore, SqlEventStore, SqlTaskQueue, Tenant } from "@artana/core"
import { TestLog } from "@artana/core/testing"
import { PostgresStore } from "@artana/store-postgres"
import { PgTest } from "@artana/store-postgres/testing"

const pg = PgTest.server(inject("artanaPg"))
const tenant = Tenant.TenantContext.make({ tenantId: "acme", capabilities: [], budgetUsdLimit: 1 })
const started = { _tag: "RunStarted", workflow: "w", input: null, tenant } as const

const codeVersion = (migrations: Readonly<Record<string, unknown>>) => Math.max(...Object.keys(migrations).map((id) => Number.parseInt(id, 10)))

const open = (options: PostgresStore.Options) =>
  Effect.scoped(Effect.gen(function*() {
    const store = Context.get(yield* Layer.build(PostgresStore.layer(options)), EventStore.EventStore)
    const runs = (yield* store.listRuns("acme")).map((r) => r.runId)
    const append = yield* Effect.either(store.append({ runId: "run-2", tenantId: "acme", expectedSeq: 0, events: TestLog.chain("run-2", "acme", [], [started]) }))
    return { runs, appended: append._tag === "Right" }
  }))

const tables = (url: string) =>
  PgTest.withClient(url, (sql) =>
    Effect.map(sql<{ name: string }>`SELECT table_name AS name FROM information_schema.tables WHERE table_schema = current_schema() ORDER BY table_name`, (rows) => rows.map((r) => r.name)))

describe.skipIf(pg.url === undefined)(`schema guard on PostgreSQL (${pg.description})`, () => {
  const server = pg.url!
  /** A fresh database holding run-1, written by this code. */
  const seeded = Effect.gen(function*() {
    const url = yield* PgTest.freshDatabase(server)
    yield* Effect.scoped(Effect.gen(function*() {
      const store = Context.get(yield* Layer.build(PostgresStore.layer({ url })), EventStore.EventStore)
      yield* store.append({ runId: "run-1", tenantId: "acme", expectedSeq: 0, events: TestLog.chain("run-1", "acme", [], [started]) })
    }))
    return url
  })

  it.scoped("a migration in the ledger that this Artana does not know is refused, naming both versions, read-only or not", () =>
    Effect.gen(function*() {
      const url = yield* seeded
      yield* PgTest.withClient(url, (sql) => sql`INSERT INTO event_store_migrations (id) VALUES ('99_from_the_future')`)
      for (const readOnly of [false, true]) {
        const error = yield* Effect.flip(open({ url, readOnly }))
        expect(error).toMatchObject({ _tag: "SchemaMismatch", schema: "event_store", databaseVersion: 99, codeVersion: codeVersion(SqlEventStore.migrations()) })
        expect(error.message).toContain("99_from_the_future")
        expect(error.message).toContain("upgrade Artana")
      }
      const [count] = yield* PgTest.withClient(url, (sql) => sql<{ n: string }>`SELECT count(*) AS n FROM runs`)
      expect(Number(count!.n)).toBe(1)
    }))

  it.scoped("a renamed column is refused on open, naming the table and the column", () =>
    Effect.gen(function*() {
      const url = yield* seeded
      yield* PgTest.withClient(url, (sql) => sql`ALTER TABLE tasks RENAME COLUMN lease_expires_at TO lease_until`)
      const error = yield* Effect.flip(open({ url }))
      expect(error).toMatchObject({ _tag: "SchemaMismatch", schema: "task_queue", codeVersion: codeVersion(SqlTaskQueue.migrations()) })
      expect(error.message).toContain("table tasks has no column lease_expires_at")
    }))

  it.scoped("readOnly: a migrated database is read, and a write refused; a fresh one is refused, and nothing is created", () =>
    Effect.gen(function*() {
      const url = yield* seeded
      expect(yield* open({ url, readOnly: true })).toEqual({ runs: ["run-1"], appended: false })
      const empty = yield* PgTest.freshDatabase(server)
      const error = yield* Effect.flip(open({ url: empty, readOnly: true }))
      expect(error).toMatchObject({ _tag: "SchemaMismatch", schema: "event_store" })
      expect(error.message).toContain("has no table runs")
      expect(yield* tables(empty)).toEqual([])
    }))
})
