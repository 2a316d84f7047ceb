/**
 * The `LiveStore` on SQL (SQLite or PostgreSQL, through `@effect/sql`): deltas in one table, `<prefix>live_deltas`,
 * so a reader in one process follows a run streaming in another, and a reader still gets the deltas of a call whose
 * process crashed. Its migrations are their own set (`live`). Rows go when their run ends (the kernel drops them).
 *
 * @since 0.1.0
 */
import * as SqlClient from "@effect/sql/SqlClient"
import type { SqlError } from "@effect/sql/SqlError"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Schema from "effect/Schema"
import { type SchemaMismatch, StoreError } from "./Errors.js"
import { DeltaPart, type StoredDelta } from "./Live.js"
import { LiveStore, type Service } from "./LiveStore.js"
import { storeError } from "./SqlErrors.js"
import * as SqlMigrations from "./SqlMigrations.js"

export interface Options {
  /** Prepended to the table name, as for `SqlEventStore`. */
  readonly tablePrefix?: string | undefined
}

const tableOf = (options: Options) => `${SqlMigrations.checkPrefix(options.tablePrefix)}live_deltas`

/** The schema: idempotent statements, applied by `SqlMigrations.run`. */
export const migrations = (options: Options = {}): Record<string, SqlMigrations.Migration> => ({
  "1_live_deltas": Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    yield* sql`CREATE TABLE IF NOT EXISTS ${sql(tableOf(options))} (
  tenant_id TEXT NOT NULL,
  run_id TEXT NOT NULL,
  seq INTEGER NOT NULL,
  n INTEGER NOT NULL,
  step_key TEXT NOT NULL,
  part TEXT NOT NULL,
  PRIMARY KEY (tenant_id, run_id, seq, n)
)`
  })
})

/** An integer column as the driver gives it: a number, a bigint (SQLite's safe integers) or text (Postgres BIGINT). */
const Int = Schema.Union(
  Schema.Number,
  Schema.NumberFromString,
  Schema.transform(Schema.BigIntFromSelf, Schema.Number, { strict: true, decode: (b) => Number(b), encode: (n) => BigInt(n) })
)
const Row = Schema.Struct({ seq: Int, n: Int, step_key: Schema.String, part: Schema.parseJson(DeltaPart) })
const decodeRows = Schema.decodeUnknown(Schema.Array(Row))
const encodePart = Schema.encodeSync(Schema.parseJson(DeltaPart))
const NextRow = Schema.Array(Schema.Struct({ n: Schema.NullOr(Int) }))

/**
 * Builds the store on the `SqlClient` in context, creating its table first.
 *
 * @example
 * const live = yield* SqlLiveStore.make({ tablePrefix: "artana_" })
 */
export const make = (options: Options = {}): Effect.Effect<Service, StoreError | SchemaMismatch, SqlClient.SqlClient> =>
  Effect.gen(function*() {
    const table = tableOf(options)
    yield* SqlMigrations.run({
      name: "live",
      tablePrefix: options.tablePrefix,
      migrations: migrations(options),
      columns: { [table]: ["tenant_id", "run_id", "seq", "n", "step_key", "part"] }
    })
    const sql = (yield* SqlClient.SqlClient).withoutTransforms()
    const t = sql(table)
    const failed = (operation: string) => (error: SqlError) => Effect.fail(storeError(`LiveStore.${operation}`, error))
    const undecodable = (error: unknown) => new StoreError({ operation: "LiveStore.read", reason: `a kept delta does not decode: ${String(error)}` })
    return {
      append: (tenantId, runId, deltas) =>
        deltas.length === 0 ? Effect.void : sql`INSERT INTO ${t} ${
          sql.insert(deltas.map((d) => ({ tenant_id: tenantId, run_id: runId, seq: d.seq, n: d.n, step_key: d.stepKey, part: encodePart(d.part) })))
        } ON CONFLICT DO NOTHING`.pipe(Effect.asVoid, Effect.catchTag("SqlError", failed("append"))),
      read: (tenantId, runId, after, throughSeq, limit) =>
        sql`SELECT seq, n, step_key, part FROM ${t}
WHERE tenant_id = ${tenantId} AND run_id = ${runId} AND (seq > ${after.seq} OR (seq = ${after.seq} AND n > ${after.n})) AND seq <= ${throughSeq}
ORDER BY seq, n LIMIT ${Math.max(1, Math.floor(limit))}`.pipe(
          Effect.catchTag("SqlError", failed("read")),
          Effect.flatMap((rows) => Effect.mapError(decodeRows(rows), undecodable)),
          Effect.map((rows) => rows.map((r): StoredDelta => ({ seq: r.seq, n: r.n, stepKey: r.step_key, part: r.part })))
        ),
      nextIndex: (tenantId, runId, seq) =>
        sql`SELECT MAX(n) AS n FROM ${t} WHERE tenant_id = ${tenantId} AND run_id = ${runId} AND seq = ${seq}`.pipe(
          Effect.catchTag("SqlError", failed("nextIndex")),
          Effect.flatMap((rows) => Effect.mapError(Schema.decodeUnknown(NextRow)(rows), undecodable)),
          Effect.map((rows) => (rows[0]?.n ?? 0) + 1)
        ),
      drop: (tenantId, runId) =>
        sql`DELETE FROM ${t} WHERE tenant_id = ${tenantId} AND run_id = ${runId}`.pipe(Effect.asVoid, Effect.catchTag("SqlError", failed("drop")))
    } satisfies Service
  })

/** The SQL `LiveStore` layer. */
export const layer = (options: Options = {}): Layer.Layer<LiveStore, StoreError | SchemaMismatch, SqlClient.SqlClient> =>
  Layer.effect(LiveStore, make(options))
