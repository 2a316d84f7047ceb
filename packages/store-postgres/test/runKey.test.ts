// Migration 12 on PostgreSQL: a database of the ten-column events layout (tenant_id, run_id, type; hashes and ids
// already bytes), with runs of two tenants under one run id, is copied into eight columns keyed by the run's surrogate
// key, and every run reads, verifies and appends as before.
import { describe, expect, it } from "@effect/vitest"
import { inject } from "vitest"
import { Context, Effect, Layer } from "effect"
import { SqlClient } from "@effect/sql"
import { type Event, EventStore, SqlEventStore, SqlMigrations, Tenant, Verify } from "@artana/core"
import { TestLog } from "@artana/core/testing"
import { PostgresStore } from "@artana/store-postgres"
import { PgTest } from "@artana/store-postgres/testing"

const pg = PgTest.server(inject("artanaPg"))
const acme = Tenant.TenantContext.make({ tenantId: "acme", capabilities: [], budgetUsdLimit: 1 })
const other = Tenant.TenantContext.make({ tenantId: "other", capabilities: [], budgetUsdLimit: 1 })
const started = (tenant: Tenant.TenantContext) => ({ _tag: "RunStarted", workflow: "w", input: null, tenant }) as const
const step = (name: string) => ({ _tag: "StepCompleted", name, value: { name, note: "x".repeat(40) } }) as const

/** The migrations before 12: the events table of ten columns. */
const beforeRunKey = () => Object.fromEntries(Object.entries(SqlEventStore.migrations()).filter(([id]) => Number.parseInt(id, 10) < 12))

/** A run written as the store wrote it before migration 12: its row at its head, its events under (tenant_id, run_id). */
const insertTenColumns = (sql: SqlClient.SqlClient, events: ReadonlyArray<Event.Event>, status: string) =>
  Effect.gen(function*() {
    const first = events[0]!
    const last = events[events.length - 1]!
    yield* sql`INSERT INTO runs (run_id, tenant_id, workflow, root_run_id, status, head_seq, head_hash, cost_usd, created_at, updated_at)
  VALUES (${first.runId}, ${first.tenantId}, 'w', ${first.runId}, ${status}, ${last.seq}, ${SqlEventStore.packedHash(last.hash)}, 0, ${first.timestamp}, ${last.timestamp})`
    for (const [seq, eventId, timestamp, type, stepKey, payload, prevHash, hash] of SqlEventStore.eventValues(events).rows) {
      yield* sql`INSERT INTO events (run_id, seq, event_id, tenant_id, timestamp, type, step_key, payload, prev_hash, hash)
  VALUES (${first.runId}, ${seq}, ${eventId}, ${first.tenantId}, ${timestamp}, ${type}, ${stepKey}, ${payload}, ${prevHash}, ${hash})`
    }
  })

const open = (url: string) => Effect.map(Layer.build(PostgresStore.layer({ url })), (context) => Context.get(context, EventStore.EventStore))

/** The run's events read back and verified against its row's head. */
const verified = (store: EventStore.Service, tenantId: string, runId: string) =>
  Effect.gen(function*() {
    const run = yield* store.getRun(tenantId, runId)
    const events = yield* store.readEvents(tenantId, runId)
    return { events, report: Verify.verifyEvents(runId, events, { heads: [{ source: "store", seq: run.headSeq, hash: run.headHash }] }) }
  })

