/**
 * Claiming tasks of the SQL queue: one `UPDATE ... RETURNING` over the due tasks (on PostgreSQL its inner `SELECT`
 * takes `FOR UPDATE SKIP LOCKED`), after `expire` has retired what is past its time, each stale task through the
 * state machine (`expireOne`), so a timed-out task is retried under its policy and a repeating one goes on.
 */
import type * as SqlClient from "@effect/sql/SqlClient"
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import type { StoreError } from "../Errors.js"
import type { ClaimVersions, Service } from "../TaskQueue.js"
import { decodeRows, storeError } from "./sqlTaskRows.js"

/**
 * `expire` and `claim` of the queue on `sql`'s table `table`; `expireOne` retires one stale task (false when it is no
 * longer stale: another claimer got to it first).
 */
export const make = (
  sql: SqlClient.SqlClient,
  table: string,
  expireOne: (taskId: string, tenantId: string, now: number) => Effect.Effect<boolean, StoreError>
) => {
  const tasks = sql(table)

  const expire = (at?: number): Effect.Effect<number, StoreError> =>
    Effect.gen(function*() {
      const now = at ?? (yield* Clock.currentTimeMillis)
      // Queued past its expiry, or running past its deadline with its worker gone (lease expired): nobody else will.
      const stale = yield* sql<{ readonly task_id: string; readonly tenant_id: string }>`SELECT task_id, tenant_id FROM ${tasks}
WHERE (status = 'queued' AND expires_at <= ${now}) OR (status = 'running' AND deadline_at <= ${now} AND lease_expires_at <= ${now})`
      let changed = 0
      for (const row of stale) if (yield* expireOne(row.task_id, row.tenant_id, now)) changed++
      return changed
    }).pipe(Effect.catchTag("SqlError", storeError("expire")), Effect.withSpan("SqlTaskQueue.expire"))

  // SQLite has one writer at a time, so the single UPDATE claims atomically; Postgres needs the row locks, and
  // SKIP LOCKED lets concurrent claimers pass over each other's rows instead of queueing behind them.
  const skipLocked = sql.onDialectOrElse({ pg: () => sql`FOR UPDATE SKIP LOCKED`, orElse: () => sql`` })

  // Versions (`ClaimRequest.versions`): a pinned task of a listed workflow only when its version is accepted, and an
  // unpinned one pinned to the claimer's start version in the same statement (as `Tasks.accepts` and `Tasks.pinned`).
  const acceptedVersions = (versions: ReadonlyArray<ClaimVersions>) =>
    versions.length === 0 ? sql`` : sql` AND (version IS NULL OR NOT ${sql.in("workflow", versions.map((v) => v.workflow))}${
      versions.reduce((acc, v) => sql`${acc} OR (workflow = ${v.workflow} AND ${sql.in("version", v.accepts)})`, sql``)
    })`
  const pinVersion = (versions: ReadonlyArray<ClaimVersions>) =>
    versions.length === 0 ? sql`` : sql`, version = COALESCE(version, CASE${
      versions.reduce((acc, v) => sql`${acc} WHEN workflow = ${v.workflow} THEN ${v.start}`, sql``)
    } END)`

  const claim: Service["claim"] = (request) =>
    Effect.gen(function*() {
      const now = request.now ?? (yield* Clock.currentTimeMillis)
      const limit = Math.max(0, Math.floor(request.limit))
      if (limit === 0) return []
      yield* expire(now)
      if (request.workflows !== undefined && request.workflows.length === 0) return []
      const only = request.workflows === undefined ? sql`` : sql`AND ${sql.in("workflow", request.workflows)}`
      const versions = request.versions ?? []
      const rows = yield* sql`UPDATE ${tasks} SET status = 'running', worker_id = ${request.workerId},
  lease_expires_at = ${now + request.leaseSeconds * 1000},
  deadline_at = COALESCE(deadline_at, ${now} + timeout_ms),
  updated_at = ${now}${pinVersion(versions)}
WHERE task_id IN (
  SELECT task_id FROM ${tasks}
  WHERE ((status = 'queued' AND run_at <= ${now} AND expires_at > ${now}) OR (status = 'running' AND lease_expires_at <= ${now})) ${only}${acceptedVersions(versions)}
  ORDER BY run_at, created_at LIMIT ${limit} ${skipLocked}
) RETURNING *`
      const claimed = yield* decodeRows("claim", rows)
      return claimed.sort((a, b) => a.runAt - b.runAt || a.createdAt - b.createdAt)
    }).pipe(Effect.catchTag("SqlError", storeError("claim")), Effect.withSpan("SqlTaskQueue.claim", { attributes: { workerId: request.workerId } }))

  return { expire, claim }
}
