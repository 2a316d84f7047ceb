// Group `format` of `pnpm bench scale`: what a stored event costs, and what reading it back costs.
//
// bytes_per_event_over_payload_sqlite / _pg: the events table's size per event, less 64 bytes, over the stored
//   payload's size per event (target: at most 2, i.e. an event costs at most twice its payload plus 64 bytes). The
//   log is an agent's: each turn is a model step (ModelRequested with a bounded context window, ModelCompleted with a
//   tool call), the tool call it asked for (ToolRequested, ToolCompleted) and a memoized `ctx.step` (StepCompleted).
//   SQLite: the pages of the events table and of its indexes (its key's, when it is not WITHOUT ROWID), summed from
//   `dbstat` (page size times pages: free space in them and overflow pages included). PostgreSQL: `pg_total_relation_size` of the events table (heap, its
//   primary key index, TOAST, free space map and visibility map), after VACUUM, on a throwaway cluster.
// replay_mixed_10k_vs_floor: kernel.replay of that log at 10,000 events (2,000 turns) on SQLite / a bare ordered
//   SELECT of the same rows on the store's own driver + JSON.parse of each payload. Interleaved, medians over the
//   rounds after the first. The detail splits the replay: the store's read of the whole run (readEvents, rows
//   decoded into events) and the chain's verification (Verify.verifyEvents over the events read), each timed alone.
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { Effect, Exit, Layer, Schema, Scope } from "effect"
import pg from "pg"
import { type Chat, EventStore, Kernel, Pricing, ToolRegistry, Verify, Workflow } from "@artana/core"
import { ScriptedModel } from "@artana/core/testing"
import { PostgresStore } from "@artana/store-postgres"
import { PgTest } from "@artana/store-postgres/testing"
import { SqliteStore } from "@artana/store-sqlite"
import { echo, tenant } from "../fixtures.js"
import { median, nowUs, progress, type Row } from "../lib.js"

/** Turns of the replayed log: five events each, 10,000 in all (and RunStarted, RunCompleted). */
const TURNS = 2000
/** Turns of the PostgreSQL log, measured for its size only. */
const PG_TURNS = 1000
const ROUNDS = 9
/** Messages of the conversation the agent keeps (its compacted context): the system prompt, the task, the last turns. */
const WINDOW = 4

const system: Chat.ChatMessage = { role: "system", content: "You are a support agent. Use the tools to answer; be brief." }
const task: Chat.ChatMessage = { role: "user", content: "Find the invoices of account 1042 that are overdue and draft a reminder." }

/** What the agent's memoized step returns. */
const Remembered = Schema.Struct({ turn: Schema.Number, invoices: Schema.Array(Schema.String), overdue: Schema.Boolean })

/** An agent's loop: a model step, the tool call it asked for, and a memoized step of its own, each turn. */
export const agent = Workflow.make({
  name: "bench.agent",
  input: Schema.Struct({ turns: Schema.Number }),
  output: Schema.Number,
  run: ({ turns }, ctx) =>
    Effect.gen(function*() {
      let recent: Array<Chat.ChatMessage> = []
      for (let i = 0; i < turns; i++) {
        const step = yield* ctx.modelStep({ model: "bench-model", messages: [system, task, ...recent], tools: ["echo"] })
        const call = step.toolCalls[0]
        if (call === undefined) return yield* Effect.dieMessage("the scripted model called no tool")
        const outcome = yield* ctx.toolCall(call)
        const seen = yield* ctx.step("remember", Effect.succeed({ turn: i, invoices: [`INV-${1000 + i}`], overdue: i % 3 === 0 }), Remembered)
        recent = [...recent, step.message, outcome.message].slice(-WINDOW)
        if (seen.turn !== i) return yield* Effect.dieMessage("the memoized step returned another turn")
      }
      return turns
    })
})

export const script = (turns: number) =>
  Array.from({ length: turns }, (_, i) =>
    ScriptedModel.toolCall("echo", { i, note: `look up invoice page ${i}` }, {
      content: `Checking page ${i} of the invoices.`,
      usage: { inputTokens: 180, outputTokens: 24 },
      costUsd: 0
    }))

