/**
 * The texts of the PostgreSQL appends (see `pgAppend.ts`), one per kind of batch and number of events, and the
 * parameters a batch binds to them. Made once per text and kept: a prepared text is the same string on every call.
 */
import { Event, EventStore, SqlEventStore } from "@artana/core"
import * as RunWatch from "./runWatch.js"

/** A new run's row and first events (`create`); events only, guarded (`events`); the run's row and its events (`run`). */
export type Kind = "create" | "events" | "run"

/**
 * An event's columns as the statements bind them (`SqlEventStore.eventValues` without its type, which is the payload's
 * `_tag`), under the run's surrogate key (`run_key`, migration 12).
 */
const EVENT_VALUES = ["seq", "event_id", "timestamp", "step_key", "payload", "prev_hash", "hash"] as const
const EVENT_TYPES = ["integer", "bytea", "double precision", "text", "text", "bytea", "bytea"] as const
/** Where `prev_hash` is among `EVENT_VALUES`. */
const PREV = 5
const RUN_COLUMNS = "run_id, tenant_id, workflow, parent_run_id, root_run_id, status, head_seq, head_hash, cost_usd, created_at, updated_at, owner_epoch, version, forked_from, paused_at"
/**
 * Parameters before the events' own: the run's row (create), run, guard and fence (events), and both with the
 * epoch claimed (run).
 */
const PARAMS: Record<Kind, number> = { create: 14, events: 4, run: 10 }

/** A run's key as the fence index holds it (see `SqlEventStore.FENCE_INDEX`); `of`: the runs table's alias, if any. */
const byKey = (run: string, tenant: string, of = "") => `${of}tenant_id = ${tenant}::text COLLATE "C" AND ${of}run_id = ${run}::text COLLATE "C"`

/**
 * The cells of `rows` events, one tuple each, numbered after `first` parameters; `lookup`: the first one's prev_hash is
 * compared with `prevHash`, the stored hash before it.
 */
const cellsOf = (first: number, rows: number, lookup: boolean, prevHash: string): Array<string> => {
  let n = first
  return Array.from({ length: rows }, (_, row) => {
    const cells = EVENT_TYPES.map((type) => `$${++n}::${type}`)
    // The first event of a batch that continues the run: its prev_hash is NULL when it is the stored hash before it.
    if (row === 0 && lookup) cells[PREV] = `(CASE WHEN ${cells[PREV]} = ${prevHash} THEN NULL ELSE ${cells[PREV]} END)`
    return cells.join(",")
  })
}

/** The events as a `VALUES` list named `e` (see `cellsOf`). */
const valuesOf = (first: number, rows: number, lookup: boolean, prevHash = "(SELECT hash FROM prev)"): string =>
  `(VALUES ${cellsOf(first, rows, lookup, prevHash).map((cells) => `(${cells})`).join(",")}) AS e (${EVENT_VALUES.join(", ")})`

