/**
 * The estimates of the model calls in flight against a lineage's budget, held where every process on the store sees
 * them. Before a model call the kernel holds its estimate only when the lineage's spend, the holds of its other calls
 * in flight (every process's) and the estimate stay within the limit, as one atomic step of the store; it releases the
 * hold once the call's cost is logged (or the call failed). So two processes that drive runs of one lineage cannot
 * both take the last of its budget. A process that dies leaves its holds until they expire (fail closed).
 *
 * On SQL, the table `<prefix>budget_holds` (migration `14_budget_holds` of the event store). Optional: a kernel without
 * it (the in-memory store) holds the estimates in its own memory, seen by its own calls only.
 *
 * @since 0.4.0
 */
import * as SqlClient from "@effect/sql/SqlClient"
import type { SqlError } from "@effect/sql/SqlError"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import type { StoreError } from "./Errors.js"
import { storeError, transaction } from "./SqlErrors.js"
import { HOLDS_TABLE } from "./internal/sqlEventStoreMigrations.js"
import * as SqlMigrations from "./SqlMigrations.js"

/** A hold to take: `usd` for the lineage of `rootRunId`, when the lineage stays within `limitUsd` with it. */
export interface HoldRequest {
  readonly tenantId: string
  readonly rootRunId: string
  /** The hold's id (unique: the kernel's is a UUID), what `release` names. */
  readonly holdId: string
  /**
   * The call the hold is for (the kernel's: its run and step key): a hold of the same call taken before is replaced,
   * so a call made again (its run resumed after the process that held it died, or taken over from one that is slow:
   * that one's append is fenced, its cost never logged) does not count its earlier hold beside its own.
   */
  readonly callId?: string | undefined
  readonly usd: number
  readonly limitUsd: number
  /** The time now (ms since the epoch): holds that expired by then count for nothing, and are removed. */
  readonly now: number
  /** When the hold lapses unless released first (ms since the epoch). */
  readonly expiresAt: number
}

/**
 * A hold taken, or refused; either way with what the lineage had spent and held (by its other calls in flight, this
 * hold's earlier one not counted) when it was asked.
 */
export interface HoldResult {
  readonly held: boolean
  readonly spentUsd: number
  readonly heldUsd: number
}

export interface Service {
  /** Takes the hold when the lineage's spend, its unexpired holds and `usd` stay within `limitUsd` (atomically). */
  readonly hold: (request: HoldRequest) => Effect.Effect<HoldResult, StoreError>
  /** Releases a hold (nothing when it is gone already). */
  readonly release: (tenantId: string, holdId: string) => Effect.Effect<void, StoreError>
}

export class BudgetHolds extends Context.Tag("@artana/core/BudgetHolds")<BudgetHolds, Service>() {}

const sum = (row: Record<string, unknown> | undefined, column: string): number => Number(row?.[column] ?? 0)