const layerOf = (store: Layer.Layer<EventStore.EventStore, unknown>, turns: number) =>
  Layer.provideMerge(Kernel.layer({ prices: { "bench-model": Pricing.free } }), Layer.mergeAll(store, ScriptedModel.layer(script(turns)), ToolRegistry.layer([echo])))

interface Size {
  readonly events: number
  readonly bytes: number
  readonly payloadBytes: number
}

const sizeRow = (metric: string, size: Size, how: string): Row => {
  const perEvent = size.bytes / size.events
  const payload = size.payloadBytes / size.events
  const value = (perEvent - 64) / payload
  return {
    metric,
    value,
    unit: "ratio",
    baseline: `stored payload bytes per event (${how}); (bytes per event - 64) / payload, target at most 2`,
    baselineValue: payload,
    ratio: value,
    detail: { bytes_per_event: perEvent, payload_bytes_per_event: payload, events: size.events, bytes_over_payload: perEvent / payload, budget_bytes_per_event: 2 * payload + 64 }
  }
}

/** The SQLite rows (size and replay), alone: `replay.local.ts`-style drivers and profiles run it without PostgreSQL. */
export const sqlite = async (): Promise<Array<Row>> => {
  const dir = mkdtempSync(join(tmpdir(), "artana-bench-format-"))
  const filename = join(dir, "bench.db")
  try {
    const layer = layerOf(SqliteStore.layer({ filename }), TURNS)
    const Sqlite = SqliteStore.driver()
    const program = Effect.gen(function*() {
      const kernel = yield* Kernel.Kernel
      const store = yield* EventStore.EventStore
      progress(`format: writing an agent's run of ${TURNS} turns (${TURNS * 5} events) on SQLite`)
      yield* kernel.execute(agent, { runId: "agent", tenant, input: { turns: TURNS } })
      const floor = new Sqlite(filename)
      const size = floor.prepare(
        `SELECT SUM(pgsize) AS bytes FROM dbstat WHERE name IN (SELECT name FROM sqlite_master WHERE tbl_name = 'events' AND type IN ('table', 'index'))`
      ).get() as { bytes: number }
      const counts = floor.prepare(`SELECT COUNT(*) AS events, SUM(length(CAST(payload AS BLOB))) AS payload FROM events`).get() as { events: number; payload: number }
      const all = floor.prepare(`SELECT * FROM events WHERE tenant_id = ? AND run_id = ? ORDER BY seq`)
      const eventCount = (yield* store.readEvents(tenant.tenantId, "agent")).length
      const replayUs: Array<number> = []
      const floorUs: Array<number> = []
      const readUs: Array<number> = []
      const verifyUs: Array<number> = []
      for (let round = 0; round < ROUNDS; round++) {
        progress(`format: replay round ${round + 1}/${ROUNDS}`)
        const t0 = nowUs()
        const replayed = yield* kernel.replay(agent, { tenantId: tenant.tenantId, runId: "agent" })
        const t1 = nowUs()
        if (replayed.status !== "completed") throw new Error(`replay ended ${replayed.status}`)
        const rows = all.all(tenant.tenantId, "agent") as Array<{ payload: string }>
        let parsed = 0
        for (const row of rows) parsed += JSON.parse(row.payload) === null ? 0 : 1
        const t2 = nowUs()
        if (parsed !== eventCount) throw new Error(`the floor read ${parsed} rows, the store ${eventCount}`)
        const read = yield* store.readEvents(tenant.tenantId, "agent")
        const t3 = nowUs()
        if (!Verify.verifyEvents("agent", read).ok) throw new Error("the benchmark's own log does not verify")
        const t4 = nowUs()
        if (round > 0) {
          replayUs.push(t1 - t0)
          floorUs.push(t2 - t1)
          readUs.push(t3 - t2)
          verifyUs.push(t4 - t3)
        }
      }
      floor.close()
      return { size: { events: counts.events, bytes: size.bytes, payloadBytes: counts.payload }, eventCount, replayUs, floorUs, readUs, verifyUs }
    })
    const r = await Effect.runPromise(Effect.scoped(Effect.provide(program, layer)))
    const replay = median(r.replayUs)
    const floor = median(r.floorUs)
    return [
      sizeRow("bytes_per_event_over_payload_sqlite", r.size, "SQLite dbstat pages of the events table and its indexes"),
      {
        metric: "replay_mixed_10k_vs_floor",
        value: replay / floor,
        unit: "ratio",
        baseline: `bare ordered SELECT of the run's rows (${SqliteStore.driverName}) + JSON.parse of each payload`,
        baselineValue: floor,
        ratio: replay / floor,
        detail: {
          events: r.eventCount,
          replay_median_us: replay,
          floor_median_us: floor,
          store_read_median_us: median(r.readUs),
          verify_median_us: median(r.verifyUs),
          store_read_vs_floor: median(r.readUs) / floor,
          rounds: r.replayUs.length,
          target_max_ratio: 1.5
        }
      }
    ]
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
}

export const server = (): Effect.Effect<string, PgTest.PgTestError, Scope.Scope> => {
  const given = process.env.ARTANA_BENCH_PG_URL
  if (given !== undefined && given !== "") return Effect.succeed(given)
  const binaries = PgTest.findBinaries()
  if (binaries === undefined) {
    return Effect.fail(new PgTest.PgTestError({ message: "no PostgreSQL server binaries under /usr/lib/postgresql: install Debian's postgresql package, or set ARTANA_BENCH_PG_URL" }))
  }
  progress(`format: starting a throwaway PostgreSQL ${binaries.version} cluster`)
  return Effect.map(PgTest.startCluster(binaries), (cluster) => cluster.url)
}

const postgres = async (): Promise<Array<Row>> => {
  const scope = Effect.runSync(Scope.make())
  try {
    const url = await Effect.runPromise(Scope.extend(server(), scope))
    const admin = new pg.Client({ connectionString: url })
    await admin.connect()
    try {
      // A database of its own, so a given server's other tables do not count.
      const database = `artana_bench_format_${process.pid}`
      await admin.query(`CREATE DATABASE ${database}`)
      try {
        const dbUrl = new URL(url)
        dbUrl.pathname = `/${database}`
        progress(`format: writing an agent's run of ${PG_TURNS} turns (${PG_TURNS * 5} events) on PostgreSQL`)
        const layer = layerOf(PostgresStore.layer({ url: dbUrl.toString() }), PG_TURNS)
        await Effect.runPromise(Effect.scoped(Effect.provide(
          Effect.flatMap(Kernel.Kernel, (kernel) => kernel.execute(agent, { runId: "agent", tenant, input: { turns: PG_TURNS } })),
          layer
        )))
        const db = new pg.Client({ connectionString: dbUrl.toString() })
        await db.connect()
        try {
          await db.query("VACUUM ANALYZE events")
          const { rows } = await db.query(
            `SELECT pg_total_relation_size('events')::float8 AS bytes, (SELECT COUNT(*) FROM events)::float8 AS events, (SELECT SUM(octet_length(payload)) FROM events)::float8 AS payload`
          )
          const row = rows[0] as { bytes: number; events: number; payload: number }
          return [sizeRow("bytes_per_event_over_payload_pg", { events: row.events, bytes: row.bytes, payloadBytes: row.payload }, "PostgreSQL pg_total_relation_size of events, after VACUUM")]
        } finally {
          await db.end()
        }
      } finally {
        await admin.query(`DROP DATABASE IF EXISTS ${database} WITH (FORCE)`)
      }
    } finally {
      await admin.end()
    }
  } finally {
    await Effect.runPromise(Scope.close(scope, Exit.void))
  }
}

export default async (): Promise<ReadonlyArray<Row>> => [...(await sqlite()), ...(await postgres())]
