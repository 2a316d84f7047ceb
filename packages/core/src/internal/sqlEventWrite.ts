/**
 * The write side of the SQL event store: `append`, `appendAll` and `appendPaged` around the dialect's `AppendBatch`
 * (which writes one batch): a batch checked before it is written, a refused one told apart as a conflict or as the
 * fencing of its writer, and PostgreSQL's serialization failures and deadlocks run again outside a caller's
 * transaction.
 */
import * as SqlClient from "@effect/sql/SqlClient"
import { SqlError } from "@effect/sql/SqlError"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Option from "effect/Option"
import type { OwnershipLost } from "../Errors.js"
import { SequenceConflict, StoreError } from "../Errors.js"
import { type AppendRequest, fenced, fenceOf, invalidBatch } from "../EventStore.js"
import { errorCode, retryWhile, storeError, transaction } from "../SqlErrors.js"
import { type AppendBatch, isConflict, type Tables } from "./sqlAppend.js"
import { toNumber } from "./sqlRows.js"

/**
 * PostgreSQL's serialization failure and deadlock: the server rolled the statement back, and it may run again. As the
 * driver's `SqlError`, or as the `StoreError` an append inside a transaction made of it (`appendAll`'s batches are).
 */
const retryable = (error: SqlError | SequenceConflict | OwnershipLost | StoreError): boolean =>
  (error._tag === "SqlError" || error._tag === "StoreError") && (errorCode(error) === "40001" || errorCode(error) === "40P01")

/**
 * How often such a statement runs again. At once, without a delay: the transaction it lost to has ended (and a
 * delay would be the caller's clock's, which a test may hold still).
 */
const RETRIES = 8

/** The appends of the store on `sql`'s tables `t`, each batch written by `appendBatch`. */
export const make = (sql: SqlClient.SqlClient, t: Tables, appendBatch: AppendBatch) => {
  const runs = sql(t.runs)

  /**
   * A refused batch of a fenced writer: `OwnershipLost` when the run has a newer owner (a conflict of such a writer
   * is fencing as well), the conflict otherwise. Read only when an append failed.
   */
  const fencedOrConflict = (request: AppendRequest) => (error: SequenceConflict): Effect.Effect<never, SequenceConflict | OwnershipLost | StoreError> =>
    fenceOf(request) === undefined
      ? Effect.fail(error)
      : sql`SELECT owner_epoch FROM ${runs} WHERE run_id = ${request.runId} AND tenant_id = ${request.tenantId}`.pipe(
        Effect.catchTag("SqlError", (e) => Effect.fail(storeError("append", e))),
        Effect.flatMap(([row]) => {
          const epoch = row === undefined ? undefined : toNumber(row.owner_epoch)
          return Effect.fail(epoch === undefined ? error : fenced(request, epoch) ?? error)
        })
      )

  // Only PostgreSQL's errors are `retryable`: on SQLite the hot append is not wrapped in retries it never takes.
  const retries = sql.onDialectOrElse({ sqlite: () => false, orElse: () => true })
  const append = (request: AppendRequest): Effect.Effect<void, SequenceConflict | OwnershipLost | StoreError> => {
    const last = request.events[request.events.length - 1]
    if (last === undefined) return Effect.void
    const conflict = () => new SequenceConflict({ runId: request.runId, expectedSeq: request.expectedSeq })
    const bad = invalidBatch(request)
    if (bad !== undefined) return Effect.fail(new StoreError({ operation: "append", reason: bad }))
    // The fiber's context read in place (one node, not `contextWithEffect`'s two): this runs twice per tool step.
    return Effect.withFiberRuntime<void, SequenceConflict | OwnershipLost | StoreError>((fiber) => {
      const inTransaction = Context.getOption(fiber.currentContext, SqlClient.TransactionConnection)._tag === "Some"
      const batch = appendBatch(request, conflict, inTransaction)
      // Written already (a lone run's append on SQLite, see `AppendBatch`): a success goes on as it is, twice a tool step.
      const written = Exit.isExit(batch)
      if (written && Exit.isSuccess(batch)) return Exit.void
      // A serialization failure or a deadlock (PostgreSQL, under REPEATABLE READ or SERIALIZABLE, or a lock cycle)
      // rolled the statement back: outside the caller's transaction it runs again, and a writer that really
      // lost the race then conflicts. Inside one, the caller's transaction is what must start again.
      const retried = inTransaction || !retries || written ? batch : retryWhile(batch, retryable, RETRIES)
      // One handler for both (a driver error that is a conflict is then told apart as fencing too): one node fewer
      // than two `catchTag`s, on every append.
      return Effect.catchAll(retried, (error) => {
        if (error._tag === "StoreError") return Effect.fail(error)
        if (error._tag === "SequenceConflict") return fencedOrConflict(request)(error)
        return isConflict(sql, error) ? fencedOrConflict(request)(conflict()) : Effect.fail(storeError("append", error))
      })
    })
  }

  /**
   * Every batch in one transaction: each is appended as `append` appends it inside a caller's transaction (the
   * dialect's own append too), so a refused one rolls back the ones before it. A serialization failure or a
   * deadlock runs the whole transaction again.
   */
  const appendAll = (requests: ReadonlyArray<AppendRequest>): Effect.Effect<void, SequenceConflict | OwnershipLost | StoreError> => {
    const batches = requests.filter((r) => r.events.length > 0)
    if (batches.length <= 1) return batches.length === 0 ? Effect.void : append(batches[0]!)
    const all = transaction(sql, Effect.forEach(batches, append, { discard: true }))
    // The fiber's context read in place (one node, not `contextWithEffect`'s two): this runs twice per tool step.
    return Effect.withFiberRuntime<void, SequenceConflict | OwnershipLost | StoreError>((fiber) => {
      const inTransaction = Context.getOption(fiber.currentContext, SqlClient.TransactionConnection)._tag === "Some"
      const retried = inTransaction ? all : retryWhile(all, retryable, RETRIES)
      return Effect.catchTag(retried, "SqlError", (error) => Effect.fail(storeError("appendAll", error)))
    })
  }

  /**
   * Every batch `next` gives in one transaction, each appended as `append` appends it inside a caller's transaction.
   * Not retried on a serialization failure: `next` is read once (the caller runs it all again).
   */
  const appendPaged = <E>(next: Effect.Effect<Option.Option<AppendRequest>, E>): Effect.Effect<void, SequenceConflict | OwnershipLost | StoreError | E> => {
    const loop: Effect.Effect<void, SequenceConflict | OwnershipLost | StoreError | E> = Effect.flatMap(next, Option.match({
      onNone: () => Effect.void,
      onSome: (request) => Effect.zipRight(append(request), loop)
    }))
    const isSqlError = (error: unknown): error is SqlError => error instanceof SqlError
    return Effect.catchIf(transaction(sql, loop), isSqlError, (error) => Effect.fail(storeError("appendPaged", error)))
  }

  return { append, appendAll, appendPaged }
}
