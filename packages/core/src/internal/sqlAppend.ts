/**
 * What the SQL event store's appends share, whichever dialect writes them: the table names, how a batch is cut
 * into statements, the owner epoch a batch claims, the row an event becomes, and how a driver error that is a
 * sequence conflict is told from a store failure.
 */
import type * as SqlClient from "@effect/sql/SqlClient"
import type { SqlError } from "@effect/sql/SqlError"
import * as Effect from "effect/Effect"
import type { SequenceConflict, StoreError } from "../Errors.js"
import type { Event, RunInfo } from "../Event.js"
import type { AppendRequest } from "../EventStore.js"
import { causeText, errorCode, storeError } from "../SqlErrors.js"
import { GENESIS_HASH, storedPayload } from "./hash.js"
import { GENESIS_BYTES, HASH, pack, UUID } from "./sqlCodec.js"

export interface Tables {
  readonly runs: string
  readonly events: string
  readonly prefix: string
}

/**
 * Writes one batch of events after the run's head, or fails with the conflict (`conflict()`) when they do not
 * follow it (another writer, a gap, a fenced writer), a `StoreError`, or the driver's error. `inTransaction`: the caller's
 * transaction runs it (a conflict must leave that transaction usable). Called as the append runs (inside the fiber
 * that runs it, `sqlEventWrite`'s `append`), so it may write at once and answer with the outcome as an `Exit` (store-sqlite's
 * lone run does): such an outcome is final (never run again, e.g. retried).
 */
export type AppendBatch = (
  request: AppendRequest,
  conflict: () => SequenceConflict,
  inTransaction: boolean
) => Effect.Effect<void, SequenceConflict | StoreError | SqlError>

/** The message the SQLite head trigger aborts with when an event does not follow the run's head. */
export const CONFLICT = "artana: sequence conflict"

/** SQLite's variable limit is 32766 and Postgres' 65535; 10 columns x 1000 rows stays well below both. */
export const INSERT_CHUNK = 1000

export const chunksOf = <A>(items: ReadonlyArray<A>): ReadonlyArray<ReadonlyArray<A>> => {
  // The common batch (a step's few events) is one chunk: itself, not a copy.
  if (items.length <= INSERT_CHUNK) return [items]
  const chunks: Array<ReadonlyArray<A>> = []
  for (let i = 0; i < items.length; i += INSERT_CHUNK) chunks.push(items.slice(i, i + INSERT_CHUNK))
  return chunks
}

/** The owner epoch a batch claims (its `ownerEpoch` when it is a claim), or null. */
export const claimedEpoch = (request: AppendRequest): number | null =>
  request.claim === true && request.ownerEpoch !== undefined ? request.ownerEpoch : null

/** An event's columns as stored: seq, event_id, timestamp, type, step_key, payload, prev_hash, hash. */
export type EventRow = readonly [number, Buffer, number, string, string, string, Buffer | null, Buffer]

/**
 * The rows of a batch's events (or of one chunk of it), each its own columns in this order: seq, event_id (packed, see
 * `sqlCodec`), timestamp, type, step_key, payload (as stored), prev_hash, hash (packed). prev_hash is NULL where it is
 * the hash of the event before it (in the batch, or the genesis hash before seq 1): a reader takes it from that row.
 * `lookup`: the first event continues a stored run, and its prev_hash is stored NULL only if the statement finds it
 * equal to the hash of the run's event at the seq before (the append dialects do; see `prevHashLookup`).
 */
export const eventValues = (events: ReadonlyArray<Event>): { readonly rows: Array<EventRow>; readonly lookup: boolean } => {
  const rows: Array<EventRow> = []
  let lookup = false
  for (let i = 0; i < events.length; i++) {
    const event = events[i]!
    let prev: Buffer | null
    if (i > 0) prev = event.prevHash === events[i - 1]!.hash ? null : pack(HASH, event.prevHash)
    else if (event.seq === 1) prev = event.prevHash === GENESIS_HASH ? null : pack(HASH, event.prevHash)
    else {
      prev = pack(HASH, event.prevHash)
      lookup = true
    }
    rows.push([event.seq, pack(UUID, event.eventId), event.timestamp, event.type, event.stepKey, storedPayload(event), prev, pack(HASH, event.hash)])
  }
  return { rows, lookup }
}

/**
 * The SQL of the first event's prev_hash when `eventValues` says `lookup`: NULL when the given bytes are the stored
 * hash of the run's event at the seq before, else the bytes. `prev`, `seq`, `tenant` and `run` are SQL expressions
 * (parameters) for the bytes, the event's seq, and the run's key.
 */
export const prevHashLookup = (events: string, prev: string, seq: string, tenant: string, run: string): string =>
  `(CASE WHEN ${prev} = (SELECT hash FROM ${events} WHERE tenant_id = ${tenant} AND run_id = ${run} AND seq = ${seq} - 1) THEN NULL ELSE ${prev} END)`

/** A hash as the run's row keeps it (`head_hash`), packed as the events' hashes are. */
export const packedHash = (hash: string): Buffer => (hash === GENESIS_HASH ? GENESIS_BYTES : pack(HASH, hash))

/** A duplicate (run, seq), or the head trigger refusing an event that does not follow the head. */
export const isConflict = (sql: SqlClient.SqlClient, error: SqlError): boolean => {
  const code = errorCode(error)
  if (causeText(error.cause).includes(CONFLICT)) return true
  return sql.onDialectOrElse({
    sqlite: () => code === "SQLITE_CONSTRAINT_PRIMARYKEY" || code === "SQLITE_CONSTRAINT_UNIQUE",
    pg: () => code === "23505",
    orElse: () => false
  })
}

/** A driver error as the conflict, when it is one, else as a `StoreError` of `operation`. */
export const orConflict = (sql: SqlClient.SqlClient, operation: string, conflict: () => SequenceConflict) => (error: SqlError) =>
  Effect.fail(isConflict(sql, error) ? conflict() : storeError(operation, error))

/**
 * A new run's row: at head 0 when a trigger moves the head with each inserted event (`"genesis"`, SQLite), else at
 * the head of its first batch (`"batch"`).
 */
export const runRow = (info: RunInfo, head: "genesis" | "batch") => ({
  run_id: info.runId,
  tenant_id: info.tenantId,
  workflow: info.workflow,
  parent_run_id: info.parentRunId ?? null,
  root_run_id: info.rootRunId,
  status: info.status,
  head_seq: head === "genesis" ? 0 : info.headSeq,
  head_hash: head === "genesis" ? GENESIS_BYTES : packedHash(info.headHash),
  cost_usd: info.costUsd,
  created_at: info.createdAt,
  updated_at: head === "genesis" ? info.createdAt : info.updatedAt,
  paused_at: info.status === "paused" ? info.updatedAt : null,
  owner_epoch: info.ownerEpoch,
  version: info.version,
  forked_from: info.forkedFrom ?? null
})
