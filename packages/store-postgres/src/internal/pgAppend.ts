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
import { type Errors, Event, EventStore, SqlErrors, SqlEventStore } from "@artana/core"
import type * as SqlClient from "@effect/sql/SqlClient"
import type { SqlError } from "@effect/sql/SqlError"
import * as Effect from "effect/Effect"
import * as Predicate from "effect/Predicate"
import * as RunWatch from "./runWatch.js"

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
  const EVENT_VALUES = ["seq", "event_id", "timestamp", "type", "step_key", "payload", "prev_hash", "hash"] as const
  const EVENT_TYPES = ["bigint", "bytea", "double precision", "text", "text", "text", "bytea", "bytea"] as const
  const RUN_COLUMNS = "run_id, tenant_id, workflow, parent_run_id, root_run_id, status, head_seq, head_hash, cost_usd, created_at, updated_at, owner_epoch, version, forked_from"
  type PgAppend = "create" | "events" | "run"
  /**
   * Parameters before the events' own: the run's row (create), run, guard and fence (events), and both with the
   * epoch claimed (run).
   */
  const PARAMS: Record<PgAppend, number> = { create: 14, events: 4, run: 10 }
  const pgText = new Map<string, string>()
  /** A run's key as the fence index holds it (see `SqlEventStore.FENCE_INDEX`). */
  const byKey = (run: string, tenant: string) => `tenant_id = ${tenant}::text COLLATE "C" AND run_id = ${run}::text COLLATE "C"`
  // The run's key and expected seq in each kind's parameters, for the probe of the event the batch follows.
  const KEY: Record<Exclude<PgAppend, "create">, readonly [run: string, tenant: string, seq: string]> = { events: ["$1", "$2", "$3"], run: ["$6", "$7", "$8"] }
  const pgAppendSql = (kind: PgAppend, rows: number, lookup: boolean): string => {
    const key = `${kind}${rows}${lookup ? "l" : ""}`
    let text = pgText.get(key)
    if (text === undefined) {
      let n = PARAMS[kind]
      const tuples = Array.from({ length: rows }, (_, row) => {
        const cells = EVENT_TYPES.map((type) => `$${++n}::${type}`)
        // The first event of a batch that continues the run: its prev_hash is NULL when it is the stored hash before
        // it (read once, by the probe below).
        if (row === 0 && lookup) cells[6] = `(CASE WHEN ${cells[6]} = (SELECT hash FROM prev) THEN NULL ELSE ${cells[6]} END)`
        return `(${cells.join(",")})`
      })
      const values = `(VALUES ${tuples.join(",")}) AS e (${EVENT_VALUES.join(", ")})`
      const into = `INSERT INTO "${t.events}" (run_id, tenant_id, ${EVENT_VALUES.join(", ")})`
      // The event at expectedSeq, probed once (a CTE read twice is evaluated once): that it exists says no gap,
      // this run, this tenant; its hash is the first new event's prev_hash.
      const prev = ([run, tenant, seq]: readonly [string, string, string]) =>
        `prev AS (SELECT hash FROM "${t.events}" WHERE run_id = ${run}::text AND tenant_id = ${tenant}::text AND seq = ${seq}::bigint)`
      const follows = "EXISTS (SELECT 1 FROM prev)"
      // The writer is not fenced: the run's owner epoch is not above the batch's fence (NULL: no fence). A claim
      // is a "run" batch, whose UPDATE re-checks the row it waited for; a batch of events only is ordered against
      // a claim by the claim's own event (the primary key), so the snapshot's epoch is enough for it.
      // The run is found through the fence index (`SqlEventStore.FENCE_INDEX`, the only index in the "C" collation), so
      // the plan does not depend on the table's statistics.
      const unfenced = (run: string, tenant: string, fence: string) =>
        `NOT EXISTS (SELECT 1 FROM "${t.runs}" WHERE ${byKey(run, tenant)} AND owner_epoch > ${fence}::bigint)`
      // The run's watchers, if any, are told at the commit (read in each statement's condition, so it runs).
      const note = (run: string, tenant: string) => RunWatch.noteCte(channel, tenant, run)
      switch (kind) {
        case "create":
          text = `WITH run AS (INSERT INTO "${t.runs}" (${RUN_COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6, $7::bigint, $8, $9::double precision, $10::double precision, $11::double precision, $12::bigint, $13::text, $14::text) RETURNING run_id, tenant_id), ${note("$1", "$2")} ${into} SELECT run.run_id, run.tenant_id, e.* FROM run, ${values} WHERE ${RunWatch.noteRead}`
          break
        case "events":
          text = `WITH ${prev(KEY.events)}, ${note("$1", "$2")} ${into} SELECT $1::text, $2::text, e.* FROM ${values} WHERE ${follows} AND ${unfenced("$1", "$2", "$4")} AND ${RunWatch.noteRead}`
          break
        case "run":
          text = `WITH ${prev(KEY.run)}, run AS (UPDATE "${t.runs}" SET head_seq = $1::bigint, head_hash = $2, updated_at = $3::double precision, status = COALESCE($4::text, status), cost_usd = cost_usd + $5::double precision, owner_epoch = COALESCE($10::bigint, owner_epoch) WHERE ${byKey("$6", "$7")} AND head_seq <= $8::bigint AND owner_epoch <= COALESCE($9::bigint, owner_epoch) AND ${follows} RETURNING run_id, tenant_id), ${note("$6", "$7")} ${into} SELECT run.run_id, run.tenant_id, e.* FROM run, ${values} WHERE ${RunWatch.noteRead}`
          break
      }
      pgText.set(key, text)
    }
    return text
  }

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
    const last = events[events.length - 1]!
    const params: Array<unknown> = []
    let kind: PgAppend
    if (request.expectedSeq === 0) {
      const info = EventStore.newRunInfo(request)
      // A new run's batch must start with RunStarted; the in-memory store refuses it the same way.
      if (info === undefined) return Effect.fail(conflict())
      kind = "create"
      params.push(
        info.runId,
        info.tenantId,
        info.workflow,
        info.parentRunId ?? null,
        info.rootRunId,
        info.status,
        info.headSeq,
        SqlEventStore.packedHash(info.headHash),
        info.costUsd,
        info.createdAt,
        info.updatedAt,
        info.ownerEpoch,
        info.version,
        info.forkedFrom ?? null
      )
    } else {
      const summary = Event.summarize(events)
      const fence = EventStore.fenceOf(request) ?? null
      if (summary.status === undefined && summary.costUsd === 0 && request.claim !== true) {
        kind = "events"
        params.push(request.runId, request.tenantId, request.expectedSeq, fence)
      } else {
        kind = "run"
        params.push(last.seq, SqlEventStore.packedHash(last.hash), last.timestamp, summary.status ?? null, summary.costUsd, request.runId, request.tenantId, request.expectedSeq, fence, SqlEventStore.claimedEpoch(request))
      }
    }
    const { lookup, rows } = SqlEventStore.eventValues(events)
    for (const row of rows) params.push(...row)
    return Effect.flatMap(
      executeCounted(pgAppendSql(kind, events.length, lookup), params, events.length, placement),
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
    let expectedSeq = request.expectedSeq
    const lockRun = request.expectedSeq === 0
      ? Effect.void
      : sql`SELECT 1 FROM ${runs} WHERE run_id = ${request.runId} AND tenant_id = ${request.tenantId} FOR UPDATE`
    return SqlErrors.transactionDefects(sql.withTransaction(Effect.zipRight(
      lockRun,
      Effect.forEach(SqlEventStore.chunksOf(request.events), (events, i) => {
        // Only the first chunk claims: the later ones write as the owner it made.
        const chunk = { ...request, expectedSeq, events, claim: i === 0 && request.claim === true }
        expectedSeq += events.length
        return appendChunkPg(chunk, conflict, "batch")
      }, { discard: true })
    )))
  }

  return appendPg
}