/** The holds on the `SqlClient` in context (the table made by `SqlEventStore`'s migrations). */
export const makeSql = (options: { readonly tablePrefix?: string | undefined } = {}): Effect.Effect<Service, never, SqlClient.SqlClient> =>
  Effect.map(SqlClient.SqlClient, (client) => {
    const sql = client.withoutTransforms()
    const prefix = SqlMigrations.checkPrefix(options.tablePrefix)
    const holds = sql(`${prefix}${HOLDS_TABLE}`)
    const runs = sql(`${prefix}runs`)
    const failed = (operation: string) => (error: SqlError) => Effect.fail(storeError(operation, error))

    const spentAndHeld = (tenantId: string, rootRunId: string) =>
      sql`SELECT (SELECT COALESCE(SUM(cost_usd), 0) FROM ${runs} WHERE tenant_id = ${tenantId} AND root_run_id = ${rootRunId}) AS spent,
  (SELECT COALESCE(SUM(usd), 0) FROM ${holds} WHERE tenant_id = ${tenantId} AND root_run_id = ${rootRunId}) AS held`

    // One statement: the lineage's spend and holds are read and the hold written under one write lock (SQLite's; on
    // PostgreSQL the transaction's advisory lock on the lineage, taken first, orders the holds of one lineage).
    const insert = (r: HoldRequest) =>
      sql`INSERT INTO ${holds} (tenant_id, hold_id, call_id, root_run_id, usd, expires_at)
  SELECT ${r.tenantId}, ${r.holdId}, ${r.callId ?? null}, ${r.rootRunId}, ${r.usd}, ${r.expiresAt}
  WHERE (SELECT COALESCE(SUM(cost_usd), 0) FROM ${runs} WHERE tenant_id = ${r.tenantId} AND root_run_id = ${r.rootRunId})
    + (SELECT COALESCE(SUM(usd), 0) FROM ${holds} WHERE tenant_id = ${r.tenantId} AND root_run_id = ${r.rootRunId}) + ${r.usd} <= ${r.limitUsd}
  RETURNING hold_id`

    const lock = (r: HoldRequest) =>
      sql.onDialectOrElse({
        pg: () => Effect.asVoid(sql`SELECT pg_advisory_xact_lock(hashtextextended(${`${prefix}\u0001${r.tenantId}\u0001${r.rootRunId}`}, 0))`),
        orElse: () => Effect.void
      })

    // Holds that lapsed, whichever lineage's (a lineage that never runs again leaves none for good): outside the
    // hold's transaction, and on PostgreSQL skipping rows another transaction holds, so no lineage waits on another.
    const purge = (now: number) =>
      sql.onDialectOrElse({
        pg: () =>
          sql`DELETE FROM ${holds} WHERE (tenant_id, hold_id) IN (SELECT tenant_id, hold_id FROM ${holds} WHERE expires_at <= ${now} FOR UPDATE SKIP LOCKED)`,
        orElse: () => sql`DELETE FROM ${holds} WHERE expires_at <= ${now}`
      })

    const hold = (r: HoldRequest): Effect.Effect<HoldResult, StoreError> =>
      Effect.gen(function*() {
        yield* lock(r)
        // The lineage's lapsed holds, and the earlier hold of the same call (made again).
        yield* sql`DELETE FROM ${holds} WHERE tenant_id = ${r.tenantId} AND ((root_run_id = ${r.rootRunId} AND expires_at <= ${r.now}) OR call_id = ${r.callId ?? null})`
        const [row] = yield* spentAndHeld(r.tenantId, r.rootRunId)
        const written = yield* insert(r)
        return { held: written.length > 0, spentUsd: sum(row, "spent"), heldUsd: sum(row, "held") }
      }).pipe(
        // A failed COMMIT is a driver failure like any other (`transaction`), not a defect.
        (effect) => sql.onDialectOrElse({ pg: () => transaction(sql, effect), orElse: () => effect }),
        (effect) => Effect.zipRight(purge(r.now), effect),
        Effect.catchTag("SqlError", failed("holdBudget")),
        Effect.withSpan("BudgetHolds.hold", { attributes: { rootRunId: r.rootRunId }, captureStackTrace: false })
      )

    return {
      hold: (r) =>
        Number.isFinite(r.usd) && r.usd >= 0
          ? hold(r)
          : Effect.dieMessage(`BudgetHolds.hold: the amount held must be a finite amount of at least 0, not ${r.usd}`),
      release: (tenantId, holdId) =>
        sql`DELETE FROM ${holds} WHERE tenant_id = ${tenantId} AND hold_id = ${holdId}`.pipe(
          Effect.asVoid,
          Effect.catchTag("SqlError", failed("releaseBudget")),
          Effect.withSpan("BudgetHolds.release", { captureStackTrace: false })
        )
    }
  })

/** `makeSql` as a layer. */
export const layerSql = (options: { readonly tablePrefix?: string | undefined } = {}): Layer.Layer<BudgetHolds, never, SqlClient.SqlClient> =>
  Layer.effect(BudgetHolds, makeSql(options))
