/**
 * SQLite appends: the head trigger checks and moves the run's head with each inserted event; status and cost are
 * updated in the same transaction. No read on the hot path: a batch that changes neither status nor cost, in one
 * chunk, is a single INSERT (auto-committed; the head trigger is the concurrency check).
 *
 * The statements themselves (`statements`) are shared with a store package that runs them on its driver's own
 * prepared statements (`@artana/store-sqlite` does, see its `internal/sqliteAppend.ts`); `make` runs them through
 * the `SqlClient`, for any other SQLite client.
 */
import type * as SqlClient from "@effect/sql/SqlClient"
import * as Effect from "effect/Effect"
import * as Predicate from "effect/Predicate"
import type { SequenceConflict } from "../Errors.js"
import { type BatchSummary, type Event, summarize } from "../Event.js"
import { type AppendRequest, fenceOf, newRunInfo } from "../EventStore.js"
import { storeError, transaction } from "../SqlErrors.js"
import { type AppendBatch, chunksOf, claimedEpoch, eventValues, INSERT_CHUNK, orConflict, prevHashLookup, runRow, type Tables } from "./sqlAppend.js"

/** The rows a SQLite statement changed, from better-sqlite3's raw result (`RunResult`). */
const changes = (raw: unknown): number =>
  Predicate.hasProperty(raw, "changes") && typeof raw.changes === "number" ? raw.changes : 0

/** A statement's text and its parameters, in order. */
export interface SqliteStatement {
  readonly text: string
  readonly params: ReadonlyArray<unknown>
}

/** How a batch is written (`statements(t).plan`). */
export type SqlitePlan =
  /** A new run: its row, then its events, in one transaction. */
  | "create"
  /** One INSERT, on its own: it commits alone, and the head trigger is its concurrency check. */
  | "insert"
  /** The INSERTs, then the run's status, cost and claimed epoch, in one transaction. */
  | "update"

const COLUMNS = ["run_id", "seq", "event_id", "tenant_id", "timestamp", "type", "step_key", "payload", "prev_hash", "hash"]

