/**
 * Claiming tasks of the SQL queue: one `UPDATE ... RETURNING` over the due tasks (on PostgreSQL its inner `SELECT`
 * takes `FOR UPDATE SKIP LOCKED`), after `expire` has retired what is past its time.
 */
import type * as SqlClient from "@effect/sql/SqlClient"
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import type { StoreError } from "../Errors.js"
import type { ClaimVersions, Service } from "../TaskQueue.js"
import { decodeRows, encodeOutcome, storeError } from "./sqlTaskRows.js"
import * as Tasks from "./taskQueue.js"

/** `expire` and `claim` of the queue on `sql`'s table `table`. */
export const make = (sql: SqlClient.SqlClient, table: string) => {
  const tasks = sql(table)

  const timedOut = encodeOutcome(Tasks.timedOut())

  const expire = (at?: number): Effect.Effect<number, StoreError> =>
    Effect.gen(function*() {
      const now = at ?? (yield* Clock.currentTimeMillis)
      const expired = yield* sql`UPDATE ${tasks} SET status = 'expired', updated_at = ${now} WHERE status = 'queued' AND expires_at <= ${now} RETURNING task_id`
      // A running task past its deadline whose worker is gone (lease expired): nobody will fail it but us.
      const failed = yield* sql`UPDATE ${tasks} SET status = 'failed', outcome = ${timedOut}, attempts = attempts + 1, worker_id = NULL, lease_expires_at = NULL, updated_at = ${now}
WHERE status = 'running' AND deadline_at IS NOT NULL AND deadline_at <= ${now} AND lease_expires_at <= ${now} RETURNING task_id`
      return expired.length + failed.length
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
