/**
 * Where the approvals inbox finds a tenant's paused runs in the order they paused, the longest waiting first: on SQL,
 * the partial index `<prefix>runs_paused_at_idx (tenant_id, paused_at, run_id) WHERE status = 'paused'` (migration
 * `13_runs_paused_at` of the event store). A run's `paused_at` is written by the batch that pauses it (its last
 * event's time), so a run paused for an approval is in the index at the time its `ApprovalRequested` was written, and
 * stays there when a signal is sent to it meanwhile (which moves its head); only paused runs are in it, so the appends
 * of running runs do not write it. A page is a range scan in the index's order that stops after
 * `limit` rows; `until` bounds the range (an inbox's "older than"), a cursor seeks into it.
 *
 * Optional: a kernel without it (the in-memory store) lists the tenant's paused runs and sorts them itself.
 *
 * @since 0.3.0
 */
import * as SqlClient from "@effect/sql/SqlClient"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import type { StoreError } from "./Errors.js"
import { storeError } from "./SqlErrors.js"
import { PAUSED_INDEX } from "./internal/sqlEventStoreMigrations.js"
import * as SqlMigrations from "./SqlMigrations.js"

/** A paused run, and when it paused (its head event's time, ms since the epoch). */
export interface Paused {
  readonly runId: string
  readonly pausedAt: number
}

/** Where a page ended: the last run's pause time and id (the order's tie-breaker). */
export interface Position {
  readonly pausedAt: number
  readonly runId: string
}

export interface Service {
  /**
   * The tenant's paused runs, longest paused first (runs paused in the same millisecond by run id), after `after`,
   * paused at or before `until`, at most `limit`.
   */
  readonly paused: (
    tenantId: string,
    options: { readonly after?: Position | undefined; readonly until?: number | undefined; readonly limit: number }
  ) => Effect.Effect<ReadonlyArray<Paused>, StoreError>
}

export class ApprovalsIndex extends Context.Tag("@artana/core/ApprovalsIndex")<ApprovalsIndex, Service>() {}

/** The index's name, `<prefix>runs_paused_at_idx`. */
export const indexName = (tablePrefix?: string | undefined): string => `${SqlMigrations.checkPrefix(tablePrefix)}${PAUSED_INDEX}`

/**
 * The statement of a page (SQL text and parameters), for the store and for a plan test. The status is written in the
 * text, not bound: a partial index serves only a query whose condition implies the index's own.
 */
export const pageStatement = (
  sql: SqlClient.SqlClient,
  tablePrefix: string | undefined,
  tenantId: string,
  options: { readonly after?: Position | undefined; readonly until?: number | undefined; readonly limit: number }
) => {
  const runs = `${SqlMigrations.checkPrefix(tablePrefix)}runs`
  const where = [sql`tenant_id = ${tenantId}`, sql`status = 'paused'`]
  const { after, until } = options
  // After the cursor in (paused_at, run_id): the bound on paused_at is the index range, the rest a filter.
  if (after !== undefined) where.push(sql`paused_at >= ${after.pausedAt}`, sql`(paused_at > ${after.pausedAt} OR run_id > ${after.runId})`)
  if (until !== undefined) where.push(sql`paused_at <= ${until}`)
  return sql`SELECT run_id, paused_at FROM ${sql(runs)} WHERE ${sql.and(where)} ORDER BY paused_at ASC, run_id ASC LIMIT ${Math.max(0, Math.floor(options.limit))}`
}

/** The index on the `SqlClient` in context (its tables made by `SqlEventStore`'s migrations). */
export const makeSql = (options: { readonly tablePrefix?: string | undefined } = {}): Effect.Effect<Service, never, SqlClient.SqlClient> =>
  Effect.map(SqlClient.SqlClient, (client) => {
    const sql = client.withoutTransforms()
    return {
      paused: (tenantId, page) =>
        pageStatement(sql, options.tablePrefix, tenantId, page).pipe(
          Effect.map((rows) => rows.map((row) => ({ runId: String(row["run_id"]), pausedAt: Number(row["paused_at"]) }))),
          Effect.catchTag("SqlError", (error) => Effect.fail(storeError("approvals", error))),
          Effect.withSpan("ApprovalsIndex.paused", { captureStackTrace: false })
        )
    }
  })

/** `makeSql` as a layer. */
export const layerSql = (options: { readonly tablePrefix?: string | undefined } = {}): Layer.Layer<ApprovalsIndex, never, SqlClient.SqlClient> =>
  Layer.effect(ApprovalsIndex, makeSql(options))
