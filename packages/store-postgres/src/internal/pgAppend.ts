/**
 * PostgreSQL appends: one statement per batch, and the run's row written only when the run's status or cost changes
 * (as DBOS keeps step outputs insert-only and updates a workflow's row with its status). A batch that changes
 * neither (a tool call, a step) is one INSERT of its events, guarded: it writes nothing unless the event at
 * `expectedSeq` exists (no gap, the right tenant), and the primary key refuses a seq written already (a second
 * writer). A batch that changes status or cost adds the run's row to the same statement, in a data-modifying CTE
 * that also records the head there. A new run's row and first events are one statement too. So: one round trip and
 * one commit per append, no trigger, no foreign key check, and no UPDATE of a hot row per step. The run's head is
 * read from its last event (see `SqlEventStore`'s `runColumns`). Small batches run as prepared statements.
 *
 * This is the event store's PostgreSQL dialect (`SqlEventStore.AppendDialect`), provided with the client by
 * `PostgresStore.layerClient`.
 */
import { type Errors, type EventStore, SqlErrors, SqlEventStore } from "@artana/core"
import type * as SqlClient from "@effect/sql/SqlClient"
import type { SqlError } from "@effect/sql/SqlError"
import * as Effect from "effect/Effect"
import * as Predicate from "effect/Predicate"
import * as PgStatements from "./pgStatements.js"

/** Batches of at most this many events use a prepared statement (one text per size, so a few per connection). */
const PREPARED_MAX_ROWS = 8

/** The rows a PostgreSQL statement changed, from `pg`'s raw result. */
const rowCount = (raw: unknown): number =>
  Predicate.hasProperty(raw, "rowCount") && typeof raw.rowCount === "number" ? raw.rowCount : 0

/**
 * The event store's append on PostgreSQL, for the tables `t`, over `sql`; `prepared` runs the small batches (the
 * driver's prepared statements of the same pool), or undefined to send everything through `sql`. Each statement also
 * NOTIFYs `channel` at its commit when a reader watches the run (`RunWatch.noteCte`), and only then.
 */
export const make = (
  sql: SqlClient.SqlClient,
  t: SqlEventStore.Tables,
  prepared: SqlEventStore.PreparedStatementsService | undefined,
  channel: string
): SqlEventStore.AppendBatch => {
  const runs = sql(t.runs)
  const textOf = PgStatements.texts(t, channel)

  /**
   * Where a statement runs: on its own (committed at once; prepared when the driver offers it), in a savepoint
   * of the caller's transaction (so a conflict leaves it usable, as on SQLite), or in the batch's transaction
   * (the chunks of a large batch).
   */
  type Placement = "alone" | "savepoint" | "batch"

  /** One chunk of a batch, as one statement; resolves when every event of it was written. */
  const appendChunkPg = (
    request: EventStore.AppendRequest,
    conflict: () => Errors.SequenceConflict,
    placement: Placement
  ): Effect.Effect<void, Errors.SequenceConflict | SqlError> => {
    const events = request.events
    const head = PgStatements.headOf(request)
    // A new run's batch must start with RunStarted; the in-memory store refuses it the same way.
    if (head === undefined) return Effect.fail(conflict())
    const { lookup, rows } = SqlEventStore.eventValues(events)
    const params = head.params
    // Each event's columns but its type (the payload's `_tag`, not stored: see `PgStatements`).
    for (const row of rows) params.push(row[0], row[1], row[2], row[4], row[5], row[6], row[7])
    return Effect.flatMap(
      executeCounted(textOf(head.kind, events.length, lookup), params, events.length, placement),
      (written) => (written === events.length ? Effect.void : Effect.fail(conflict()))
    )
  }

  /**
   * Runs a statement and resolves with the rows it wrote: prepared when it runs alone, the driver offers it
   * and the batch is small (one prepared text per size), else through `SqlClient`.
   */
  const executeCounted = (text: string, params: ReadonlyArray<unknown>, rows: number, placement: Placement): Effect.Effect<number, SqlError> => {
    if (placement === "alone" && prepared !== undefined && rows <= PREPARED_MAX_ROWS) return prepared.execute(text, params)
    const statement = Effect.map(sql.unsafe(text, params).raw, rowCount)
    return placement === "savepoint" ? SqlErrors.transactionDefects(sql.withTransaction(statement)) : statement
  }

  const appendPg = (request: EventStore.AppendRequest, conflict: () => Errors.SequenceConflict, inTransaction: boolean) => {
    if (request.events.length <= SqlEventStore.INSERT_CHUNK) return appendChunkPg(request, conflict, inTransaction ? "savepoint" : "alone")
    // A batch too large for one statement: its chunks, each after the one before, in one transaction. The
    // run's row is locked first, as a status or cost change locks it before its events: two appenders to one
    // run take the locks in the same order, so they conflict instead of deadlocking.
    const lockRun = request.expectedSeq === 0
      ? Effect.void
      : sql`SELECT 1 FROM ${runs} WHERE run_id = ${request.runId} AND tenant_id = ${request.tenantId} FOR UPDATE`
    // Each chunk after the one before, counted afresh each time the transaction runs (a serialization failure runs it
    // again, `sqlEventWrite`'s retry): counted once, a retry's first chunk started where the failed run's last ended.
    const chunks = Effect.suspend(() => {
      let expectedSeq = request.expectedSeq
      return Effect.forEach(SqlEventStore.chunksOf(request.events), (events, i) => {
        // Only the first chunk claims: the later ones write as the owner it made.
        const chunk = { ...request, expectedSeq, events, claim: i === 0 && request.claim === true }
        expectedSeq += events.length
        return appendChunkPg(chunk, conflict, "batch")
      }, { discard: true })
    })
    return SqlErrors.transactionDefects(sql.withTransaction(Effect.zipRight(lockRun, chunks)))
  }

  return appendPg
}
