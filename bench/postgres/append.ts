// The store's own client CPU per append on PostgreSQL: `EventStore.append` of one event (a tool step's batch), in
// blocks of 50, against the same number of bare prepared single-row INSERTs on one `pg` client, interleaved block by
// block; the medians of CPU per append (`process.cpuUsage`) and of the difference. Not a row of `pnpm bench postgres`:
// the measurement behind packages/store-postgres/README.md ("Performance"). Run: `cd bench && npx tsx postgres/append.ts`.
import { Context, Effect, Exit, Layer, Scope } from "effect"
import pg from "pg"
import { EventStore, Kernel, ToolRegistry } from "@artana/core"
import { ScriptedModel } from "@artana/core/testing"
import { PostgresStore } from "@artana/store-postgres"
import { PgTest } from "@artana/store-postgres/testing"
import { echo, stepsWorkflow, tenant } from "../fixtures.js"
// A throwaway cluster (fsync off: the CPU is what is measured).
const scope = Effect.runSync(Scope.make())
const url = await Effect.runPromise(Scope.extend(Effect.map(PgTest.startCluster(PgTest.findBinaries()!), (c) => c.url), scope))
const layer = Layer.provideMerge(Kernel.layer(), Layer.mergeAll(PostgresStore.layer({ url, pool: { max: 3 } }), ScriptedModel.layer([]), ToolRegistry.layer([echo])))
const ctx = await Effect.runPromise(Scope.extend(Layer.build(layer), scope))
const kernel = Context.get(ctx, Kernel.Kernel), store = Context.get(ctx, EventStore.EventStore)
await Effect.runPromise(kernel.execute(stepsWorkflow("s"), { runId: "src", tenant, input: { n: 400 } }))
const events = await Effect.runPromise(store.readEvents("bench", "src"))
const N = events.length - 1
const cpu = () => { const u = process.cpuUsage(); return u.user + u.system }
const c = new pg.Client({ connectionString: url }); await c.connect()
await c.query("CREATE TABLE t (LIKE events INCLUDING ALL)")
const row = (await c.query("SELECT * FROM events WHERE run_key = (SELECT run_key FROM runs WHERE run_id = 'src') AND seq = 5")).rows[0]
const ins = "INSERT INTO t (run_key, seq, event_id, timestamp, step_key, payload, prev_hash, hash) VALUES ($1,$2,$3,$4,$5,$6,$7,$8)"
const B = 50
const storeUs: Array<number> = [], bareUs: Array<number> = []
for (let rep = 0; rep < Number(process.env.REPS ?? 30); rep++) {
  const run = `x${rep}`
  const evs = events.map((e) => ({ ...e, runId: run }))
  await Effect.runPromise(store.append({ tenantId: "bench", runId: run, expectedSeq: 0, events: [evs[0]!], ownerEpoch: 1 }))
  for (let b = 0; b + B < N; b += B) {
    const c0 = cpu()
    await Effect.runPromise(Effect.forEach(Array.from({ length: B }, (_, k) => b + k + 1), (i) => store.append({ tenantId: "bench", runId: run, expectedSeq: i, events: [evs[i]!], ownerEpoch: 1 }), { discard: true }))
    const c1 = cpu()
    for (let i = b + 1; i <= b + B; i++) await c.query({ name: "floor", text: ins, values: [-(rep + 1), i, row.event_id, row.timestamp, row.step_key, row.payload, row.prev_hash, row.hash] })
    const c2 = cpu()
    storeUs.push((c1 - c0) / B); bareUs.push((c2 - c1) / B)
  }
}
const med = (xs: Array<number>) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!
console.log(`median cpu per append: store ${med(storeUs).toFixed(1)} us, bare prepared insert ${med(bareUs).toFixed(1)} us, excess ${med(storeUs.map((x, i) => x - bareUs[i]!)).toFixed(1)} us (${storeUs.length} blocks)`)
await c.end()
await Effect.runPromise(Scope.close(scope, Exit.void))