/** The statements of SQLite's append for tables `t`, whichever runs them. */
export const statements = (t: Tables) => {
  // The hot statement: its text depends only on the number of rows, so it is built once per size and the
  // prepared-statement cache finds it (a tagged-template INSERT is compiled on every call). It writes
  // nothing when the writer is fenced (the run's owner epoch is above the batch's fence, see `fenceOf`; a NULL
  // fence fences nothing): SQLite has one writer at a time, so the check and the write are one atomic step.
  // The first tuple's prev_hash: a parameter, or (`lookup`) NULL when its bytes are the stored previous event's hash.
  const insertText = new Map<string, string>()
  const insertSql = (rows: number, lookup: boolean): string => {
    const key = `${rows}${lookup ? "l" : ""}`
    let text = insertText.get(key)
    if (text === undefined) {
      const tuple = `(${COLUMNS.map(() => "?").join(",")})`
      const first = lookup ? `(${COLUMNS.map((c) => (c === "prev_hash" ? prevHashLookup(t.events, "?", "?", "?", "?") : "?")).join(",")})` : tuple
      text = `INSERT INTO ${t.events} (${COLUMNS.join(",")}) SELECT * FROM (VALUES ${[first, ...Array.from({ length: rows - 1 }, () => tuple)].join(",")}) ` +
        `WHERE NOT EXISTS (SELECT 1 FROM ${t.runs} WHERE run_id = ? AND tenant_id = ? AND owner_epoch > ?)`
      insertText.set(key, text)
    }
    return text
  }
  // A batch that pauses the run marks when (its last event's time: the head trigger has moved `updated_at` to it).
  const updateText = `UPDATE "${t.runs}" SET status = COALESCE(?, status), cost_usd = cost_usd + ?, owner_epoch = COALESCE(?, owner_epoch), ` +
    `paused_at = CASE WHEN ? = 'paused' THEN updated_at ELSE paused_at END ` +
    `WHERE run_id = ? AND tenant_id = ?`
  let createText: string | undefined

  return {
    /** How `request` is written: see `SqlitePlan`. `summary` is `summarize(request.events)`. */
    plan: (request: AppendRequest, summary: BatchSummary): SqlitePlan =>
      request.expectedSeq === 0
        ? "create"
        : summary.status === undefined && summary.costUsd === 0 && request.claim !== true && request.events.length <= INSERT_CHUNK
        ? "insert"
        : "update",
    /**
     * The INSERT of one chunk of a batch's events (at most `INSERT_CHUNK`): it wrote them all when it changed
     * `chunk.length` rows, and none (the writer is fenced) when it changed none.
     */
    insert: (request: AppendRequest, chunk: ReadonlyArray<Event>): SqliteStatement => {
      const { lookup, rows } = eventValues(chunk)
      const params: Array<unknown> = []
      for (let i = 0; i < rows.length; i++) {
        const [seq, eventId, timestamp, type, stepKey, payload, prevHash, hash] = rows[i]!
        params.push(request.runId, seq, eventId, request.tenantId, timestamp, type, stepKey, payload)
        if (i === 0 && lookup) params.push(prevHash, request.tenantId, request.runId, seq, prevHash)
        else params.push(prevHash)
        params.push(hash)
      }
      params.push(request.runId, request.tenantId, fenceOf(request) ?? null)
      return { text: insertSql(chunk.length, lookup), params }
    },
    /** The new run's row, at head 0 (inserting its events moves the head); undefined when the batch does not start a run. */
    createRun: (request: AppendRequest): SqliteStatement | undefined => {
      const info = newRunInfo(request)
      if (info === undefined) return undefined
      const row = runRow(info, "genesis")
      const columns = Object.keys(row)
      createText ??= `INSERT INTO "${t.runs}" (${columns.map((c) => `"${c}"`).join(",")}) VALUES (${columns.map(() => "?").join(",")})`
      return { text: createText, params: Object.values(row) }
    },
    /** Status and cost a batch changes (the trigger has moved the head already), and the owner epoch it claims. */
    updateRun: (request: AppendRequest, summary: BatchSummary): SqliteStatement => ({
      text: updateText,
      params: [summary.status ?? null, summary.costUsd, claimedEpoch(request), summary.status ?? null, request.runId, request.tenantId]
    })
  }
}

export const make = (sql: SqlClient.SqlClient, t: Tables): AppendBatch => {
  const s = statements(t)

  /** A new run's row, at head 0: inserting its events moves the head. */
  const createRun = (request: AppendRequest, conflict: () => SequenceConflict) => {
    const statement = s.createRun(request)
    // A new run's batch must start with RunStarted; the in-memory store refuses it the same way.
    if (statement === undefined) return Effect.fail(conflict())
    return sql.unsafe(statement.text, statement.params).raw.pipe(Effect.catchTag("SqlError", orConflict(sql, "append", conflict)), Effect.asVoid)
  }

  const updateRun = (request: AppendRequest, summary: BatchSummary) => {
    const statement = s.updateRun(request, summary)
    return sql.unsafe(statement.text, statement.params).raw.pipe(Effect.catchTag("SqlError", (error) => Effect.fail(storeError("append", error))), Effect.asVoid)
  }

  const insertEvents = (request: AppendRequest, conflict: () => SequenceConflict) =>
    Effect.forEach(chunksOf(request.events), (chunk) => {
      const statement = s.insert(request, chunk)
      return Effect.flatMap(
        sql.unsafe(statement.text, statement.params).raw,
        (raw) => (changes(raw) === chunk.length ? Effect.void : Effect.fail(conflict()))
      )
    }, { discard: true }).pipe(Effect.catchTag("SqlError", orConflict(sql, "append", conflict)))

  return (request, conflict) => {
    const summary = summarize(request.events)
    // A batch that changes neither status nor cost, in one chunk, is a single INSERT. Otherwise one transaction
    // whose first statement writes, so SQLite takes its write lock before anything else.
    switch (s.plan(request, summary)) {
      case "create":
        return transaction(sql, Effect.zipRight(createRun(request, conflict), insertEvents(request, conflict)))
      case "insert":
        return insertEvents(request, conflict)
      case "update":
        return transaction(sql, Effect.zipRight(insertEvents(request, conflict), updateRun(request, summary)))
    }
  }
}
