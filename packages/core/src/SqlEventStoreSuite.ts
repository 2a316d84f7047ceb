/**
 * Migration tests of `SqlEventStore` that every SQL store runs (SQLite, PostgreSQL): a database made by an earlier
 * version of the schema, with runs in it, is opened by the current code; its data must be kept, and what the new
 * schema allows must work on it.
 *
 * @example
 * import { SqlEventStoreSuite } from "@artana/core/testing/suites"
 * SqlEventStoreSuite.suite("sqlite", Effect.sync(() => {
 *   const filename = tempFile()
 *   return { client: SqliteStore.layerClient({ filename }), store: SqliteStore.layer({ filename }) }
 * }))
 *
 * @since 0.1.0
 */
import * as SqlClient from "@effect/sql/SqlClient"
import * as Statement from "@effect/sql/Statement"
import * as crypto from "node:crypto"
import { describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import type * as Layer from "effect/Layer"
import type * as Scope from "effect/Scope"
import type { Event, EventPayload, RunInfo, RunStatus } from "./Event.js"
import * as ApprovalsIndex from "./ApprovalsIndex.js"
import { EventStore, type ListRunsPageFilter } from "./EventStore.js"
import { GENESIS_HASH } from "./internal/hash.js"
import * as SqlEventStore from "./SqlEventStore.js"
import * as SqlMigrations from "./SqlMigrations.js"
import { TenantContext } from "./Tenant.js"
import { chain, T0 } from "./TestLog.js"
import { verifyEvents } from "./Verify.js"

/** One database for one test: a bare client on it, and the store as an application opens it. */
export interface Database {
  readonly client: Layer.Layer<SqlClient.SqlClient, unknown>
  readonly store: Layer.Layer<EventStore | SqlClient.SqlClient, unknown>
  readonly tablePrefix?: string | undefined
}

const tenantA = TenantContext.make({ tenantId: "tenant-a", capabilities: ["finance:read"], budgetUsdLimit: 5 })
const tenantB = TenantContext.make({ tenantId: "tenant-b", capabilities: [], budgetUsdLimit: 1 })

/** The migrations of the schema before runs were keyed by tenant: a database as version 0.1 of Artana left it. */
const BEFORE_TENANT_KEY = ["1_event_store", "2_postgres_head_in_statement"]

const started = (tenant: TenantContext, lineage: { readonly parentRunId?: string; readonly rootRunId?: string } = {}): EventPayload => ({
  _tag: "RunStarted",
  workflow: "review",
  input: { document: "contract.pdf" },
  tenant,
  ...lineage
})

interface OldRun {
  readonly info: RunInfo
  readonly events: ReadonlyArray<Event>
}

const oldRun = (
  runId: string,
  tenant: TenantContext,
  payloads: ReadonlyArray<EventPayload>,
  start: number,
  status: RunInfo["status"],
  costUsd: number,
  eventId?: (runId: string, seq: number) => string
): OldRun => {
  const events = chain(runId, tenant.tenantId, [], payloads, start, eventId)
  const first = events[0]!
  const last = events[events.length - 1]!
  const lineage = first.payload._tag === "RunStarted" ? first.payload : undefined
  return {
    events,
    info: {
      runId,
      tenantId: tenant.tenantId,
      workflow: "review",
      ...(lineage?.parentRunId === undefined ? {} : { parentRunId: lineage.parentRunId }),
      rootRunId: lineage?.rootRunId ?? runId,
      status,
      headSeq: last.seq,
      headHash: last.hash,
      costUsd,
      createdAt: first.timestamp,
      updatedAt: last.timestamp,
      // Runs from before owner epochs read back at epoch 0 (the migration's default).
      ownerEpoch: 0,
      // And runs from before versions at version "1" (migration 7's default).
      version: "1"
    }
  }
}

/** Writes a run as the old store wrote it: the row at head 0, its events (SQLite's trigger moves the head), the row's final state. */
const insertOld = (sql: SqlClient.SqlClient, prefix: string, run: OldRun) =>
  Effect.gen(function*() {
    const { info } = run
    yield* sql`INSERT INTO ${sql(`${prefix}runs`)} ${
      sql.insert({
        run_id: info.runId,
        tenant_id: info.tenantId,
        workflow: info.workflow,
        parent_run_id: info.parentRunId ?? null,
        root_run_id: info.rootRunId,
        status: "running",
        head_seq: 0,
        head_hash: GENESIS_HASH,
        cost_usd: 0,
        created_at: info.createdAt,
        updated_at: info.createdAt
      })
    }`
    for (const e of run.events) {
      yield* sql`INSERT INTO ${sql(`${prefix}events`)} ${
        sql.insert({
          run_id: e.runId,
          seq: e.seq,
          event_id: e.eventId,
          tenant_id: e.tenantId,
          timestamp: e.timestamp,
          type: e.type,
          step_key: e.stepKey,
          payload: JSON.stringify(e.payload),
          prev_hash: e.prevHash,
          hash: e.hash
        })
      }`
    }
    yield* sql`UPDATE ${sql(`${prefix}runs`)} SET status = ${info.status}, cost_usd = ${info.costUsd}, head_seq = ${info.headSeq},
  head_hash = ${info.headHash}, updated_at = ${info.updatedAt} WHERE run_id = ${info.runId}`
  })

/** The migrations of the schema that stored hashes and event ids as text (all before `6_compact_chain`). */
const textChainMigrations = (tablePrefix: string | undefined) =>
  Object.fromEntries(Object.entries(SqlEventStore.migrations({ tablePrefix })).filter(([id]) => Number.parseInt(id, 10) < 6))

/** The byte length of a stored column's value, as the database counts it. */
const byteLength = (sql: SqlClient.SqlClient, column: string) =>
  sql.literal(sql.onDialectOrElse({ pg: () => `octet_length(${column})`, orElse: () => `length(CAST(${column} AS BLOB))` }))

/** The columns of a table's primary key, in key order. */
const primaryKey = (sql: SqlClient.SqlClient, table: string) =>
  Effect.map(
    sql.onDialectOrElse({
      pg: () =>
        sql<{ readonly name: string }>`SELECT a.attname AS name FROM pg_index i JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = ANY(i.indkey)
WHERE i.indrelid = ${`"${table}"`}::regclass AND i.indisprimary ORDER BY array_position(i.indkey, a.attnum)`,
      orElse: () => sql<{ readonly name: string }>`SELECT name FROM pragma_table_info(${table}) WHERE pk > 0 ORDER BY pk`
    }),
    (rows) => rows.map((r) => r.name)
  )

/**
 * The events of the run `runId` (of any tenant), as a SQL condition on the events table: PostgreSQL keys them by the
 * run's surrogate key (migration 12).
 */
const ofRun = (sql: SqlClient.SqlClient, prefix: string, runId: string) =>
  sql.onDialectOrElse({
    pg: () => sql`run_key IN (SELECT run_key FROM ${sql(`${prefix}runs`)} WHERE run_id = ${runId})`,
    orElse: () => sql`run_id = ${runId}`
  })

/**
 * What the new schema must look like, beyond its keys: on SQLite, the events' table, their foreign key and the head
 * trigger; on PostgreSQL, the events' eight columns in their order (migration 12).
 */
const checkSchema = (sql: SqlClient.SqlClient, prefix: string) =>
  Effect.gen(function*() {
    expect(yield* primaryKey(sql, `${prefix}runs`)).toEqual(["tenant_id", "run_id"])
    const pg = sql.onDialectOrElse({ pg: () => true, orElse: () => false })
    expect(yield* primaryKey(sql, `${prefix}events`)).toEqual(pg ? ["run_key", "seq"] : ["tenant_id", "run_id", "seq"])
    yield* sql.onDialectOrElse({
      pg: () =>
        Effect.map(
          sql<{ readonly name: string }>`SELECT attname AS name FROM pg_attribute WHERE attrelid = ${`"${prefix}events"`}::regclass AND attnum > 0 AND NOT attisdropped ORDER BY attnum`,
          (columns) => expect(columns.map((c) => c.name)).toEqual(["run_key", "timestamp", "seq", "event_id", "step_key", "payload", "prev_hash", "hash"])
        ),
      orElse: () =>
        Effect.gen(function*() {
          const [events] = yield* sql<{ readonly sql: string }>`SELECT sql FROM sqlite_master WHERE type = 'table' AND name = ${`${prefix}events`}`
          // A rowid table since 6_compact_chain (appended in rowid order, its pages filled), its key a unique index.
          expect(events?.sql).not.toMatch(/WITHOUT ROWID/)
          expect(events?.sql).toMatch(/PRIMARY KEY \(tenant_id, run_id, seq\)/)
          const keys = yield* sql<{ readonly table: string; readonly from: string; readonly to: string }>`SELECT "table", "from", "to" FROM pragma_foreign_key_list(${`${prefix}events`}) ORDER BY seq`
          expect(keys).toEqual([{ table: `${prefix}runs`, from: "tenant_id", to: "tenant_id" }, { table: `${prefix}runs`, from: "run_id", to: "run_id" }])
          expect(yield* sql`PRAGMA foreign_key_check`).toEqual([])
          const [trigger] = yield* sql<{ readonly sql: string }>`SELECT sql FROM sqlite_master WHERE type = 'trigger' AND name = ${`${prefix}events_advance_head`}`
          // The check and the move of the head both match the tenant.
          expect(trigger?.sql.match(/tenant_id = NEW\.tenant_id AND run_id = NEW\.run_id/g)).toHaveLength(2)
          const leftovers = yield* sql`SELECT name FROM sqlite_master WHERE name LIKE ${`%\\_v3`} ESCAPE '\\' OR name LIKE ${`%\\_v6`} ESCAPE '\\'`
          expect(leftovers).toEqual([])
        })
    })
  })

/**
 * The plan of a statement the store ran, as the database explains it. On PostgreSQL the planner's other ways (a table
 * scan, a bitmap of the matching rows sorted after) are priced out, as they are once a tenant has many runs: the plan
 * says whether the database can answer on the index.
 */
const explain = (sql: SqlClient.SqlClient, text: string, params: ReadonlyArray<unknown>) =>
  sql.onDialectOrElse({
    pg: () =>
      sql.withTransaction(Effect.gen(function*() {
        for (const off of ["enable_seqscan", "enable_bitmapscan", "enable_sort"]) yield* sql.unsafe(`SET LOCAL ${off} = off`)
        const r = yield* sql.unsafe<Record<string, unknown>>(`EXPLAIN ${text}`, params)
        return r.map((row) => String(Object.values(row)[0])).join("\n")
      })),
    orElse: () => Effect.map(sql.unsafe<{ readonly detail: string }>(`EXPLAIN QUERY PLAN ${text}`, params), (r) => r.map((row) => row.detail).join("\n"))
  })

/** The statements `effect` sends to the database, caught on their way there. */
const statementsOf = <A, E, R>(effect: Effect.Effect<A, E, R>) =>
  Effect.gen(function*() {
    const statements: Array<readonly [string, ReadonlyArray<unknown>]> = []
    const value = yield* Statement.withTransformer(effect, (self) =>
      Effect.sync(() => {
        statements.push(self.compile())
        return self
      }))
    return { value, statements }
  })

/** Migration 6 on a database of text hashes and ids. */
const textChainToBytes = (database: Effect.Effect<Database, unknown, Scope.Scope>) =>
  Effect.gen(function*() {
    const db = yield* database
    const prefix = db.tablePrefix ?? ""
    const events = `${prefix}events`
    const steps = (n: number, from = 0): Array<EventPayload> =>
      Array.from({ length: n }, (_, i) => ({ _tag: "StepCompleted", name: `step-${from + i}`, value: { i: from + i, note: "a memoized step" } }))
    // As the kernel writes them (UUID event ids), and as tests and imports may (any text: "abcdefgh-event-1" is 16
    // bytes, as long as a packed id, and must not be taken for one).
    const uuids = oldRun("r-kernel", tenantA, [started(tenantA), ...steps(29)], T0, "running", 0, () => crypto.randomUUID())
    const texts = oldRun("abcdefgh", tenantA, [started(tenantA), ...steps(3)], T0 + 500, "running", 0)
    const runs = [uuids, texts]

    yield* Effect.gen(function*() {
      const sql = (yield* SqlClient.SqlClient).withoutTransforms()
      yield* SqlMigrations.run({ name: "event_store", tablePrefix: db.tablePrefix, migrations: textChainMigrations(db.tablePrefix) })
      for (const run of runs) yield* insertOld(sql, prefix, run)
      // An index of the events that another migration (or a person) made: the conversion keeps it.
      yield* sql`CREATE INDEX ${sql(`${prefix}events_type_idx`)} ON ${sql(events)} (tenant_id, type)`
    }).pipe(Effect.provide(db.client))

    yield* Effect.gen(function*() {
      const store = yield* EventStore
      const sql = (yield* SqlClient.SqlClient).withoutTransforms()
      for (const run of runs) {
        expect(yield* store.getRun(run.info.tenantId, run.info.runId)).toEqual(run.info)
        expect(yield* store.readEvents(run.info.tenantId, run.info.runId)).toEqual(run.events)
        expect(verifyEvents(run.info.runId, yield* store.readEvents(run.info.tenantId, run.info.runId))).toMatchObject({ ok: true })
      }
      const kept = yield* sql.onDialectOrElse({
        pg: () => sql`SELECT indexname AS name FROM pg_indexes WHERE schemaname = current_schema() AND tablename = ${events} AND indexname = ${`${prefix}events_type_idx`}`,
        orElse: () => sql`SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = ${events} AND name = ${`${prefix}events_type_idx`}`
      })
      // PostgreSQL's migration 12 copies the events into a table without the index's columns (the tenant, the type).
      expect(kept).toHaveLength(sql.onDialectOrElse({ pg: () => 0, orElse: () => 1 }))
      // A page from the middle completes its first prev_hash from the row before it.
      expect(yield* store.readEvents(tenantA.tenantId, "r-kernel", 11, 10)).toEqual(uuids.events.slice(10, 20))
      // Stored as bytes: a hash is 32, a UUID 16; every prev_hash is its previous event's hash, so none is stored.
      const [kernel] = yield* sql<{ readonly n: unknown; readonly hashes: unknown; readonly ids: unknown; readonly prevs: unknown }>`SELECT COUNT(*) AS n,
  SUM(CASE WHEN ${byteLength(sql, "hash")} = 32 THEN 1 ELSE 0 END) AS hashes,
  SUM(CASE WHEN ${byteLength(sql, "event_id")} = 16 THEN 1 ELSE 0 END) AS ids,
  SUM(CASE WHEN prev_hash IS NULL THEN 1 ELSE 0 END) AS prevs FROM ${sql(events)} WHERE ${ofRun(sql, prefix, "r-kernel")}`
      expect([kernel?.n, kernel?.hashes, kernel?.ids, kernel?.prevs].map(Number)).toEqual([30, 30, 30, 30])

      // The run goes on: a batch after the migrated head, then one more; both verify with what was there.
      const more = chain("r-kernel", tenantA.tenantId, uuids.events, steps(3, 29), T0, () => crypto.randomUUID())
      yield* store.append({ runId: "r-kernel", tenantId: tenantA.tenantId, expectedSeq: 30, events: more.slice(0, 2) })
      yield* store.append({ runId: "r-kernel", tenantId: tenantA.tenantId, expectedSeq: 32, events: more.slice(2) })
      const all = yield* store.readEvents(tenantA.tenantId, "r-kernel")
      expect(all).toEqual([...uuids.events, ...more])
      expect(verifyEvents("r-kernel", all, { heads: [{ source: "store", seq: 33, hash: more[2]!.hash }] })).toMatchObject({ ok: true, events: 33 })
      expect(yield* store.getRun(tenantA.tenantId, "r-kernel")).toMatchObject({ headSeq: 33, headHash: more[2]!.hash })
      // The appends stored no prev_hash either: each batch's first event links to the stored head.
      const [stored] = yield* sql<{ readonly prevs: unknown }>`SELECT COUNT(*) AS prevs FROM ${sql(events)} WHERE ${ofRun(sql, prefix, "r-kernel")} AND prev_hash IS NOT NULL`
      expect(Number(stored?.prevs)).toBe(0)

      // Tampering is caught as before, each time at the first row it touched (each tamper is earlier in the log).
      const verify = Effect.map(store.readEvents(tenantA.tenantId, "r-kernel"), (read) => verifyEvents("r-kernel", read))
      const at = (seq: number) => sql`${ofRun(sql, prefix, "r-kernel")} AND seq = ${seq}`
      // A payload changed in place.
      yield* sql`UPDATE ${sql(events)} SET payload = ${JSON.stringify({ _tag: "StepCompleted", name: "step-18", value: { i: 1000, note: "a memoized step" } })} WHERE ${at(20)}`
      expect(yield* verify).toMatchObject({ ok: false, firstBrokenSeq: 20 })
      // A row's hash replaced by another real digest (the next row's): the row no longer hashes to it.
      yield* sql`UPDATE ${sql(events)} SET hash = (SELECT hash FROM ${sql(events)} WHERE ${at(6)}) WHERE ${at(5)}`
      expect(yield* verify).toMatchObject({ ok: false, firstBrokenSeq: 5 })
      // A prev_hash written where none was stored, naming another event: the link breaks.
      yield* sql`UPDATE ${sql(events)} SET prev_hash = (SELECT hash FROM ${sql(events)} WHERE ${at(1)}) WHERE ${at(4)}`
      expect(yield* verify).toMatchObject({ ok: false, firstBrokenSeq: 4 })
      // A row removed: the gap is reported where it is.
      yield* sql`DELETE FROM ${sql(events)} WHERE ${at(2)}`
      expect(yield* verify).toMatchObject({ ok: false, firstBrokenSeq: 2 })
    }).pipe(Effect.provide(db.store))
  })

/** Migration 3 on a database whose runs are keyed by run id alone. */
const runKeyToTenantKey = (database: Effect.Effect<Database, unknown, Scope.Scope>) =>
  Effect.gen(function*() {
    const db = yield* database
    const prefix = db.tablePrefix ?? ""
    const main = oldRun("r-main", tenantA, [
      started(tenantA),
      { _tag: "StepCompleted", name: "fetch", value: { pages: 3 } },
      { _tag: "ModelCompleted", model: "gpt-test", message: { role: "assistant", content: "ok" }, usage: { inputTokens: 10, outputTokens: 2 }, costUsd: 0.5 },
      { _tag: "PauseRequested", reason: "approve", ticket: "t-1" }
    ], T0, "paused", 0.5)
    const child = oldRun("r-main::child", tenantA, [started(tenantA, { parentRunId: "r-main", rootRunId: "r-main" }), { _tag: "RunCompleted", output: "done" }], T0 + 100, "completed", 0)
    // Created in the same millisecond, zeta first: listRuns breaks the tie as it did before the migration.
    const zeta = oldRun("zeta", tenantA, [started(tenantA)], T0 + 200, "running", 0)
    const alpha = oldRun("alpha", tenantA, [started(tenantA)], T0 + 200, "running", 0)
    const theirs = oldRun("r-b", tenantB, [started(tenantB)], T0 + 300, "running", 0)

    // Today's schema, made by the migrations that made it, with runs written as the store wrote them.
    yield* Effect.gen(function*() {
      const sql = (yield* SqlClient.SqlClient).withoutTransforms()
      const all = SqlEventStore.migrations({ tablePrefix: db.tablePrefix })
      yield* SqlMigrations.run({
        name: "event_store",
        tablePrefix: db.tablePrefix,
        migrations: Object.fromEntries(BEFORE_TENANT_KEY.map((id) => [id, all[id]!]))
      })
      expect(yield* primaryKey(sql, `${prefix}runs`)).toEqual(["run_id"])
      for (const run of [main, child, zeta, alpha, theirs]) yield* insertOld(sql, prefix, run)
    }).pipe(Effect.provide(db.client))

    // The current code opens it.
    yield* Effect.gen(function*() {
      const store = yield* EventStore
      const sql = (yield* SqlClient.SqlClient).withoutTransforms()
      yield* checkSchema(sql, prefix)
      for (const run of [main, child, zeta, alpha, theirs]) {
        expect(yield* store.getRun(run.info.tenantId, run.info.runId)).toEqual(run.info)
        expect(yield* store.readEvents(run.info.tenantId, run.info.runId)).toEqual(run.events)
      }
      expect(verifyEvents(main.info.runId, yield* store.readEvents(tenantA.tenantId, main.info.runId))).toMatchObject({ ok: true, events: 4 })
      const tie = sql.onDialectOrElse({ sqlite: () => ["zeta", "alpha"], orElse: () => ["alpha", "zeta"] })
      expect((yield* store.listRuns(tenantA.tenantId)).map((r) => r.runId)).toEqual([...tie, "r-main::child", "r-main"])
      expect(yield* store.listRuns(tenantA.tenantId, { rootRunId: "r-main" })).toEqual([child.info, main.info])
      expect(yield* store.listRuns(tenantB.tenantId)).toEqual([theirs.info])

      // Tenant B now starts its own "r-main" and "r-main::child"; A's are untouched.
      const bMain = chain("r-main", tenantB.tenantId, [], [started(tenantB), { _tag: "StepCompleted", name: "b", value: 1 }], T0 + 1000)
      yield* store.append({ runId: "r-main", tenantId: tenantB.tenantId, expectedSeq: 0, events: bMain })
      const bChild = chain("r-main::child", tenantB.tenantId, [], [started(tenantB, { parentRunId: "r-main", rootRunId: "r-main" })], T0 + 1100)
      yield* store.append({ runId: "r-main::child", tenantId: tenantB.tenantId, expectedSeq: 0, events: bChild })
      expect(yield* store.readEvents(tenantB.tenantId, "r-main")).toEqual(bMain)
      expect(yield* store.getRun(tenantB.tenantId, "r-main")).toMatchObject({ tenantId: tenantB.tenantId, headSeq: 2, headHash: bMain[1]!.hash })
      expect(yield* store.getRun(tenantA.tenantId, "r-main")).toEqual(main.info)
      expect((yield* store.listRuns(tenantB.tenantId, { rootRunId: "r-main" })).map((r) => r.runId)).toEqual(["r-main::child", "r-main"])
      expect((yield* store.listRuns(tenantA.tenantId, { parentRunId: "r-main" })).map((r) => `${r.tenantId}/${r.runId}`)).toEqual(["tenant-a/r-main::child"])

      // A's run goes on from where it was; B's head does not move.
      const more = chain("r-main", tenantA.tenantId, main.events, [{ _tag: "HumanResponded", ticket: "t-1", payload: true }, { _tag: "RunCompleted", output: "ok" }], T0)
      yield* store.append({ runId: "r-main", tenantId: tenantA.tenantId, expectedSeq: 4, events: more })
      expect(yield* store.getRun(tenantA.tenantId, "r-main")).toMatchObject({ status: "completed", headSeq: 6, headHash: more[1]!.hash, costUsd: 0.5 })
      expect(yield* store.getRun(tenantB.tenantId, "r-main")).toMatchObject({ status: "running", headSeq: 2, headHash: bMain[1]!.hash })
    }).pipe(Effect.provide(db.store))

    // Opened again: the migration does not run twice, and everything is where it was left.
    yield* Effect.gen(function*() {
      const store = yield* EventStore
      yield* checkSchema((yield* SqlClient.SqlClient).withoutTransforms(), prefix)
      expect(yield* store.getRun(tenantA.tenantId, "r-main")).toMatchObject({ status: "completed", headSeq: 6 })
      expect((yield* store.readEvents(tenantA.tenantId, "r-main")).slice(0, 4)).toEqual(main.events)
      expect(yield* store.getRun(tenantB.tenantId, "r-main")).toMatchObject({ headSeq: 2 })
      expect((yield* store.listRuns(tenantA.tenantId)).length).toBe(4)
      expect((yield* store.listRuns(tenantB.tenantId)).length).toBe(3)
    }).pipe(Effect.provide(db.store))
  })

/** The plans of `listRunsPage` under every filter of `artana list-runs`, on a year of runs. */
const listingOnIndexes = (database: Effect.Effect<Database, unknown, Scope.Scope>) =>
  Effect.gen(function*() {
    const db = yield* database
    const runsTable = `${db.tablePrefix ?? ""}runs`
    yield* Effect.gen(function*() {
      const store = yield* EventStore
      const sql = (yield* SqlClient.SqlClient).withoutTransforms()
      // A year of runs, as rows (listing reads only the runs table): 4 tenants, 5 statuses, 20 workflows.
      const statuses: ReadonlyArray<RunStatus> = ["running", "paused", "completed", "failed", "needs_reconciliation"]
      const rows = Array.from({ length: 6000 }, (_, i) => ({
        run_id: `run-${i}`,
        tenant_id: `tenant-${i % 4}`,
        workflow: `workflow-${i % 20}`,
        parent_run_id: null,
        // Lineages of 750 runs a tenant, and runs forked 500 times: what a run's page lists on their indexes.
        root_run_id: `root-${i % 8}`,
        forked_from: `run-${i % 12}`,
        status: statuses[i % 5]!,
        head_seq: 1,
        head_hash: "0".repeat(64),
        cost_usd: 0,
        created_at: T0 + Math.floor(i / 3) * 5000,
        updated_at: T0 + Math.floor(i / 3) * 5000,
        owner_epoch: 0,
        // Ten versions of the code: a tenant's runs of one version are 150 of its 1,500.
        version: `v${i % 10}`
      }))
      for (let i = 0; i < rows.length; i += 500) yield* sql`INSERT INTO ${sql(runsTable)} ${sql.insert(rows.slice(i, i + 500))}`
      yield* sql.unsafe(sql.onDialectOrElse({ pg: () => `ANALYZE "${runsTable}"`, orElse: () => "SELECT 1" }))

      const firstPage = yield* store.listRunsPage("tenant-1", { limit: 50 })
      const cases: ReadonlyArray<readonly [ListRunsPageFilter, string]> = [
        [{}, "runs_list_idx"],
        [{ status: "paused" }, "runs_status_list_idx"],
        [{ workflow: "workflow-5" }, "runs_workflow_list_idx"],
        [{ createdSince: T0 + 1_000_000, createdUntil: T0 + 2_000_000 }, "runs_list_idx"],
        [{ status: "failed", createdSince: T0 + 1_000_000 }, "runs_status_list_idx"],
        [{ workflow: "workflow-5", createdUntil: T0 + 2_000_000 }, "runs_workflow_list_idx"],
        [{ after: firstPage.next }, "runs_list_idx"],
        [{ status: "paused", after: firstPage.next }, "runs_status_list_idx"],
        [{ workflow: "workflow-5", after: firstPage.next }, "runs_workflow_list_idx"],
        [{ rootRunId: "root-1" }, "runs_root_list_idx"],
        [{ rootRunId: "root-5", after: firstPage.next }, "runs_root_list_idx"],
        [{ forkedFrom: "run-9" }, "runs_forks_list_idx"],
        [{ version: "v3" }, "runs_version_list_idx"],
        [{ version: "v3", after: firstPage.next }, "runs_version_list_idx"]
      ]
      for (const [filter, index] of cases) {
        // The statement the store runs, caught on its way to the database, then explained there.
        const { statements, value: page } = yield* statementsOf(store.listRunsPage("tenant-1", { ...filter, limit: 50 }))
        expect(page.runs.length).toBe(50)
        const listing = statements.find(([text]) => text.includes("ORDER BY"))
        expect(listing).toBeDefined()
        const [text, params] = listing!
        const plan = yield* explain(sql, text, params)
        const described = `${JSON.stringify(filter)}:\n${plan}`
        expect(described).toContain(`${db.tablePrefix ?? ""}${index}`)
        // The runs come in the index's order: no sort step, and no scan of the whole table.
        expect(described).not.toMatch(/TEMP B-TREE|Sort|Seq Scan on|SCAN r\b(?! USING)/)
      }
    }).pipe(Effect.provide(db.store))
  })

/** The plan of `lineageCostUsd` among thousands of other runs. */
const lineageCostOnIndex = (database: Effect.Effect<Database, unknown, Scope.Scope>) =>
  Effect.gen(function*() {
    const db = yield* database
    const runsTable = `${db.tablePrefix ?? ""}runs`
    yield* Effect.gen(function*() {
      const store = yield* EventStore
      const sql = (yield* SqlClient.SqlClient).withoutTransforms()
      // 6,000 runs of other lineages, and a lineage of 300: a chain of 200 continued runs and 100 sub-runs.
      const row = (runId: string, tenantId: string, rootRunId: string, costUsd: number, i: number) => ({
        run_id: runId,
        tenant_id: tenantId,
        workflow: "spender",
        parent_run_id: null,
        root_run_id: rootRunId,
        status: "continued",
        head_seq: 1,
        head_hash: "0".repeat(64),
        cost_usd: costUsd,
        created_at: T0 + i,
        updated_at: T0 + i,
        owner_epoch: 0
      })
      const rows = [
        ...Array.from({ length: 6000 }, (_, i) => row(`run-${i}`, `tenant-${i % 4}`, `run-${i - (i % 3)}`, 1, i)),
        ...Array.from({ length: 200 }, (_, i) => row(i === 0 ? "chain" : `chain::continued::${i}`, "tenant-1", "chain", 0.25, 10_000 + i)),
        ...Array.from({ length: 100 }, (_, i) => row(`chain::sub::${i}`, "tenant-1", "chain", 0.5, 20_000 + i)),
        // The same root id in another tenant is another lineage.
        row("chain", "tenant-2", "chain", 1000, 30_000)
      ]
      for (let i = 0; i < rows.length; i += 500) yield* sql`INSERT INTO ${sql(runsTable)} ${sql.insert(rows.slice(i, i + 500))}`
      yield* sql.unsafe(sql.onDialectOrElse({ pg: () => `ANALYZE "${runsTable}"`, orElse: () => "SELECT 1" }))

      const { statements, value: spent } = yield* statementsOf(store.lineageCostUsd("tenant-1", "chain"))
      expect(spent).toBeCloseTo(200 * 0.25 + 100 * 0.5, 9)
      expect(yield* store.lineageCostUsd("tenant-2", "chain")).toBe(1000)
      expect(yield* store.lineageCostUsd("tenant-1", "no-such-root")).toBe(0)
      // One statement, answered on the index on (tenant_id, root_run_id, created_at): no scan of the tenant's runs.
      expect(statements.length).toBe(1)
      const [text, params] = statements[0]!
      expect(text).toMatch(/SUM\(cost_usd\)/)
      const plan = yield* explain(sql, text, params)
      expect(plan).toContain(`${db.tablePrefix ?? ""}runs_root_list_idx`)
      expect(plan).not.toMatch(/Seq Scan on|SCAN [^ ]*runs\b(?! USING)/)
    }).pipe(Effect.provide(db.store))
  })

/**
 * Registers the migration tests. `database` makes one empty database per test (in the test's scope) and gives a bare
 * client on it and the store layer an application opens.
 */
export const suite = (name: string, database: Effect.Effect<Database, unknown, Scope.Scope>): void => {
  describe(`SqlEventStore migrations: ${name}`, () => {

    it.scoped("a database of text hashes and ids is migrated to bytes: every event reads back the same, the chain verifies, a tampered row is caught, and the run goes on", () => textChainToBytes(database))
    it.scoped("a database whose runs are keyed by run id alone is migrated: data kept, and the same id is then another tenant's own run", () => runKeyToTenantKey(database))
  })

  describe(`SqlEventStore listing: ${name}`, () => {
    it.scoped("listRuns and listRunsPage read every filter of `artana list-runs` (tenant, status, workflow, time, cursor) on an index, in its order: no table scan, no sort", () => listingOnIndexes(database))

    it.scoped("lineageCostUsd is one aggregate over the index on the root: a chain of continued runs and sub-runs summed, among thousands of other runs", () => lineageCostOnIndex(database))
  })

  describe(`ApprovalsIndex: ${name}`, () => {
    it.scoped("the paused runs come the longest paused first, a page at a time, read on the partial index of paused runs: no table scan, no sort", () =>
      Effect.gen(function*() {
        const db = yield* database
        const runsTable = `${db.tablePrefix ?? ""}runs`
        yield* Effect.gen(function*() {
          yield* EventStore
          const sql = (yield* SqlClient.SqlClient).withoutTransforms()
          // 6,000 runs of 4 tenants, one in five paused; created in one order, paused in another (the pause time runs
          // backwards with the creation time), and runs paused in the same millisecond.
          const statuses: ReadonlyArray<RunStatus> = ["running", "paused", "completed", "failed", "needs_reconciliation"]
          const rows = Array.from({ length: 6000 }, (_, i) => ({
            run_id: `run-${String(i).padStart(4, "0")}`,
            tenant_id: `tenant-${i % 4}`,
            workflow: "w",
            parent_run_id: null,
            root_run_id: `run-${i}`,
            status: statuses[i % 5]!,
            head_seq: 1,
            head_hash: "0".repeat(64),
            cost_usd: 0,
            created_at: T0 + i,
            // A signal sent to a paused run moves its head (`updated_at`), not its pause: the index goes by the pause.
            updated_at: T0 + 20_000_000 + (i % 7) * 1000,
            paused_at: i % 5 === 1 ? T0 + 10_000_000 - Math.floor(i / 40) * 1000 : null,
            owner_epoch: 0
          }))
          for (let i = 0; i < rows.length; i += 500) yield* sql`INSERT INTO ${sql(runsTable)} ${sql.insert(rows.slice(i, i + 500))}`
          yield* sql.unsafe(sql.onDialectOrElse({ pg: () => `ANALYZE "${runsTable}"`, orElse: () => "SELECT 1" }))
          const index = yield* ApprovalsIndex.makeSql({ tablePrefix: db.tablePrefix })
          const expected = rows
            .filter((r) => r.tenant_id === "tenant-1" && r.status === "paused")
            .sort((a, b) => a.paused_at! - b.paused_at! || (a.run_id < b.run_id ? -1 : 1))
            .map((r) => ({ runId: r.run_id, pausedAt: r.paused_at! }))
          expect(expected.length).toBe(300)
          // Pages of 7, each after the last one's end: every paused run of the tenant once, in order.
          const seen: Array<ApprovalsIndex.Paused> = []
          let after: ApprovalsIndex.Position | undefined
          for (;;) {
            const page = yield* index.paused("tenant-1", { after, limit: 7 })
            seen.push(...page)
            if (page.length < 7) break
            after = page[page.length - 1]
          }
          expect(seen).toEqual(expected)
          const until = expected[100]!.pausedAt
          expect(yield* index.paused("tenant-1", { until, limit: 1000 })).toEqual(expected.filter((p) => p.pausedAt <= until))
          for (const page of [{ limit: 50 }, { after: expected[120], limit: 50 }, { until, limit: 50 }, { after: expected[20], until, limit: 50 }]) {
            const { statements } = yield* statementsOf(index.paused("tenant-1", page))
            const [text, params] = statements[0]!
            const plan = yield* explain(sql, text, params)
            const described = `${JSON.stringify(page)}:\n${plan}`
            expect(described).toContain(ApprovalsIndex.indexName(db.tablePrefix))
            expect(described).not.toMatch(/TEMP B-TREE|Sort|Seq Scan on|SCAN [^ ]*runs\b(?! USING)/)
          }
        }).pipe(Effect.provide(db.store))
      }))
  })
}
