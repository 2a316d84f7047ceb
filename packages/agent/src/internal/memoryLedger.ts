/**
 * The SQL memory store's ledger of idempotent writes: a write with a key runs once, in one transaction that records
 * its result; a write whose key is recorded returns the recorded result.
 */
import { type Errors, SqlErrors } from "@artana/core"
import type * as SqlClient from "@effect/sql/SqlClient"
import { SqlError } from "@effect/sql/SqlError"
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import * as ParseResult from "effect/ParseResult"
import * as Schema from "effect/Schema"
import type { Scope, WriteOptions } from "../MemoryStore.js"
import { corrupt } from "./memoryRows.js"

/** Runs `write` once per key (`options.key`; without one, a random key: the same code path). */
export type Once = <A, I, E>(
  operation: string,
  scope: Scope,
  options: WriteOptions,
  schema: Schema.Schema<A, I>,
  write: (now: number) => Effect.Effect<A, E | SqlError>
) => Effect.Effect<A, E | Errors.StoreError>

/** The ledger on the table `opsTable`, through `sql`. */
export const make = (sql: SqlClient.SqlClient, opsTable: string): Once => {
  const ops = sql(opsTable)

  /**
   * Claims an idempotency key inside the transaction: the write that inserts the ledger row does the work; a
   * write whose key is there returns the recorded result. The ledger row is also the transaction's first write,
   * so SQLite takes its write lock before anything is read (a read-then-write transaction could fail with
   * SQLITE_BUSY at its first write when another process wrote in between).
   */
  const claim = (tenantId: string, key: string, now: number) =>
    Effect.gen(function*() {
      const inserted = yield* sql`INSERT INTO ${ops} (tenant_id, op_key, result, created_at) VALUES (${tenantId}, ${key}, ${""}, ${now}) ON CONFLICT (tenant_id, op_key) DO NOTHING RETURNING op_key`
      if (inserted.length > 0) return undefined
      const [row] = yield* sql`SELECT result FROM ${ops} WHERE tenant_id = ${tenantId} AND op_key = ${key}`
      return typeof row?.result === "string" ? row.result : ""
    })

  return <A, I, E>(
    operation: string,
    scope: Scope,
    options: WriteOptions,
    schema: Schema.Schema<A, I>,
    write: (now: number) => Effect.Effect<A, E | SqlError>
  ): Effect.Effect<A, E | Errors.StoreError> =>
    Effect.gen(function*() {
      const key = options.key ?? `anonymous:${crypto.randomUUID()}`
      const now = yield* Clock.currentTimeMillis
      const outcome = yield* sql.withTransaction(Effect.gen(function*() {
        const done = yield* claim(scope.tenantId, key, now)
        if (done !== undefined) return { done }
        const result = yield* write(now)
        yield* sql`UPDATE ${ops} SET result = ${JSON.stringify(Schema.encodeSync(schema)(result))} WHERE tenant_id = ${scope.tenantId} AND op_key = ${key}`
        return { result }
      })).pipe(
        SqlErrors.transactionDefects,
        Effect.catchIf((error): error is SqlError => error instanceof SqlError, (error) => Effect.fail(SqlErrors.storeError(operation, error)))
      )
      if ("result" in outcome) return outcome.result
      return yield* Effect.mapError(
        Schema.decodeUnknown(Schema.parseJson(schema))(outcome.done),
        (e) => corrupt(operation, `the result recorded for key ${key}: ${ParseResult.TreeFormatter.formatErrorSync(e)}`)
      )
    })
}
