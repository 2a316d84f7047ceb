/**
 * The SQL event store's queries of the runs table: a run, the runs a person lists (in pages, newest first), a
 * lineage's cost, the count of runs per version. A run's head comes from its row (SQLite, whose head trigger keeps
 * it) or from its last event (PostgreSQL, see `runHead`).
 */
import type * as SqlClient from "@effect/sql/SqlClient"
import * as Effect from "effect/Effect"
import type { InvalidInput } from "../Errors.js"
import { RunNotFound, type StoreError } from "../Errors.js"
import type { RunInfo } from "../Event.js"
import {
  IN_FLIGHT,
  type ListRunsFilter,
  type ListRunsPageFilter,
  pageOf,
  type RunsPage,
  type VersionCount,
  type VersionCountsFilter
} from "../EventStore.js"
import { storeError } from "../SqlErrors.js"
import * as RunCursor from "./runCursor.js"
import type { Tables } from "./sqlAppend.js"
import { decodeRows, num, runFromRow, text } from "./sqlRows.js"

/**
 * A run's columns as `runFromRow` reads them (`runColumns`, the runs table aliased `r`), and what follows the table
 * in the FROM clause to give its head (`runHead`).
 */
const runSelect = (sql: SqlClient.SqlClient, t: Tables) => {
  // The run's head. SQLite: the row's columns, which the head trigger keeps. PostgreSQL: the run's last event
  // (one index probe), unless the row records a later one (written with the last status or cost change): then
  // the log was cut after it, and the row's head is what `Verify` compares the log against.
  const runHead = sql.onDialectOrElse({
    pg: () => sql.literal(`LEFT JOIN LATERAL (SELECT seq, hash, timestamp FROM "${t.events}" e WHERE e.run_key = r.run_key ORDER BY e.seq DESC LIMIT 1) h ON true`),
    orElse: () => sql``
  })
  const runColumns = sql.literal(sql.onDialectOrElse({
    pg: () => {
      const head = "h.seq IS NOT NULL AND h.seq >= r.head_seq"
      return `r.run_id, r.tenant_id, r.workflow, r.parent_run_id, r.root_run_id, r.status, r.cost_usd, r.created_at, r.owner_epoch, r.version, r.forked_from, CASE WHEN ${head} THEN h.seq ELSE r.head_seq END AS head_seq, CASE WHEN ${head} THEN h.hash ELSE r.head_hash END AS head_hash, CASE WHEN ${head} THEN h.timestamp ELSE r.updated_at END AS updated_at`
    },
    orElse: () => "r.*"
  }))
  return { runHead, runColumns }
}

type RunSelect = ReturnType<typeof runSelect>

/** `listRuns` and `listRunsPage`: the runs of a tenant that match a filter, newest first. */
const listing = (sql: SqlClient.SqlClient, t: Tables, { runColumns, runHead }: RunSelect) => {
  const runs = sql(t.runs)
  // Runs created in the same millisecond come back in creation order, as the in-memory store's stable sort
  // gives them: SQLite's rowid records it; Postgres has no such column, so the run id decides there.
  const tieBreak = sql.onDialectOrElse({ sqlite: () => sql`r.rowid ASC`, orElse: () => sql`r.run_id ASC` })

  // After a cursor's run in that order: on SQLite the tie-breaker is that run's rowid, looked up here (a cursor names
  // the run, never the store-wide rowid); a run the tenant does not have leaves only the older runs.
  const afterKey = (tenantId: string, runId: string) =>
    sql.onDialectOrElse({
      sqlite: () => sql`r.rowid > (SELECT c.rowid FROM ${runs} c WHERE c.tenant_id = ${tenantId} AND c.run_id = ${runId})`,
      orElse: () => sql`r.run_id > ${runId}`
    })

  const listed = (tenantId: string, filter: ListRunsFilter, after: RunCursor.Position | undefined) => {
    const where = [sql`r.tenant_id = ${tenantId}`]
    if (filter.status !== undefined) where.push(sql`r.status = ${filter.status}`)
    if (filter.workflow !== undefined) where.push(sql`r.workflow = ${filter.workflow}`)
    if (filter.version !== undefined) where.push(sql`r.version = ${filter.version}`)
    if (filter.parentRunId !== undefined) where.push(sql`r.parent_run_id = ${filter.parentRunId}`)
    if (filter.rootRunId !== undefined) where.push(sql`r.root_run_id = ${filter.rootRunId}`)
    if (filter.createdSince !== undefined) where.push(sql`r.created_at >= ${filter.createdSince}`)
    if (filter.createdUntil !== undefined) where.push(sql`r.created_at < ${filter.createdUntil}`)
    if (filter.minCostUsd !== undefined) where.push(sql`r.cost_usd >= ${filter.minCostUsd}`)
    if (filter.forkedFrom !== undefined) where.push(sql`r.forked_from = ${filter.forkedFrom}`)
    // After the cursor in (created_at DESC, key ASC): the bound on created_at is the index range, the rest a filter.
    if (after !== undefined) {
      where.push(sql`r.created_at <= ${after.createdAt}`, sql`(r.created_at < ${after.createdAt} OR ${afterKey(tenantId, after.runId)})`)
    }
    const limit = filter.limit === undefined ? sql`` : sql`LIMIT ${Math.max(0, Math.floor(filter.limit))}`
    return sql`SELECT ${runColumns} FROM ${runs} r ${runHead} WHERE ${sql.and(where)} ORDER BY r.created_at DESC, ${tieBreak} ${limit}`.pipe(
      Effect.flatMap((rows) => decodeRows("listRuns", rows, (row) => `run ${String(row.run_id)}`, runFromRow)),
      Effect.catchTag("SqlError", (error) => Effect.fail(storeError("listRuns", error)))
    )
  }

  const listRuns = (tenantId: string, filter: ListRunsFilter = {}): Effect.Effect<ReadonlyArray<RunInfo>, StoreError> =>
    listed(tenantId, filter, undefined).pipe(Effect.withSpan("SqlEventStore.listRuns"))

  const listRunsPage = (tenantId: string, filter: ListRunsPageFilter = {}): Effect.Effect<RunsPage, StoreError | InvalidInput> =>
    Effect.gen(function*() {
      const after = filter.after === undefined ? undefined : yield* RunCursor.decode(filter.after)
      // One run more than the page: whether a next page exists, without counting.
      const rows = yield* listed(tenantId, { ...filter, limit: filter.limit === undefined ? undefined : Math.floor(filter.limit) + 1 }, after)
      return pageOf(rows, filter.limit)
    }).pipe(Effect.withSpan("SqlEventStore.listRunsPage"))

  return { listRuns, listRunsPage }
}

