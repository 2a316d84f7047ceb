// Group `payload93` of `pnpm bench scale`: what a stored event costs at the payload size the issue measured.
//
// bytes_per_event_93b_sqlite / _pg: the events table's size per event (bytes, all its pages and indexes) for a run
//   whose every event but its `RunStarted` carries a 93-byte payload (a memoized `ctx.step`'s `StepCompleted`, the
//   size issue 15 measured at 357-387 bytes per event on SQLite). The budget is 2 x 93 + 64 = 250 bytes per event;
//   the ratio is (bytes per event - 64) / payload bytes per event, at most 2. The log (10,000 events) is written
//   through the store's own append in large batches, hash-chained as the kernel writes it (UUID event ids, the
//   kernel's hashes and timestamps): the rows are what the kernel stores. SQLite: `dbstat` pages of the events table
//   and its indexes; PostgreSQL: `pg_total_relation_size('events')` after VACUUM, on a throwaway cluster (as
//   `format.ts` measures the agent's log).
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { Effect, Exit, type Layer, Scope } from "effect"
import pg from "pg"
import { Event, EventStore } from "@artana/core"
import { TestLog } from "@artana/core/testing"
import { PostgresStore } from "@artana/store-postgres"
import { SqliteStore } from "@artana/store-sqlite"
import { tenant } from "../fixtures.js"
import { progress, type Row } from "../lib.js"
import { server } from "./format.js"

const EVENTS = 10_000
const PAYLOAD_BYTES = 93
/** The budget: twice the payload plus 64 bytes. */
const BUDGET = 2 * PAYLOAD_BYTES + 64

/** A `StepCompleted` whose JSON text (what the store writes) is exactly `PAYLOAD_BYTES` long. */
const payload93 = (seq: number): Event.EventPayload => {
  const bare = JSON.stringify({ _tag: "StepCompleted", name: "lookup", value: "" })
  const id = `invoice ${seq} `
  return { _tag: "StepCompleted", name: "lookup", value: id.padEnd(PAYLOAD_BYTES - bare.length, "x") }
}

const write = (store: Layer.Layer<EventStore.EventStore, unknown>) =>
  Effect.runPromise(Effect.scoped(Effect.provide(
    Effect.flatMap(EventStore.EventStore, (s) =>
      TestLog.write(s, {
        runId: "steps93",
        tenantId: tenant.tenantId,
        events: EVENTS,
        event: (seq) =>
          seq === 1
            ? { stepKey: Event.RUN_STEP_KEY, payload: { _tag: "RunStarted", workflow: "bench.steps93", input: {}, tenant } }
            : { stepKey: `step:${seq - 2}`, payload: payload93(seq) }
      })),
    store
  )))

interface Size {
  readonly events: number
  readonly bytes: number
  readonly payloadBytes: number
}

const row = (metric: string, size: Size, how: string): Row => {
  const perEvent = size.bytes / size.events
  const payload = size.payloadBytes / size.events
  return {
    metric,
    value: perEvent,
    unit: "bytes",
    baseline: `the issue's budget at ${PAYLOAD_BYTES}-byte payloads: 2 x payload + 64 = ${BUDGET} bytes per event (${how})`,
    baselineValue: BUDGET,
    ratio: perEvent / BUDGET,
    detail: {
      payload_bytes_per_event: payload,
      over_payload: (perEvent - 64) / payload,
      target_max_over_payload: 2,
      target_max_bytes_per_event: BUDGET,
      events: size.events
    }
  }
}

const sqlite = async (): Promise<Row> => {
  const dir = mkdtempSync(join(tmpdir(), "artana-bench-payload93-"))
  const filename = join(dir, "bench.db")
  try {
    progress(`payload93: writing ${EVENTS} events of ${PAYLOAD_BYTES}-byte payloads on SQLite`)
    await write(SqliteStore.layer({ filename }))
    const Sqlite = SqliteStore.driver()
    const db = new Sqlite(filename)
    try {
      const size = db.prepare(
        `SELECT SUM(pgsize) AS bytes FROM dbstat WHERE name IN (SELECT name FROM sqlite_master WHERE tbl_name = 'events' AND type IN ('table', 'index'))`
      ).get() as { bytes: number }
      const counts = db.prepare(`SELECT COUNT(*) AS events, SUM(length(CAST(payload AS BLOB))) AS payload FROM events`).get() as { events: number; payload: number }
      return row("bytes_per_event_93b_sqlite", { events: counts.events, bytes: size.bytes, payloadBytes: counts.payload }, "SQLite dbstat pages of the events table and its indexes")
    } finally {
      db.close()
    }
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
}

const postgres = async (): Promise<Row> => {
  const scope = Effect.runSync(Scope.make())
  try {
    const url = await Effect.runPromise(Scope.extend(server(), scope))
    const admin = new pg.Client({ connectionString: url })
    await admin.connect()
    // A database of its own, so a given server's other tables do not count.
    const database = `artana_bench_payload93_${process.pid}`
    await admin.query(`CREATE DATABASE ${database}`)
    try {
      const dbUrl = new URL(url)
      dbUrl.pathname = `/${database}`
      progress(`payload93: writing ${EVENTS} events of ${PAYLOAD_BYTES}-byte payloads on PostgreSQL`)
      await write(PostgresStore.layer({ url: dbUrl.toString() }))
      const db = new pg.Client({ connectionString: dbUrl.toString() })
      await db.connect()
      try {
        await db.query("VACUUM ANALYZE events")
        const { rows } = await db.query(
          `SELECT pg_total_relation_size('events')::float8 AS bytes, pg_relation_size('events')::float8 AS heap, pg_indexes_size('events')::float8 AS indexes,
             (SELECT COUNT(*) FROM events)::float8 AS events, (SELECT SUM(octet_length(payload)) FROM events)::float8 AS payload`
        )
        const r = rows[0] as { bytes: number; heap: number; indexes: number; events: number; payload: number }
        const measured = row("bytes_per_event_93b_pg", { events: r.events, bytes: r.bytes, payloadBytes: r.payload }, "PostgreSQL pg_total_relation_size of events, after VACUUM")
        // Where the bytes are: the table's own pages, and its indexes'.
        return { ...measured, detail: { ...measured.detail, heap_bytes_per_event: r.heap / r.events, index_bytes_per_event: r.indexes / r.events } }
      } finally {
        await db.end()
      }
    } finally {
      await admin.query(`DROP DATABASE IF EXISTS ${database} WITH (FORCE)`)
      await admin.end()
    }
  } finally {
    await Effect.runPromise(Scope.close(scope, Exit.void))
  }
}

export default async (): Promise<ReadonlyArray<Row>> => [await sqlite(), await postgres()]