/** The text of an append of `kind` with `rows` events, on the tables `t`, telling `channel`'s watchers. */
const textOf = (t: SqlEventStore.Tables, channel: string, kind: Kind, rows: number, lookup: boolean): string => {
  const values = kind === "events" ? "" : valuesOf(PARAMS[kind], rows, lookup)
  const into = `INSERT INTO "${t.events}" (run_key, ${EVENT_VALUES.join(", ")})`
  // The event at expectedSeq, probed once (a CTE read twice is evaluated once): that it exists says no gap,
  // this run, this tenant; its hash is the first new event's prev_hash. `key`: the run's surrogate key.
  const prev = (key: string, seq: string) => `prev AS (SELECT hash FROM "${t.events}" WHERE run_key = ${key} AND seq = ${seq}::integer)`
  // The run's surrogate key and owner epoch, found through the fence index.
  const runOf = (run: string, tenant: string) => `(SELECT run_key, owner_epoch FROM "${t.runs}" WHERE ${byKey(run, tenant)})`
  const follows = "EXISTS (SELECT 1 FROM prev)"
  // The writer is not fenced: the run's owner epoch is not above the batch's fence (NULL: no fence). A claim
  // is a "run" batch, whose UPDATE re-checks the row it waited for; a batch of events only is ordered against
  // a claim by the claim's own event (the primary key), so the snapshot's epoch is enough for it.
  // The run is found through the fence index (`SqlEventStore.FENCE_INDEX`, the only index in the "C" collation), so
  // the plan does not depend on the table's statistics.
  const unfenced = (fence: string) => `r.owner_epoch <= COALESCE(${fence}::bigint, r.owner_epoch)`
  // The run's watchers, if any, are told at the commit (read in each statement's condition, so it runs).
  const note = (run: string, tenant: string) => RunWatch.noteCte(channel, tenant, run)
  switch (kind) {
    case "create":
      return `WITH run AS (INSERT INTO "${t.runs}" (${RUN_COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6, $7::bigint, $8, $9::double precision, $10::double precision, $11::double precision, $12::bigint, $13::text, $14::text, CASE WHEN $6::text = 'paused' THEN $11::double precision END) RETURNING run_key), ${note("$1", "$2")} ${into} SELECT run.run_key, e.* FROM run, ${values} WHERE ${RunWatch.noteRead}`
    case "events":
      // A join, no CTE: the run on the fence index, then the event at expectedSeq on the primary key (the join
      // finds no row when there is none: a gap, another run or tenant), then the batch's rows beside it.
      // One event (a tool step's) is the select list itself; more are a `LATERAL VALUES`.
      return `${into} SELECT r.run_key, ${rows === 1 ? cellsOf(PARAMS.events, 1, lookup, "p.hash")[0] : "e.*"} FROM "${t.runs}" r JOIN "${t.events}" p ON p.run_key = r.run_key AND p.seq = $3::integer${
        rows === 1 ? "" : `, LATERAL ${valuesOf(PARAMS.events, rows, lookup, "p.hash")}`
      } WHERE ${byKey("$1", "$2", "r.")} AND ${unfenced("$4")} AND ${RunWatch.noteCondition(channel, "$2", "$1")}`
    case "run":
      return `WITH ${prev(`(SELECT run_key FROM ${runOf("$6", "$7")} r)`, "$8")}, run AS (UPDATE "${t.runs}" SET head_seq = $1::bigint, head_hash = $2, updated_at = $3::double precision, status = COALESCE($4::text, status), paused_at = CASE WHEN $4::text = 'paused' THEN $3::double precision ELSE paused_at END, cost_usd = cost_usd + $5::double precision, owner_epoch = COALESCE($10::bigint, owner_epoch) WHERE ${byKey("$6", "$7")} AND head_seq <= $8::bigint AND owner_epoch <= COALESCE($9::bigint, owner_epoch) AND ${follows} RETURNING run_key), ${note("$6", "$7")} ${into} SELECT run.run_key, e.* FROM run, ${values} WHERE ${RunWatch.noteRead}`
  }
}

/** The texts of the appends on the tables `t`, each made on first use and kept. */
export const texts = (t: SqlEventStore.Tables, channel: string) => {
  const made = new Map<string, string>()
  return (kind: Kind, rows: number, lookup: boolean): string => {
    const key = `${kind}${rows}${lookup ? "l" : ""}`
    let text = made.get(key)
    if (text === undefined) {
      text = textOf(t, channel, kind, rows, lookup)
      made.set(key, text)
    }
    return text
  }
}

/** A batch as a statement: its kind and the parameters before its events' own (the run's row, its key, its guards). */
export interface Head {
  readonly kind: Kind
  readonly params: Array<unknown>
}

/** The kind and leading parameters of the batch `request`; undefined for a new run's batch that does not start it. */
export const headOf = (request: EventStore.AppendRequest): Head | undefined => {
  if (request.expectedSeq === 0) {
    const info = EventStore.newRunInfo(request)
    if (info === undefined) return undefined
    return {
      kind: "create",
      params: [
        info.runId, info.tenantId, info.workflow, info.parentRunId ?? null, info.rootRunId, info.status, info.headSeq,
        SqlEventStore.packedHash(info.headHash), info.costUsd, info.createdAt, info.updatedAt, info.ownerEpoch, info.version,
        info.forkedFrom ?? null
      ]
    }
  }
  const summary = Event.summarize(request.events)
  const fence = EventStore.fenceOf(request) ?? null
  if (summary.status === undefined && summary.costUsd === 0 && request.claim !== true) {
    return { kind: "events", params: [request.runId, request.tenantId, request.expectedSeq, fence] }
  }
  const last = request.events[request.events.length - 1]!
  return {
    kind: "run",
    params: [
      last.seq, SqlEventStore.packedHash(last.hash), last.timestamp, summary.status ?? null, summary.costUsd, request.runId,
      request.tenantId, request.expectedSeq, fence, SqlEventStore.claimedEpoch(request)
    ]
  }
}