/** The run queries of the store on `sql`'s tables `t`. */
export const make = (sql: SqlClient.SqlClient, t: Tables) => {
  const runs = sql(t.runs)
  const select = runSelect(sql, t)
  const { runColumns, runHead } = select
  const getRun = (tenantId: string, runId: string): Effect.Effect<RunInfo, RunNotFound | StoreError> =>
    Effect.gen(function*() {
      const rows = yield* sql`SELECT ${runColumns} FROM ${runs} r ${runHead} WHERE r.run_id = ${runId} AND r.tenant_id = ${tenantId}`
      const [run] = yield* decodeRows("getRun", rows, () => `run ${runId}`, runFromRow)
      if (run === undefined) return yield* new RunNotFound({ runId, tenantId })
      return run
    }).pipe(
      Effect.catchTag("SqlError", (error) => Effect.fail(storeError("getRun", error))),
      Effect.withSpan("SqlEventStore.getRun", { attributes: { runId }, captureStackTrace: false })
    )

  // One aggregate over the index on (tenant_id, root_run_id): the lineage's runs only, however many the tenant has.
  const lineageCostUsd = (tenantId: string, rootRunId: string): Effect.Effect<number, StoreError> =>
    sql`SELECT COALESCE(SUM(cost_usd), 0) AS spent FROM ${runs} WHERE tenant_id = ${tenantId} AND root_run_id = ${rootRunId}`.pipe(
      Effect.flatMap((rows) => decodeRows("lineageCostUsd", rows, () => `lineage ${rootRunId}`, (row) => num(row, "spent"))),
      Effect.map((sums) => sums[0] ?? 0),
      Effect.catchTag("SqlError", (error) => Effect.fail(storeError("lineageCostUsd", error))),
      Effect.withSpan("SqlEventStore.lineageCostUsd", { attributes: { rootRunId }, captureStackTrace: false })
    )

  // An operator's count (`artana versions`): one scan of the runs, grouped in the database.
  const versionCounts = (filter: VersionCountsFilter = {}): Effect.Effect<ReadonlyArray<VersionCount>, StoreError> => {
    const where = [sql`1 = 1`]
    if (filter.tenantId !== undefined) where.push(sql`tenant_id = ${filter.tenantId}`)
    if (filter.workflow !== undefined) where.push(sql`workflow = ${filter.workflow}`)
    return sql`SELECT workflow, version, COUNT(*) AS runs, SUM(CASE WHEN ${sql.in("status", IN_FLIGHT)} THEN 1 ELSE 0 END) AS in_flight,
  MAX(created_at) AS last_created_at FROM ${runs} WHERE ${sql.and(where)} GROUP BY workflow, version ORDER BY workflow, version`.pipe(
      Effect.flatMap((rows) =>
        decodeRows("versionCounts", rows, (row) => `workflow ${String(row.workflow)}`, (row) => ({
          workflow: text(row, "workflow"),
          version: text(row, "version"),
          // PostgreSQL's COUNT and SUM are bigint and numeric, which come back as text.
          runs: Number(row.runs),
          inFlight: Number(row.in_flight),
          lastCreatedAt: num(row, "last_created_at")
        }))
      ),
      Effect.catchTag("SqlError", (error) => Effect.fail(storeError("versionCounts", error))),
      Effect.withSpan("SqlEventStore.versionCounts")
    )
  }

  return { getRun, ...listing(sql, t, select), lineageCostUsd, versionCounts }
}
