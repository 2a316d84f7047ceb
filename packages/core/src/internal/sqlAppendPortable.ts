/**
 * Appends on PostgreSQL (a SQL database with no head trigger since its migration 2) without its store package's append in
 * context: the store runs on a client an application built (a plain `PgClient`), not on its store package's. Each
 * batch is one transaction of plain statements: the run's row is moved to the batch's head, under the same checks
 * the store package's single statement makes (the event at `expectedSeq` exists, the writer is not fenced), and
 * its events are inserted under the run's surrogate key (migration 12; the primary key refuses a seq written already).
 * Slower than the store package's append (a transaction and a statement per chunk), and the same log.
 */
import type * as SqlClient from "@effect/sql/SqlClient"
import * as Effect from "effect/Effect"
import type { SequenceConflict } from "../Errors.js"
import { summarize } from "../Event.js"
import { type AppendRequest, fenceOf, newRunInfo } from "../EventStore.js"
import { transactionDefects } from "../SqlErrors.js"
import { type AppendBatch, chunksOf, claimedEpoch, eventValues, packedHash, runRow, type Tables } from "./sqlAppend.js"

export const make = (sql: SqlClient.SqlClient, t: Tables): AppendBatch => {
  const runs = sql(t.runs)
  const events = sql(t.events)

  /** The batch's events, of the run whose surrogate key is `runKey`. */
  const insertEvents = (request: AppendRequest, runKey: unknown) =>
    Effect.forEach(chunksOf(request.events), (chunk) =>
      sql`INSERT INTO ${events} ${
        // The first event of a chunk that continues the run keeps its prev_hash: these plain statements do not look
        // up the previous event's hash (a reader takes a stored prev_hash as it is).
        // No type: it is the payload's `_tag`.
        sql.insert(eventValues(chunk).rows.map(([seq, eventId, timestamp, _type, stepKey, payload, prevHash, hash]) => ({
          run_key: runKey,
          seq,
          event_id: eventId,
          timestamp,
          step_key: stepKey,
          payload,
          prev_hash: prevHash,
          hash
        })))
      }`, { discard: true })

  /** A new run's row, at the batch's head. */
  const createRun = (request: AppendRequest, conflict: () => SequenceConflict) => {
    const info = newRunInfo(request)
    // A new run's batch must start with RunStarted; the in-memory store refuses it the same way.
    if (info === undefined) return Effect.fail(conflict())
    return Effect.map(sql`INSERT INTO ${runs} ${sql.insert(runRow(info, "batch"))} RETURNING run_key`, (rows) => rows[0]?.run_key)
  }

  /** Moves the run's row to the batch's head; nothing (a conflict) when the batch does not follow it or is fenced. */
  const moveHead = (request: AppendRequest, conflict: () => SequenceConflict) => {
    const last = request.events[request.events.length - 1]!
    const summary = summarize(request.events)
    const fence = fenceOf(request) ?? null
    return Effect.flatMap(
      sql`UPDATE ${runs} SET head_seq = ${last.seq}, head_hash = ${packedHash(last.hash)}, updated_at = ${last.timestamp}, status = COALESCE(${summary.status ?? null}, status), paused_at = ${summary.status === "paused" ? sql`${last.timestamp}` : sql`paused_at`}, cost_usd = cost_usd + ${summary.costUsd}, owner_epoch = COALESCE(${claimedEpoch(request)}, owner_epoch) WHERE run_id = ${request.runId} AND tenant_id = ${request.tenantId} AND head_seq <= ${request.expectedSeq} AND owner_epoch <= COALESCE(${fence}, owner_epoch) AND EXISTS (SELECT 1 FROM ${events} e WHERE e.run_key = ${runs}.run_key AND e.seq = ${request.expectedSeq}) RETURNING run_key`,
      (rows) => (rows.length === 1 ? Effect.succeed(rows[0]!.run_key) : Effect.fail(conflict()))
    )
  }

  return (request, conflict) =>
    transactionDefects(sql.withTransaction(Effect.flatMap(
      request.expectedSeq === 0 ? createRun(request, conflict) : moveHead(request, conflict),
      (runKey) => insertEvents(request, runKey)
    )))
}