describe.skipIf(pg.url === undefined)(`migration 12, the events' run key, on PostgreSQL (${pg.description})`, () => {
  it.scoped("runs of the ten-column layout are copied into eight columns: each reads back, verifies and goes on, tenants kept apart", () =>
    Effect.gen(function*() {
      const url = yield* PgTest.freshDatabase(pg.url!)
      const ours = TestLog.chain("r-1", "acme", [], [started(acme), ...Array.from({ length: 20 }, (_, i) => step(`s${i}`))])
      const theirs = TestLog.chain("r-1", "other", [], [started(other), step("theirs")])
      yield* PgTest.withClient(url, (sql) =>
        Effect.gen(function*() {
          yield* Effect.orDie(SqlMigrations.run({ name: "event_store", migrations: beforeRunKey() }))
          yield* insertTenColumns(sql, ours, "running")
          yield* insertTenColumns(sql, theirs, "paused")
        }).pipe(Effect.provideService(SqlClient.SqlClient, sql)))

      const store = yield* open(url)
      const read = yield* verified(store, "acme", "r-1")
      expect(read.events).toEqual(ours)
      expect(read.report).toMatchObject({ ok: true, events: 21 })
      expect((yield* verified(store, "other", "r-1")).events).toEqual(theirs)
      // A page from the middle completes its first prev_hash from the row before it.
      expect(yield* store.readEvents("acme", "r-1", 11, 5)).toEqual(ours.slice(10, 15))

      // A step (events only), then the run's end (its row too): both after the migrated head.
      const more = TestLog.chain("r-1", "acme", ours, [step("after"), { _tag: "RunCompleted", output: "done" }])
      yield* store.append({ runId: "r-1", tenantId: "acme", expectedSeq: 21, events: more.slice(0, 1) })
      yield* store.append({ runId: "r-1", tenantId: "acme", expectedSeq: 22, events: more.slice(1) })
      const after = yield* verified(store, "acme", "r-1")
      expect(after.events).toEqual([...ours, ...more])
      expect(after.report).toMatchObject({ ok: true, events: 23 })
      expect(yield* store.getRun("acme", "r-1")).toMatchObject({ status: "completed", headSeq: 23, headHash: more[1]!.hash })
      // The other tenant's run of the same id did not move; a stale writer of it conflicts.
      expect(yield* store.getRun("other", "r-1")).toMatchObject({ status: "paused", headSeq: 2 })
      const stale = TestLog.chain("r-1", "other", theirs.slice(0, 1), [step("stale")])
      expect((yield* Effect.flip(store.append({ runId: "r-1", tenantId: "other", expectedSeq: 1, events: stale })))._tag).toBe("SequenceConflict")

      // Stored in eight columns, no type, no tenant, keyed by the run's surrogate key.
      const layout = yield* PgTest.withClient(url, (sql) =>
        Effect.all({
          columns: sql<{ name: string }>`SELECT attname AS name FROM pg_attribute WHERE attrelid = 'events'::regclass AND attnum > 0 ORDER BY attnum`,
          perRun: sql<{ run_id: string; n: number }>`SELECT r.run_id || '/' || r.tenant_id AS run_id, count(*)::int AS n FROM events e JOIN runs r USING (run_key) GROUP BY 1 ORDER BY 1`
        }))
      expect(layout.columns.map((c) => c.name)).toEqual(["run_key", "timestamp", "seq", "event_id", "step_key", "payload", "prev_hash", "hash"])
      expect(layout.perRun).toEqual([{ run_id: "r-1/acme", n: 23 }, { run_id: "r-1/other", n: 2 }])
    }))

  it.scoped("an event whose run has no row stops the migration, which names the count and leaves the old table whole", () =>
    Effect.gen(function*() {
      const url = yield* PgTest.freshDatabase(pg.url!)
      const ours = TestLog.chain("r-1", "acme", [], [started(acme), step("a")])
      yield* PgTest.withClient(url, (sql) =>
        Effect.gen(function*() {
          yield* Effect.orDie(SqlMigrations.run({ name: "event_store", migrations: beforeRunKey() }))
          yield* insertTenColumns(sql, ours, "running")
          yield* sql`DELETE FROM runs`
        }).pipe(Effect.provideService(SqlClient.SqlClient, sql)))
      const error = yield* Effect.flip(open(url))
      expect(error.message).toContain("2 events of table events belong to no run of table runs")
      const kept = yield* PgTest.withClient(url, (sql) => sql<{ n: number }>`SELECT count(*)::int AS n FROM events WHERE run_id = 'r-1' AND type = 'StepCompleted'`)
      expect(kept).toEqual([{ n: 1 }])
    }))
})
