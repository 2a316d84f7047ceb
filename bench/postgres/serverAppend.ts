// The server's CPU per append statement on PostgreSQL: the store's tool-step append (one event, prepared, each its
// own commit; the text the store prepared, read back from its connection) and any variants of it (VARIANTS: a JSON
// object of name to text, with the same 11 parameters), against the floor's bare prepared INSERT, on one connection
// each, in blocks alternated round by round; the backend's CPU from /proc/PID/schedstat (nanoseconds). Fsync off: CPU
// is what is measured. Not a row of `pnpm bench postgres`: the measurement behind packages/store-postgres/README.md
// ("Performance"). Run: `cd bench && npx tsx postgres/serverAppend.ts`.
import { Context, Effect, Exit, Layer, Scope } from "effect"
import { readFileSync } from "node:fs"
import pg from "pg"
import { EventStore, Kernel, SqlEventStore, ToolRegistry } from "@artana/core"
import { ScriptedModel } from "@artana/core/testing"
import { SqlClient } from "@effect/sql"
import { PostgresStore } from "@artana/store-postgres"
import { PgTest } from "@artana/store-postgres/testing"
import { echo, stepsWorkflow, tenant } from "../fixtures.js"
import { median } from "../lib.js"

const BLOCK = Number(process.env.BLOCK ?? 500)
const ROUNDS = Number(process.env.ROUNDS ?? 9)
const scope = Effect.runSync(Scope.make())
const url = await Effect.runPromise(Scope.extend(Effect.map(PgTest.startCluster(PgTest.findBinaries()!), (c) => c.url), scope))
// One connection: the statements the store prepared are read back from it.
const layer = Kernel.layer().pipe(
  Layer.provideMerge(Layer.mergeAll(Layer.effect(EventStore.EventStore, SqlEventStore.make()), ScriptedModel.layer([]), ToolRegistry.layer([echo]))),
  Layer.provideMerge(PostgresStore.layerClient({ url, pool: { max: 1 } }))
)
const ctx = await Effect.runPromise(Scope.extend(Layer.build(layer), scope))
const kernel = Context.get(ctx, Kernel.Kernel), store = Context.get(ctx, EventStore.EventStore)
await Effect.runPromise(kernel.execute(stepsWorkflow("s"), { runId: "src", tenant, input: { n: 3 } }))
const sample = (await Effect.runPromise(store.readEvents("bench", "src")))[3]!
// The append of one event that changes neither status nor cost: the prepared statement with 11 parameters.
const prepared = await Effect.runPromise(Context.get(ctx, SqlClient.SqlClient).unsafe<{ statement: string }>(
  "SELECT statement FROM pg_prepared_statements WHERE cardinality(parameter_types) = 11"
))
const shipped = prepared[0]!.statement

/** Variants of the tool step's append: name, text (same parameters as shipped). */
const variants: Record<string, string> = { shipped, ...JSON.parse(process.env.VARIANTS ?? "{}") }
const floorText = "INSERT INTO floor_events (run_key, seq, event_id, timestamp, step_key, payload, prev_hash, hash) VALUES ($1,$2,$3,$4,$5,$6,$7,$8)"

const cpuNs = (pid: number) => Number(readFileSync(`/proc/${pid}/schedstat`, "utf8").split(" ")[0])
const connect = async () => {
  const c = new pg.Client({ connectionString: url })
  await c.connect()
  const pid = Number((await c.query("SELECT pg_backend_pid() AS p")).rows[0].p)
  return { c, pid }
}
const admin = await connect()
await admin.c.query("CREATE TABLE floor_events (LIKE events INCLUDING DEFAULTS INCLUDING INDEXES)")
const runCols = "tenant_id, workflow, parent_run_id, root_run_id, status, head_seq, head_hash, cost_usd, created_at, updated_at, owner_epoch, version, forked_from, paused_at"
const hash = SqlEventStore.packedHash(sample.hash)
const seqs: Record<string, number> = {}
const names = Object.keys(variants)
const clients: Record<string, { c: pg.Client; pid: number }> = {}
for (const name of [...names, "floor"]) {
  clients[name] = await connect()
  if (name === "floor") continue
  await admin.c.query(`INSERT INTO runs (run_id, ${runCols}) SELECT $1, ${runCols} FROM runs WHERE run_id = 'src'`, [`v-${name}`])
  await admin.c.query(`INSERT INTO events SELECT (SELECT run_key FROM runs WHERE run_id = $1), timestamp, 1, event_id, step_key, payload, prev_hash, hash FROM events WHERE run_key = (SELECT run_key FROM runs WHERE run_id = 'src') AND seq = 1`, [`v-${name}`])
  seqs[name] = 1
}
const payload = sample.payload === undefined ? "{}" : JSON.stringify(sample.payload)
const eventId = Buffer.alloc(16, 7)
const block = async (name: string): Promise<number> => {
  const { c, pid } = clients[name]!
  const t0 = cpuNs(pid)
  for (let i = 0; i < BLOCK; i++) {
    if (name === "floor") {
      await c.query({ name: "f", text: floorText, values: [1, (seqs.floor = (seqs.floor ?? 0) + 1), eventId, 1, "k", payload, null, hash] })
    } else {
      const seq = seqs[name]!
      const r = await c.query({ name: "v", text: variants[name]!, values: [`v-${name}`, "bench", seq, null, seq + 1, eventId, 1, "k", payload, hash, hash] })
      if (r.rowCount !== 1) throw new Error(`${name} wrote ${r.rowCount}`)
      seqs[name] = seq + 1
    }
  }
  return (cpuNs(pid) - t0) / BLOCK / 1000
}
const results: Record<string, Array<number>> = {}
for (let round = 0; round < ROUNDS + 1; round++) {
  const order = round % 2 === 0 ? [...names, "floor"] : ["floor", ...[...names].reverse()]
  for (const name of order) {
    const us = await block(name)
    if (round > 0) (results[name] ??= []).push(us)
  }
}
for (const [name, xs] of Object.entries(results)) console.log(`${name}: server cpu per statement median ${median(xs).toFixed(1)} us, least ${Math.min(...xs).toFixed(1)} us`)
for (const { c } of Object.values(clients)) await c.end()
await admin.c.end()
await Effect.runPromise(Scope.close(scope, Exit.void))
